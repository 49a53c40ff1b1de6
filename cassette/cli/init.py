"""``cassette init``: add ``[tool.cassette]``, the pre-commit hooks, ``.gitattributes`` and ``.gitignore``
lines to a project.

Every edit appends to what is there, so the user's formatting and comments stay
byte for byte; a second run changes nothing. The hooks it writes install cassette
themselves (``language: python``), so they run in a fresh clone, in CI and on
pre-commit.ci, not only inside an activated virtualenv.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from cassette import __version__
from cassette.config import parse_config
from cassette.core.paths import resolve_path
from cassette.errors import CassetteConfigError, CassetteError
from cassette.git.repo import find_repo, set_textconv
from cassette.store.files import atomic_write

HELP = (
    "set up a project: [tool.cassette] in pyproject.toml, pre-commit hooks, .gitattributes, .gitignore "
    "(idempotent)"
)

# the default: the three checks in one process (one interpreter start-up per commit), as the
# `cassette` hook of .pre-commit-hooks.yaml; verbose, since pre-commit shows a passing hook's output
# (the drift summary) only then
ONE_HOOK_ID = "cassette"
_ONE_HOOK = ("cassette (secrets, blobs and drift in one process)", "python -m cassette.hooks pre-commit")
# --separate-hooks: one process per check, a status line each (per-check status in pre-commit.ci)
HOOK_IDS = ("cassette-secrets", "cassette-drift", "cassette-verify")
_LOCAL_ENTRIES = {
    ONE_HOOK_ID: _ONE_HOOK,
    "cassette-secrets": ("cassette secrets", "cassette scan --staged"),
    "cassette-drift": ("cassette drift", "cassette drift --staged"),
    "cassette-verify": ("cassette verify", "cassette verify --staged"),
}
# as in .pre-commit-hooks.yaml: the secret scan and the blob check run on every commit (one that only
# deletes blobs too); the drift summary only when a cassette or blob is staged, and verbose, since
# pre-commit shows a passing hook's output only then
_ALWAYS_RUN = frozenset({ONE_HOOK_ID, "cassette-secrets", "cassette-verify"})
_DRIFT_FILES = r"\.(json|ya?ml)$|(^|/)\.blobs/"
_VERBOSE = frozenset({ONE_HOOK_ID, "cassette-drift"})
# what a recording leaves beside a cassette for review; never committed
IGNORED = ("*.pending.json", "*.failed.json")

EPILOG = """\
what it writes:
  pyproject.toml           [tool.cassette]: cassette_dir, check_order, unused, orphans. Every key:
                           cassette_dir (where cassettes live), mode (auto|record|replay|rerecord;
                           default auto, replay on CI), compress, blob_threshold, check_order and
                           unused (warn|error|off), orphans (off|warn|fail), allow_hosts,
                           network_guard, plugins, redact_headers/redact_fields/redact_query,
                           secrets_allow, max_age and max_age_action, semantic_backend,
                           semantic_thresholds, judge_model.
  .pre-commit-config.yaml  the hook `cassette` (secrets, blobs and drift in one process, one
                           interpreter start-up per commit), or with --separate-hooks the three
                           hooks cassette-secrets, cassette-verify and cassette-drift (a status
                           line each, e.g. in pre-commit.ci; three start-ups per commit):
                           --repo local (default): language python, installing --requirement;
                           --repo system: the python on PATH (it must import cassette) or, with
                           --separate-hooks, the cassette on PATH; --repo URL|PATH: the hook
                           repository (its .pre-commit-hooks.yaml) at --rev. A config that already
                           has the one hook or all three is left as it is.
  .gitattributes           readable diffs of cassettes; blobs kept out of diffs.
  .gitignore               *.pending.json and *.failed.json (a re-recording or a failed one, for review).

next steps:
  1. mark a test:     @pytest.mark.cassette on a test that calls the model
  2. record it:       pytest  (records what is missing; `pytest --help` lists the --cassette-* options)
  3. replay it:       CASSETTE_MODE=replay pytest  (the default on CI)
  4. install hooks:   pre-commit install"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", nargs="?", type=Path, default=Path("."), help="project root (default: .)")
    parser.add_argument(
        "--cassette-dir", default="tests/cassettes", help="where cassettes live (default: tests/cassettes)"
    )
    parser.add_argument(
        "--repo",
        default="local",
        metavar="local|system|URL",
        help="where pre-commit gets the hooks: 'local' (default: installs --requirement into the hooks' "
        "own environment), 'system' (the python on PATH, or with --separate-hooks the cassette on PATH) or a "
        "hook repository's git URL or path",
    )
    parser.add_argument("--rev", default=f"v{__version__}", help="the rev to pin when --repo is a URL")
    parser.add_argument(
        "--requirement",
        default=None,
        metavar="SPEC",
        help="what pre-commit installs for --repo local: a pip requirement, a path or a URL (default: "
        f"this cassette, as it was installed: {default_requirement().replace('%', '%%')})",
    )
    parser.add_argument(
        "--separate-hooks",
        action="store_true",
        help="write the three hooks cassette-secrets, cassette-verify and cassette-drift (a status line "
        "each) instead of the one-process hook cassette",
    )
    parser.add_argument("--no-pre-commit", action="store_true", help="leave .pre-commit-config.yaml alone")
    parser.add_argument(
        "--git-diff",
        action="store_true",
        help="also set diff.cassette.textconv = 'cassette textconv' in .git/config (readable git diff)",
    )


