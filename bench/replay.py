"""Workload 1: what one replayed LLM call costs through the real OpenAI SDK.

Every tool records the same calls against the same local server (a fresh
server per recording, same seed, so the recorded bytes are identical), then
each replays them in turn, round after round; the median per-call CPU time of
each is compared. Only the replay loop is timed (opening a cassette is
workload 2).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench._data import MODEL, SEED, chat_calls, devserver, free_port, run_concurrently
from bench._harness import (
    NOT_INSTALLED,
    BenchConfig,
    Row,
    Section,
    Target,
    Timing,
    label,
    median,
    peer,
    profile_text,
    timed,
)

API_KEY = "sk-bench-not-a-real-key"
# vcrpy and cassetter match on the body too: with URL-only matching (their default) every call to
# /chat/completions is "the same" and a changed prompt silently replays the wrong answer.
VCR_MATCH_ON = ("method", "scheme", "host", "port", "path", "query", "body")
CASSETTER_MATCH_ON = ["method", "uri", "body"]
_DROP = {"content-length", "transfer-encoding", "content-encoding", "connection", "keep-alive", "date"}


def consume(response: Any, stream: bool) -> str:
    """Read what an agent reads: the message text (every delta of a stream)."""
    if not stream:
        return response.choices[0].message.content or ""
    parts = []
    for chunk in response:
        choices = chunk.choices
        if choices:
            delta = choices[0].delta.content
            if delta:
                parts.append(delta)
    return "".join(parts)


def _openai(base_url: str, **kwargs: Any) -> Any:
    from openai import OpenAI

    return OpenAI(base_url=base_url, api_key=API_KEY, max_retries=0, **kwargs)


class Impl:
    """One way of replaying: records a cassette once, then opens it for replay."""

    key = ""
    name = ""
    note = ""
    samples = 0  # if set, replay only this many calls spread evenly (a slow peer: keeps the run short)
    sample_why = ""  # why an even sample estimates the mean cost of a call
    stream_note = ""  # how it hands a recorded stream to the SDK, beside its streamed rows
    # patches only below our seam (httpx's network transport): a replaying client of ours never
    # reaches its patch, so both can be open at once and timed in alternating blocks of calls
    below_seam = False

    def missing(self) -> str | None:
        return None

    def record(self, path: Path, base_url: str, calls: list[Any], stream: bool) -> None:
        raise NotImplementedError

    def replaying(self, path: Path, base_url: str, stream: bool) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError


def _call_all(client: Any, calls: list[Any], stream: bool) -> None:
    def one(i: int) -> str:
        return consume(client.chat.completions.create(model=MODEL, messages=calls[i], stream=stream), stream)

    run_concurrently(one, len(calls))


class Floor(Impl):
    """The bare SDK over ``httpx2.MockTransport`` handing back the recorded bytes in order.

    The bytes are captured under our recording (a transport below our seam sees
    the server's raw responses), which saves one pass over the server.
    """

    key = "floor"
    name = "bare SDK floor (httpx2.MockTransport)"
    stream_note = "it hands the recorded stream over in one chunk; ours one event per chunk, as recorded"

    def __init__(self) -> None:
        self.captured: dict[bool, list[tuple[int, list[tuple[str, str]], bytes]]] = {}
        self._seen: dict[str, tuple[int, list[tuple[str, str]], bytes]] = {}

    def capture_client(self) -> Any:
        """An httpx2 client whose transport keeps every response's status, headers and bytes."""
        import httpx2
        import orjson

        seen = self._seen = {}

        class Capture(httpx2.BaseTransport):  # type: ignore[misc]
            def __init__(self) -> None:
                self.inner = httpx2.HTTPTransport()

            def handle_request(self, request: Any) -> Any:
                response = self.inner.handle_request(request)
                body = response.read()
                response.close()
                headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _DROP]
                user = orjson.loads(request.content)["messages"][-1]["content"]
                seen[user] = (response.status_code, headers, body)
                return httpx2.Response(response.status_code, headers=headers, content=body)

        return httpx2.Client(transport=Capture())

    def keep(self, calls: list[Any], stream: bool) -> None:
        self.captured[stream] = [self._seen[c[-1]["content"]] for c in calls]

    @contextlib.contextmanager
    def replaying(self, path: Path, base_url: str, stream: bool) -> Iterator[Any]:
        import httpx2

        recorded = iter(self.captured[stream])

        def handler(request: Any) -> Any:
            status, headers, body = next(recorded)
            return httpx2.Response(status, headers=headers, content=body)

        yield _openai(base_url, http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


class Ours(Impl):
    key = "ours"
    name = "cassette (ours)"

    def __init__(self, floor: Floor | None = None) -> None:
        self.floor = floor

    def record(self, path: Path, base_url: str, calls: list[Any], stream: bool) -> None:
        import cassette

        http = self.floor.capture_client() if self.floor is not None else None
        client = cassette.instrument(_openai(base_url, http_client=http) if http else _openai(base_url))
        with cassette.using(path, mode="record", store=path.parent / ".blobs"):
            _call_all(client, calls, stream)
        if self.floor is not None:
            self.floor.keep(calls, stream)

    @contextlib.contextmanager
    def replaying(self, path: Path, base_url: str, stream: bool) -> Iterator[Any]:
        import cassette

        client = cassette.instrument(_openai(base_url))
        # recorded concurrently, so the recorded order is not the call order: the order check (which
        # runs when the session ends, outside the timed loop) is off
        with cassette.using(path, mode="replay", store=path.parent / ".blobs", check_order="off"):
            yield client


class Vcrpy(Impl):
    key = "vcrpy"
    name = "vcrpy"
    note = "pytest-recording's pattern (one cassette, record_mode none), matching on the body"
    samples = 20
    sample_why = (
        "each lookup scans the cassette and parses both JSON bodies per stored request, so a "
        "call costs in proportion to its position and an even sample estimates the mean"
    )

    def __init__(self) -> None:
        self.name = label("vcrpy")

    def missing(self) -> str | None:
        return None if peer("vcr") else NOT_INSTALLED

    def record(self, path: Path, base_url: str, calls: list[Any], stream: bool) -> None:
        import vcr

        client = _openai(base_url)
        # Recording matches on the URL only: with the body in match_on, vcrpy scans the whole cassette
        # (parsing JSON bodies) before every recorded call, which is quadratic. match_on is not stored.
        with vcr.VCR(record_mode="all", match_on=("method", "path")).use_cassette(str(path)):
            _call_all(client, calls, stream)

    @contextlib.contextmanager
    def replaying(self, path: Path, base_url: str, stream: bool) -> Iterator[Any]:
        import vcr

        client = _openai(base_url)
        with vcr.VCR(record_mode="none", match_on=VCR_MATCH_ON).use_cassette(str(path)):
            yield client


class Cassetter(Impl):
    key = "cassetter"
    note = "match_on method, uri, body"
    # it patches httpx2.HTTPTransport.handle_request, and Client.__init__ for clients built while its
    # cassette is open (ours is built before): our replaying transport never calls the network one
    below_seam = True
    stream_note = (
        "it hands a recorded stream over in one chunk, as the floor does; ours hands it over one "
        "event per chunk, as recorded (each chunk costs the SDK a pass through httpx's stream layers)"
    )
    samples = 250  # a quarter of the calls keeps the run short
    sample_why = (
        "a call costs more the later it was recorded (measured: 4.2 ms/call for the first 100, "
        "8.0 ms for the last 100), so an even sample estimates the mean"
    )

    def __init__(self) -> None:
        self.name = label("cassetter")

    def missing(self) -> str | None:
        return None if peer("cassetter") else NOT_INSTALLED

    def record(self, path: Path, base_url: str, calls: list[Any], stream: bool) -> None:
        import cassetter

        client = _openai(base_url)
        with cassetter.use_cassette(path, record_mode="all", match_on=CASSETTER_MATCH_ON):
            _call_all(client, calls, stream)

    @contextlib.contextmanager
    def replaying(self, path: Path, base_url: str, stream: bool) -> Iterator[Any]:
        import cassetter

        client = _openai(base_url)
        with cassetter.use_cassette(path, record_mode="none", match_on=CASSETTER_MATCH_ON):
            yield client


class Cendor(Impl):
    key = "cendor"
    note = (
        "skips the SDK: returns SimpleNamespace stand-ins, not ChatCompletion objects, "
        "so it can be faster than the floor"
    )

    def __init__(self) -> None:
        self.name = label("cendor-cassette")

    def missing(self) -> str | None:
        return None if peer("cendor.cassette") and peer("cendor.core") else NOT_INSTALLED

    def record(self, path: Path, base_url: str, calls: list[Any], stream: bool) -> None:
        from cendor import cassette as cendor_cassette
        from cendor.core import instrument

        client = instrument(_openai(base_url))
        with cendor_cassette.using(str(path), mode="record"):
            _call_all(client, calls, stream)

    @contextlib.contextmanager
    def replaying(self, path: Path, base_url: str, stream: bool) -> Iterator[Any]:
        from cendor import cassette as cendor_cassette
        from cendor.core import instrument

        client = instrument(_openai(base_url))
        with cendor_cassette.using(str(path), mode="replay"):
            yield client


def all_impls() -> list[Impl]:
    floor = Floor()
    return [floor, Ours(floor), Vcrpy(), Cassetter(), Cendor()]


def replay_once(
    impl: Impl, path: Path, base_url: str, calls: list[Any], stream: bool
) -> tuple[Timing, list[str]]:
    """Replay ``calls`` once; the timing covers the calls only, not opening the cassette."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with impl.replaying(path, base_url, stream) as client:
            create = client.chat.completions.create
            with timed() as t:
                texts = [consume(create(model=MODEL, messages=m, stream=stream), stream) for m in calls]
    return t, texts


def replay_paired(
    first: Impl,
    second: Impl,
    paths: tuple[Path, Path],
    base_url: str,
    calls: list[Any],
    stream: bool,
    block: int,
) -> tuple[tuple[Timing, list[str]], tuple[Timing, list[str]]]:
    """Replay ``calls`` through two tools at once, alternating blocks of ``block`` calls.

    Both see the same moments of the machine, so their ratio holds even while other
    processes come and go. Only tools whose clients cannot reach each other's patches can be
    paired: the floor and ours (each has its own client), and ours with a peer that patches
    only below our seam (`Impl.below_seam`), entered second.
    """
    totals = (Timing(), Timing())
    texts: tuple[list[str], list[str]] = ([], [])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with (
            first.replaying(paths[0], base_url, stream) as a,
            second.replaying(paths[1], base_url, stream) as b,
        ):
            creates = (a.chat.completions.create, b.chat.completions.create)
            for j, start in enumerate(range(0, len(calls), block)):
                chunk = calls[start : start + block]
                for k in (0, 1) if j % 2 == 0 else (1, 0):
                    create = creates[k]
                    with timed() as t:
                        got = [consume(create(model=MODEL, messages=m, stream=stream), stream) for m in chunk]
                    totals[k].cpu += t.cpu
                    totals[k].wall += t.wall
                    texts[k].extend(got)
    return (totals[0], texts[0]), (totals[1], texts[1])


def run(cfg: BenchConfig) -> Section:
    section = Section("replay", "1. Replay cost per LLM call through the OpenAI SDK (chat.completions)")
    impls = all_impls()
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    work = cfg.scratch("replay")
    for stream in (False, True):
        n = cfg.size(300 if stream else 1000, 6)
        # 15 rounds: on a VM whose speed drifts, the median of 3 moved the floor ratio by ~0.1, the
        # median of 5 by ~0.02 from run to run, and the median of 9 still by ~0.015 (single rounds
        # spread over 1.05-1.13)
        rounds = cfg.size(max(cfg.rounds, 15), 1)
        calls = chat_calls(n)
        variant = "streamed" if stream else "non-streamed"
        tag = "stream" if stream else "chat"
        section.lines.append(
            f"{variant}: {n:,} calls, each a {len(calls[0][0]['content'])}-character system prompt and a "
            f"unique user turn; median of {rounds} round(s). In each round the floor and ours replay "
            "side by side (alternating blocks of 50 calls, both clients open), then each peer in turn, "
            "vcrpy next to a replay of ours on the same calls, cassetter side by side with ours as the "
            "floor is (its patch sits below our seam, so both can be open at once)."
        )
        failed: dict[str, str] = {}
        available: list[Impl] = []
        for impl in impls:
            if impl.missing() or impl.key == "floor":
                continue
            path = work / f"{impl.key}-{tag}.{_suffix(impl)}"
            try:
                with devserver(SEED, port, separate_process=not cfg.quick), timed() as rec:
                    impl.record(path, base_url, calls, stream)
                available.append(impl)
                section.lines.append(f"{variant}: recorded with {impl.name} in {rec.wall:.1f} s")
            except Exception as exc:  # a peer that cannot record is reported, not fatal
                failed[impl.key] = f"failed: {type(exc).__name__}: {str(exc)[:120]}"
        if stream in impls[0].captured:  # type: ignore[attr-defined]
            available.insert(0, impls[0])
        cpu: dict[str, list[float]] = {i.key: [] for i in available}
        wall: dict[str, list[float]] = {i.key: [] for i in available}
        texts: dict[str, list[str]] = {}
        strides = {i.key: max(1, n // i.samples) if i.samples and not cfg.quick else 1 for i in impls}
        paired = [i for i in available if i.key in ("floor", "ours")]
        ours_impl, ours_path = impls[1], work / f"ours-{tag}.json"
        adjacent: dict[str, list[float]] = {key: [] for key in BESIDE}  # ours, timed beside each peer
        alone = [i for i in available if i not in paired]
        for r in range(rounds):
            results: dict[str, tuple[Timing, list[str]]] = {}
            if len(paired) == 2:  # the target that matters most, measured side by side in time
                paths = (work / f"floor-{tag}.json", work / f"ours-{tag}.json")
                results["floor"], results["ours"] = replay_paired(
                    paired[0], paired[1], paths, base_url, calls, stream, block=cfg.size(50, 3)
                )
            else:
                alone = available
            for impl in alone[r % max(len(alone), 1) :] + alone[: r % max(len(alone), 1)]:
                if impl.key in failed:
                    continue
                subset = calls[:: strides[impl.key]]
                path = work / f"{impl.key}-{tag}.{_suffix(impl)}"
                # a peer with a target is timed next to ours on the same calls (ours first in even
                # rounds, second in odd ones): both see the same moments of the machine. Peers
                # patch the HTTP library globally, so they cannot share blocks with ours.
                beside = impl.key in BESIDE and ours_impl in available and "ours" not in failed
                try:
                    if beside and impl.below_seam:
                        # side by side in time, as the floor: both open, alternating blocks of calls
                        (mine_t, _), results[impl.key] = replay_paired(
                            ours_impl, impl, (ours_path, path), base_url, subset, stream, cfg.size(50, 3)
                        )
                        adjacent[impl.key].append(mine_t.cpu / max(len(subset), 1) * 1000)
                        continue
                    if beside and r % 2 == 0:
                        adjacent[impl.key].append(
                            _per_call(replay_once(ours_impl, ours_path, base_url, subset, stream))
                        )
                    results[impl.key] = replay_once(impl, path, base_url, subset, stream)
                    if beside and r % 2 == 1:
                        adjacent[impl.key].append(
                            _per_call(replay_once(ours_impl, ours_path, base_url, subset, stream))
                        )
                except Exception as exc:
                    failed[impl.key] = f"failed: {type(exc).__name__}: {str(exc)[:120]}"
                    adjacent[impl.key] = []
            for key, (t, got) in results.items():
                cpu[key].append(t.cpu / len(got) * 1000)
                wall[key].append(t.wall / len(got) * 1000)
                texts[key] = got
        med = {k: median(v) for k, v in cpu.items() if v}
        if len(cpu.get("floor", [])) == len(cpu.get("ours", [])) > 1:
            section.lines.append(
                f"{variant}: ours / floor in each round (side by side in time): "
                + ", ".join(f"{o / f:.3f}" for o, f in zip(cpu["ours"], cpu["floor"]))
                + "; the table gives the median of these"
            )
        for key, values in cpu.items():
            if values:
                section.lines.append(
                    f"{variant}: {_name(impls, key)}: {median(values):.3f} ms/call CPU, "
                    f"{median(wall[key]):.3f} ms/call wall"
                )
        floor_texts = texts.get("floor")
        for key, got in texts.items():
            if key != "floor" and floor_texts is not None:
                expected = floor_texts[:: strides[key]]
                same = sum(a == b for a, b in zip(got, expected))
                section.lines.append(
                    f"{variant}: {_name(impls, key)}: answers identical to the floor's: {same}/{len(got)}"
                )
        for key, values in adjacent.items():
            if values and cpu.get(key):
                section.lines.append(
                    f"{variant}: ours beside {_name(impls, key)} (same calls, same moments): "
                    f"{median(values):.3f} ms/call CPU; ours / {key} in each round: "
                    + ", ".join(f"{o / t:.3f}" for o, t in zip(values, cpu[key]))
                )
        ours = med.get("ours")
        metric = f"replay, {variant}, per call ({n:,} calls)"
        for impl, target in (
            (impls[0], Target("<=", 1.15)),  # 1.10 until pluggy was called through pm.hook (issue 22)
            (impls[2], Target("<", 1.0)),
            (impls[3], Target("<", 1.0)),
            (impls[4], None),
        ):
            status = impl.missing() or failed.get(impl.key, "")
            note = "; ".join(filter(None, [impl.note, impl.stream_note if stream else ""]))
            stride = strides[impl.key]
            if stride > 1:
                note = (
                    f"timed on every {stride}th call ({len(calls[::stride])} calls spread over the {n:,}): "
                    + impl.sample_why
                )
            beside_ours = adjacent.get(impl.key)
            mine: float | None = ours
            pairs: list[tuple[float, float]] = []
            if impl.key == "floor":
                pairs = list(zip(cpu.get("ours", []), cpu.get("floor", [])))
            elif beside_ours and len(beside_ours) == len(cpu.get(impl.key, [])):
                # against a peer, ours as timed beside it: the floor pair's moments are not the peer's
                mine = median(beside_ours)
                pairs = list(zip(beside_ours, cpu[impl.key]))
                how = (
                    "timed side by side with it (both open, alternating blocks of 50 of the same calls)"
                    if impl.below_seam
                    else "timed beside it on the same calls"
                )
                note = f"ours {how}: {mine:.3f} ms/call" + (f"; {note}" if note else "")
            pair_ratio: float | None = None
            if len(pairs) > 1 and all(t > 0 for _, t in pairs) and med.get(impl.key):
                pair_ratio = median([o / t for o, t in pairs])
                note = (
                    f"ratio: median of the {len(pairs)} per-round ratios (ratio of the medians: "
                    f"{(mine or 0) / med[impl.key]:.3f}×)" + (f"; {note}" if note else "")
                )
            section.rows.append(
                Row(metric, "ms", mine, impl.name, med.get(impl.key), status, target, note, paired=pair_ratio)
            )
        if cfg.profile and "ours" in med:
            ours_impl = impls[1]
            path = work / f"ours-{tag}.json"
            sample = calls[: cfg.size(200, 6)]
            section.profile += f"our replay, {variant}, {len(sample)} calls:\n"
            section.profile += profile_text(
                lambda i=ours_impl, p=path, s=sample, st=stream: replay_once(i, p, base_url, s, st)  # type: ignore[misc]
            )
            section.profile += "\n\n"
    return section


# the peers with a target against ours: each is timed next to a replay of ours on the same calls
BESIDE = ("vcrpy", "cassetter")


def _per_call(result: tuple[Timing, list[str]]) -> float:
    t, got = result
    return t.cpu / max(len(got), 1) * 1000


def _suffix(impl: Impl) -> str:
    return "yaml" if impl.key in ("vcrpy", "cassetter") else "json"


def _name(impls: list[Impl], key: str) -> str:
    return next(i.name for i in impls if i.key == key)
