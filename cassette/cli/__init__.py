"""The ``cassette`` command line: one module per sub-command, discovered at start-up.

Every module of this package whose name does not start with ``_`` is a command.
Its name is the module name with a trailing ``_`` stripped and ``_`` turned into
``-`` (``import_.py`` → ``import``, ``install_hooks.py`` → ``install-hooks``).
A command module defines::

    HELP: str                                         # one line, shown in `cassette --help`
    def add_arguments(parser: argparse.ArgumentParser) -> None: ...
    def run(args: argparse.Namespace) -> int: ...     # the exit code
    EPILOG: str                                       # optional: its exit codes and an example, for --help

Commands are listed from the package's files without importing them; only the
command that runs is imported (a pre-commit hook pays for its own imports only).
Exit codes: 0 ok, 1 findings or failure, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

from cassette import __version__
from cassette.errors import CassetteError

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

_EPILOG = """\
exit codes:
  0  ok
  1  findings or failure (secrets found, drift, a check failed)
  2  usage or input error (bad arguments, unreadable file, bad config)

Run `cassette <command> --help` for the options of one command."""


def _epilog_of(name: str, own: str) -> str:
    """A command's ``--help`` epilog: what its module says (``EPILOG``), then its exit codes and example."""
    codes = _EPILOGS.get(name) or _EPILOG.split("\n\n")[0]
    return f"{own.rstrip()}\n\n{codes}" if own.strip() else codes


def command_name(module_name: str) -> str:
    """The command a module implements: ``import_`` → ``import``, ``install_hooks`` → ``install-hooks``.

    Example::

        command_name("install_hooks") == "install-hooks"
    """
    return module_name.rstrip("_").replace("_", "-")


def _discover() -> dict[str, str]:
    """``{command: module name}``, sorted by command, read from the package's files (nothing imported)."""
    found = {
        command_name(info.name): f"{__name__}.{info.name}"
        for info in pkgutil.iter_modules(__path__)
        if not info.name.startswith("_")
    }
    return dict(sorted(found.items()))


def _load(full: str) -> ModuleType | BaseException:
    """The command module, or the error importing it (one broken command must not take the others down)."""
    try:
        return importlib.import_module(full)
    except Exception as exc:
        return exc


# Each command's exit codes and an example, shown by `cassette <command> --help` (a module may define
# its own EPILOG instead).
_EPILOGS = {
    "accept": """\
exit codes:
  0  the re-recordings were accepted (or --dry-run listed them; nothing pending is fine)
  2  usage or input error (bad arguments, unreadable file, bad config)

example:
  cassette drift --pending && cassette accept tests/cassettes/test_agent/""",
    "compress": """\
exit codes:
  0  every cassette is in the asked form
  1  a cassette could not be rewritten (it is left as it was)
  2  usage or input error (bad arguments, unreadable file, bad config)

example:
  cassette compress tests/cassettes/ --dry-run        # then without --dry-run; --readable undoes it""",
    "drift": """\
exit codes:
  0  no drift, or drift that --fail-on does not name (the summary is informational)
  1  an interaction falls in a --fail-on category
  2  usage or input error (paths with --rev, an unknown revision, bad config)

example:
  cassette drift --rev origin/main..HEAD --format markdown > drift.md""",
    "gc": """\
exit codes:
  0  done (a dry run lists what --apply would remove)
  2  usage or input error (bad arguments, unreadable file, bad config)

example:
  cassette gc tests/cassettes && cassette gc tests/cassettes --apply""",
    "import": """\
exit codes:
  0  every recording was converted faithfully
  1  a file was not converted (--skip-bad) or interactions were skipped (listed)
  2  usage or input error (bad arguments, unreadable file, bad config)

example:
  cassette import vcr tests/cassettes/ --to tests/cassettes_new/""",
    "init": """\
exit codes:
  0  the project is set up (or already was)
  2  usage or input error (bad arguments, unreadable file, bad config)

example:
  cassette init && pre-commit install""",
    "install-hooks": """\
exit codes:
  0  the hook is installed (or already was)
  2  usage or input error (not a git repository, a foreign hook without --force)

example:
  cassette install-hooks --textconv""",
    "ls": """\
exit codes:
  0  listed
  1  a cassette could not be read (its line says why)
  2  usage or input error (bad arguments, unreadable file, bad config)

example:
  cassette ls tests/cassettes --json""",
    "plugins": """\
exit codes:
  0  listed
  2  usage or input error (a configured plugin cannot be imported)

example:
  cassette plugins --json""",
    "promote": """\
exit codes:
  0  the cassette (and the test file) were written, or --list listed the runs
  2  usage or input error (bad arguments, unreadable file, bad config)

example:
  cassette promote traces/prod.jsonl --run last --to tests/cassettes/refund.json \\
      --test tests/test_refund.py""",
    "scan": """\
exit codes:
  0  no secret found
  1  secrets found (each masked, with its file and place)
  2  usage or input error (bad arguments, unreadable file, bad config)

example:
  cassette scan --staged                # what the cassette-secrets hook runs
  cassette scan tests/cassettes/ --format json""",
    "show": """\
exit codes:
  0  printed
  2  usage or input error (no such cassette, not a cassette)

example:
  cassette show tests/cassettes/test_agent/test_refund.json""",
    "textconv": """\
exit codes:
  0  printed
  2  usage or input error (missing or unreadable file)

example:
  git config diff.cassette.textconv 'cassette textconv'   # or: cassette install-hooks --textconv""",
    "verify": """\
exit codes:
  0  every cassette parses and every blob it references is present, intact (and staged)
  1  a check failed (each problem with its file and the fix)
  2  usage or input error (bad arguments, unreadable file, bad config)

example:
  cassette verify --staged              # what the cassette-verify hook runs""",
    "view": """\
exit codes:
  0  the page was written (and opened with --open)
  2  usage or input error (bad arguments, unreadable file, bad config)

example:
  cassette view tests/cassettes/test_agent/test_refund.json --open""",
}