@dataclass
class InitReport:
    """What `init_project` changed, file by file."""

    created: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # files that were there and were added to
    unchanged: list[str] = field(default_factory=list)


def init_project(
    root: Path,
    *,
    cassette_dir: str = "tests/cassettes",
    repo: str = "local",
    rev: str = f"v{__version__}",
    pre_commit: bool = True,
    git_diff: bool = False,
    requirement: str | None = None,
    separate_hooks: bool = False,
) -> InitReport:
    """Add cassette's configuration to the project at ``root``; returns what changed.

    Example::

        init_project(Path("."), git_diff=True).changed  # ["pyproject.toml", ".gitattributes", ...]
    """
    if not root.is_dir():
        raise CassetteError(f"{root} is not a directory. Run cassette init in the project root.", path=root)
    report = InitReport()
    hooks = HookSource(repo, rev, requirement or default_requirement(), separate_hooks)
    steps: list[tuple[str, Any]] = [
        ("pyproject.toml", lambda: _pyproject(root / "pyproject.toml", cassette_dir))
    ]
    if pre_commit:
        steps.append(
            (".pre-commit-config.yaml", lambda: _pre_commit(root / ".pre-commit-config.yaml", hooks))
        )
    steps.append((".gitattributes", lambda: _gitattributes(root / ".gitattributes", cassette_dir)))
    steps.append((".gitignore", lambda: _gitignore(root / ".gitignore")))
    if git_diff:
        steps.append((".git/config (diff.cassette.textconv)", lambda: _git_diff(root)))
    for name, step in steps:
        existed = name.startswith(".git/") or (root / name).exists()
        if not step():
            report.unchanged.append(name)
        else:
            (report.changed if existed else report.created).append(name)
    return report


def run(args: argparse.Namespace) -> int:
    report = init_project(
        args.dir,
        cassette_dir=args.cassette_dir,
        repo=args.repo,
        rev=args.rev,
        pre_commit=not args.no_pre_commit,
        git_diff=args.git_diff,
        requirement=args.requirement,
        separate_hooks=args.separate_hooks,
    )
    for name in report.created:
        print(f"created {name}")
    for name in report.changed:
        print(f"updated {name}")
    for name in report.unchanged:
        if name == ".pre-commit-config.yaml":
            print(
                f"{name}: already has the cassette hooks (the one-process hook or all three), left as it is"
            )
        else:
            print(f"{name}: already set up")
    requirement = args.requirement or default_requirement()
    if args.repo == "local" and not args.no_pre_commit and "file://" in requirement:
        print(
            f"note: the hooks install {requirement}, a folder on this machine: a fresh clone elsewhere "
            "or CI cannot install it. Pass --requirement with a git URL or a published version, or "
            "--repo with the hook repository's URL."
        )
    if not report.changed and not report.created:
        print("nothing to do: the project is already set up")
    print("\n" + EPILOG.split("\n\n", 1)[1])
    return 0


# --- pyproject.toml -------------------------------------------------------------------------------


def _section(cassette_dir: str) -> str:
    table = tomlkit.table()
    table.add(
        tomlkit.comment("cassette: record LLM agent runs, replay them offline. Keys: `cassette init --help`.")
    )
    table.add("cassette_dir", cassette_dir)
    table.add("check_order", "warn")
    table.add("unused", "warn")
    table.add("orphans", "warn")
    doc = tomlkit.document()
    tool = tomlkit.table(is_super_table=True)
    tool.add("cassette", table)
    doc.add("tool", tool)
    return tomlkit.dumps(doc)


def _read(path: Path) -> tuple[str, str]:
    """A file's text exactly as written (no newline translation) and its line ending: what is added
    uses the file's own, so a CRLF file stays CRLF and no existing line changes."""
    if not path.exists():
        return "", "\n"
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CassetteConfigError(
            f"{path} is not UTF-8 text ({exc}). Fix it, then run cassette init again."
        ) from None
    return text, "\r\n" if "\r\n" in text else "\n"


def _write(path: Path, text: str) -> None:
    atomic_write(path, text.encode("utf-8"))


