"""Token counts read from recorded responses, whatever the provider's field names."""

from __future__ import annotations

from typing import Any

import orjson


def _count(value: Any) -> bool:
    # a recorded file may say anything: only a plausible token count is added to the run's total
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**40


def _from_usage(usage: Any) -> int:
    if not isinstance(usage, dict):
        return 0
    total: Any = usage.get("total_tokens")
    if _count(total):
        return int(total)
    return sum(v for k, v in usage.items() if k in ("input_tokens", "output_tokens") and _count(v))


def tokens_of(response: dict[str, Any]) -> int:
    """Tokens a recorded response cost (0 when it says nothing about usage).

    Example::

        tokens_of({"json": {"usage": {"total_tokens": 42}}}) == 42
    """
    body = response.get("json")
    if isinstance(body, dict):
        usage = body.get("usage")
        if not isinstance(usage, dict):
            return 0
        total = usage.get("total_tokens")  # `_from_usage`'s first answer, read here for every call
        if type(total) is int and 0 <= total < 2**40:
            return total
        return _from_usage(usage)
    events = response.get("events")
    if not isinstance(events, list):
        return 0
    try:
        if "usage" not in "".join(events):  # at C speed: most chat streams never mention usage
            return 0
    except TypeError:  # an event that is not text: the loop below passes over it
        pass
    best = 0
    for event in events:
        if not isinstance(event, str) or "usage" not in event:
            continue
        if event.count("usage") == 1 and ('"usage": null' in event or '"usage":null' in event):
            continue  # `stream_options={"include_usage": True}` puts a null usage in every chunk
        for line in event.splitlines():
            if not line.startswith("data:"):
                continue
            try:
                data = orjson.loads(line[5:].strip())
            except orjson.JSONDecodeError:
                continue
            if isinstance(data, dict):
                found = [data.get("usage")]
                found += [
                    data[k].get("usage") for k in ("message", "response") if isinstance(data.get(k), dict)
                ]
                for u in found:
                    best = max(best, _from_usage(u))
    return best
