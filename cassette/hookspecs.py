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
def cassette_placeholder_credentials() -> dict[str, str]:
    """Return the environment variables an SDK needs set before it builds a client, with placeholders.

    :return: variable name -> placeholder value, e.g. ``{"OPENAI_API_KEY": "cassette-replay"}``.
        Leave out a variable when the SDK already finds its credentials another way (the plugin may
        look at ``os.environ``).

    In a replaying pytest run the plugin sets each returned variable that is not set, before
    collection, so a module-level ``OpenAI()`` in a test file builds without a real key (replay
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