def _pyproject(path: Path, cassette_dir: str) -> bool:
    text, nl = _read(path)
    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise CassetteConfigError(
            f"{path} is not valid TOML ({exc}). Fix it, then run cassette init again."
        ) from exc
    tool = doc.get("tool")
    if tool is not None and not isinstance(tool, dict):  # `tool = 5`: no [tool.<name>] can go under it
        raise CassetteConfigError(
            f"{path}: `tool` must be a table (it holds the [tool.<name>] sections), got "
            f"{type(tool).__name__}. Fix that file: remove or rename its top-level `tool = ...` value, "
            "then run cassette init again.",
            path=path,
        )
    if tool is not None and "cassette" in tool:
        parse_config(path)  # an existing section is kept as is, but it must be valid
        return False
    if tool is not None and not isinstance(tool, tomlkit.items.Table):
        raise CassetteConfigError(
            f"{path}: `tool` is not a table, so [tool.cassette] cannot be added. Add it by hand:\n"
            + _section(cassette_dir)
        )
    # Append rather than re-serialise: the rest of the file stays byte for byte as the user wrote it.
    separator = "" if not text else (nl if text.endswith("\n") else nl + nl)
    new = text + separator + _section(cassette_dir).replace("\n", nl)
    try:
        tomlkit.parse(new)
    except TOMLKitError as exc:  # pragma: no cover - guarded by the checks above
        raise CassetteConfigError(f"{path}: cannot append [tool.cassette] ({exc}). Add it by hand.") from exc
    _write(path, new)
    parse_config(path)
    return True


# --- .pre-commit-config.yaml ----------------------------------------------------------------------


@dataclass(frozen=True)
class HookSource:
    """Where pre-commit gets the hooks: ``local`` (install ``requirement``), ``system`` or a hook repo."""

    repo: str = "local"
    rev: str = f"v{__version__}"
    requirement: str = f"cassette=={__version__}"
    separate: bool = False  # the three hooks instead of the one-process hook `cassette`

    @property
    def hook_ids(self) -> tuple[str, ...]:
        return HOOK_IDS if self.separate else (ONE_HOOK_ID,)


def default_requirement(dist: Any = None) -> str:
    """The pip requirement that installs this very cassette into the hooks' environment, read from
    how it was installed (PEP 610 ``direct_url.json``): ``cassette @ git+URL@commit`` for a git
    install, ``cassette @ file:///path`` for a local folder or file (that machine only), else
    ``cassette==<version>``.

    Example::

        default_requirement()  # e.g. "cassette @ git+https://github.com/acme/cassette@3f2c…"
    """
    if dist is None:
        try:
            dist = importlib.metadata.distribution("cassette")
        except importlib.metadata.PackageNotFoundError:  # run from a source checkout, not installed
            return f"cassette=={__version__}"
    version = dist.version or __version__
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "null")
    except ValueError:
        direct = None
    url = direct.get("url") if isinstance(direct, dict) else None
    if not isinstance(url, str) or not url:
        return f"cassette=={version}"
    vcs = direct.get("vcs_info")
    if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        at = vcs.get("commit_id") or vcs.get("requested_revision")
        url = f"{vcs['vcs']}+{url}" + (f"@{at}" if isinstance(at, str) and at else "")
    subdirectory = direct.get("subdirectory")
    if isinstance(subdirectory, str) and subdirectory:
        url += f"#subdirectory={subdirectory}"
    return f"cassette @ {url}"


def _hook_block(source: HookSource, indent: str) -> str:
    """The ``- repo:`` list item, indented like the file's other repos."""
    local = source.repo in ("local", "system")
    lines = [f"{indent}- repo: {'local' if local else source.repo}"]
    inner = indent + "  "
    if not local:
        lines.append(f"{inner}rev: {source.rev}")
    lines.append(f"{inner}hooks:")
    for hook_id in source.hook_ids:
        lines.append(f"{inner}  - id: {hook_id}")
        if local:
            name, entry = _LOCAL_ENTRIES[hook_id]
            lines += [f"{inner}    name: {name}", f"{inner}    entry: {entry}"]
            if source.repo == "system":
                lines.append(f"{inner}    language: system")
            else:
                lines += [
                    f"{inner}    language: python",
                    f"{inner}    additional_dependencies: [{_yaml_string(source.requirement)}]",
                ]
            # as .pre-commit-hooks.yaml: each hook takes the file names pre-commit passes, so
            # `pre-commit run --all-files` checks every tracked file
            lines.append(f"{inner}    pass_filenames: true")
            if hook_id in _ALWAYS_RUN:
                lines.append(f"{inner}    always_run: true")
            else:
                lines.append(f"{inner}    files: {_DRIFT_FILES}")
            lines.append(f"{inner}    require_serial: true")
            if hook_id in _VERBOSE:
                lines.append(f"{inner}    verbose: true")
    return "\n".join(lines) + "\n"


