"""The docs' examples run, and the reference pages list everything the code has.

A fenced ``python`` block right after ``<!-- test: run -->`` is executed with the
local server up (``OPENAI_BASE_URL``/``OPENAI_API_KEY``, ``GOOGLE_GEMINI_BASE_URL``/``GEMINI_API_KEY``
point at it); after
``<!-- test: record-replay -->`` it is executed twice, the second time with the
server stopped, so it must replay from the cassettes the first run recorded.
Functions named ``test_*`` that a block defines are called after it runs.

A block may be named (``<!-- test: run as=NAME -->``); a later block marked
``<!-- test: fragment of NAME -->`` continues it: it runs after that block, in
its namespace, the way a reader reads them. Blocks marked ``<!-- test: pytest -->``
(docs/pytest.md) are run as test files by ``tests/test_pytest_plugin.py``. Every
python block of README.md and docs/ carries one of these marks.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from cassette.testing.devserver import DevServer
from tests.cli_helpers import listed_commands
from tests.config_helpers import config_choices, config_keys, config_kind

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARKED = re.compile(
    r"<!-- test: (run|record-replay|fragment of [\w-]+)(?: as=([\w-]+))? -->\s*\n```python\n(.*?)```", re.S
)
ANY_PYTHON = re.compile(r"(?:<!-- test: ([^>]*?) -->\s*\n)?```python\n", re.S)


def _blocks() -> list[tuple[str, str, str, str | None, str]]:
    """``(where, how, code, name, prelude)``: a fragment's prelude is the code of the block it continues."""
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        named: dict[str, tuple[str, str]] = {}
        for n, match in enumerate(MARKED.finditer(text)):
            how, name, code = match.group(1), match.group(2), match.group(3)
            line = text[: match.start()].count("\n") + 2
            where = f"{doc.relative_to(ROOT)}:{line}:{n}"
            prelude = ""
            if how.startswith("fragment of "):
                base = how.removeprefix("fragment of ")
                assert base in named, f"{where}: a fragment of {base!r}, which no earlier block is named"
                how, prelude = named[base]
            if name:
                named[name] = (how, prelude + code)
            found.append((where, how, code, name, prelude))
    return found


def _examples() -> list[Any]:
    return [pytest.param(how, prelude + code, id=where) for where, how, code, _, prelude in _blocks()]


def _run(code: str, name: str) -> None:
    namespace: dict[str, Any] = {"__name__": f"docs_example_{name}"}
    exec(compile(code, name, "exec"), namespace)
    for key, value in list(namespace.items()):
        if key.startswith("test_") and callable(value):
            value()


@pytest.mark.parametrize(("how", "code"), _examples())
def test_doc_example(
    how: str, code: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    if "from google import genai" in code:
        pytest.importorskip("google.genai")  # the `gemini` extra (in `dev`)
    with DevServer() as srv:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", srv.url)  # google-genai's base URL
        monkeypatch.setenv("GEMINI_API_KEY", "gemini-docs-example")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.anthropic_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-example")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-docs-example")
        _run(code, request.node.name)
        seen = len(srv.requests)
        srv.stop()
        if how == "record-replay":
            monkeypatch.delenv("OPENAI_API_KEY")
            monkeypatch.setenv("OPENAI_API_KEY", "no-key-needed-on-replay")
            monkeypatch.delenv("GEMINI_API_KEY")
            _run(code, request.node.name)
            assert len(srv.requests) == seen


def test_every_python_block_is_run() -> None:
    unmarked = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for match in ANY_PYTHON.finditer(text):
            mark = match.group(1) or ""
            runs = re.fullmatch(r"(run|record-replay|fragment of [\w-]+)( as=[\w-]+)?", mark)
            if runs or (mark == "pytest" and doc.name == "pytest.md"):
                continue
            if (
                doc.name == "frameworks.md"
                and "<!-- framework: " in text[max(0, match.start() - 200) : match.start()]
            ):
                continue  # run as written by its tests/frameworks/ test (in the frameworks venvs)
            line = text[: match.start()].count("\n") + 1
            unmarked.append(f"{doc.relative_to(ROOT)}:{line}")
    assert not unmarked, f"python blocks no test runs (mark them, see tests/test_docs.py): {unmarked}"


def test_docs_import_only_public_names() -> None:
    private = re.compile(
        r"cassette\.plugins\.manager|cassette\.plugins\.providers\.wire|from cassette\.secrets\b"
    )
    hits = [
        f"{doc.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}: {m.group(0)}"
        for doc in DOCS
        if doc.name not in ("architecture.md", "contributing.md")  # the maintainers' pages name modules
        for text in [doc.read_text(encoding="utf-8")]
        for m in private.finditer(text)
    ]
    assert not hits, hits


# --- the reference pages --------------------------------------------------------------------------


def config_rows() -> dict[str, tuple[str, str]]:
    """``{key: (type, default)}`` of every key ``parse_config`` accepts, as docs/reference/config.md shows."""
    from cassette import config

    defaults = {f.name: f for f in dataclasses.fields(config.Config)}
    rows = {}
    for key in config_keys():
        field = defaults[key]
        value = field.default if field.default is not dataclasses.MISSING else field.default_factory()  # type: ignore[misc]
        choices = config_choices(key)
        type_text = " \\| ".join(f'`"{c}"`' for c in choices) if choices else config_kind(key)
        if value is None:
            default = "unset"
        elif isinstance(value, bool):
            default = f"`{str(value).lower()}`"
        elif isinstance(value, str):
            default = f'`"{value}"`'
        elif isinstance(value, tuple | dict) and not value:
            default = "`[]`" if isinstance(value, tuple) else "`{}`"
        else:
            default = f"`{value}`"
        rows[key] = (type_text, default)
    return rows


def test_config_reference_lists_every_key_with_its_type_and_default(tmp_path: Path) -> None:
    from cassette.config import parse_config

    page = (ROOT / "docs" / "reference" / "config.md").read_text(encoding="utf-8")
    table = {
        cells[0].strip("` "): (cells[1].strip(), cells[2].strip())
        for line in page.splitlines()
        if line.startswith("| `")
        for cells in [[c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]]
    }
    assert table == config_rows()
    blocks = re.findall(r"```toml\n(.*?)```", page, re.S)
    assert blocks
    for block in blocks:  # every example is a valid [tool.cassette]
        (tmp_path / "pyproject.toml").write_text(block, encoding="utf-8")
        parse_config(tmp_path / "pyproject.toml")


def test_cli_reference_has_every_command_with_an_example() -> None:
    page = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^## `cassette ([\w-]+)`\n(.*?)(?=^## |\Z)", page, re.S | re.M))
    assert set(sections) == set(listed_commands())
    for name, body in sections.items():
        assert f"cassette {name}" in body.split("```", 2)[1], f"{name}: no usage example"


def test_every_command_help_shows_its_own_exit_codes_and_an_example(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from cassette.cli import main

    commands = listed_commands()
    epilogs = set()
    for name in commands:
        assert main([name, "--help"]) == 0
        out = capsys.readouterr().out
        epilog = out.split("exit codes:", 1)[1]
        assert "  0  " in epilog and "example:" in epilog and f"cassette {name}" in epilog, name
        epilogs.add(epilog)
    assert len(epilogs) == len(commands)  # each its own, not one shared list


def test_readme_links_the_reference_pages() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in ("api", "config", "cli"):
        assert f"(docs/reference/{page}.md)" in readme
