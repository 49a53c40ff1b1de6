"""What every workload shares: its configuration, result rows with targets, timers, peer look-up."""

from __future__ import annotations

import cProfile
import gc
import importlib
import io
import pstats
import re
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]

NOT_INSTALLED = "not installed"


@dataclass
class BenchConfig:
    """How big to run and where to put scratch files."""

    quick: bool
    workdir: Path
    rounds: int = 3  # repetitions whose median is reported
    profile: bool = True

    def size(self, full: Any, quick: Any) -> Any:
        return quick if self.quick else full

    def scratch(self, name: str) -> Path:
        path = self.workdir / name
        path.mkdir(parents=True, exist_ok=True)
        return path


@dataclass(frozen=True)
class Target:
    """A goal on a row: on the ratio ours/theirs (``on="ratio"``) or on our absolute value."""

    op: str  # "<=", "<", ">=", ">", "=="
    value: float
    on: str = "ratio"

    def met(self, ours: float | None, ratio: float | None) -> bool | None:
        x = ratio if self.on == "ratio" else ours
        if x is None:
            return None
        return {
            "<=": x <= self.value,
            "<": x < self.value,
            ">=": x >= self.value,
            ">": x > self.value,
            "==": x == self.value,
        }[self.op]

    def text(self, unit: str = "") -> str:
        op = {"<=": "≤", ">=": "≥"}.get(self.op, self.op)
        if self.on == "ratio":
            return f"{op} {self.value:g}×"
        return f"{op} {self.value:g}{(' ' + unit) if unit else ''}"


@dataclass
class Row:
    """One line of the results table: our number, a peer's number, their ratio, and the goal."""

    metric: str
    unit: str
    ours: float | None
    peer: str = ""
    theirs: float | None = None
    status: str = ""  # why `theirs` is missing ("not installed", "failed: ...")
    target: Target | None = None
    note: str = ""
    show_ratio: bool = True  # False where ours/theirs means nothing (a recall, a count of false positives)
    # ours and theirs timed side by side in each round: the median of the per-round ratios, each
    # taken over the same moments of the machine (the ratio of the two medians mixes rounds)
    paired: float | None = None

    @property
    def ratio(self) -> float | None:
        if not self.show_ratio or self.ours is None or self.theirs is None or self.theirs == 0:
            return None
        if self.paired is not None:
            return self.paired
        return self.ours / self.theirs

    @property
    def verdict(self) -> str:
        if self.target is None:
            return "—"
        if self.target.on == "ratio" and self.theirs is None:
            return self.status or "n/a"
        met = self.target.met(self.ours, self.ratio)
        if met is None:
            return self.status or "n/a"
        return "met" if met else "MISSED"


@dataclass
class Section:
    """The outcome of one workload: rows, context lines, and our profile when one was taken."""

    key: str
    title: str
    rows: list[Row] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    profile: str = ""
    seconds: float = 0.0
    error: str = ""


def median(values: list[float]) -> float:
    return statistics.median(values)


@dataclass
class Timing:
    """CPU and wall seconds of one timed block."""

    cpu: float = 0.0
    wall: float = 0.0


@contextmanager
def timed() -> Iterator[Timing]:
    """Time a block by this process's CPU time (immune to other load on a shared machine) and wall time."""
    gc.collect()
    t = Timing()
    c0, w0 = time.process_time(), time.perf_counter()
    try:
        yield t
    finally:
        t.cpu = time.process_time() - c0
        t.wall = time.perf_counter() - w0


def profile_text(fn: Callable[[], Any], *, limit: int = 14) -> str:
    """Run ``fn`` under cProfile: the top ``limit`` functions by own time, then ours by cumulative time."""
    prof = cProfile.Profile()
    prof.enable()
    try:
        fn()
    finally:
        prof.disable()
    return stats_text(pstats.Stats(prof), limit=limit)


def stats_text(
    stats: pstats.Stats, *, limit: int = 14, ours: str = "", label: str = "our code (cassette/)"
) -> str:
    """The top ``limit`` functions of a profile by own time, then ours (a path regex) by cumulative time."""
    total = stats.total_tt  # type: ignore[attr-defined]
    parts = [f"total {total:.3f} s under cProfile; top {limit} by own time:"]
    parts.append(_table(stats, "tottime", limit))
    parts.append(f"{label} by cumulative time:")
    parts.append(_table(stats, "cumulative", 10, ours or re.escape(str(REPO / "cassette") + "/")))
    return "\n".join(parts)


def _table(stats: pstats.Stats, sort: str, limit: int, restrict: str | None = None) -> str:
    out = io.StringIO()
    stats.stream = out  # type: ignore[attr-defined]
    stats.sort_stats(sort)
    if restrict:
        stats.print_stats(restrict, limit)
    else:
        stats.print_stats(limit)
    lines = out.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
    return "\n".join(_shorten(line) for line in lines[start:] if line.strip())


def _shorten(line: str) -> str:
    line = line.replace(str(REPO) + "/", "")
    return re.sub(r"\S*/(?:site-packages|lib/python3\.\d+)/", "", line)


def peer(module: str) -> ModuleType | None:
    """The peer's module, or ``None`` when it is not installed here."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def label(dist: str) -> str:
    v = version(dist)
    return f"{dist} {v}" if v else dist


def tree_bytes(*paths: Path) -> int:
    """Bytes in the files under ``paths`` (file sizes, not disk blocks)."""
    total = 0
    for root in paths:
        if root.is_file():
            total += root.stat().st_size
        elif root.is_dir():
            total += sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    return total
