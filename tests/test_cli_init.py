"""`cassette init` leaves a project that works: real pre-commit in a real git repo, without the venv on PATH.

pre-commit builds the hooks' own environment and pip-installs cassette into it (from this checkout,
through the machine's package index for the dependencies), as a fresh clone, a CI runner or
pre-commit.ci would; nothing of the test's virtualenv is on PATH.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cassette import __version__
from cassette.cli import main
from cassette.cli.init import default_requirement
from tests.test_hooks import OPENAI_KEY

ROOT = Path(__file__).resolve().parent.parent
_NO_INDEX = ("NewConnectionError", "Temporary failure in name resolution", "No matching distribution")


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _checkout_copy(dest: Path) -> tuple[Path, str]:
    """A committed copy of this project (package, pyproject, hook manifest): a hook repository."""
    dest.mkdir()
    shutil.copytree(ROOT / "cassette", dest / "cassette", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", ".pre-commit-hooks.yaml", "README.md"):
        shutil.copy(ROOT / name, dest / name)
    _git("init", "-q", "-b", "main", cwd=dest)
    _git("add", "-A", cwd=dest)
    _git("commit", "-q", "-m", "cassette", cwd=dest)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=dest, capture_output=True, text=True, check=True)
    return dest, head.stdout.strip()


def _pre_commit(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON", "CASSETTE_"))}
    env.update(
        PATH="/usr/local/bin:/usr/bin:/bin",  # no virtualenv: no `cassette` executable to find
        PRE_COMMIT_HOME=str(home),
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
    )
    command = [sys.executable, "-m", "pre_commit", *args]
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=900)


def _project_with_a_leaked_key(project: Path) -> None:
    _git("init", "-q", "-b", "main", cwd=project)
    folder = project / "tests" / "cassettes"
    folder.mkdir(parents=True)
    (folder / "leak.json").write_text(json.dumps({"request": {"headers": {"authorization": OPENAI_KEY}}}))


def _status_lines(out: str) -> dict[str, str]:
    """pre-commit's status line of each hook by its name's first word or two: "cassette secrets....Failed"
    (a separate hook), "cassette (secrets, blobs and drift in one process)....Failed" (as "cassette")."""
    return {
        m.group(1).rstrip(" ("): line
        for line in out.splitlines()
        if (m := re.match(r"(cassette(?: [a-z]+| \())", line)) and "..." in line
    }


@pytest.mark.parametrize("how", ["local", "hook-repo --separate-hooks"])
def test_the_hooks_init_writes_install_cassette_and_run_without_the_venv_on_path(
    how: str, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path_factory.mktemp("project")
    _project_with_a_leaked_key(project)
    source, rev = _checkout_copy(tmp_path_factory.mktemp("src") / "cassette")
    if how == "local":  # the default: the one-process hook, installing cassette from a folder
        args = ["init", str(project), "--requirement", str(source)]
    else:  # the three hooks of the hook repository's .pre-commit-hooks.yaml
        args = ["init", str(project), "--repo", str(source), "--rev", rev, "--separate-hooks"]
    assert main(args) == 0
    capsys.readouterr()
    _git("add", "-A", cwd=project)

    done = _pre_commit(project, tmp_path_factory.mktemp("home"), "run", "--all-files")
    out = done.stdout + done.stderr
    if done.returncode not in (0, 1) and any(s in out for s in _NO_INDEX):
        pytest.skip("pre-commit could not reach a package index to build the hooks' environment")
    assert "Executable `cassette` not found" not in out
    assert done.returncode == 1, out  # the staged key stops the commit
    lines = _status_lines(out)
    assert "openai-api-key" in out and OPENAI_KEY not in out
    if how == "local":
        assert set(lines) == {"cassette"} and lines["cassette"].endswith("Failed"), out
    else:  # "cassette secrets (staged ...)....Failed": a status line per check
        assert lines["cassette secrets"].endswith("Failed"), out
        assert lines["cassette verify"].endswith("Passed") and lines["cassette drift"].endswith("Passed"), out


def test_init_says_created_or_updated_ignores_review_files_and_ends_with_the_next_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path(".gitignore").write_text("__pycache__/")  # no trailing newline
    assert main(["init"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:4] == [
        "created pyproject.toml",
        "created .pre-commit-config.yaml",
        "created .gitattributes",
        "updated .gitignore",
    ]
    assert out.rstrip().endswith("4. install hooks:   pre-commit install")
    assert "1. mark a test:     @pytest.mark.cassette" in out and "2. record it:       pytest" in out
    assert Path(".gitignore").read_text().splitlines() == [
        "__pycache__/",
        "# cassette: re-recordings and failed recordings kept for review, never committed",
        "*.pending.json",
        "*.failed.json",
    ]
    text = Path("pyproject.toml").read_text()
    assert "docs/" not in text and "`cassette init --help`" in text  # docs the user has
    hooks = yaml.safe_load(Path(".pre-commit-config.yaml").read_text())["repos"][0]["hooks"]
    assert {h["language"] for h in hooks} == {"python"}
    assert {tuple(h["additional_dependencies"]) for h in hooks} == {(default_requirement(),)}

    assert main(["init"]) == 0
    again = capsys.readouterr().out
    assert "nothing to do: the project is already set up" in again and "created" not in again
    assert main(["init", "--help"]) == 0
    assert "[tool.cassette]: cassette_dir" in capsys.readouterr().out


def test_init_with_repo_system_runs_the_cassette_on_path(tmp_path: Path) -> None:
    assert main(["init", "--repo", "system"]) == 0
    hooks = yaml.safe_load(Path(".pre-commit-config.yaml").read_text())["repos"][0]
    assert hooks["repo"] == "local"
    assert [(h["id"], h["entry"], h["language"]) for h in hooks["hooks"]] == [
        ("cassette", "python -m cassette.hooks pre-commit", "system")
    ]
    assert all("additional_dependencies" not in h for h in hooks["hooks"])


@pytest.mark.parametrize(
    ("first", "then"), [(["--separate-hooks"], []), ([], ["--separate-hooks"]), ([], [])]
)
def test_init_leaves_a_config_with_either_layout_alone_and_says_so(
    first: list[str], then: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", *first]) == 0
    written = Path(".pre-commit-config.yaml").read_bytes()
    ids = [h["id"] for h in yaml.safe_load(written)["repos"][0]["hooks"]]
    assert ids == (["cassette-secrets", "cassette-drift", "cassette-verify"] if first else ["cassette"])
    capsys.readouterr()
    assert main(["init", *then]) == 0
    out = capsys.readouterr().out
    assert Path(".pre-commit-config.yaml").read_bytes() == written  # neither layout added to the other
    assert ".pre-commit-config.yaml: already has the cassette hooks" in out and "nothing to do" in out
    # a hand-written config with only some of the three still gets cassette's hook
    Path(".pre-commit-config.yaml").write_text(
        "repos:\n  - repo: local\n    hooks:\n      - id: cassette-secrets\n"
    )
    assert main(["init"]) == 0
    assert "- id: cassette\n" in Path(".pre-commit-config.yaml").read_text()


def test_docs_pre_commit_md_shows_what_init_writes_and_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path(".gitignore").write_text("")
    assert main(["init"]) == 0
    printed = capsys.readouterr().out
    doc = (ROOT / "docs" / "pre-commit.md").read_text(encoding="utf-8")
    marker = "# .pre-commit-config.yaml, as cassette init writes it\n"
    shown = doc[doc.index(marker) + len(marker) :].split("```", 1)[0]
    # the docs show an install from a package index; this test runs from a checkout (a folder install)
    written = Path(".pre-commit-config.yaml").read_text().replace(default_requirement(), "cassette==0.1.0")
    assert shown == written.replace(__version__, "0.1.0")
    console = doc[doc.index("$ cassette init\n") + len("$ cassette init\n") :].split("```", 1)[0]
    assert console == re.sub(r"(?m)^note: .*\n", "", printed)


def test_pre_commit_run_all_files_checks_every_committed_cassette_in_the_one_process_hook(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """What CI and pre-commit.ci run: nothing staged, every tracked file passed to each hook."""
    project = tmp_path_factory.mktemp("project")
    _git("init", "-q", "-b", "main", cwd=project)
    source, _ = _checkout_copy(tmp_path_factory.mktemp("src") / "cassette")
    assert main(["init", str(project), "--requirement", str(source)]) == 0
    capsys.readouterr()
    folder = project / "tests" / "cassettes"
    folder.mkdir(parents=True)
    example = json.loads(
        (ROOT / "examples" / "support_agent" / "cassettes" / "double_charge.json").read_text()
    )
    leak = json.loads(json.dumps(example))
    leak["interactions"][0]["response"].setdefault("headers", {})["x-debug-token"] = OPENAI_KEY
    (folder / "leak.json").write_text(json.dumps(leak, indent=2))
    missing = json.loads(json.dumps(example))
    missing["interactions"][0]["response"]["text"] = {"$blob": "ab" * 20}  # a blob nobody committed
    (folder / "missing_blob.json").write_text(json.dumps(missing, indent=2))
    _git("add", "-A", cwd=project)
    _git("commit", "-q", "--no-verify", "-m", "cassettes committed past the hooks", cwd=project)

    done = _pre_commit(project, tmp_path_factory.mktemp("home"), "run", "--all-files")
    out = done.stdout + done.stderr
    if done.returncode not in (0, 1) and any(s in out for s in _NO_INDEX):
        pytest.skip("pre-commit could not reach a package index to build the hooks' environment")
    assert done.returncode == 1, out
    lines = _status_lines(out)
    assert set(lines) == {"cassette"} and lines["cassette"].endswith("Failed"), out  # what init writes
    # the committed key is found though nothing is staged, and printed masked
    assert "tests/cassettes/leak.json" in out and "openai-api-key" in out and OPENAI_KEY not in out
    # the committed cassette whose blob was never committed is refused
    assert "FAILED  tests/cassettes/missing_blob.json" in out and "abababab" in out
    # nothing differs from HEAD: the drift summary says so in one line
    assert "no staged cassette differs from HEAD among the" in out


def _dist(tmp_path: Path, direct_url: dict[str, object] | None) -> importlib.metadata.Distribution:
    """A real installed-distribution record (a ``.dist-info`` folder), as pip writes it."""
    info = tmp_path / "cassette-0.3.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cassette\nVersion: 0.3.0\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    return importlib.metadata.PathDistribution(info)


@pytest.mark.parametrize(
    ("direct_url", "expected"),
    [
        (None, "cassette==0.3.0"),  # from a package index: the version
        (
            {"url": "https://github.com/acme/cassette", "vcs_info": {"vcs": "git", "commit_id": "3f2c" * 10}},
            "cassette @ git+https://github.com/acme/cassette@" + "3f2c" * 10,
        ),
        ({"url": "file:///src/cassette", "dir_info": {"editable": True}}, "cassette @ file:///src/cassette"),
        (
            {"url": "file:///w/cassette-0.3.0-py3-none-any.whl", "archive_info": {}},
            "cassette @ file:///w/cassette-0.3.0-py3-none-any.whl",
        ),
        (
            {
                "url": "https://g.example/m.git",
                "vcs_info": {"vcs": "git", "commit_id": "ab" * 20},
                "subdirectory": "py",
            },
            "cassette @ git+https://g.example/m.git@" + "ab" * 20 + "#subdirectory=py",
        ),
    ],
)
def test_the_hook_requirement_installs_this_cassette_as_it_was_installed(
    tmp_path: Path, direct_url: dict[str, object] | None, expected: str
) -> None:
    assert default_requirement(_dist(tmp_path, direct_url)) == expected


def test_init_writes_the_requirement_of_this_install_and_warns_about_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", "--requirement", "cassette @ file:///src/cassette"]) == 0
    out = capsys.readouterr().out
    assert "note: the hooks install cassette @ file:///src/cassette, a folder on this machine" in out
    assert "--repo with the hook repository's URL" in out
    hooks = yaml.safe_load(Path(".pre-commit-config.yaml").read_text())["repos"][0]["hooks"]
    assert {tuple(h["additional_dependencies"]) for h in hooks} == {("cassette @ file:///src/cassette",)}
    Path(".pre-commit-config.yaml").unlink()
    assert main(["init", "--requirement", "cassette @ git+https://github.com/acme/cassette@v0.3.0"]) == 0
    assert "note:" not in capsys.readouterr().out
