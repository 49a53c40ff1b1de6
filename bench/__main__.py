"""``python -m bench``: every workload, side by side with the peers, into docs/benchmarks.md.

Options::

    python -m bench              full run in .bench-venv/ (created on first use), writes docs/benchmarks.md
    python -m bench --quick      every workload at a small size, prints the table only
    python -m bench --no-venv    run in this interpreter (peers that are missing say "not installed")
    python -m bench --only replay,load
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

from bench import _report, _venv
from bench._harness import REPO, BenchConfig, Section

WORKLOADS = ["replay", "load", "storage", "scan", "plugin", "semantic", "memory", "hooks"]
MODULES = {
    "replay": "bench.replay",
    "load": "bench.loading",
    "storage": "bench.storage",
    "scan": "bench.scan",
    "plugin": "bench.plugin",
    "semantic": "bench.semantic",
    "memory": "bench.memory",
    "hooks": "bench.hooks",
}


def run_workload(name: str, cfg: BenchConfig) -> Section:
    """Run one workload; a crash becomes a section that says so instead of ending the bench."""
    import importlib

    started = time.perf_counter()
    try:
        section: Section = importlib.import_module(MODULES[name]).run(cfg)
    except Exception as exc:
        section = Section(name, name, error=f"{type(exc).__name__}: {exc}")
        traceback.print_exc()
    section.seconds = time.perf_counter() - started
    return section


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test), no docs written")
    parser.add_argument("--no-venv", action="store_true", help="run here instead of in .bench-venv/")
    parser.add_argument("--only", default="", help=f"comma-separated subset of {','.join(WORKLOADS)}")
    parser.add_argument(
        "--out", default=None, help="markdown output (default docs/benchmarks.md; quick: none)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds whose median is reported (default 3)")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile runs of our side")
    args = parser.parse_args(args_list)
    if not args.no_venv and not _venv.inside():
        _venv.reexec(args_list)  # does not return
    names = [n.strip() for n in args.only.split(",") if n.strip()] or WORKLOADS
    unknown = [n for n in names if n not in MODULES]
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    for var in [v for v in os.environ if v.startswith("CASSETTE_")]:
        del os.environ[var]  # the bench chooses its modes itself
    workdir = Path(tempfile.mkdtemp(prefix="cassette-bench-"))
    # no pyproject.toml above the scratch directory: [tool.cassette] of a checkout cannot leak in
    os.chdir(workdir)
    cfg = BenchConfig(quick=args.quick, workdir=workdir, rounds=args.rounds, profile=not args.no_profile)
    started = time.perf_counter()
    sections: list[Section] = []
    try:
        for name in names:
            print(f"bench: {name} ...", flush=True)
            section = run_workload(name, cfg)
            sections.append(section)
            print(_report.console([section]), flush=True)
    finally:
        os.chdir(REPO)
        shutil.rmtree(workdir, ignore_errors=True)
    seconds = time.perf_counter() - started
    print(f"\nbench: done in {seconds:.0f} s", flush=True)
    print(_report.console(sections))
    out = args.out if args.out is not None else (None if args.quick else str(REPO / "docs" / "benchmarks.md"))
    if out:
        command = "python -m bench" + (" " + " ".join(args_list) if args_list else "")
        Path(out).write_text(_report.markdown(sections, command, seconds, args.quick), encoding="utf-8")
        print(f"bench: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
