"""Command-line options, ``[tool.cassette]`` and the run's mode: read once at configure time.

Mode precedence: ``--cassette-mode`` > ``CASSETTE_MODE`` > the marker's ``mode`` >
``[tool.cassette] mode`` > the default: ``replay`` on CI (`ci_environment`), else ``auto``. The
flag sets ``CASSETTE_MODE`` for the run, so it also governs ``cassette.use``/``cassette.using``
inside tests and reaches xdist workers.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field

import pytest

from cassette.config import MODES, Config, clear_config_cache, env_mode, find_pyproject, parse_config, replace
from cassette.core.paths import resolve_path
from cassette.errors import CassetteConfigError
from cassette.maintenance.hygiene import parse_age
from cassette.plugins.manager import new_plugin_manager, reset_plugin_manager
from cassette.pytest_plugin import credentials
from cassette.pytest_plugin.guard import (
    arm_run_guard,
    check_allow_hosts,
    end_run_guard,
    register_exit_report,
    replay_origin,
    run_guard,
    run_wide_policy,
)
from cassette.pytest_plugin.state import RunState
from cassette.seam.netguard import NetworkPolicy, guard_replay, guard_run
from cassette.seam.session import parse_mode

# Set by CI services (any non-empty value but 0/false/no/off). CI=false (or 0) says "not CI" even
# where another of these is set.
CI_VARIABLES = (
    "CI",
    "CONTINUOUS_INTEGRATION",
    "GITHUB_ACTIONS",
    "GITLAB_CI",
    "BUILDKITE",
    "CIRCLECI",
    "JENKINS_URL",
    "TF_BUILD",
    "TEAMCITY_VERSION",
    "TRAVIS",
    "APPVEYOR",
    "BITBUCKET_BUILD_NUMBER",
    "CODEBUILD_BUILD_ID",
    "DRONE",
    "SEMAPHORE",
)
_FALSE = frozenset({"0", "false", "no", "off"})


def ci_environment() -> str | None:
    """The variable that says this process runs on CI (``"GITHUB_ACTIONS"``...), or ``None``.

    Example::

        ci_environment()  # None on a laptop; "CI" under CI=true; None under CI=false
    """
    if os.environ.get("CI", "").strip().lower() in _FALSE and os.environ.get("CI", "").strip():
        return None
    for name in CI_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value and value.lower() not in _FALSE:
            return name
    return None


def mode_arg(value: str) -> str:
    name = value.strip().lower()
    if name not in MODES:
        raise argparse.ArgumentTypeError(f"unknown cassette mode {value!r}; use one of: {', '.join(MODES)}")
    return name


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("cassette", "cassette: record and replay LLM agent runs")
    group.addoption(
        "--cassette-mode",
        type=mode_arg,
        default=None,
        metavar="MODE",
        help="auto, record, replay or rerecord for every cassette of the run (beats CASSETTE_MODE).",
    )
    group.addoption(
        "--cassette-dir",
        default=None,
        metavar="DIR",
        help="where default cassettes live (default: [tool.cassette] cassette_dir, tests/cassettes).",
    )
    group.addoption(
        "--cassette-allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="let the network guard pass this host (name, *.pattern, IP or CIDR); repeatable.",
    )
    group.addoption(
        "--cassette-no-network-guard",
        action="store_true",
        default=False,
        help="do not block connections while replaying.",
    )
    group.addoption(
        "--cassette-block-loopback",
        action="store_true",
        default=False,
        help="while replaying, block loopback connections too (prove replay makes no connection).",
    )
    group.addoption(
        "--cassette-orphans",
        choices=("off", "warn", "fail"),
        default=None,
        help="report (warn) or fail on cassette files no collected test uses (whole-suite runs only).",
    )


def load_config(config: pytest.Config) -> Config:
    pyproject = find_pyproject(config.rootpath)
    cfg = parse_config(pyproject) if pyproject else Config(root=config.rootpath)
    chosen = config.getoption("cassette_dir")
    if chosen is not None:
        if not chosen.strip() or "\x00" in chosen:
            raise CassetteConfigError(
                f"--cassette-dir={chosen!r} names no directory. Give a directory such as tests/cassettes."
            )
        where = resolve_path(cfg.root / chosen)  # relative to the project root, as cassette_dir is
        if where.exists() and not where.is_dir():
            raise CassetteConfigError(
                f"--cassette-dir={chosen}: {where} is a file, not a directory. Give the directory that "
                "holds (or will hold) the cassettes."
            )
        cfg = replace(cfg, cassette_dir=str(where))
    return cfg


def run_mode(flag: str | None, cfg: Config) -> tuple[Config, str | None]:
    """The config with the run's default mode applied, and the CI variable when CI made it ``replay``.

    On CI, with no mode set anywhere (flag, ``CASSETTE_MODE``, ``[tool.cassette] mode``), the default
    is ``replay``: a forgotten cassette fails there instead of being recorded live and passing. A
    marker's ``mode`` still wins for its test.
    """
    if flag is None and env_mode() is None and "mode" not in cfg.keys:
        ci = ci_environment()
        if ci is not None:
            return replace(cfg, mode="replay"), ci
    return cfg, None


def replays(flag: str | None, cfg: Config) -> bool:
    """Whether the run's mode (before any marker) is ``replay``."""
    return (flag or env_mode() or cfg.mode).strip().lower() == "replay"