def _yaml_string(text: str) -> str:
    """``text`` as a YAML double-quoted scalar (a requirement may hold ``:``, ``#`` or spaces)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _has_hooks(text: str) -> bool:
    """Whether the config already has cassette's hooks: the one-process ``cassette`` or all three."""

    def has(hook_id: str) -> bool:
        return re.search(rf"id:\s*['\"]?{re.escape(hook_id)}['\"]?\s*(#.*)?$", text, re.M) is not None

    return has(ONE_HOOK_ID) or all(has(h) for h in HOOK_IDS)


def _pre_commit(path: Path, source: HookSource) -> bool:
    if not path.exists():
        _write(path, "repos:\n" + _hook_block(source, ""))
        return True
    text, nl = _read(path)
    if _has_hooks(text):
        return False
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if re.match(r"repos:\s*(#.*)?$", line)), None)
    if start is None:
        raise CassetteError(
            f"{path} has no block-style `repos:` list, so the hooks cannot be added safely. Add this under "
            "`repos:` by hand:\n" + _hook_block(source, "  "),
            path=path,
        )
    # The list ends at the next top-level key (a line starting without indentation that is not a comment).
    end = len(lines)
    for i in range(start + 1, len(lines)):
        if lines[i].strip() and not lines[i][0].isspace() and not lines[i].startswith(("#", "-")):
            end = i
            break
    items = [line for line in lines[start + 1 : end] if line.lstrip().startswith("- ")]
    indent = re.match(r"\s*", items[0]).group(0) if items else "  "  # type: ignore[union-attr]
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1  # insert after the last item, before trailing blank lines
    before = "".join(lines[:end])
    if before and not before.endswith("\n"):
        before += nl
    new = before + _hook_block(source, indent).replace("\n", nl) + "".join(lines[end:])
    _check_yaml(path, text, new, source)
    _write(path, new)
    return True


def _check_yaml(path: Path, old: str, new: str, source: HookSource) -> None:
    """With PyYAML present (pre-commit brings it), prove the edit added exactly one repo."""
    try:
        import yaml  # deferred: PyYAML is optional (pre-commit brings it); init works without it
    except ImportError:  # pragma: no cover - pre-commit users always have it
        return
    try:
        before = yaml.safe_load(old) or {}
        after = yaml.safe_load(new) or {}
    except yaml.YAMLError as exc:
        raise CassetteError(
            f"{path} is not valid YAML ({exc}). Fix it, then run cassette init again."
        ) from exc
    ok = (
        isinstance(after, dict)
        and isinstance(before, dict)
        and isinstance(after.get("repos"), list)
        and after["repos"][:-1] == (before.get("repos") or [])
        and {k: v for k, v in after.items() if k != "repos"}
        == {k: v for k, v in before.items() if k != "repos"}
    )
    if not ok:
        raise CassetteError(
            f"{path}: the hooks could not be added without changing the file's meaning. Add this under "
            "`repos:` by hand:\n" + _hook_block(source, "  "),
            path=path,
        )


# --- .gitattributes and .git/config ---------------------------------------------------------------


def gitattributes_lines(cassette_dir: str) -> list[str]:
    base = cassette_dir.strip("/")
    return [f"{base}/**/*.json diff=cassette", f"{base}/.blobs/** -diff linguist-generated"]


def _append_missing(path: Path, lines: Iterable[str], header: str) -> bool:
    """Append to the file at ``path`` those of ``lines`` it lacks, under a ``# cassette:`` header,
    in the file's own line endings; whether it changed."""
    text, nl = _read(path)
    present = {line.strip() for line in text.splitlines()}
    missing = [line for line in lines if line not in present]
    if not missing:
        return False
    prefix = "" if not text or text.endswith("\n") else nl
    _write(path, text + prefix + f"# cassette: {header}" + nl + nl.join(missing) + nl)
    return True


def _gitattributes(path: Path, cassette_dir: str) -> bool:
    header = "readable diffs of cassettes, blobs kept out of diffs"
    return _append_missing(path, gitattributes_lines(cassette_dir), header)


def _gitignore(path: Path) -> bool:
    return _append_missing(
        path, IGNORED, "re-recordings and failed recordings kept for review, never committed"
    )


def _git_diff(root: Path) -> bool:
    repo = find_repo(root)
    if repo is None:
        raise CassetteError(
            f"{resolve_path(root)} is not inside a git repository, so --git-diff has no .git/config to set. "
            "Run `git init` first, or drop --git-diff.",
            path=root,
        )
    with repo:
        return set_textconv(repo, "cassette textconv")
