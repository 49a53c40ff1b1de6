"""`cassette.promote`: one run of a production trace becomes a cassette (and, if asked, a pytest file).

Accepted lines, mixed freely in one JSONL file:

- our trace lines (`cassette.trace`): ``{"v": 1, "run", "seq", "kind", "key", "request", "response"}``.
  The stored ``key`` is the key of the un-redacted request, so it is reused as is;
- cendor-style lines ``{"kind": "llm"|"tool", "request", "response"}`` (``_meta`` lines skipped);
- an LLM SDK's request/response log pairs ``{"request": {...body...}, "response": {...}}`` (the
  importers tell which API a pair belongs to).

Lines without a run id (the last two kinds) form one run. A line that cannot be
read is reported with its line number: `PromoteError` lists them all, or with
``skip_bad=True`` the rest is promoted and the report lists them.
"""

from __future__ import annotations

import keyword
import os
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cassette.core.canonical import loads
from cassette.core.model import Interaction
from cassette.core.paths import resolve_path
from cassette.errors import CassetteWarning, PromoteError
from cassette.importers._cendor import convert_entry, tool_functions
from cassette.importers._common import (
    Converted,
    data_events,
    group_notes,
    json_response,
    llm_call,
    log_pair_endpoint,
    refuse_unreadable,
    save_converted,
    sse_response,
    typed_events,
)
from cassette.plugins.manager import get_plugin_manager
from cassette.store.cassettes import load_cassette

NO_RUN = "(no run id)"
_KEY = re.compile(r"[0-9a-f]{64}")


@dataclass
class RunInfo:
    """One run found in a trace: its id, how many calls, and where its lines are."""

    run: str
    calls: int
    first_line: int
    last_line: int
    kinds: dict[str, int] = field(default_factory=dict)
    started: float | None = None


@dataclass
class PromoteReport:
    """What `promote` wrote, from which run, and what it could not carry over."""

    trace: Path
    target: Path
    run: str
    interactions: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    runs: list[RunInfo] = field(default_factory=list)
    bad_lines: list[tuple[int, str]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    test: Path | None = None

    def __str__(self) -> str:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.kinds.items())) or "nothing"
        lines = [f"{self.trace} run {self.run} -> {self.target}: {_count(self.interactions)} ({kinds})"]
        if self.test is not None:
            lines.append(f"pytest skeleton: {self.test}")
        if self.bad_lines:
            lines.append(f"unreadable lines ({len(self.bad_lines)}), not promoted:")
            lines.extend(f"  line {n}: {why}" for n, why in self.bad_lines)
        if self.skipped:
            lines.append(f"not converted ({len(self.skipped)}):")
            lines.extend(f"  {where}: {why}" for where, why in self.skipped)
        if self.notes:
            lines.append("not carried over faithfully:")
            lines.extend(f"  {where}: {message}" for where, message in group_notes(self.notes))
        return "\n".join(lines)


@dataclass
class _Call:
    line: int
    run: str
    seq: int
    converted: Converted
    ts: float | None = None


