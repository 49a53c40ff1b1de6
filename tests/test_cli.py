"""The `cassette` command line: the dispatcher and the show, ls, gc, accept, init and plugins commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from anthropic import Anthropic
from dulwich.repo import Repo
from openai import OpenAI

import cassette
from cassette.cli import main
from cassette.cli.init import default_requirement
from cassette.maintenance.hygiene import is_stale_temp, plan_gc
from cassette.store.blobs import BlobStore
from cassette.testing.devserver import DevServer
from tests.agent_helpers import run_agent
from tests.cli_helpers import listed_commands

TRIAGE = Path("tests/cassettes/triage.json")
STORE = Path("tests/cassettes/.blobs")
MINE = ("show", "ls", "gc", "accept", "init", "plugins")


@pytest.fixture
def triage(devserver: DevServer) -> Path:
    """An agent run recorded in the project's cassette dir: LLM turns, a tool call, blobs."""
    client = cassette.instrument(OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0))
    with cassette.using(TRIAGE, mode="record"):
        run_agent(client, "My card was charged twice for order A-1")
    return TRIAGE


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- the dispatcher -------------------------------------------------------------------------------


def test_every_command_has_help_and_the_top_level_documents_exit_codes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0
    assert "exit codes:" in out and "2  usage or input error" in out
    commands = listed_commands()
    assert set(MINE) <= set(commands)
    for name in commands:
        code, out, _ = run_cli(capsys, name, "--help")
        assert code == 0, name
        assert out.startswith(f"usage: cassette {name}"), name


def test_console_script_runs_in_a_subprocess() -> None:
    script = Path(sys.executable).with_name("cassette")
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0
    for name in MINE:
        assert name in proc.stdout
    proc = subprocess.run([str(script), "show", "nowhere.json"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith("cassette show: error: no cassette at ")
    assert "Traceback" not in proc.stderr


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "no-such-command")[0] == 2
    assert run_cli(capsys, "gc", "--frobnicate")[0] == 2
    code, _, err = run_cli(capsys)
    assert code == 2 and "usage: cassette" in err
    code, _, err = run_cli(capsys, "ls", "not-a-dir")
    assert (
        code == 2
        and err
        == "cassette ls: error: not-a-dir is not a directory. Pass the cassette directory "
        "(e.g. tests/cassettes).\n"
    )


# --- show -----------------------------------------------------------------------------------------


def test_show_prints_the_timeline(triage: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "show", str(triage))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"{triage}  (") and "interactions)" in lines[0]
    assert lines[1].startswith("#0   llm   openai gpt-4o-mini")
    assert "user: My card was charged twice for order A-1" in lines[1]
    assert "->  tool calls: lookup_order(" in lines[1] and lines[1].endswith(" tok")
    assert lines[2].startswith("#1   tool  lookup_order") and '{"order_id":"A-1"}' in lines[2]
    assert '->  {"order_id":"A-1","ticket":' in lines[2]  # the tool's recorded result

    code, out, _ = run_cli(capsys, "show", "--json", str(triage))
    rows = json.loads(out)
    assert [r["kind"] for r in rows][:2] == ["llm", "tool"]
    assert rows[0]["what"] == "openai gpt-4o-mini" and rows[0]["tokens"] > 0
    assert rows[1]["request"] == '{"order_id":"A-1"}' and rows[1]["tokens"] == 0
    assert rows[-1]["kind"] == "llm" and rows[-1]["response"]  # the final answer


def test_show_rebuilds_streamed_answers_and_reads_anthropic(
    devserver: DevServer, capsys: pytest.CaptureFixture[str]
) -> None:
    openai_client = cassette.instrument(OpenAI(base_url=devserver.openai_base_url, api_key="sk-test"))
    anthropic_client = cassette.instrument(Anthropic(base_url=devserver.anthropic_base_url, api_key="x"))
    with cassette.using("tests/cassettes/mixed.json", mode="record"):
        stream = openai_client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "stream a greeting"}], stream=True
        )
        streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        reply = anthropic_client.messages.create(
            model="claude-haiku-4-5", max_tokens=100, messages=[{"role": "user", "content": "hello claude"}]
        )
    rows = json.loads(run_cli(capsys, "show", "--json", "tests/cassettes/mixed.json")[1])
    assert rows[0]["response"] == streamed
    assert rows[1]["what"] == "anthropic claude-haiku-4-5"
    assert rows[1]["request"] == "user: hello claude"
    assert rows[1]["response"] == reply.content[0].text  # type: ignore[union-attr]


