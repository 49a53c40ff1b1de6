"""Git hooks: the secret scan of the index, install-hooks with a real `git commit`, textconv, pre-commit.

Every repository here is a real one in a temp dir, built with the git binary;
the code under test reads it with dulwich only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette.cli import main
from cassette.plugins.manager import default_rules
from cassette.secrets import redact_text
from cassette.store.blobs import BlobStore
from cassette.testing.devserver import DevServer

ROOT = Path(__file__).resolve().parents[1]
CASSETTE = "tests/cassettes/triage.json"
STORE = Path("tests/cassettes/.blobs")
# Built at run time so this file itself holds no literal key.
OPENAI_KEY = "sk-" + "proj-" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6kL9nP2rS5uX8"
ANTHROPIC_KEY = "sk-" + "ant-api03-" + ("Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8Ba7" * 3)[:93] + "AA"
AWS_KEY = "AK" + "IAQ3EGRT5XWVNZ7KPL"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "issue_refund",
            "description": "Refund an order",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
                "required": ["order_id", "amount"],
            },
        },
    }
]


def git(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=os.getcwd())
    return subprocess.run(["git", *args], capture_output=True, text=True, check=check, env=env)


def init_repo() -> None:
    git("init", "-q", "-b", "main", ".")
    git("config", "user.name", "Test")
    git("config", "user.email", "test@example.com")
    git("config", "commit.gpgsign", "false")
    Path("pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')


def record(base_url: str) -> None:
    """Two calls, one with a tool call; the long system prompt goes to the blob store."""
    from openai import OpenAI

    client = cassette.instrument(OpenAI(base_url=base_url, api_key="sk-test", max_retries=0))
    with cassette.using(CASSETTE, mode="record", blob_threshold=200):
        system = {"role": "system", "content": "You are a careful support agent. " * 10}
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[system, {"role": "user", "content": "What is the capital of France?"}],
        )
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "I was charged twice for order A123"}],
            tools=TOOLS,
        )


@pytest.fixture
def repo(devserver: DevServer) -> Path:
    """A git repo (cwd) with one committed, clean recording."""
    init_repo()
    record(devserver.openai_base_url)
    git("add", "-A")
    git("commit", "-q", "-m", "clean cassette")
    return Path.cwd()


def _doc() -> dict[str, Any]:
    return json.loads(Path(CASSETTE).read_text())


def _save(doc: dict[str, Any]) -> None:
    Path(CASSETTE).write_text(json.dumps(doc, indent=2) + "\n")


def _tool_choice(doc: dict[str, Any]) -> dict[str, Any]:
    choices = doc["interactions"][1]["response"]["json"]["choices"]
    if "$blob" in choices[0]:  # a large choice object is stored as a JSON blob
        choices[0] = json.loads(BlobStore(STORE).get(choices[0]["$blob"]))
    result: dict[str, Any] = choices[0]
    return result


def plant(where: str) -> str:
    """Put a key into the cassette at ``where``; returns the JSON path the scan must name."""
    doc = _doc()
    if where == "header":
        doc["interactions"][0]["response"]["headers"]["x-debug-token"] = OPENAI_KEY
        path = 'interactions[0].response.headers["x-debug-token"]'
    elif where == "message":
        doc["interactions"][1]["request"]["messages"][0]["content"] = f"my key is {ANTHROPIC_KEY}, refund me"
        path = "interactions[1].request.messages[0].content"
    elif where == "tool-arguments":
        call = _tool_choice(doc)["message"]["tool_calls"][0]
        call["function"]["arguments"] = json.dumps({"order_id": "A123", "aws_key": AWS_KEY})
        path = "interactions[1].response.json.choices[0].message.tool_calls[0].function.arguments.aws_key"
    else:  # a blob: a long message whose text lives in the blob store
        blob = BlobStore(STORE).put(("context line\n" * 40 + f"token={OPENAI_KEY}\n").encode())
        doc["interactions"][1]["request"]["messages"].append({"role": "user", "content": {"$blob": blob}})
        path = "interactions[1].request.messages[1].content"
    _save(doc)
    return path


def redact_everything() -> None:
    """What a fixed redactor would have written: every secret replaced in manifests and blobs."""
    for f in [Path(CASSETTE), *(p for p in STORE.rglob("*") if p.is_file())]:
        text = f.read_text()
        clean = redact_text(text, default_rules())
        if clean != text and f.parent.parent == STORE:  # a blob's name is its hash: store it anew
            f.unlink()
            new_id = BlobStore(STORE).put(clean.encode())
            old_id = f.parent.name + f.name
            Path(CASSETTE).write_text(Path(CASSETTE).read_text().replace(old_id, new_id))
        elif clean != text:
            f.write_text(clean)


# --- cassette scan --staged --------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["header", "message", "tool-arguments", "blob"])
def test_a_staged_key_is_caught_naming_rule_and_path_and_a_redacted_one_passes(
    repo: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    json_path = plant(where)
    git("add", "-A")
    assert main(["scan", "--staged"]) == 1
    out = capsys.readouterr().out
    rule = {"header": "openai-api-key", "message": "anthropic-api-key", "tool-arguments": "aws-access-key-id"}
    assert rule.get(where, "openai-api-key") in out
    assert json_path in out
    assert CASSETTE in out  # a blob finding also names the cassette that references it
    for key in (OPENAI_KEY, ANTHROPIC_KEY, AWS_KEY):
        assert key not in out  # masked, never shown

    redact_everything()
    git("add", "-A")
    assert main(["scan", "--staged"]) == 0
    assert capsys.readouterr().out == ""


def test_json_output_lists_each_finding_with_its_fields(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for where in ("header", "blob"):
        plant(where)
    git("add", "-A")
    assert main(["scan", "--staged", "--format", "json"]) == 1
    found = json.loads(capsys.readouterr().out)
    assert {f["rule"] for f in found} == {"openai-api-key"}
    for f in found:
        assert {"file", "line", "rule", "path", "masked", "fingerprint"} <= set(f)
        assert f["line"] >= 1 and OPENAI_KEY not in json.dumps(f)
    blob = next(f for f in found if "/.blobs/" in f["file"])
    assert blob["cassette"] == CASSETTE and blob["path"] == "interactions[1].request.messages[1].content"


def test_the_scan_reads_the_index_not_the_working_tree(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plant("message")
    assert main(["scan", "--staged"]) == 0  # planted but not staged: not part of the commit
    git("add", CASSETTE)
    redact_everything()  # the working tree is clean again, the index still holds the key
    assert main(["scan", "--staged"]) == 1
    assert "anthropic-api-key" in capsys.readouterr().out


def test_an_allow_listed_fingerprint_passes(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plant("header")
    git("add", "-A")
    assert main(["scan", "--staged", "--format", "json"]) == 1
    fingerprint = json.loads(capsys.readouterr().out)[0]["fingerprint"]
    with open("pyproject.toml", "a") as fh:
        fh.write(f'\n[tool.cassette]\nsecrets_allow = ["{fingerprint}"]\n')
    from cassette.config import clear_config_cache

    clear_config_cache()
    assert main(["scan", "--staged"]) == 0


def test_results_are_cached_by_blob_id(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plant("blob")
    git("add", "-A")
    assert main(["scan", "--staged"]) == 1
    cache = json.loads((repo / ".git" / "cassette-scan-cache").read_text())
    added = git("diff", "--cached", "--name-only", "--diff-filter=AM").stdout.split()
    ids = {git("rev-parse", f":{p}").stdout.strip() for p in added}
    assert len(ids) == 2 and ids <= set(cache["blobs"])  # the staged manifest and the new payload
    # The cache is trusted by blob id: a row written for the manifest's id is reported as is.
    manifest_id = git("rev-parse", f":{CASSETTE}").stdout.strip()
    cache["blobs"][manifest_id] = [["cached-rule", 7, "somewhere", "xx…yy", "0" * 16]]
    (repo / ".git" / "cassette-scan-cache").write_text(json.dumps(cache))
    capsys.readouterr()
    assert main(["scan", "--staged", "--format", "json"]) == 1
    rules = {f["rule"] for f in json.loads(capsys.readouterr().out)}
    assert "cached-rule" in rules and "openai-api-key" in rules
    assert main(["scan", "--staged", "--format", "json", "--no-cache"]) == 1
    assert "cached-rule" not in capsys.readouterr().out


def test_scan_paths_reads_other_tools_cassettes_and_logs(capsys: pytest.CaptureFixture[str]) -> None:
    Path("vcr").mkdir()
    Path("vcr/chat.yaml").write_text(
        "interactions:\n- request:\n    method: POST\n    uri: https://api.openai.com/v1/chat/completions\n"
        f"    headers:\n      Authorization:\n      - Bearer {OPENAI_KEY}\n"
        "  response:\n    status: {code: 200, message: OK}\n    body: {string: '{}'}\nversion: 1\n"
    )
    Path("agent.log").write_text(f"starting\nusing AWS id {AWS_KEY}\n")
    Path("clean.txt").write_text("nothing to see\n")
    assert main(["scan", "vcr", "agent.log", "clean.txt"]) == 1
    out = capsys.readouterr().out
    assert "vcr/chat.yaml:7: openai-api-key" in out
    assert "agent.log:2: aws-access-key-id" in out
    assert OPENAI_KEY not in out and AWS_KEY not in out
    assert main(["scan", "clean.txt"]) == 0


def test_scan_of_a_missing_path_or_outside_git_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "no/such/file"]) == 2
    assert "no such file or directory: no/such/file" in capsys.readouterr().err
    assert main(["scan", "--staged"]) == 2
    err = capsys.readouterr().err
    assert "not inside a git work tree" in err and "pass file paths" in err


# --- plain git hooks -------------------------------------------------------------------------------


def test_install_hooks_makes_git_commit_refuse_a_staged_key(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["install-hooks"]) == 0
    hook = repo / ".git" / "hooks" / "pre-commit"
    assert os.access(hook, os.X_OK) and sys.executable in hook.read_text()
    plant("tool-arguments")
    git("add", "-A")
    refused = git("commit", "-q", "-m", "leak", check=False)
    assert refused.returncode != 0
    assert "aws-access-key-id" in refused.stderr and "arguments.aws_key" in refused.stderr
    assert AWS_KEY not in refused.stderr + refused.stdout
    assert git("rev-list", "--count", "HEAD").stdout.strip() == "1"  # nothing was committed

    redact_everything()
    git("add", "-A")
    accepted = git("commit", "-q", "-m", "redacted", check=False)
    assert accepted.returncode == 0, accepted.stderr
    assert "cassette drift" in accepted.stderr  # the summary is shown, informational


def test_install_hooks_refuses_to_replace_a_foreign_hook(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho mine\n")
    assert main(["install-hooks"]) == 2
    assert "was not written by cassette" in capsys.readouterr().err
    assert hook.read_text() == "#!/bin/sh\necho mine\n"
    assert main(["install-hooks", "--force"]) == 0
    assert "cassette.hooks pre-commit" in hook.read_text()
    assert main(["install-hooks"]) == 0  # our own hook is updated in place


def test_a_cassette_committed_without_its_blobs_is_refused(repo: Path) -> None:
    main(["install-hooks"])
    doc = _doc()
    doc["interactions"][0]["request"]["messages"][0]["content"] = {
        "$blob": BlobStore(STORE).put(b"a brand new long system prompt " * 20)
    }
    _save(doc)
    git("add", CASSETTE)  # the classic mistake: the manifest without the new blob
    refused = git("commit", "-q", "-m", "no blobs", check=False)
    assert refused.returncode != 0
    assert "on disk but not staged" in refused.stderr and "git add" in refused.stderr
    git("add", str(STORE))
    assert main(["verify", "--staged"]) == 0  # what the hook checks once the blob is staged too


# --- textconv --------------------------------------------------------------------------------------


def test_textconv_driver_inlines_blobs_and_the_hook_still_reads_the_index(repo: Path) -> None:
    assert main(["install-hooks", "--textconv"]) == 0
    assert "diff=cassette" in Path(".gitattributes").read_text()
    assert "cassette.hooks textconv" in git("config", "diff.cassette.textconv").stdout
    git("add", ".gitattributes")
    git("commit", "-q", "--no-verify", "-m", "textconv")
    plant("blob")
    git("add", "-A")
    shown = git("diff", "--staged", "--", CASSETTE).stdout
    assert "context line" in shown and '"$blob"' not in shown  # the driver inlined the payload
    refused = git("commit", "-q", "-m", "leak", check=False)
    assert refused.returncode != 0 and "openai-api-key" in refused.stderr


def test_textconv_renders_a_temp_copy_from_git_objects(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # git hands the driver a temporary copy outside the repository for staged and old versions
    outside = repo.parent / "textconv-copy.json"
    shutil.copy(CASSETTE, outside)
    shutil.rmtree(STORE)  # the payloads survive only as git objects
    assert main(["textconv", str(outside)]) == 0
    rendered = json.loads(capsys.readouterr().out)
    system = rendered["interactions"][0]["request"]["messages"][0]["content"]
    assert system.startswith("You are a careful support agent.")
    Path("not-a-cassette.json").write_text("[1, 2")
    assert main(["textconv", "not-a-cassette.json"]) == 0
    assert capsys.readouterr().out == "[1, 2"  # shown as it is, never an error for git diff


# --- the pre-commit framework ----------------------------------------------------------------------


def test_the_hook_manifest_is_valid_for_pre_commit() -> None:
    from pre_commit.clientlib import load_manifest

    hooks = {h["id"]: h for h in load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))}
    assert set(hooks) == {"cassette-secrets", "cassette-drift", "cassette-verify", "cassette"}
    assert hooks["cassette"]["entry"] == "python -m cassette.hooks pre-commit"  # the three in one process
    assert hooks["cassette-secrets"]["entry"] == "cassette scan --staged"
    assert hooks["cassette-drift"]["entry"] == "cassette drift --staged"
    assert hooks["cassette-verify"]["entry"] == "cassette verify --staged"
    for hook in hooks.values():
        assert hook["language"] == "python"
    # the secret scan takes the names pre-commit passes (every tracked file under --all-files)
    # every hook takes the file names, so `pre-commit run --all-files` checks every tracked file
    assert all(hook["pass_filenames"] is True for hook in hooks.values())


def _hook_repo(dest: Path, *, system: bool = True) -> Path:
    """A committed copy of this project as a hook repository, its hooks run with this interpreter.

    With ``system`` (the default) the copy runs the very same entries with
    ``language: system`` and this interpreter's ``cassette`` first on PATH, so the
    three-hook test needs no package index; ``system=False`` keeps the shipped
    ``language: python``, for which pre-commit builds a virtualenv and pip-installs
    the project (one test does that, as a user's first commit would).
    """
    dest.mkdir()
    shutil.copytree(ROOT / "cassette", dest / "cassette", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    manifest = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert manifest.count("language: python") == 4
    if system:
        manifest = manifest.replace("language: python", "language: system")
    (dest / ".pre-commit-hooks.yaml").write_text(manifest)
    for args in (("init", "-q", "-b", "main"), ("add", "-A")):
        subprocess.run(["git", *args], cwd=dest, check=True, capture_output=True)
    subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "hooks"],
        cwd=dest,
        check=True,
        capture_output=True,
    )
    return dest


def _pre_commit_env(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """pre-commit's own home in a temp dir, this interpreter's `cassette` first on PATH."""
    return dict(
        os.environ,
        PRE_COMMIT_HOME=str(tmp_path_factory.mktemp("pre-commit-home")),
        PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
        HOME=str(repo),
        GIT_CONFIG_NOSYSTEM="1",
    )


def test_pre_commit_try_repo_runs_the_three_hooks(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    hooks = _hook_repo(tmp_path_factory.mktemp("hooks") / "cassette-hooks")
    plant("blob")
    git("add", "-A")
    env = _pre_commit_env(repo, tmp_path_factory)
    pre_commit = [sys.executable, "-m", "pre_commit", "try-repo", str(hooks)]
    run = subprocess.run(pre_commit, capture_output=True, text=True, env=env, cwd=repo)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "cassette-secrets" in out and "Failed" in out
    assert "openai-api-key" in out and "interactions[1].request.messages[1].content" in out
    assert OPENAI_KEY not in out
    # the status lines ("cassette verify (...)....Passed"), not the one-process hook's own output
    verify_line = next(
        line for line in out.splitlines() if line.startswith("cassette verify") and "..." in line
    )
    drift_line = next(
        line for line in out.splitlines() if line.startswith("cassette drift") and "..." in line
    )
    assert verify_line.endswith("Passed") and drift_line.endswith("Passed")
    assert f"{CASSETTE}: modified" in out, out  # the drift summary is shown (verbose hook)


def test_the_one_process_hook_runs_the_three_checks_on_the_names_pre_commit_passes(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    hooks = _hook_repo(tmp_path_factory.mktemp("hooks") / "cassette-hooks")
    env = _pre_commit_env(repo, tmp_path_factory)
    base = [sys.executable, "-m", "pre_commit", "try-repo", str(hooks), "cassette"]
    clean = subprocess.run([*base, "--all-files"], capture_output=True, text=True, env=env, cwd=repo)
    assert clean.returncode == 0, clean.stdout + clean.stderr  # every tracked file, all sound
    plant("blob")
    git("add", "-A")
    run = subprocess.run(base, capture_output=True, text=True, env=env, cwd=repo)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "openai-api-key" in out and "interactions[1].request.messages[1].content" in out
    assert OPENAI_KEY not in out
    assert f"{CASSETTE}: modified" in out  # and the drift summary, in the same process


def test_pre_commit_run_all_files_finds_a_key_already_committed(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """What CI and pre-commit.ci run: `--all-files` checks every tracked cassette, not the staged diff."""
    hooks = _hook_repo(tmp_path_factory.mktemp("hooks") / "cassette-hooks")
    where = plant("message")
    git("add", "-A")
    git("commit", "-q", "--no-verify", "-m", "a key slipped in")  # committed past the hook
    env = _pre_commit_env(repo, tmp_path_factory)
    base = [sys.executable, "-m", "pre_commit", "try-repo", str(hooks), "cassette-secrets"]
    staged = subprocess.run(base, capture_output=True, text=True, env=env, cwd=repo)
    assert staged.returncode == 0, staged.stdout + staged.stderr  # nothing staged: nothing to check
    run = subprocess.run([*base, "--all-files"], capture_output=True, text=True, env=env, cwd=repo)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "anthropic-api-key" in out and where in out and CASSETTE in out
    assert ANTHROPIC_KEY not in out
    # the CLI's own flag means the same
    cli = subprocess.run(
        [str(Path(sys.executable).parent / "cassette"), "scan", "--all-files"],
        capture_output=True,
        text=True,
        cwd=repo,
    )
    assert cli.returncode == 1 and where in cli.stdout and ANTHROPIC_KEY not in cli.stdout + cli.stderr


def test_a_staged_pending_or_failed_recording_is_refused_with_its_fix(repo: Path) -> None:
    from cassette.hooks.scan import render_text, scan_staged

    cassette_path = Path(CASSETTE)
    for kind in ("pending", "failed"):
        other = cassette_path.with_name(cassette_path.stem + f".{kind}.json")
        other.write_bytes(cassette_path.read_bytes())
    git("add", "-A")
    found = scan_staged(repo)
    rules = sorted((r.finding.rule, r.finding.file) for r in found)
    assert rules == [
        ("unreviewed-recording", "tests/cassettes/triage.failed.json"),
        ("unreviewed-recording", "tests/cassettes/triage.pending.json"),
    ]
    text = render_text(found, staged=True)
    assert (
        f"cassette accept {CASSETTE}" in text
        and "git rm --cached tests/cassettes/triage.pending.json" in text
    )


_NO_INDEX = ("NewConnectionError", "Temporary failure in name resolution", "No matching distribution")


def test_pre_commit_try_repo_installs_the_published_manifest_as_a_user_gets_it(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The manifest as shipped (``language: python``): pre-commit builds its own virtualenv,
    pip-installs this project into it from the package index, and the secrets hook stops the commit."""
    hooks = _hook_repo(tmp_path_factory.mktemp("hooks") / "cassette-hooks", system=False)
    plant("header")
    git("add", "-A")
    env = dict(
        os.environ,
        PRE_COMMIT_HOME=str(tmp_path_factory.mktemp("pre-commit-home")),
        HOME=str(repo),
        GIT_CONFIG_NOSYSTEM="1",
    )
    cmd = [sys.executable, "-m", "pre_commit", "try-repo", str(hooks), "cassette-secrets"]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=repo, timeout=900)
    out = run.stdout + run.stderr
    if run.returncode not in (0, 1) and any(s in out for s in _NO_INDEX):
        pytest.skip("pre-commit could not reach a package index to build the hook's environment")
    assert run.returncode == 1, out
    assert "cassette-secrets" in out and "Failed" in out
    assert "openai-api-key" in out and OPENAI_KEY not in out
    # the one-process hook's `python -m cassette.hooks` finds the environment's python and cassette
    one = subprocess.run(
        [*cmd[:-1], "cassette"], capture_output=True, text=True, env=env, cwd=repo, timeout=900
    )
    out = one.stdout + one.stderr
    assert one.returncode == 1 and "Failed" in out and "openai-api-key" in out, out
    assert OPENAI_KEY not in out and f"{CASSETTE}: modified" in out


