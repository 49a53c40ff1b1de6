"""Running the `cassette` command in-process and reading its one-line errors."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from cassette.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``cassette ARGV...``: its exit code, stdout and stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str, command: str) -> str:
    """The single line a failing ``cassette COMMAND`` printed: its prefix once, no traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"cassette {command}: error: "), err
    assert lines[0].count(f"cassette {command}:") == 1, err  # the prefix once
    assert "Traceback" not in err
    return lines[0]


def listed_commands() -> list[str]:
    """The sub-commands ``cassette --help`` lists, in its order (one per module of `cassette.cli`)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--help"]) == 0
    listing = out.getvalue().split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^    ([a-z][a-z-]*)(?: |$)", listing, re.M)
