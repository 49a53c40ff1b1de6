"""The network guard's policies for a run and for each test (the guard itself is `cassette.seam.netguard`)."""

from __future__ import annotations

import atexit
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from cassette.config import Config, env_mode, host_pattern_problem
from cassette.errors import NetworkBlockedError
from cassette.plugins.manager import get_plugin_manager
from cassette.pytest_plugin.state import RunState
from cassette.seam.netguard import NetworkPolicy, guard_run, take_blocked_outside


def check_allow_hosts(config: pytest.Config) -> None:
    """Refuse a ``--cassette-allow-host`` that could never match, before any test runs."""
    for host in config.getoption("cassette_allow_host") or ():
        problem = host_pattern_problem(host)
        if problem is not None:
            raise pytest.UsageError(
                f"cassette: --cassette-allow-host={host} {problem}; it would never match. Use a host "
                "name, a pattern (*.internal), an IP or a CIDR network."
            )


def run_guard(cfg: Config, config: pytest.Config) -> NetworkPolicy | None:
    """The run's guard policy (armed while any session replays), or ``None`` when it is off."""
    if not cfg.network_guard or config.getoption("cassette_no_network_guard"):
        return None
    return NetworkPolicy(
        allow_loopback=not config.getoption("cassette_block_loopback"),
        allow_hosts=(*cfg.allow_hosts, *config.getoption("cassette_allow_host")),
    )


def item_guard(state: RunState, options: dict[str, Any], path: Path) -> NetworkPolicy | None:
    if options.get("network_guard") is False:
        return None
    base = state.guard
    if base is None and options.get("network_guard") is not True:
        return None
    hosts = options.get("allow_hosts") or ()
    if isinstance(hosts, str):
        hosts = (hosts,)
    block_loopback = options.get("block_loopback")
    allow_loopback = base.allow_loopback if base is not None else True
    if block_loopback is not None:
        allow_loopback = not block_loopback
    return NetworkPolicy(
        allow_loopback=allow_loopback,
        allow_hosts=(*(base.allow_hosts if base else ()), *hosts),
        reason=f"replaying cassette {path}",
    )


def replay_origin(flag: str | None) -> str | None:
    """What makes every session of the run replay (the flag or ``CASSETTE_MODE``), or ``None``."""
    if flag is not None:
        return "--cassette-mode=replay" if flag == "replay" else None
    return "CASSETTE_MODE=replay" if (env_mode() or "").strip().lower() == "replay" else None


def run_wide_policy(allow_loopback: bool, allow_hosts: tuple[str, ...], why: str) -> NetworkPolicy:
    """The guard for the whole of a replaying run: between tests and at exit too.

    Libraries' own traffic after the last replay block (a trace exporter at exit, a price list
    fetched at import) then fails at once, before any DNS query, and the message says how to turn
    it off (the plugins' ``cassette_network_hint``).
    """
    hooks = get_plugin_manager().hook

    def hint(host: str, packages: tuple[str, ...]) -> str | None:
        try:
            said = hooks.cassette_network_hint(host=host, packages=list(packages))
        except Exception:  # a broken plugin must not turn a blocked connection into another error
            return None
        return said if isinstance(said, str) else None

    return NetworkPolicy(
        allow_loopback=allow_loopback,
        allow_hosts=allow_hosts,
        reason=f"the run replays ({why}) and no cassette session is active",
        hint=hint,
    )


def arm_run_guard(state: RunState, early: NetworkPolicy | None, previous: NetworkPolicy | None) -> None:
    """Arm the run-wide guard if every session replays; ``early``/``previous``: what the early hook
    armed (before the first conftest) and what that replaced."""
    why = replay_origin(state.mode_flag)
    if why is None or state.guard is None:
        if early is not None:
            guard_run(previous)
        return
    state.run_policy = run_wide_policy(state.guard.allow_loopback, state.guard.allow_hosts, why)
    replaced = guard_run(state.run_policy)
    state.previous_run_policy = previous if early is not None else replaced


def collect_outside(state: RunState) -> None:
    """Take what the run-wide guard blocked so far (the summary lists it)."""
    if state.run_policy is not None:
        state.outside.extend(
            line for line in outside_lines(take_blocked_outside()) if line not in state.outside
        )


def end_run_guard(state: RunState) -> None:
    """At the run's end: the guard stays armed for the exit (what it blocks then is printed by the
    exit report), unless an enclosing run's (an in-process pytest run's) policy is to be restored."""
    if state.run_policy is None:
        return
    if state.previous_run_policy is not None:
        guard_run(state.previous_run_policy)


_exit_report = threading.Event()  # set once the exit report is registered in this process


def register_exit_report() -> None:
    """Print, at interpreter exit, what the run-wide guard blocked after the summary (to stderr).

    Called before the first conftest or test module is imported, so it runs after the exit
    handlers those register (atexit runs the last registered first).
    """
    if not _exit_report.is_set():
        _exit_report.set()
        atexit.register(_report_at_exit)


def _report_at_exit() -> None:
    late = take_blocked_outside()
    if late:
        sys.stderr.write(
            "cassette: the network guard blocked, at exit, after the last replay block:\n"
            + "".join(f"  {line}\n" for line in outside_lines(late))
        )


def outside_lines(blocked: list[NetworkBlockedError]) -> list[str]:
    """One line per blocked host: what was blocked and, where a plugin knows, the switch that turns it off."""
    seen: dict[str, str] = {}
    for error in blocked:
        seen.setdefault(error.host, f"{error.host}: {error.hint or str(error)[:240]}")
    return list(seen.values())