def _selected(argv: Sequence[str], commands: dict[str, str]) -> str | None:
    """The command ``argv`` runs, when no top-level option before it needs every command's help."""
    for arg in argv:
        if arg in ("-h", "--help"):
            return None
        if not arg.startswith("-"):
            return arg if arg in commands else None
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The top-level parser with one sub-parser per discovered command.

    With ``argv``, only the command it names is imported (the others get a sub-parser with no help
    text, which nobody sees); without, every command is imported for the full ``--help``.
    """
    parser = argparse.ArgumentParser(
        prog="cassette",
        description="Record LLM agent runs into git-tracked cassettes and replay them offline.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"cassette {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="<command>", title="commands")
    commands = _discover()
    only = None if argv is None else _selected(argv, commands)
    for name, full in commands.items():
        if only is not None and name != only:
            sub.add_parser(name)
            continue
        module = _load(full)
        if isinstance(module, BaseException):
            help_text = f"(unavailable: cannot import {full}: {module})"
            sp = sub.add_parser(name, help=help_text, description=help_text)
            sp.set_defaults(_run=_broken(name, full, module), _parser=sp)
            continue
        help_text = str(getattr(module, "HELP", "")).strip()
        sp = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=_epilog_of(name, str(getattr(module, "EPILOG", ""))),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_arguments = getattr(module, "add_arguments", None)
        if add_arguments is not None:
            add_arguments(sp)
        sp.set_defaults(_run=module.run, _parser=sp)
    return parser


def _broken(name: str, full: str, exc: BaseException) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        raise CassetteError(f"the {name} command cannot be loaded ({full}: {exc}). Reinstall cassette.")

    return run


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``cassette`` command and return its exit code.

    Example::

        from cassette.cli import main
        main(["ls", "tests/cassettes"])  # 0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # reported under the command they were given to, with its usage line
            owner = getattr(args, "_parser", None) or parser
            owner.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # --help, --version and usage errors (argparse exits with 2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        code = args._run(args)
    except CassetteError as exc:
        print(f"cassette {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `cassette show x | head`
        return EXIT_OK
    except OSError as exc:  # a path the system cannot read: no permission, a name too long...
        where = f" {exc.filename}" if exc.filename is not None else ""
        print(
            f"cassette {args.command}: error: cannot read or write{where} ({exc.strerror or exc}). "
            "Check the path and its permissions.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return int(code or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
