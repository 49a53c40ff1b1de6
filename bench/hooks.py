"""Workload 8: the three pre-commit hooks on a repository of 10,000 cassettes with one changed.

A real git repository (built once with the ``git`` binary, kept under the bench
workdir for the rounds) holds 10,000 committed cassettes of one LLM call each
(the example agent's cassettes with a different order id per file) and their
``.blobs/`` store; one cassette is then re-recorded (its answer changed) and
staged. Each hook runs as its own process, the way pre-commit starts it, with
the file name pre-commit passes (``cassette scan --staged <file>``,
``cassette verify --staged <file>``, ``cassette drift --staged <file>``), so
start-up and imports count: what a commit costs is the sum of the three, wall
time (information: the ``cassette init --separate-hooks`` layout). The one-process
hook ``cassette`` (``python -m cassette.hooks pre-commit <file>``), what ``cassette
init`` writes, runs the three checks at once; the target, all three checks together
≤ 0.35 s, is on its row. The floor is measured beside them: the
interpreter alone (``python -c pass``) and with dulwich imported, times three.
The hook processes may write ``.pyc`` files (``PYTHONDONTWRITEBYTECODE`` is
dropped), as an installed package has them.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench._harness import REPO, BenchConfig, Row, Section, Target, median

SOURCE = REPO / "examples" / "support_agent" / "cassettes"
CHANGED = "tests/cassettes/case_00042.json"
HOOKS = {
    "cassette-secrets": ["scan", "--staged", CHANGED],
    "cassette-verify": ["verify", "--staged", CHANGED],
    "cassette-drift": ["drift", "--staged", CHANGED],
}
# the three checks in one process: the `cassette` hook of .pre-commit-hooks.yaml
ONE_PROCESS = [sys.executable, "-m", "cassette.hooks", "pre-commit", CHANGED]
FLOOR = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "python -c 'import dulwich.repo'": [sys.executable, "-c", "import dulwich.repo"],
}


def _git(root: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    }
    subprocess.run(["git", "-C", str(root), *args], check=True, env=env, stdout=subprocess.DEVNULL)


def make_repo(root: Path, count: int) -> None:
    """``count`` committed cassettes under ``root/tests/cassettes`` (and their blobs), one staged change."""
    if (root / ".git").is_dir() and (root / CHANGED).exists():
        return  # built by an earlier round or workload of this run
    shutil.rmtree(root, ignore_errors=True)
    folder = root / "tests" / "cassettes"
    folder.mkdir(parents=True)
    (root / "pyproject.toml").write_text('[tool.cassette]\ncassette_dir = "tests/cassettes"\n')
    if (SOURCE / ".blobs").is_dir():
        shutil.copytree(SOURCE / ".blobs", folder / ".blobs")
    templates = sorted(p.read_text(encoding="utf-8") for p in SOURCE.glob("*.json"))
    for n in range(count):
        text = templates[n % len(templates)]
        # a different order id per file, so no two cassettes are the same blob
        text = text.replace("A1001", f"A{n:05d}").replace("B2002", f"B{n:05d}").replace("Z9999", f"Z{n:05d}")
        (folder / f"case_{n:05d}.json").write_text(text, encoding="utf-8")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "cassettes")
    changed = root / CHANGED
    doc = json.loads(changed.read_text(encoding="utf-8"))
    _reword(doc)
    changed.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    _git(root, "add", CHANGED)


def _reword(value: object) -> bool:
    """Change the first assistant answer found in ``value`` (a re-recording that answered differently)."""
    if isinstance(value, dict):
        content = value.get("content")
        if value.get("role") == "assistant" and isinstance(content, str) and content:
            value["content"] = content + " Is there anything else I can help with?"
            return True
        return any(_reword(v) for v in value.values())
    if isinstance(value, list):
        return any(_reword(v) for v in value)
    return False


def _command() -> list[str]:
    """How pre-commit starts ``cassette``: the console script beside this interpreter, else its code."""
    script = Path(sys.executable).with_name("cassette")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from cassette.cli import main; sys.exit(main())"]


def _time(root: Path, argv: list[str], *, command: list[str] | None = None) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system of the child) and exit code of one hook process
    (``argv`` after the ``cassette`` command, or ``command`` whole)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # an installed package has its .pyc files: let the hook processes write and read them
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CASSETTE_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env["PYTHONPATH"] = str(REPO)  # this checkout's cassette, whatever the venv installed
    started = time.perf_counter()
    proc = subprocess.run(
        command or [*_command(), *argv], cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1):
        raise RuntimeError(
            f"cassette {' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode()[-500:]}"
        )
    return wall, cpu, proc.returncode


def _import_seconds(root: Path) -> float:
    """Wall seconds of ``python -c 'import cassette'`` (start-up included), for the context line."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import cassette"], cwd=root, env=env, check=True)
    return time.perf_counter() - started


