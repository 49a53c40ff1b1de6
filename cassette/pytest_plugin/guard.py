"""The network guard's policies for a run and for each test (the guard itself is `cassette.seam.netguard`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cassette.config import Config
from cassette.pytest_plugin.state import RunState
from cassette.seam.netguard import NetworkPolicy, host_pattern_problem


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