def test_show_on_a_damaged_cassette_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "interactions": [')
    code, _, err = run_cli(capsys, "show", str(bad))
    assert code == 2 and err.startswith("cassette show: error: ") and "truncated" in err


# --- ls -------------------------------------------------------------------------------------------


def test_ls_lists_counts_and_sizes(triage: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "ls")
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("triage.json"))
    llm, tool, http = row.split()[1:4]
    assert int(llm) >= 2 and int(tool) >= 1 and http == "0"
    assert "1 cassette(s)" in out and f"store {STORE.resolve()}:" in out

    data = json.loads(run_cli(capsys, "ls", "--json", "tests/cassettes")[1])
    (entry,) = data["cassettes"]
    assert entry["blobs"] > 0 and entry["blob_bytes"] > 0 and entry["missing_blobs"] == []
    assert data["stores"][0]["unreferenced"] == 0


def test_ls_flags_unreadable_cassettes_and_missing_blobs(
    triage: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (triage.parent / "broken.json").write_text("not json")
    code, out, _ = run_cli(capsys, "ls")
    assert code == 1 and "broken.json" in out and "UNREADABLE" in out
    (triage.parent / "broken.json").unlink()
    victim = next(p for p in STORE.rglob("*") if p.is_file())
    victim.unlink()
    code, out, _ = run_cli(capsys, "ls")
    assert code == 1 and "MISSING" in out


def test_ls_without_a_cassette_dir_says_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "ls")
    assert code == 2 and "does not exist yet. Record a cassette first" in err


# --- gc -------------------------------------------------------------------------------------------


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_gc_is_a_dry_run_until_apply(triage: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = BlobStore(STORE)
    orphan = store.path_for(store.put(b"a prompt that no cassette uses any more " * 20))
    stale = STORE / "ab" / f".cdef.{dead_pid()}.0123abcd.tmp"  # a writer killed before its rename
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_bytes(b"half a blob")
    live = triage.parent / f".triage.json.{os.getpid()}.89abcdef.tmp"  # a writer still running
    live.write_bytes(b"{")
    then = time.time() - 86400  # a day old: gc keeps unreferenced blobs younger than its grace period
    os.utime(orphan, (then, then))
    before = sorted(p for p in STORE.rglob("*") if p.is_file())

    code, out, _ = run_cli(capsys, "gc")
    assert code == 0
    assert f"would remove unreferenced blob {orphan.resolve()}" in out
    assert f"would remove stale temp file {stale.resolve()}" in out
    assert str(live) not in out and "run `cassette gc --apply` to delete them" in out
    assert sorted(p for p in STORE.rglob("*") if p.is_file()) == before

    code, out, _ = run_cli(capsys, "gc", "--apply", "tests/cassettes")
    assert code == 0 and "removed 1 blob(s) and 1 temp file(s)" in out
    assert not orphan.exists() and not stale.exists() and live.exists()
    assert '"$chain"' in triage.read_text()  # the conversation is a hash chain of blobs: gc followed it
    kept = cassette.load_cassette(triage, STORE)
    for inter in kept.interactions:  # every blob the cassette needs is still there (and verifies)
        kept.hydrate([inter.request, inter.response])
    assert "nothing to remove" in run_cli(capsys, "gc")[1]


def test_gc_keeps_blobs_of_pending_recordings_and_refuses_when_a_manifest_is_unreadable(
    triage: Path, devserver: DevServer, capsys: pytest.CaptureFixture[str]
) -> None:
    pending = triage.with_name("triage.pending.json")
    pending.write_bytes(triage.read_bytes())
    triage.unlink()
    assert plan_gc(triage.parent, STORE.resolve()).blobs == []
    (triage.parent / "broken.json").write_text("{")
    code, _, err = run_cli(capsys, "gc", "--apply")
    assert code == 2 and "cannot collect garbage while" in err and "broken.json" in err


def test_stale_temp_detection() -> None:
    mine = Path(f".x.json.{os.getpid()}.deadbeef.tmp")
    mine.write_text("")
    old = Path(f".y.json.{os.getpid()}.deadbeef.tmp")
    old.write_text("")
    os.utime(old, (1, 1))  # an hour-old temp file: its writer is gone even if the pid was reused
    assert not is_stale_temp(mine) and is_stale_temp(old)
    assert not is_stale_temp(Path("notes.tmp"))


# --- accept ---------------------------------------------------------------------------------------


def rerecord(devserver: DevServer, path: Path, question: str) -> None:
    client = cassette.instrument(OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0))
    with cassette.using(path, mode="rerecord"):
        run_agent(client, question)


