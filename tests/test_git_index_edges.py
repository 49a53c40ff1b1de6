"""Staged reads and the unusual indexes git hands a hook: a temporary index, a split index, `add -N`.

Every repository is a real one in a temp dir, built and committed with the git
binary; the hooks run as git runs them (``cassette install-hooks``, the
pre-commit framework) or through ``cassette.cli.main`` with git's environment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cassette.cli import main

CASSETTE = "tests/cassettes/triage.json"
# Built at run time so this file itself holds no literal key: "ghp_" and 36 alphanumerics.
GITHUB_TOKEN = "ghp" + "_" + "Zq8Rw2Xv5Ty7Up3Lm9Nb4Kc6Jd1Hf0Gs2Ae8"


def git(
    *args: str, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": os.getcwd(), **(env or {})}
    return subprocess.run(["git", *args], capture_output=True, text=True, check=check, env=full)


def manifest(answer: str) -> str:
    doc = {
        "version": 1,
        "interactions": [
            {
                "seq": 0,
                "kind": "llm",
                "key": "k0",
                "request": {"kind": "llm", "messages": [{"role": "user", "content": "Capital of France?"}]},
                "response": {"status": 200, "headers": {}, "text": answer},
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


@pytest.fixture
def repo(monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with one clean cassette committed; GIT_INDEX_FILE unset, as outside a hook."""
    monkeypatch.delenv("GIT_INDEX_FILE", raising=False)
    git("init", "-q", "-b", "main", ".")
    git("config", "user.name", "Test")
    git("config", "user.email", "test@example.com")
    git("config", "commit.gpgsign", "false")
    Path("pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    Path(CASSETTE).parent.mkdir(parents=True)
    Path(CASSETTE).write_text(manifest("Paris."))
    git("add", "-A")
    git("commit", "-q", "-m", "clean")
    return Path.cwd()


def head_holds_key() -> bool:
    return GITHUB_TOKEN in git("show", f"HEAD:{CASSETTE}").stdout


def commits() -> int:
    return int(git("rev-list", "--count", "HEAD").stdout)


# --- 1. commit -a and commit <path>: git points the hook at a temporary index ----------------------


@pytest.mark.parametrize("how", ["-a", "path"])
def test_the_installed_hook_refuses_a_key_that_commit_stages_itself(repo: Path, how: str) -> None:
    assert main(["install-hooks"]) == 0
    Path(CASSETTE).write_text(manifest(f"Paris. token {GITHUB_TOKEN}"))  # no `git add`
    args = ["commit", "-a", "-m", "leak"] if how == "-a" else ["commit", "-m", "leak", CASSETTE]
    refused = git(*args, check=False)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "github-token" in refused.stderr and f"{CASSETTE}:" in refused.stderr
    assert commits() == 1 and not head_holds_key()


@pytest.mark.parametrize("relative", [True, False])
def test_staged_reads_follow_git_index_file(
    repo: Path, relative: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What git sets: an absolute path for `commit -a`/`commit <path>`, `.git/index` (relative to
    the work tree, where the hook runs) for a plain commit; a relative value is relative to the cwd."""
    shutil.copy(".git/index", ".git/alt-index")
    alt = ".git/alt-index" if relative else str(repo / ".git" / "alt-index")
    Path(CASSETTE).write_text(manifest(f"Lyon. token {GITHUB_TOKEN}"))
    git("add", CASSETTE, env={"GIT_INDEX_FILE": alt})  # staged in the other index only
    assert main(["scan", "--staged"]) == 0  # .git/index holds the clean cassette
    capsys.readouterr()

    monkeypatch.setenv("GIT_INDEX_FILE", alt)
    assert main(["scan", "--staged"]) == 1
    assert f"{CASSETTE}:" in capsys.readouterr().out
    assert main(["drift", "--staged"]) == 0
    assert f"{CASSETTE}: modified" in capsys.readouterr().out
    # a blob reference that is not staged in that index: verify reads the same index
    doc = json.loads(manifest("Lyon."))
    doc["interactions"][0]["response"]["text"] = {"$blob": "f" * 40}
    Path(CASSETTE).write_text(json.dumps(doc))
    git("add", CASSETTE, env={"GIT_INDEX_FILE": alt})
    assert main(["verify", "--staged"]) == 1
    assert "neither staged nor on disk" in capsys.readouterr().err
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert main(["verify", "--staged"]) == 0


def test_the_pre_commit_framework_refuses_a_key_staged_by_commit_a(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    pytest.importorskip("pre_commit")
    Path(".pre-commit-config.yaml").write_text(
        "repos:\n"
        "  - repo: local\n"
        "    hooks:\n"
        "      - id: cassette-secrets\n"
        "        name: cassette secrets\n"
        "        entry: cassette scan --staged\n"
        "        language: system\n"
        "        pass_filenames: false\n"
        "        always_run: true\n"
    )
    git("add", ".pre-commit-config.yaml")
    git("commit", "-q", "-m", "pre-commit config")
    env = {
        "PRE_COMMIT_HOME": str(tmp_path_factory.mktemp("pre-commit-home")),
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
    }
    installed = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"],
        capture_output=True,
        text=True,
        env=dict(os.environ, **env),
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    Path(CASSETTE).write_text(manifest(f"Paris. token {GITHUB_TOKEN}"))
    refused = git("commit", "-a", "-m", "leak", check=False, env=env)
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0, out
    assert "cassette secrets" in out and "Failed" in out and CASSETTE in out
    assert commits() == 2 and not head_holds_key()


# --- 2. a split index: dulwich cannot read it, so say so (exit 2, one line) -------------------------


@pytest.mark.parametrize("command", ["scan", "verify", "drift"])
def test_a_split_index_is_a_clear_input_error(
    repo: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    git("update-index", "--split-index")
    Path(CASSETTE).write_text(manifest(f"Lyon. token {GITHUB_TOKEN}"))
    git("add", CASSETTE)
    assert main([command, "--staged"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "split index" in err and "git update-index --no-split-index" in err
    assert str(repo / ".git" / "index") in err
    git("update-index", "--no-split-index")
    assert main([command, "--staged"]) == (1 if command == "scan" else 0)


def test_the_installed_hook_stops_a_commit_on_a_split_index(repo: Path) -> None:
    assert main(["install-hooks"]) == 0
    git("update-index", "--split-index")
    Path(CASSETTE).write_text(manifest(f"Lyon. token {GITHUB_TOKEN}"))
    git("add", CASSETTE)
    refused = git("commit", "-q", "-m", "leak", check=False)
    assert refused.returncode != 0
    assert "Traceback" not in refused.stderr and "--no-split-index" in refused.stderr
    assert commits() == 1 and not head_holds_key()


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_an_unreadable_index_is_a_clear_input_error(
    repo: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    index = Path(".git/index")
    data = index.read_bytes()
    index.write_bytes(data[: len(data) // 2] if damage == "truncated" else b"DIRC" + b"\xff" * 40)
    for command in ("scan", "verify", "drift"):
        assert main([command, "--staged"]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert str(repo / ".git" / "index") in err and "cannot read the git index" in err


# --- 3. entries that are not committed, and an empty .json that is not a cassette -----------------


def test_an_intent_to_add_entry_is_not_staged(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("notes.json").write_text(json.dumps({"token": GITHUB_TOKEN}))
    Path("tests/cassettes/new.json").write_text(manifest(f"token {GITHUB_TOKEN}"))
    git("add", "-N", "notes.json", "tests/cassettes/new.json")
    assert main(["verify", "--staged"]) == 0
    assert main(["scan", "--staged"]) == 0
    assert main(["drift", "--staged"]) == 0
    out = capsys.readouterr()
    assert "new.json" not in out.out + out.err and "notes.json" not in out.out + out.err


def test_an_empty_json_outside_the_cassette_dir_is_not_a_cassette(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("empty.json").write_text("")
    Path("config").mkdir()
    Path("config/blank.json").write_text("")
    git("add", "empty.json", "config/blank.json")
    assert main(["verify", "--staged"]) == 0
    assert "empty.json" not in capsys.readouterr().err
    Path("tests/cassettes/empty.json").write_text("")  # in the cassette dir: a truncated cassette
    git("add", "tests/cassettes/empty.json")
    assert main(["verify", "--staged"]) == 1
    err = capsys.readouterr().err
    assert "tests/cassettes/empty.json" in err and "config/blank.json" not in err
