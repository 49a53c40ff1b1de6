"""What the plugin knows about one pytest run, kept in the config's stash (merged from xdist workers)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cassette.config import Config
from cassette.seam.netguard import NetworkPolicy
from cassette.seam.session import RunStats, run_stats


@dataclass
class RunState:
    """What the plugin knows about this run (on the xdist controller: merged from every worker)."""

    config: Config
    guard: NetworkPolicy | None
    orphans: str
    max_age: float | None
    mode_flag: str | None
    ci: str | None = None  # the CI variable that made replay the run's default mode
    placeholders: list[str] = field(default_factory=list)  # placeholder credentials this run set
    saved_env_mode: str | None = None
    previous_guard: NetworkPolicy | None = None
    run_policy: NetworkPolicy | None = None  # the run-wide guard (a replaying run), if armed
    previous_run_policy: NetworkPolicy | None = None
    # what the run-wide guard blocked outside any session: one line per host, with its switch off
    outside: list[str] = field(default_factory=list)
    saved_stats: dict[str, Any] | None = None
    stats: RunStats = field(default_factory=RunStats)
    claimed: set[str] = field(default_factory=set)  # cassettes of collected tests, run or not
    collected: set[str] = field(default_factory=set)  # node ids of every collected test, run or not
    # cassette -> the ids of the collected tests using it (those of more than one are shared)
    users: dict[str, set[str]] = field(default_factory=dict)
    drifted: set[str] = field(default_factory=set)
    # the tests that failed after a replay of theirs met a call its cassette holds no recording of
    # (a test expecting a miss, `pytest.raises(CassetteMiss)`, passes and is not one)
    missed: set[str] = field(default_factory=set)
    expired: dict[str, str] = field(default_factory=dict)  # path -> age text
    deselected: int = 0
    collect_errors: bool = False
    orphan_list: list[Path] = field(default_factory=list)
    orphan_skip: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "stats": self.stats.to_json(),
            "claimed": sorted(self.claimed),
            "drifted": sorted(self.drifted),
            "missed": sorted(self.missed),
            "expired": dict(self.expired),
            "deselected": self.deselected,
            "collect_errors": self.collect_errors,
            "outside": self.outside,
        }

    def merge(self, data: dict[str, Any]) -> None:
        self.stats.merge(data["stats"])
        self.claimed.update(data["claimed"])
        self.drifted.update(data["drifted"])
        self.missed.update(data.get("missed", ()))
        self.expired.update(data["expired"])
        self.deselected += data["deselected"]
        self.collect_errors = self.collect_errors or data["collect_errors"]
        self.outside.extend(line for line in data["outside"] if line not in self.outside)


STATE = pytest.StashKey[RunState]()

WORKEROUTPUT_KEY = "cassette"  # where an xdist worker hands its RunState to the controller


def begin_counting(state: RunState) -> None:
    """Start this run's counts from zero (``run_stats`` is process-wide)."""
    # an in-process pytest run (pytester) must count only its own sessions
    state.saved_stats = run_stats.to_json()
    run_stats.__init__()  # type: ignore[misc]


def finish_counting(state: RunState, config: pytest.Config) -> bool:
    """Take this run's counts into ``state``; on an xdist worker hand them to the controller.

    Returns ``True`` on a worker (the controller reports for everyone).
    """
    mine = run_stats.to_json()
    run_stats.__init__()  # type: ignore[misc]
    if state.saved_stats is not None:
        # the counts as the enclosing run left them: a pytester run inside a test is its own run,
        # and its replays (and misses) must not show in the enclosing run's summary
        run_stats.merge(state.saved_stats)
    state.stats.merge(mine)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is None:
        return False
    workeroutput[WORKEROUTPUT_KEY] = state.to_json()
    return True


MISSES_BEFORE = pytest.StashKey[int]()  # the run's replay misses when a test's call phase began


def note_misses(item: pytest.Item, report: pytest.TestReport) -> None:
    """At a test's call report: a failed test whose replays missed counts among the run's misses."""
    before = item.stash.get(MISSES_BEFORE, None)
    state = item.config.stash.get(STATE, None)
    if state is not None and before is not None and report.failed and run_stats.missed > before:
        state.missed.add(item.nodeid)


def merge_worker(node: Any) -> None:
    """xdist controller: merge what a worker counted."""
    data = getattr(node, "workeroutput", {}).get(WORKEROUTPUT_KEY)
    state = node.config.stash.get(STATE, None)
    if data and state is not None:
        state.merge(data)
