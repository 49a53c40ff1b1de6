"""Workload 2: opening a cassette for replay (read, parse, index) at 1,000 and 10,000 interactions.

Ours is ``Session(path, mode="replay").start()``: read the manifest, find each
interaction's key and kind, build the per-key index (each interaction is parsed
when served; a line reports the cost of parsing them all). Each peer is timed
through the same door a test goes through (entering its replay context);
closing is not timed. Each tool opens the smallest cassette once, untimed,
before the timed rounds (one-time imports and allocator growth).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import _synth
from bench._harness import (
    NOT_INSTALLED,
    BenchConfig,
    Row,
    Section,
    Target,
    label,
    median,
    peer,
    profile_text,
    timed,
    tree_bytes,
)
from bench.replay import VCR_MATCH_ON

SLOW_MS = 5000.0
Opener = Callable[[], Callable[[], Any]]  # opens the cassette, returns what closes it


def _ours(path: Path, store: Path) -> Opener:
    def open_() -> Callable[[], Any]:
        from cassette import Session

        session = Session(path, mode="replay", store=store, check_order="off", unused="off")
        session.start()
        return session.finish

    return open_


def _read_all(path: Path, store: Path) -> Opener:
    def open_() -> Callable[[], Any]:
        from cassette import Session

        session = Session(path, mode="replay", store=store, check_order="off", unused="off")
        session.start()
        assert session.cassette is not None
        for inter in session.cassette.interactions:
            inter.response  # noqa: B018 -- parses it
        return session.finish

    return open_


def _context(make: Callable[[], Any]) -> Opener:
    def open_() -> Callable[[], Any]:
        cm = make()
        cm.__enter__()
        return lambda: cm.__exit__(None, None, None)

    return open_


def _cendor(path: Path) -> Opener:
    from cendor import cassette as cendor_cassette

    return _context(lambda: cendor_cassette.using(str(path), mode="replay"))


def _vcrpy(path: Path) -> Opener:
    import vcr

    return _context(lambda: vcr.VCR(record_mode="none", match_on=VCR_MATCH_ON).use_cassette(str(path)))


def _cassetter(path: Path) -> Opener:
    import cassetter

    return _context(lambda: cassetter.use_cassette(path, record_mode="none"))


FAST_ROUNDS = 15  # an open of a few milliseconds swings by a third from round to round on a VM


def _enough(done: list[float], rounds: int) -> bool:
    """Seconds per open: one round is enough; over a second: three; over 100 ms: ``rounds``."""
    if not done:
        return False
    if done[0] > SLOW_MS or (done[0] > 1000 and len(done) >= 3):
        return True
    return done[0] > 100 and len(done) >= rounds


def why(exc: BaseException) -> str:
    """A short reason for a failure, keeping the part that names the cause."""
    text = " ".join(str(exc).split())
    for marker in ("budget breached", "No such file", "Errno"):
        if marker in text:
            text = text[text.index(marker) :]
            break
    text = text.split(" --> ", 1)[0]  # a parser's source excerpt after the reason is noise here
    return f"failed: {type(exc).__name__}: {text[:140]}"


def time_open(opener: Opener) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with timed() as t:
            close = opener()
        close()
    return t.cpu * 1000


def run(cfg: BenchConfig) -> Section:
    section = Section("load", "2. Open a cassette for replay: read + parse + index")
    sizes = cfg.size([1000, 10000], [20, 60])
    have = {
        "cendor": peer("cendor.cassette") is not None,
        "vcrpy": peer("vcr") is not None,
        "cassetter": peer("cassetter") is not None,
    }
    names = {"cendor": label("cendor-cassette"), "vcrpy": label("vcrpy"), "cassetter": label("cassetter")}
    for size in sizes:
        work = cfg.scratch(f"load-{size}")
        items = list(_synth.calls(size))
        openers: dict[str, Opener] = {}
        files: dict[str, int] = {}
        failed: dict[str, str] = {}
        with timed() as gen:
            store = work / ".blobs"
            _synth.write_ours(work / "ours.json", store, items)
            openers["ours"] = _ours(work / "ours.json", store)
            files["ours"] = tree_bytes(work / "ours.json", store)
            for key, write, opener, name in (
                ("cendor", _synth.write_cendor, _cendor, "cendor.json"),
                ("vcrpy", _synth.write_vcrpy, _vcrpy, "vcrpy.yaml"),
                ("cassetter", _synth.write_cassetter, _cassetter, "cassetter.yaml"),
            ):
                if not have[key]:
                    continue
                try:
                    write(work / name, items)
                    openers[key] = opener(work / name)
                    files[key] = tree_bytes(work / name)
                except Exception as exc:
                    failed[key] = why(exc)
        # fast opens are cheap to repeat: more rounds, so one slow round cannot move the median
        rounds = cfg.size(max(cfg.rounds, FAST_ROUNDS), 1)
        times: dict[str, list[float]] = {k: [] for k in openers}
        keys = list(openers)
        if size == sizes[0]:
            # one untimed open per tool first (all alike): the first open in a process pays one-time
            # imports, config reading and allocator growth, which no later open of any size repeats
            for key in keys:
                if key in failed:
                    continue
                try:
                    time_open(openers[key])
                except Exception as exc:
                    failed[key] = why(exc)
        for r in range(rounds):
            for key in keys[r % len(keys) :] + keys[: r % len(keys)]:
                if key in failed or _enough(times[key], cfg.rounds):
                    continue
                try:
                    times[key].append(time_open(openers[key]))
                except Exception as exc:
                    failed[key] = why(exc)
        med = {k: median(v) for k, v in times.items() if v}
        section.lines.append(
            f"{size:,} interactions (cassettes written in {gen.wall:.1f} s): "
            + ", ".join(
                f"{'ours' if k == 'ours' else names[k]} {med[k]:.1f} ms CPU for {files[k] / 1e6:.2f} MB"
                for k in med
            )
            + f"; median of {rounds} rounds ({cfg.rounds} for a tool over 100 ms per open, 3 over 1 s, "
            f"1 over {SLOW_MS / 1000:.0f} s)"
        )
        for key, target in (("cendor", Target("<=", 0.2)), ("vcrpy", Target("<=", 0.5)), ("cassetter", None)):
            status = NOT_INSTALLED if not have[key] else failed.get(key, "")
            section.rows.append(
                Row(
                    f"open + index, {size:,} interactions",
                    "ms",
                    med.get("ours"),
                    names[key],
                    med.get(key),
                    status,
                    target,
                )
            )
        if not cfg.quick and "ours" in openers:
            # ours reads only keys when opening; each interaction is parsed when served. Say what
            # the deferred part costs: open, then read every interaction as replaying all would.
            whole = [time_open(_read_all(work / "ours.json", store)) for _ in range(cfg.rounds)]
            section.lines.append(
                f"{size:,} interactions: ours, open then parse every interaction (the work replay defers "
                f"to each call): {median(whole):.1f} ms CPU"
            )
        if cfg.profile and size == sizes[-1] and "ours" in openers:
            section.profile += f"our open + index, {size:,} interactions:\n"
            section.profile += profile_text(lambda o=openers["ours"]: o()())  # type: ignore[misc]
            section.profile += "\n\n"
    return section
