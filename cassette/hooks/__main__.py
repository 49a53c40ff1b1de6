"""`python -m cassette.hooks pre-commit [FILES]` (the installed git hook, the one-process pre-commit
hook) and `… textconv FILE` (diff driver)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["pre-commit"]:
        from cassette.hooks import pre_commit  # deferred: textconv (run by git per file) skips the checks

        return pre_commit(args[1:])  # the file names pre-commit passes, if any
    if args[:1] == ["textconv"] and len(args) == 2:
        from cassette.hooks.textconv import render  # deferred: the pre-commit run skips the renderer

        try:
            data = render(args[1])
        except OSError as exc:  # missing, a directory, a FIFO or a device: one line, not a traceback
            print(f"cassette textconv: error: {exc}", file=sys.stderr)
            return 2
        sys.stdout.buffer.write(data)
        return 0
    print("usage: python -m cassette.hooks pre-commit [FILES...] | textconv FILE", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