def test_python_m_cassette_hooks_without_a_command_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from cassette.hooks.__main__ import main as hooks_main

    assert hooks_main([]) == 2
    assert "usage: python -m cassette.hooks pre-commit [FILES...] | textconv FILE" in capsys.readouterr().err


def test_payloads_in_a_store_configured_outside_the_cassette_dir_are_scanned(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`[tool.cassette] store` may put payloads anywhere; they are staged files like any other."""
    init_repo()
    with open("pyproject.toml", "a") as fh:
        fh.write('\n[tool.cassette]\nstore = "tests/payloads"\n')
    from cassette.config import clear_config_cache

    clear_config_cache()

    @cassette.tool
    def read_notes(name: str) -> str:
        return "a long note line\n" * 60

    with cassette.using(CASSETTE, mode="record"):
        read_notes("a")
    assert list(Path("tests/payloads").rglob("*")), "the long output went to the configured store"
    git("add", "-A")
    assert main(["scan", "--staged"]) == 0
    capsys.readouterr()

    store = BlobStore(Path("tests/payloads"))
    blob = store.put(("context line\n" * 40 + f"token={OPENAI_KEY}\n").encode())
    doc = _doc()
    doc["interactions"][0]["response"]["extra_notes"] = {"$blob": blob}
    _save(doc)
    git("add", "-A")
    assert main(["scan", "--staged"]) == 1
    out = capsys.readouterr().out
    assert "openai-api-key" in out and f"tests/payloads/{blob[:2]}/{blob[2:]}" in out
    assert CASSETTE in out and "interactions[0].response.extra_notes" in out  # named by the cassette
    assert OPENAI_KEY not in out


# --- the file names pre-commit passes, and --all-files ------------------------------------------------


def test_verify_takes_the_file_names_pre_commit_passes_and_all_files_checks_every_committed_cassette(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A committed cassette whose blob is gone from the index fails under --all-files, not under a
    commit that does not touch it; a staged cassette named by pre-commit is checked."""
    shutil.copy(CASSETTE, "tests/cassettes/other.json")
    doc = _doc()
    doc["interactions"][0]["request"]["messages"][0]["content"] = {"$blob": "ab" * 20}  # never stored
    Path("tests/cassettes/broken.json").write_text(json.dumps(doc, indent=2) + "\n")
    git("add", "-A")
    git("commit", "-q", "--no-verify", "-m", "a cassette with a dangling blob")
    capsys.readouterr()
    # nothing staged: the commit's own names (none) pass, every tracked cassette does not
    assert main(["verify", "--staged"]) == 0
    assert "verified 0 cassette(s)" in capsys.readouterr().out
    assert (
        main(["verify", "--staged", CASSETTE, "pyproject.toml"]) == 0
    )  # a file that is no cassette: skipped
    assert "verified 1 cassette(s)" in capsys.readouterr().out
    for args in (["--all-files"], ["--staged", CASSETTE, "tests/cassettes/broken.json"]):
        assert main(["verify", *args]) == 1
        err = capsys.readouterr().err
        assert "FAILED  tests/cassettes/broken.json" in err and "abababab" in err
        assert "other.json" not in err
    # deleting a blob-store file gets every cassette of the index checked, named or not
    blob = next(p for p in STORE.rglob("*") if p.is_file())
    git("rm", "-q", "--cached", str(blob))
    assert main(["verify", "--staged", "pyproject.toml"]) == 1
    err = capsys.readouterr().err
    assert "FAILED  tests/cassettes/broken.json" in err and "FAILED  tests/cassettes/other.json" in err


def test_drift_takes_the_file_names_and_says_in_one_line_when_none_differs(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    # `pre-commit run --all-files` with nothing staged: every tracked file, none changed
    names = [p for p in git("ls-files").stdout.splitlines()]
    assert main(["drift", "--staged", *names]) == 0
    out = capsys.readouterr().out
    said = "no staged cassette differs from HEAD among the {} file(s) given: no drift to summarise.\n"
    assert out == said.format(len(names))
    doc = _doc()
    doc["interactions"][0]["request"]["model"] = "gpt-4o"
    _save(doc)
    git("add", CASSETTE)
    assert main(["drift", "--staged", CASSETTE]) == 0
    named = capsys.readouterr().out
    assert named.startswith(f"{CASSETTE}: modified") and "request" in named
    assert main(["drift", "--staged"]) == 0
    assert capsys.readouterr().out == named  # the names pre-commit passes give what the index gives


def test_staged_changes_agree_with_the_index_and_head_readers(repo: Path) -> None:
    from cassette.git.repo import head_entries, staged_changes
    from cassette.git.snapshot import head_file, open_repo

    doc = _doc()
    doc["interactions"][0]["request"]["model"] = "gpt-4o"
    _save(doc)
    Path("tests/cassettes/new.json").write_text("{}")
    blob = next(p for p in STORE.rglob("*") if p.is_file())
    git("add", "-A")
    git("rm", "-q", "--cached", str(blob))
    git_repo = open_repo()
    changed, deleted = staged_changes(git_repo)
    assert [(f.path, f.change) for f in changed] == [
        ("tests/cassettes/new.json", "add"),
        (CASSETTE, "modify"),
    ]
    assert deleted == [blob.as_posix()]
    assert CASSETTE in head_entries(git_repo) and "tests/cassettes/new.json" not in head_entries(git_repo)
    fresh = open_repo()
    assert head_file(fresh, CASSETTE) == head_entries(fresh)[CASSETTE]
    assert head_file(fresh, "tests/cassettes/new.json") is None and head_file(fresh, "tests") is None


def test_entry_points_are_read_only_when_a_package_declares_a_cassette_plugin(tmp_path: Path) -> None:
    from cassette.plugins.manager import may_have_entry_points

    site = tmp_path / "site"
    (site / "other-1.0.dist-info").mkdir(parents=True)
    (site / "other-1.0.dist-info" / "entry_points.txt").write_text("[console_scripts]\nother = other:main\n")
    (site / "plain-1.0.dist-info").mkdir()  # no entry points at all
    assert may_have_entry_points([str(site), str(tmp_path / "missing")]) is False
    (site / "acme-1.0.dist-info").mkdir()
    (site / "acme-1.0.dist-info" / "entry_points.txt").write_text(
        "[pytest11]\nx = y\n\n[cassette]\nacme = acme\n"
    )
    assert may_have_entry_points([str(site)]) is True
    wheel = tmp_path / "plugins.zip"  # a zip on the path: only importlib.metadata can look inside
    wheel.write_bytes(b"PK")
    assert may_have_entry_points([str(wheel)]) is True