def run(cfg: BenchConfig) -> Section:
    section = Section("hooks", "8. Pre-commit hooks on a large repository")
    count = cfg.size(10_000, 1_000)
    root = cfg.scratch("hooks") / "repo"
    started = time.perf_counter()
    make_repo(root, count)
    built = time.perf_counter() - started
    rounds = max(cfg.rounds, cfg.size(5, 2))
    for argv in HOOKS.values():  # warm the file cache and the .pyc files
        _time(root, argv)
    _time(root, [], command=ONE_PROCESS)
    per_hook: dict[str, list[float]] = {name: [] for name in HOOKS}
    cpu_hook: dict[str, list[float]] = {name: [] for name in HOOKS}
    totals: list[float] = []
    cpu_totals: list[float] = []
    codes: dict[str, int] = {}
    one: list[tuple[float, float]] = []
    floor: dict[str, list[tuple[float, float]]] = {name: [] for name in FLOOR}
    for _ in range(rounds):
        total = cpu_total = 0.0
        for name, argv in HOOKS.items():
            wall, cpu, codes[name] = _time(root, argv)
            per_hook[name].append(wall)
            cpu_hook[name].append(cpu)
            total += wall
            cpu_total += cpu
        totals.append(total)
        cpu_totals.append(cpu_total)
        wall, cpu, codes["cassette (one process)"] = _time(root, [], command=ONE_PROCESS)
        one.append((wall, cpu))
        for name, command in FLOOR.items():
            wall, cpu, _ = _time(root, [], command=command)
            floor[name].append((wall, cpu))
    imports = median([_import_seconds(root) for _ in range(rounds)])
    section.lines.append(
        f"repository: {count:,} committed cassettes (one LLM call each) and their blobs, one re-recorded "
        f"cassette staged (built with git in {built:.1f} s); each hook run as its own process, the median "
        f"of {rounds} rounds; `python -c 'import cassette'` alone: {imports:.3f} s wall"
    )
    section.lines.append("exit codes: " + ", ".join(f"{name} {code}" for name, code in codes.items()))
    section.lines.append(
        "the floor, per process (wall / CPU, median): "
        + ", ".join(
            f"`{name}` {median([w for w, _ in v]):.3f} / {median([c for _, c in v]):.3f} s"
            for name, v in floor.items()
        )
        + "; three hook processes pay it three times"
    )
    for name, argv in HOOKS.items():
        section.rows.append(
            Row(
                f"{name} (`cassette {' '.join(argv[:2])}`)",
                "s",
                median(per_hook[name]),
                note=f"wall; CPU {median(cpu_hook[name]):.3f} s",
            )
        )
    section.rows.append(
        Row(
            f"all three hooks, one commit, {count:,} cassettes",
            "s",
            median(totals),
            # information: the `cassette init --separate-hooks` layout, three interpreter start-ups
            note=f"wall, whole processes; CPU {median(cpu_totals):.3f} s; the `cassette init "
            "--separate-hooks` layout",
        )
    )
    section.rows.append(
        Row(
            f"the one-process hook `cassette` (`python -m cassette.hooks pre-commit`), {count:,} cassettes",
            "s",
            median([w for w, _ in one]),
            # the "all three hooks together <= 0.35 s", on what `cassette init` writes
            target=Target("<=", 0.35, on="ours"),
            note=f"wall; CPU {median([c for _, c in one]):.3f} s; what `cassette init` writes",
        )
    )
    return section
