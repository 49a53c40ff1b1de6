"""The pluggy contract between cassette and its plugins.

Built-in behaviour (providers, normalisers, redactors, secret rules, semantic
backends) is registered through these very hooks, exactly like third-party
plugins. A plugin is any module or object with functions marked by
``cassette.hookimpl``; it is loaded through the ``cassette`` entry-point group
or through ``plugins = [...]`` in ``[tool.cassette]``.

Example plugin that drops a volatile date from every prompt::

    import re
    from cassette import hookimpl

    @hookimpl
    def cassette_normalize(request, kind):
        for m in request.get("messages", []):
            if isinstance(m.get("content"), str):
                m["content"] = re.sub(r"\\d{4}-\\d{2}-\\d{2}", "<date>", m["content"])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from cassette.core.model import HttpRequest

hookspec = pluggy.HookspecMarker("cassette")
hookimpl = pluggy.HookimplMarker("cassette")


@hookspec(firstresult=True)
def cassette_http_request(request: HttpRequest) -> dict[str, Any] | None:
    """Recognise an outgoing HTTP request and return its normalised form.

    :param request: the request as plain data (method, url, lower-cased
        headers, body bytes); never modify it.
    :return: a JSON-able dict that identifies the call, including ``"kind"``
        (``"llm"`` for model traffic, ``"http"`` otherwise) and, for LLM traffic,
        ``"provider"`` and ``"endpoint"``; or ``None`` if this plugin does not
        recognise the traffic.

    The first non-``None`` result wins. The built-in generic HTTP provider runs
    last (``trylast``) and always answers.
    """


@hookspec
def cassette_normalize(request: dict[str, Any], kind: str) -> None:
    """Edit a normalised request in place before its match key is hashed.

    :param request: the normalised request (``kind`` is ``"llm"``, ``"tool"``
        or ``"http"``). Drop or rewrite volatile fields here (dates in prompts,
        request ids); the change affects matching only through the key and is
        also what is stored.
    :param kind: the interaction kind.

    All implementations run, in pluggy's order.
    """


@hookspec
def cassette_redact(data: Any, kind: str, part: str) -> None:
    """Remove secrets in place from a request or response about to be written.

    :param data: the JSON-able request or response (dicts and lists are edited
        in place).
    :param kind: the interaction kind.
    :param part: ``"request"`` or ``"response"``.

    Runs only when writing (cassette files, traces); the match key was already
    computed from the un-redacted request. All implementations run.
    """


@hookspec
def cassette_secret_rules() -> list[Any]:
    """Return secret-detection rules (``cassette.SecretRule``) to add to the scanner.

    All results are concatenated. Rules are used by ``cassette scan``, the
    ``cassette-secrets`` pre-commit hook and the pattern redactor.
    """
    return []


@hookspec
def cassette_semantic_backends() -> list[Any]:
    """Return semantic backends (objects with ``name``, ``default_threshold``
    and ``score(actual, expected)``) to offer to ``cassette.semantic_match``.

    All results are merged; a later plugin may not shadow a built-in name.
    """
    return []


@hookspec
def cassette_volatile_fields(kind: str) -> list[str]:
    """Return response field names whose changes are noise for drift review.

    :param kind: the interaction kind.
    :return: key names (matched at any depth), e.g. ``["id", "created"]``.

    All results are concatenated.
    """
    return []


@hookspec(firstresult=True)
def cassette_stream_complete(request: dict[str, Any], events: list[str]) -> bool | None:
    """Did a streamed response that the client closed before end-of-body reach its end?

    :param request: the normalised request of the call.
    :param events: the SSE events received, in order, each without its blank-line separator.
    :return: ``True`` when the last event is the provider's final one (SDKs stop
        reading there, before the body ends), ``False`` when it is not, or
        ``None`` when this plugin does not know the provider.

    A stream closed early for which no plugin answers ``True`` is recorded with
    ``"incomplete": true``. The first non-``None`` result wins.
    """


@hookspec
def cassette_value_codecs() -> list[Any]:
    """Return codecs (``cassette.ValueCodec``) for types of your own in tool arguments and results.

    A ``@cassette.tool`` value of a type cassette has no encoding for (a numpy array, a pandas
    frame, a domain class that is not a dataclass) is refused when recording; a codec for it
    says how to write it and how to rebuild it::

        @hookimpl
        def cassette_value_codecs():
            return [ValueCodec(tag="numpy.ndarray", type=numpy.ndarray, encode=..., decode=...)]

    ``encode(value)`` returns data cassette encodes itself (bytes, tuples, dicts, ...); the match
    key of an argument is that data's typed encoding, so two values the data tells apart never
    share a recording. ``decode(data)`` must return the type it was given (checked when recording).
    All results are concatenated; a tag or a type registered twice is a `ValueCodecError`.
    """
    return []


# --- what a provider knows about its responses and its SDK ----------------------------------------
# The seam, drift review, usage counting and verify ask these; only provider plugins answer them.


@hookspec(firstresult=True)
def cassette_response_tokens(response: dict[str, Any], request: dict[str, Any] | None) -> int | None:
    """How many tokens a recorded response says it cost (a replay did not spend them).

    :param response: the recorded response (``status``, ``headers``, and ``json``,
        ``text`` or ``events``: the SSE events of a streamed one, each without its
        blank-line separator); blob references already resolved.
    :param request: the call's normalised request (``provider``, ``endpoint``, …), or
        ``None`` when the caller has only the response.
    :return: the token count (``0`` when the response states none), or ``None`` when
        this plugin does not know the response.

    Called for every replayed HTTP call: answer cheaply, and return ``None`` at once for
    another provider's request. The first non-``None`` result wins; the built-in generic
    HTTP provider runs last and reads a ``usage`` object (``total_tokens``, else
    ``input_tokens + output_tokens``) from a JSON body or a stream's events.
    """


@hookspec(firstresult=True)
def cassette_response_output(
    kind: str, response: dict[str, Any], request: dict[str, Any] | None
) -> dict[str, Any] | None:
    """What a recorded response answered, for drift review: its text, tool calls and finish.

    :param kind: the interaction kind (``"llm"`` or ``"http"``; tool results are read
        by drift itself).
    :param response: the recorded response (as for `cassette_response_tokens`), with a
        status under 400 (error responses are compared by their error).
    :param request: the call's normalised request, or ``None`` when the caller has only
        the response (recognise the response by its shape then).
    :return: ``None`` when this plugin does not know the response's shape, else a dict
        with any of ``text`` (the prose answer, str), ``tool_calls`` (a list of
        ``{"name": str, "arguments": parsed JSON or text}``), ``finish`` (the finish or
        stop reason), ``truncated`` (bool: cut by a token limit, or a stream that ended
        before its last event) and ``error`` (str: an error the body or stream reported).

    An answer whose text is a JSON object or list is compared as structured data. A
    response no plugin knows is compared field by field. The first non-``None`` result
    wins; an exception (a known shape holding the wrong type) makes drift compare the
    response as data.
    """


@hookspec(firstresult=True)
def cassette_retry_headers(
    request: HttpRequest | None, status: int, headers: list[tuple[str, str]], date: str | None
) -> list[tuple[str, str]] | None:
    """The headers to hand the client with a recorded error response it may retry.

    :param request: the request being replayed, as in `cassette_http_request` (``None``
        when `cassette verify` checks a response on its own).
    :param status: the recorded status (400 or more: the hook is asked only for errors).
    :param headers: the response headers replay will hand over, as ``(name, value)`` pairs.
    :param date: the response's recorded ``date`` header (kept when a ``retry-after`` was a
        date), or ``None``.
    :return: the headers to hand over instead (e.g. a recorded wait made none, so the SDK
        retries at once as it did when recorded, but a wait it gave up on left as it was:
        ``cassette.core.retry.immediate`` does this), or ``None`` when this plugin does not
        know the client that sent ``request``.

    The first non-``None`` result wins; the generic HTTP provider answers last for any
    client (waits up to two minutes made none).
    """


@hookspec
def cassette_sdk_errors() -> list[type[BaseException]]:
    """The base exception classes of SDKs that re-raise their own errors untouched.

    :return: the classes (only of SDKs already imported: never import one here).

    A replay miss (`CassetteMiss`, a missing blob, a record of the wrong shape) raised
    inside an SDK's call is re-typed to subclass these too, so the SDK's retry loop
    neither retries it nor wraps it in a connection error. All results are concatenated.
    """
    return []


@hookspec
def cassette_fallback_match(kind: str, request: dict[str, Any]) -> Callable[[dict[str, Any]], bool] | None:
    """After a replayed call missed by every key: a test that a recorded request answers it.

    :param kind: the interaction kind.
    :param request: the live call's normalised request.
    :return: a function of a recorded (normalised) request, true when that recording
        answers this call (a request this plugin keyed differently in an earlier release),
        or ``None``.

    Asked only on a miss. The session serves the first unserved recording of the same
    kind that one of the functions accepts, trying the functions in pluggy's order.
    """


@hookspec
def cassette_placeholder_credentials() -> dict[str, str]:
    """Return the environment variables an SDK needs set before it builds a client, with placeholders.

    :return: variable name -> placeholder value, e.g. ``{"ACME_API_KEY": "cassette-replay"}``.
        Leave out a variable when the SDK already finds its credentials another way (the plugin may
        look at ``os.environ``).

    In a replaying pytest run the plugin sets each returned variable that is not set, before
    collection, so a module-level SDK client in a test file builds without a real key (replay
    sends nothing). All results are merged.
    """
    return {}


@hookspec(firstresult=True)
def cassette_network_hint(host: str, packages: list[str]) -> str | None:
    """Say how to turn off a library's own traffic that the network guard blocked while replaying.

    :param host: the host the blocked connection (or DNS look-up) was for.
    :param packages: the top-level packages on the caller's stack, outermost first
        (``["threading", "agents", "httpx", ...]``).
    :return: one sentence naming the library and its documented switch (added to the error and
        listed in the pytest summary), or ``None`` when this plugin does not know the traffic.

    Called from inside the guard, in whatever thread connected: answer from the arguments alone,
    without I/O. The first non-``None`` result wins.
    """


@hookspec
def cassette_secret_headers() -> list[str]:
    """Return header names (any case) whose values the recorder's default redaction replaces.

    For a provider's own headers that identify an account (``acme-organization``); the registry's
    names (``authorization``, ``x-api-key``, any ``x-…-token``, …) and ``[tool.cassette]
    redact_headers`` are redacted already. All results are concatenated.
    """
    return []


@hookspec
def cassette_client_packages() -> list[str]:
    """The top-level packages of HTTP clients and SDKs whose frames name the client that opened a
    connection outside the seam (an unrouted client, a connection the network guard blocked).

    :return: importable top-level package names (``"requests"``, ``"httpx"``, your SDK's), never
        a module path: a frame is matched by the first part of its module's ``__name__``.

    The packages on the connecting stack are named outermost first (``acme -> httpx``), and the
    outermost is "the client" the message asks to instrument; a connection with none of them on
    its stack (a database driver) is not reported as an unrouted client. All results are
    concatenated; the generic HTTP provider answers the common HTTP libraries.
    """
    return []


@hookspec(firstresult=True)
def cassette_endpoint_url(request: dict[str, Any]) -> str | None:
    """The address on the provider's public API that a recorded LLM call of yours was sent to.

    :param request: a recorded call's normalised request (``provider``, ``endpoint``, …).
    :return: the URL to POST the request's body to, so that `cassette_http_request` keys it
        as it was keyed when recorded (``https://api.acme.example/v1/generate``), or ``None``
        when the request is not yours.

    Asked by `cassette promote` for the skeleton test it writes, which makes each recorded
    call again until the user's agent takes over. The first non-``None`` result wins.
    """


@hookspec(firstresult=True)
def cassette_reissue_request(request: dict[str, Any]) -> dict[str, Any] | None:
    """The HTTP request that makes a recorded call of yours again (for an API whose URL names
    more than the endpoint, a body that is not the request minus its ``kind``, ``provider`` and
    ``endpoint``, or headers in the key; else answer `cassette_endpoint_url`).

    :param request: a recorded call's normalised request (``kind`` ``"llm"`` or ``"http"``).
    :return: ``{"method", "url"}`` (an absolute URL) with, as needed, ``"params"`` (query
        pairs), ``"headers"`` (a dict), and ``"json"`` (a body to send as JSON) or ``"text"``
        (one to send as UTF-8), which `cassette_http_request` keys as the call was keyed when
        recorded; or ``None`` when the request is not yours, or cannot be made again from its
        recording (a body kept only as its hash).

    Asked by the skeleton test `cassette promote` writes (through
    `cassette.maintenance.promote.reissue_request`), which makes each recorded call again until
    the user's agent takes over; before `cassette_endpoint_url`. The first non-``None`` result wins.
    """
