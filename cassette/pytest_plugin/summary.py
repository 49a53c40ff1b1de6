"""The run's end: orphan cassettes (whole-suite runs only) and the ``cassette`` section of the summary."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from cassette.core.paths import resolve_path
from cassette.maintenance.hygiene import find_orphans
from cassette.pytest_plugin.naming import shown_path
from cassette.pytest_plugin.state import RunState
from cassette.seam.session import RunStats, failed_path


def check_orphans(session: pytest.Session, state: RunState) -> None:
    """List the cassette files no collected test uses; fail the run if ``--cassette-orphans=fail``."""
    if state.orphans == "off":
        return
    state.orphan_skip = partial_run(session, state)
    if state.orphan_skip is None:
        used = state.claimed | state.stats.cassettes_used
        state.orphan_list = find_orphans(state.config.cassette_root(), used)
        if state.orphan_list and state.orphans == "fail" and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def partial_run(session: pytest.Session, state: RunState) -> str | None:
    """Why this run is not the whole suite (orphans cannot be judged), or ``None``."""
    config = session.config
    if config.option.keyword:
        return "-k selected part of the suite"
    if config.option.markexpr:
        return "-m selected part of the suite"
    if state.deselected:
        return f"{state.deselected} test(s) were deselected"
    if state.collect_errors:
        return "collection had errors"
    if session.shouldfail or session.shouldstop:
        return "the run stopped early"
    if config.getoption("lf", False) or config.getoption("stepwise", False):
        return "--lf/--sw ran part of the suite"
    if any("::" in str(arg) for arg in config.args):
        return "node ids selected part of the suite"
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        root = state.config.cassette_root()
        dirs = [resolve_path(Path(config.invocation_params.dir, str(a))) for a in config.args]
        if not any(d.is_dir() and (root == d or d in root.parents) for d in dirs):
            return "the paths given do not contain the cassette directory"
    return None


def write_summary(terminalreporter: Any, config: pytest.Config, state: RunState) -> None:
    lines = summary_lines(state, verbose=config.get_verbosity() > 0)
    if config.get_verbosity() <= -2:  # -qq: only what needs action (drift, expired, orphans found)
        lines = [(line, markup) for line, markup in lines if any(markup.values())]
    if not lines:
        return
    terminalreporter.section("cassette", sep="-")
    for line, markup in lines:
        terminalreporter.line(line, **markup)


def _calls(counts: dict[str, int]) -> str:
    names = {"llm": "LLM", "tool": "tool", "http": "HTTP"}
    order = [*names, *sorted(set(counts) - set(names))]
    parts = [f"{counts[k]} {names.get(k, k)}" for k in order if counts.get(k)]
    return ", ".join(parts) + " calls" if parts else "no calls"


def _failed_kept(stats: RunStats) -> int:
    """The ``*.failed.json`` files the run's failed recordings left on disk.

    A test that skipped or whose fixture failed before any call leaves none (its empty recording is
    removed), nor does a failed recording that a later one of the same cassette replaced.
    """
    kept = {failed_path(Path(p)) for p in stats.files.get("failed", ())}
    return sum(1 for p in kept if p.is_file())


# How many paths a summary line lists before it counts the rest.
SHOWN_PATHS = 10


def _listed(
    paths: list[str], markup: dict[str, bool], more: str, prefix: str = "  ", *, every: bool = False
) -> list[tuple[str, dict[str, bool]]]:
    """The first `SHOWN_PATHS` of ``paths`` (``every``: all), one a line, then how many more and
    what lists them."""
    out = [(f"{prefix}{p}", markup) for p in (paths if every else paths[:SHOWN_PATHS])]
    if len(paths) > len(out):
        out.append((f"{prefix}… and {len(paths) - SHOWN_PATHS} more ({more})", markup))
    return out


def summary_lines(state: RunState, *, verbose: bool = False) -> list[tuple[str, dict[str, bool]]]:
    """The terminal summary: one line per category that happened (plus the files a reader must act
    on, relative to the project root, the first `SHOWN_PATHS` of each list); ``verbose`` also says
    why orphans were not checked."""
    s = state.stats
    shown = functools.partial(shown_path, cfg=state.config)
    out: list[tuple[str, dict[str, bool]]] = []
    kept = _failed_kept(s)
    # files, not tests: the tests sharing a cassette count it once
    replayed = s.cassettes("replayed")
    if replayed:
        out.append((f"replayed: {replayed} cassette(s), {_calls(s.served)} served", {}))
    if state.missed:
        out.append(
            (
                f"missed: {len(state.missed)} test(s) failed on a call their cassette holds no "
                "recording of (see the failures above)",
                {"red": True},
            )
        )
    recorded = s.cassettes("recorded") if s.recorded else 0
    if recorded or kept:
        failed = f" (and {kept} failed recording(s) kept in *.failed.json)" if kept else ""
        out.append((f"recorded: {recorded} cassette(s){failed}, {_calls(s.recorded_calls)} made live", {}))
    rerecorded = s.cassettes("rerecorded") if s.rerecorded else 0
    if rerecorded:
        drift = f", {s.drifted} with drift" if s.drifted else ", no drift"
        hint = " (review: cassette drift; keep: cassette accept)"
        out.append((f"re-recorded: {rerecorded} cassette(s){drift}{hint}", {"yellow": bool(s.drifted)}))
    if s.tokens_saved:
        out.append((f"tokens not spent: {s.tokens_saved:,} (recorded usage of replayed calls)", {}))
    drifted = sorted(shown(Path(p)) for p in state.drifted)
    out += _listed(
        drifted, {"yellow": True}, "`cassette drift --pending --all` lists them", "  drifted: ", every=verbose
    )
    if state.expired:
        out.append(
            (
                f"expired: {len(state.expired)} cassette(s) older than max_age = {state.config.max_age}",
                {"yellow": True},
            )
        )
        aged = [f"{shown(Path(p))} ({age})" for p, age in sorted(state.expired.items())]
        out += _listed(aged, {"yellow": True}, "`pytest -v` lists them all", every=verbose)
    if state.outside:
        out.append(
            (
                f"blocked outside tests: {len(state.outside)} host(s) the run-wide network guard "
                "stopped outside replay blocks (the run replays: nothing may go live):",
                {"yellow": True},
            )
        )
        for line in state.outside:
            out.append((f"  {line}", {"yellow": True}))
    if state.orphans != "off":
        if state.orphan_skip:
            if verbose:  # a targeted run never checks them: said only when asked
                out.append((f"orphans: not checked ({state.orphan_skip})", {}))
        elif state.orphan_list:
            red = state.orphans == "fail"
            out.append(
                (
                    f"orphans: {len(state.orphan_list)} cassette file(s) under "
                    f"{shown(state.config.cassette_root())} that no collected test uses "
                    "(delete them, then `cassette gc --apply`):",
                    {"red": red, "yellow": not red},
                )
            )
            orphans = [shown(p) for p in state.orphan_list]
            out += _listed(
                orphans, {"red": red, "yellow": not red}, "`pytest -v` lists them all", every=verbose
            )
        else:
            out.append(("orphans: none", {}))
    return out