@dataclass
class EarlyStart:
    """What the plugin did before the first conftest was imported."""

    placeholders: list[str] = field(default_factory=list)
    run_policy: NetworkPolicy | None = None  # the run-wide guard armed then
    replaced: NetworkPolicy | None = None  # and the policy it replaced


def early_start(config: pytest.Config) -> EarlyStart:
    """Before the first conftest is imported: a replaying run gets placeholder credentials and, when
    every session replays, the run-wide network guard (a conftest's imports are covered too)."""
    register_exit_report()
    known = config.known_args_namespace
    try:
        flag = getattr(known, "cassette_mode", None)
        pyproject = find_pyproject(config.rootpath)
        cfg = parse_config(pyproject) if pyproject else Config(root=config.rootpath)
    except (CassetteConfigError, OSError):
        return EarlyStart()  # pytest_configure reports a broken config as a usage error
    cfg, _ = run_mode(flag, cfg)
    early = EarlyStart(credentials.provide() if replays(flag, cfg) else [])
    why = replay_origin(flag)
    if why is not None and cfg.network_guard and not getattr(known, "cassette_no_network_guard", False):
        hosts = (*cfg.allow_hosts, *(getattr(known, "cassette_allow_host", None) or ()))
        loopback = not getattr(known, "cassette_block_loopback", False)
        early.run_policy = run_wide_policy(loopback, hosts, why)
        early.replaced = guard_run(early.run_policy)
    return early


def start_run(config: pytest.Config, early: EarlyStart | None) -> RunState:
    """Read the options and config, arm the run's guard and set ``CASSETTE_MODE`` from the flag.

    ``early``: what `early_start` did (``None``: it did not run, the plugin came late).
    """
    clear_config_cache()
    try:
        cfg = load_config(config)
        max_age = parse_age(cfg.max_age, source=cfg.source) if cfg.max_age else None
        mode_flag = config.getoption("cassette_mode")
        if mode_flag is None and env_mode() is not None:
            parse_mode(env_mode() or "", source="the CASSETTE_MODE environment variable")
        check_plugins(cfg)
    except CassetteConfigError as exc:
        raise pytest.UsageError(f"cassette: {exc}") from None
    check_allow_hosts(config)
    cfg, ci = run_mode(mode_flag, cfg)
    if early is not None:
        placeholders = early.placeholders
    else:
        placeholders = credentials.provide() if replays(mode_flag, cfg) else []
    guard = run_guard(cfg, config)
    state = RunState(
        config=cfg,
        guard=guard,
        orphans=config.getoption("cassette_orphans") or cfg.orphans,
        max_age=max_age,
        mode_flag=mode_flag,
        ci=ci,
        placeholders=placeholders,
    )
    if mode_flag is not None:
        state.saved_env_mode = os.environ.get("CASSETTE_MODE")
        os.environ["CASSETTE_MODE"] = mode_flag
    state.previous_guard = guard_replay(guard)
    arm_run_guard(state, early.run_policy if early else None, early.replaced if early else None)
    return state


def check_plugins(cfg: Config) -> None:
    """Load the configured plugins now (import and register, which checks each hook's arguments), so
    a typo is a usage error, not a failure in every test."""
    if cfg.plugins:
        try:
            new_plugin_manager(cfg.plugins, cfg.root)
        except CassetteConfigError as exc:
            raise CassetteConfigError(f"{cfg.source}: {exc}", path=cfg.source) from exc
    reset_plugin_manager()  # the next use reads this project's config and entry points


def end_run(state: RunState) -> None:
    """Undo what `start_run` changed in the process (guard, ``CASSETTE_MODE``, caches)."""
    guard_replay(state.previous_guard)
    end_run_guard(state)
    credentials.withdraw(state.placeholders)
    if state.mode_flag is not None:
        if state.saved_env_mode is None:
            os.environ.pop("CASSETTE_MODE", None)
        else:
            os.environ["CASSETTE_MODE"] = state.saved_env_mode
    reset_plugin_manager()
    clear_config_cache()


def header(state: RunState) -> list[str]:
    """The ``cassette: mode=..., dir=..., network guard ...`` line of pytest's header (and the
    placeholder credentials line when any were set)."""
    mode = state.mode_flag or env_mode() or state.config.mode
    if state.ci is not None:
        mode += f" (CI detected: {state.ci} is set; --cassette-mode=auto records)"
    guard = "off"
    if state.guard is not None:
        guard = "on" + ("" if state.guard.allow_loopback else ", loopback blocked")
    lines = [f"cassette: mode={mode}, dir={state.config.cassette_root()}, network guard {guard}"]
    if state.placeholders:
        names = ", ".join(state.placeholders)
        lines.append(f"cassette: placeholder credentials set (replay sends no key): {names}")
    return lines
