"""The wait an HTTP error response asks for before a retry, and a replayed one made immediate.

A server asks a client to wait with ``retry-after`` (seconds, or an HTTP date) and, for
some clients, ``retry-after-ms``; ``x-should-retry: false`` says not to retry at all. On
replay the wait is moot (the recorded retry follows at once), so a provider plugin, which
knows how its SDK reads these headers and which waits it gives up on, rewrites them with
`immediate`. Pure functions over header pairs; nothing here knows a provider.

Example::

    immediate([("retry-after", "3")], limit=None, sent=None)
    # [("retry-after", "3"), ("retry-after-ms", "1")]: the client retries at once
"""

from __future__ import annotations

import email.utils
import math
import sys

_INFINITY = frozenset({"inf", "+inf", "infinity", "+infinity"})


def http_date(value: str | None) -> float | None:
    """An HTTP date as a timestamp; None when ``value`` is not one."""
    if not isinstance(value, str):
        return None
    try:
        parsed = email.utils.parsedate_tz(value)
        return None if parsed is None else float(email.utils.mktime_tz(parsed))
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def is_date(retry_after: str | None) -> bool:
    """Whether a ``retry-after`` value is an HTTP date (a wait measured from the response's ``date``)."""
    if retry_after is None:
        return False
    try:
        float(retry_after)
    except ValueError:
        return http_date(retry_after) is not None
    return False


def asked_wait(given: dict[str, str], sent: str | None) -> tuple[float | None, bool]:
    """The wait before a retry, in seconds, these (lower-cased) headers ask for, read as the
    Stainless-generated SDKs read them (``retry-after-ms``, then ``retry-after`` as a number,
    then as an HTTP date), and whether it was a date. A date is measured from ``sent``, the
    response's recorded ``date``: the client measured it from its clock when the answer came.
    ``None`` when none is given (the client backs off), or a date with nothing to measure it from.
    """
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = given.get(name)
        if value is None:
            continue
        try:
            delay = float(value)
        except ValueError:
            continue
        if delay == math.inf and value.strip().lower() not in _INFINITY:
            return sys.float_info.max, False  # a number too large for a float: a client gives up
        return delay / divisor, False
    due, start = http_date(given.get("retry-after")), http_date(sent)
    return (None if due is None or start is None else due - start), True


def immediate(
    headers: list[tuple[str, str]], *, limit: float | None, sent: str | None
) -> list[tuple[str, str]]:
    """A retryable error's headers with ``retry-after-ms: 1``: the client retries at once, as recorded.

    A client that reads ``retry-after-ms`` first, then ``retry-after``, retries after that many
    seconds or backs off when neither says a wait; a replay would sleep as long. A wait the
    client gives up on (over ``limit`` seconds) is left as it was, so the decision to retry
    stays the recorded one; one given as a date, past by the time of a replay, is restated as
    ``retry-after-ms`` (measured from ``sent``, the recorded ``date``), so the client gives up
    again. A date with no ``sent`` to measure it from is taken as one the client waited for.
    ``limit=None``: the client retries after any wait. An error the server marked
    ``x-should-retry: false`` is never retried: its headers are handed back as recorded.
    The ``retry-after`` header itself is always kept for the caller.
    """
    given = {k.lower(): v for k, v in headers}
    if given.get("x-should-retry") == "false":
        return headers
    if limit is not None:
        delay, dated = asked_wait(given, sent)
        if delay is not None and math.isfinite(delay) and delay > limit:
            if not dated:
                return headers
            wait = [("retry-after-ms", f"{delay * 1000:.0f}")]
            return [(k, v) for k, v in headers if k.lower() != "retry-after-ms"] + wait
    return [(k, v) for k, v in headers if k.lower() != "retry-after-ms"] + [("retry-after-ms", "1")]