def test_accept_promotes_pending_recordings(
    triage: Path, devserver: DevServer, capsys: pytest.CaptureFixture[str]
) -> None:
    other = Path("tests/cassettes/sub/other.json")
    with cassette.using(other, mode="record"):
        pass
    rerecord(devserver, triage, "My card was charged twice for order B-2")
    rerecord(devserver, other, "Where is order C-3?")
    new_triage = triage.with_name("triage.pending.json").read_bytes()

    code, out, _ = run_cli(capsys, "accept", "--dry-run")
    assert code == 0 and out.count("would accept") == 2 and triage.with_name("triage.pending.json").exists()

    code, out, _ = run_cli(capsys, "accept", str(triage))
    assert code == 0 and out == f"accepted {triage}\n"
    assert triage.read_bytes() == new_triage and not triage.with_name("triage.pending.json").exists()

    code, out, _ = run_cli(capsys, "accept")
    assert code == 0 and out == f"accepted {other.as_posix()}\n"  # relative to the project root, as given
    assert "nothing to accept" in run_cli(capsys, "accept")[1]


def test_accept_refuses_what_it_cannot_promote_safely(
    triage: Path, devserver: DevServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "accept", str(triage))
    assert code == 2 and "no pending re-recording for" in err and "CASSETTE_MODE=rerecord" in err

    committed = triage.read_bytes()
    rerecord(devserver, triage, "My card was charged twice for order D-4 " + "please " * 100)
    pending = triage.with_name("triage.pending.json")
    refs = [p for p in STORE.rglob("*") if p.is_file()]
    newest = max(refs, key=lambda p: p.stat().st_mtime_ns)
    newest.unlink()  # a blob only the re-recording needs, lost
    code, _, err = run_cli(capsys, "accept", str(pending))
    assert code == 2 and "missing from" in err and "nothing was accepted" in err
    assert triage.read_bytes() == committed and pending.exists()


# --- init -----------------------------------------------------------------------------------------

PYPROJECT = """\
# My project.   Comments and odd spacing stay.
[project]
name    = "shop-agent"   # inline comment
version = "1.0"

[tool.ruff]
line-length = 100  # ours

[tool.pytest.ini_options]
addopts = "-ra"
"""

PRE_COMMIT = """\
# hooks we already run
repos:
    -   repo: https://github.com/astral-sh/ruff-pre-commit
        rev: v0.6.0   # pinned
        hooks:
            -   id: ruff

default_stages: [pre-commit]
"""