@dataclass
class _Read:
    calls: list[_Call] = field(default_factory=list)
    bad: list[tuple[int, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


# --- reading lines --------------------------------------------------------------------------------


def _ours(row: dict[str, Any]) -> tuple[str, int, Converted, float | None]:
    if row.get("v") != 1:
        raise ValueError(f"trace format version {row.get('v')!r}; this release reads version 1")
    run, seq, kind, key = row.get("run"), row.get("seq"), row.get("kind"), row.get("key")
    request, response = row.get("request"), row.get("response")
    if not isinstance(run, str) or not run:
        raise ValueError("`run` must be a non-empty string")
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
        raise ValueError("`seq` must be a non-negative integer")
    if not isinstance(kind, str) or not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError("needs a string `kind` and a 64-hex `key`")
    if not isinstance(request, dict) or not isinstance(response, dict):
        raise ValueError("`request` and `response` must be objects")
    notes = (
        ["the stream was closed before its end: the response is partial."]
        if response.get("incomplete")
        else []
    )
    ts = row.get("ts")
    return (
        run,
        seq,
        Converted(kind, key, request, response, notes, parallel=row.get("parallel") is True),
        ts if isinstance(ts, int | float) else None,
    )


def _pair(row: dict[str, Any]) -> Converted:
    """An SDK's log pair: the request body and the parsed response (chunks if streamed)."""
    body, response = row["request"], row["response"]
    if not isinstance(body, dict) or "model" not in body:
        raise ValueError("the `request` of a log pair must be the request body (an object with `model`)")
    provider, endpoint = log_pair_endpoint(body, response)
    kind, normalized, key = llm_call(provider, endpoint, body)
    status = row.get("status_code", row.get("status", 200))
    status = status if isinstance(status, int) and not isinstance(status, bool) else 200
    if body.get("stream"):
        if not isinstance(response, list) or not all(isinstance(c, dict) for c in response):
            raise ValueError("the request has stream=true but `response` is not the list of streamed chunks")
        chat = endpoint == "chat.completions" or endpoint == "completions"
        return Converted(
            kind, key, normalized, sse_response(data_events(response) if chat else typed_events(response))
        )
    if not isinstance(response, dict):
        raise ValueError("`response` must be the response object (or, for stream=true, its list of chunks)")
    return Converted(kind, key, normalized, json_response(response, status if "error" in response else 200))


def _read(path: Path, *, tools: dict[str, Any], defaults: Mapping[str, Any] | None) -> _Read:
    out = _Read()
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below; streamed, a trace can be large
    except FileNotFoundError:
        raise PromoteError(f"no trace at {resolve_path(path)}; check the path.", path=path) from None
    except IsADirectoryError:
        raise PromoteError(
            f"{resolve_path(path)} is a directory; pass one JSONL trace file.", path=path
        ) from None
    foreign = 0
    with handle:
        for lineno, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                row = loads(raw)
            except (ValueError, RecursionError) as exc:
                torn = not raw.endswith(b"\n")
                why = (
                    "the last line is cut short (a write in progress or a crash)"
                    if torn
                    else f"not JSON ({exc})"
                )
                out.bad.append((lineno, why))
                continue
            if not isinstance(row, dict):
                out.bad.append((lineno, f"a JSON {type(row).__name__}, not an object"))
                continue
            if "_meta" in row or row.get("kind") == "_meta":
                continue
            try:
                if "run" in row and "key" in row:
                    run, seq, converted, ts = _ours(row)
                    out.calls.append(_Call(lineno, run, seq, converted, ts))
                    continue
                if row.get("kind") in ("llm", "tool") and "request" in row:
                    converted = convert_entry(row, version=2, tools=tools, defaults=defaults)
                elif "request" in row and "response" in row:
                    converted = _pair(row)
                else:
                    raise ValueError(
                        f"unrecognised line (keys {sorted(row)[:8]}): expected a cassette trace line, a "
                        "cendor-style {kind, request, response} line or a {request, response} log pair"
                    )
            except LookupError as exc:
                out.skipped.append((f"line {lineno}", str(exc)))
                continue
            except ValueError as exc:
                out.bad.append((lineno, str(exc)))
                continue
            out.calls.append(_Call(lineno, NO_RUN, foreign, converted))
            foreign += 1
    return out


def _runs(calls: list[_Call]) -> list[RunInfo]:
    runs: dict[str, RunInfo] = {}
    for c in calls:
        info = runs.get(c.run)
        if info is None:
            info = runs[c.run] = RunInfo(c.run, 0, c.line, c.line, {}, c.ts)
        info.calls += 1
        info.last_line = c.line
        info.kinds[c.converted.kind] = info.kinds.get(c.converted.kind, 0) + 1
        if c.ts is not None and (info.started is None or c.ts < info.started):
            info.started = c.ts
    return list(runs.values())


def list_runs(trace: str | os.PathLike[str]) -> list[RunInfo]:
    """Every run in a trace file, in the order they first appear.

    Example::

        for info in list_runs("traces/prod.jsonl"):
            print(info.run, info.calls, info.kinds)
    """
    return _runs(_read(Path(trace), tools={}, defaults=None).calls)


def _calls(n: int) -> str:
    return f"{n} call" if n == 1 else f"{n} calls"


def _count(n: int) -> str:
    return f"{n} interaction" if n == 1 else f"{n} interactions"


def _describe_runs(runs: list[RunInfo]) -> str:
    shown = [f"  {r.run}: {_calls(r.calls)}, lines {r.first_line}-{r.last_line}" for r in runs[-10:]]
    more = f"  ... and {len(runs) - 10} earlier runs\n" if len(runs) > 10 else ""
    return more + "\n".join(shown)


def _choose(run: str | None, calls: list[_Call], runs: list[RunInfo], path: Path) -> str:
    if not runs:
        raise PromoteError(f"{path} holds no calls to promote (empty, or only _meta lines).", path=path)
    if run is None:
        if len(runs) == 1:
            return runs[0].run
        raise PromoteError(
            f"{path} holds {len(runs)} runs; say which to promote with run='<id>' (--run ID) or "
            f"run='last' (--run last):\n{_describe_runs(runs)}",
            path=path,
        )
    if run == "last":
        return max(calls, key=lambda c: c.line).run
    if any(r.run == run for r in runs):
        return run
    raise PromoteError(
        f"{path} has no run {run!r}. Runs in the file (latest last):\n{_describe_runs(runs)}\n"
        "List them all with `cassette promote TRACE --list`.",
        path=path,
    )


def promote(
    trace: str | os.PathLike[str],
    to: str | os.PathLike[str],
    run: str | None = None,
    where: Callable[[Interaction], bool] | None = None,
    *,
    test: str | os.PathLike[str] | None = None,
    skip_bad: bool = False,
    overwrite: bool = False,
    tools: Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> PromoteReport:
    """Turn one run of a trace into a cassette that replays the same calls in the same order.

    ``run`` is a run id, ``"last"`` (the run of the last line), or ``None`` when
    the file holds one run. ``where(interaction)`` keeps only the calls it returns
    true for. ``test`` also writes a pytest file that replays the cassette.
    ``tools`` and ``defaults`` help cendor-style lines (see `cassette.importers.import_cendor`).
    Unreadable lines raise `PromoteError` naming each line, unless ``skip_bad``.

    Example::

        report = cassette.promote("traces/prod.jsonl", "tests/cassettes/refund.json", run="last")
        print(report)
    """
    path = Path(trace)
    for target in (Path(to), Path(test) if test is not None else None):
        if target is not None and target.exists() and not overwrite:
            raise PromoteError(
                f"{resolve_path(target)} already exists; pass overwrite=True (--force) to replace it, or "
                "choose another path.",
                path=target,
            )
    read = _read(path, tools=tool_functions(tools), defaults=defaults)
    refuse_unreadable(
        path,
        [(f"line {n}", why) for n, why in read.bad],
        noun=("line", "lines"),
        skip_bad=skip_bad,
        rest="promote the readable lines",
        error=PromoteError,
    )
    if read.bad:
        warnings.warn(
            f"{path}: skipped {len(read.bad)} unreadable lines ({', '.join(str(n) for n, _ in read.bad[:10])}"
            f"{'...' if len(read.bad) > 10 else ''}); see the report.",
            CassetteWarning,
            stacklevel=2,
        )
    runs = _runs(read.calls)
    chosen = _choose(run, read.calls, runs, path)
    calls = sorted((c for c in read.calls if c.run == chosen), key=lambda c: (c.seq, c.line))
    report = PromoteReport(trace=path, target=Path(to), run=chosen, runs=runs, bad_lines=read.bad)
    report.skipped.extend(read.skipped)
    _order_notes(calls, report)
    kept: list[Converted] = []
    for c in calls:
        if where is not None:
            probe = Interaction(
                len(kept), c.converted.kind, c.converted.key, c.converted.request, c.converted.response
            )
            if not where(probe):
                continue
        kept.append(c.converted)
        report.notes.extend((f"line {c.line}", note) for note in c.converted.notes)
    report.target, report.kinds = save_converted(kept, to, overwrite=overwrite, error=PromoteError)
    report.interactions = len(kept)
    if test is not None:
        report.test = write_test(report.target, test, run=chosen, trace=path, overwrite=overwrite)
    return report


def _order_notes(calls: list[_Call], report: PromoteReport) -> None:
    seqs = [c.seq for c in calls if c.run != NO_RUN]
    if not seqs:
        return
    dupes = sorted({s for s in seqs if seqs.count(s) > 1})
    if dupes:
        report.notes.append(
            (
                f"run {report.run}",
                f"calls numbered {dupes[:5]} appear more than once: the run id was reused "
                "(by two processes?); they are kept in file order.",
            )
        )
    missing = sorted(set(range(max(seqs) + 1)) - set(seqs))
    if missing:
        report.notes.append(
            (
                f"run {report.run}",
                f"no line for call(s) {missing[:10]}: they failed before a response (connection "
                "errors are not traced) or their lines were dropped under load (see the trace's warnings).",
            )
        )


# --- the pytest skeleton --------------------------------------------------------------------------


_SKELETON = '''\
"""Replays run {run} of {trace}, promoted by `cassette promote`.

Every call that run made is served from the cassette, in the recorded order,
with no network and no API key. Put your agent in `run_agent()` (called the
way production called it) and assert on its answer.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import cassette
from cassette.maintenance.promote import reissue_request

CASSETTE = Path(__file__).parent / {cassette_rel!r}

# The run, as recorded:
{calls}


def run_agent() -> object:
    # TODO: call your agent here, e.g.
    #     return my_agent.run({first_input})
    # Until then this makes the recorded calls itself, so the test replays the cassette already.
    return reissue_recorded_calls(CASSETTE)


# unused="error": the test fails if the agent makes fewer calls than the recorded run did.
@cassette.use(CASSETTE, mode="replay", unused="error")
def test_{name}() -> None:
    result = run_agent()
    # TODO: assert on the answer, e.g. assert cassette.semantic_match(result, "offers a refund")
    assert result is not None


# --- Delete from here once run_agent() calls your agent. -----------------------------------------------


def reissue_recorded_calls(path: Path) -> list[object]:
    """Make every recorded call again, in order, through cassette's seam (replay answers them).

    A call whose stored request had a secret redacted cannot be made again this way
    (its key was computed before redaction): that is where your agent must take over.
    """
    recorded = cassette.load_cassette(path)
    results: list[object] = []
    with cassette.http_client() as http:
        http.headers.pop("accept", None)  # only the headers the provider plugin names (some key `accept`)
        for interaction in recorded.interactions:
            request = recorded.hydrate(interaction.request)
            results.append(_reissue(http, interaction.seq, interaction.kind, request))
    return results


def _reissue(http: Any, seq: int, kind: str, request: dict[str, Any]) -> object:
    if kind == "tool":
        return _call_tool(request["name"], request["arguments"])
    # the request's provider plugin says which HTTP request is keyed as the recorded one was
    sent = reissue_request(request)
    if sent is None:
        raise NotImplementedError(f"call #{{seq}} cannot be made again from its recording: your agent must")
    response = http.request(
        sent["method"],
        sent["url"],
        params=[tuple(pair) for pair in sent.get("params", [])],
        headers=sent.get("headers"),
        json=sent.get("json"),
        content=sent["text"].encode() if "text" in sent else None,
    )
    return response.text


def _call_tool(name: str, arguments: dict[str, object]) -> object:
    def stand_in(**kwargs: object) -> object:
        raise AssertionError(f"tool {{name}} ran live; replay should have answered it")

    # the recorded argument names, so @cassette.tool builds the same request the real tool did
    stand_in.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY) for arg in arguments]
    )
    try:
        return cassette.tool(stand_in, name=name)(**arguments)
    except Exception as exc:  # the tool raised when recorded: replay raises the same again
        return exc
'''


def reissue_request(request: dict[str, Any]) -> dict[str, Any] | None:
    """The HTTP request that makes a recorded LLM or HTTP call again, keyed as it was recorded, as
    its provider plugin says (``cassette_reissue_request``, else an LLM call's body POSTed to its
    ``cassette_endpoint_url``); ``None`` when no plugin can (a body kept only as its hash).

    Called by the skeleton test `promote` writes. Example::

        reissue_request({"kind": "llm", "provider": "acme", "endpoint": "generate", "prompt": "hi"})
        # {"method": "POST", "url": "https://api.acme.example/v1/generate", "json": {"prompt": "hi"}}
    """
    hook = get_plugin_manager().hook
    sent = hook.cassette_reissue_request(request=request)
    if sent is not None or request.get("kind") != "llm":
        return sent if isinstance(sent, dict) else None
    url = hook.cassette_endpoint_url(request=request)
    if not isinstance(url, str):
        return None
    body = {k: v for k, v in request.items() if k not in ("kind", "provider", "endpoint")}
    return {"method": "POST", "url": url, "json": body}


def _short(value: Any, limit: int = 70) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _user_text(request: dict[str, Any]) -> str | None:
    messages = request.get("messages")
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, str):
                    return content
                if isinstance(content, list):
                    texts = [
                        str(p["text"])
                        for p in content
                        if isinstance(p, dict) and isinstance(p.get("text"), str)
                    ]
                    if texts:
                        return " ".join(texts)
    value = request.get("input")
    return value if isinstance(value, str) else None


def _call_line(inter: Interaction, request: dict[str, Any]) -> str:
    if inter.kind == "tool":
        arguments = request.get("arguments")
        args = (
            ", ".join(f"{k}={_short(repr(v), 30)}" for k, v in arguments.items())
            if isinstance(arguments, dict)
            else ""
        )
        return f"#{inter.seq} tool {request.get('name')}({args})"
    if inter.kind == "llm":
        extra = ", stream" if request.get("stream") else ""
        user = _user_text(request)
        said = f" - user: {_short(user, 50)!r}" if user else ""
        api = f"{request.get('provider')} {request.get('endpoint')} {request.get('model')}"
        return f"#{inter.seq} llm {api}{extra}{said}"
    return f"#{inter.seq} {inter.kind} {request.get('method', '')} {_short(request.get('url', ''), 60)}"


def _docstring_safe(text: str) -> str:
    # a run id or file name lands in the module docstring: no quotes, backslashes or newlines
    return re.sub(r"[^\w .:@/+()-]", "_", _short(text, 80))


def skeleton_source(cassette_path: Path, test_path: Path, *, run: str, trace: Path | str) -> str:
    """The text of a pytest module that replays ``cassette_path`` (valid Python; checked by compiling it)."""
    recorded = load_cassette(cassette_path)
    lines = []
    first_input: str | None = None
    for inter in recorded.interactions:
        request = recorded.hydrate(inter.request)
        lines.append(
            "#   " + " ".join(_call_line(inter, request).split())
        )  # one comment line, whatever the data
        if first_input is None and inter.kind == "llm":
            first_input = _user_text(request)
    try:
        rel = os.path.relpath(resolve_path(cassette_path), resolve_path(test_path).parent)
    except ValueError:  # another drive (Windows)
        rel = str(resolve_path(cassette_path))
    name = re.sub(r"\W+", "_", cassette_path.stem).strip("_").lower() or "promoted_run"
    if name[0].isdigit() or keyword.iskeyword(name):
        name = "run_" + name
    source = _SKELETON.format(
        run=_docstring_safe(run),
        trace=_docstring_safe(Path(trace).name),
        cassette_rel=Path(rel).as_posix(),
        calls="\n".join(lines) if lines else "#   (no calls)",
        first_input=repr(_short(first_input, 60)) if first_input else "...",
        name=name,
    )
    compile(source, str(test_path), "exec")  # a generator bug must not hand the user a broken file
    return source


def write_test(
    cassette_path: str | os.PathLike[str],
    test_path: str | os.PathLike[str],
    *,
    run: str = NO_RUN,
    trace: str | os.PathLike[str] = "",
    overwrite: bool = False,
) -> Path:
    """Write a pytest skeleton at ``test_path`` that replays ``cassette_path``; returns its path.

    Example::

        write_test("tests/cassettes/refund.json", "tests/test_refund.py", run="20260101T120000-3f9a")
    """
    target = Path(test_path)
    if target.exists() and not overwrite:
        raise PromoteError(
            f"{resolve_path(target)} already exists; pass overwrite=True (--force) or another --test path.",
            path=target,
        )
    source = skeleton_source(Path(cassette_path), target, run=run, trace=Path(trace))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source, encoding="utf-8")
    return target