def test_init_adds_config_hooks_and_attributes_and_keeps_the_rest_byte_for_byte(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("pyproject.toml").write_text(PYPROJECT)
    Path(".pre-commit-config.yaml").write_text(PRE_COMMIT)
    Path(".gitattributes").write_text("*.png binary")  # no trailing newline
    Repo.init(".")

    code, out, _ = run_cli(capsys, "init", "--git-diff")
    assert code == 0 and out.count("updated") == 4 and "created .gitignore" in out

    text = Path("pyproject.toml").read_text()
    assert text.startswith(PYPROJECT)  # everything the user wrote, untouched
    assert "[tool.cassette]\n# cassette: record LLM agent runs" in text
    cfg = cassette.config.parse_config(Path("pyproject.toml").resolve())
    assert cfg.cassette_dir == "tests/cassettes" and cfg.orphans == "warn"

    hooks = Path(".pre-commit-config.yaml").read_text()
    assert hooks.startswith(PRE_COMMIT.split("\ndefault_stages")[0])
    assert hooks.endswith("\ndefault_stages: [pre-commit]\n")
    doc = yaml.safe_load(hooks)
    assert doc["default_stages"] == ["pre-commit"] and doc["repos"][0]["hooks"] == [{"id": "ruff"}]
    local = doc["repos"][1]
    assert local["repo"] == "local"
    # the three checks in one process, as the `cassette` hook of .pre-commit-hooks.yaml
    assert [(h["id"], h["entry"], h["language"], h["pass_filenames"]) for h in local["hooks"]] == [
        ("cassette", "python -m cassette.hooks pre-commit", "python", True)
    ]
    assert local["hooks"][0]["always_run"] is True and local["hooks"][0]["verbose"] is True
    # pre-commit installs this cassette into the hooks' own environment: no activated venv needed
    assert {tuple(h["additional_dependencies"]) for h in local["hooks"]} == {(default_requirement(),)}
    validate = subprocess.run(
        [str(Path(sys.executable).with_name("pre-commit")), "validate-config", ".pre-commit-config.yaml"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert validate.returncode == 0, validate.stdout + validate.stderr

    assert Path(".gitattributes").read_text().splitlines() == [
        "*.png binary",
        "# cassette: readable diffs of cassettes, blobs kept out of diffs",
        "tests/cassettes/**/*.json diff=cassette",
        "tests/cassettes/.blobs/** -diff linguist-generated",
    ]
    with Repo(".") as repo:
        assert repo.get_config().get((b"diff", b"cassette"), b"textconv") == b"cassette textconv"

    snapshot = {
        p: p.read_bytes()
        for p in (
            Path("pyproject.toml"),
            Path(".pre-commit-config.yaml"),
            Path(".gitattributes"),
            Path(".git/config"),
        )
    }
    code, out, _ = run_cli(capsys, "init", "--git-diff")
    assert code == 0 and "nothing to do" in out
    assert {p: p.read_bytes() for p in snapshot} == snapshot


def test_init_keeps_a_crlf_file_crlf(capsys: pytest.CaptureFixture[str]) -> None:
    # before: the files were read with newline translation and written back with LF: every
    # existing line of a Windows-edited pyproject.toml changed
    crlf = {
        "pyproject.toml": PYPROJECT.replace("\n", "\r\n").encode(),
        ".pre-commit-config.yaml": PRE_COMMIT.replace("\n", "\r\n").encode(),
        ".gitattributes": b"*.png binary\r\n",
    }
    for name, data in crlf.items():
        Path(name).write_bytes(data)
    code, _, _ = run_cli(capsys, "init", "--no-pre-commit")
    assert code == 0
    code, _, _ = run_cli(capsys, "init")
    assert code == 0
    for name, data in crlf.items():
        now = Path(name).read_bytes()
        assert now.startswith(data.split(b"\r\ndefault_stages")[0]), name
        assert now != data and b"\n" not in now.replace(b"\r\n", b""), name  # added, and CRLF only
    assert cassette.config.parse_config(Path("pyproject.toml").resolve()).cassette_dir == "tests/cassettes"
    assert yaml.safe_load(Path(".pre-commit-config.yaml").read_text())["repos"][1]["repo"] == "local"


def test_init_in_an_empty_directory_and_with_a_remote_hook_repo(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run_cli(capsys, "init", "--repo", "https://github.com/example/cassette", "--rev", "v0.1.0")
    assert code == 0
    doc = yaml.safe_load(Path(".pre-commit-config.yaml").read_text())
    assert doc == {
        "repos": [
            {
                "repo": "https://github.com/example/cassette",
                "rev": "v0.1.0",
                "hooks": [{"id": "cassette"}],
            }
        ]
    }
    Path(".pre-commit-config.yaml").unlink()
    code, _, _ = run_cli(
        capsys, "init", "--repo", "https://github.com/example/cassette", "--rev", "v0.1.0", "--separate-hooks"
    )
    assert code == 0
    hooks = yaml.safe_load(Path(".pre-commit-config.yaml").read_text())["repos"][0]["hooks"]
    assert hooks == [{"id": "cassette-secrets"}, {"id": "cassette-drift"}, {"id": "cassette-verify"}]
    assert cassette.config.parse_config(Path("pyproject.toml").resolve()).cassette_dir == "tests/cassettes"


def test_init_refuses_what_it_cannot_edit_safely(capsys: pytest.CaptureFixture[str]) -> None:
    Path("pyproject.toml").write_text('[tool.cassette]\nmod = "x"\n')
    code, _, err = run_cli(capsys, "init", "--no-pre-commit")
    assert code == 2 and "unknown key [tool.cassette] 'mod'" in err
    Path("pyproject.toml").write_text("[project\n")
    assert run_cli(capsys, "init")[0] == 2
    Path("pyproject.toml").unlink()
    Path(".pre-commit-config.yaml").write_text("repos: []\n")
    code, _, err = run_cli(capsys, "init")
    assert code == 2 and "no block-style `repos:` list" in err and "- repo: local" in err
    assert Path(".pre-commit-config.yaml").read_text() == "repos: []\n"
    code, _, err = run_cli(capsys, "init", "--no-pre-commit", "--git-diff")
    assert code == 2 and "not inside a git repository" in err


# --- plugins --------------------------------------------------------------------------------------


def test_a_plugin_module_beside_pyproject_is_found_by_the_console_script(tmp_path: Path) -> None:
    (tmp_path / "local_rules.py").write_text(
        "from cassette import hookimpl\n\n@hookimpl\ndef cassette_secret_rules():\n    return []\n"
    )
    (tmp_path / "pyproject.toml").write_text('[tool.cassette]\nplugins = ["local_rules"]\n')
    sub = tmp_path / "tests"
    sub.mkdir()
    script = Path(sys.executable).with_name("cassette")
    done = subprocess.run([str(script), "plugins"], cwd=sub, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "local_rules  [[tool.cassette] plugins]\n    hooks: cassette_secret_rules" in done.stdout
    (tmp_path / "pyproject.toml").write_text('[tool.cassette]\nplugins = ["local_rulez"]\n')
    done = subprocess.run([str(script), "plugins"], cwd=sub, capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.startswith("cassette plugins: error: cannot import cassette plugin 'local_rulez'")


def test_plugins_lists_builtins_and_config_plugins_with_their_hooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "shop_redactor.py").write_text(
        "from cassette import hookimpl\n\n"
        "@hookimpl\ndef cassette_redact(data, kind, part):\n    pass\n\n"
        "@hookimpl\ndef cassette_volatile_fields(kind):\n    return ['trace_id']\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    Path("pyproject.toml").write_text('[tool.cassette]\nplugins = ["shop_redactor"]\n')
    try:
        code, out, _ = run_cli(capsys, "plugins")
        assert code == 0
        assert (
            "shop_redactor  [[tool.cassette] plugins]\n    hooks: cassette_redact, cassette_volatile_fields"
            in out
        )
        assert "cassette.plugins.providers.openai  [built-in]" in out
        rows = json.loads(run_cli(capsys, "plugins", "--json")[1])
        assert rows[-1] == {
            "name": "shop_redactor",
            "source": "[tool.cassette] plugins",
            "hooks": ["cassette_redact", "cassette_volatile_fields"],
        }
        assert all(r["source"] == "built-in" for r in rows[:-1])
    finally:
        from cassette.plugins.manager import reset_plugin_manager

        reset_plugin_manager()  # the next test builds a manager without this project's plugin
