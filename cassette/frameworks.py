"""One call per agent framework that takes a client: an instrumented one, through its public API.

Each helper hands the framework a client routed through the cassette seam, by the framework's
own documented global or constructor argument; nothing is patched. The frameworks are heavy
optional dependencies, so each is imported inside the function that uses it (docs/frameworks.md
has a tested recipe for each).

Example::

    import cassette.frameworks

    cassette.frameworks.openai_agents()  # Agent(...) / Runner.run(...) now record and replay
"""

from __future__ import annotations

import importlib
from typing import Any

from cassette.seam.transport import async_http_client, http_client, instrument


def sdk_http_lib(sdk: str = "openai") -> str:
    """``"httpx2"`` or ``"httpx"``: the library the installed ``sdk`` (openai, anthropic) is built on.

    Read from the SDK's public ``DefaultHttpxClient`` (openai 1.x/2.x and anthropic 0.x: httpx;
    openai 3.x and anthropic 1.x/2.x: httpx2).
    """
    base = importlib.import_module(sdk).DefaultHttpxClient  # the SDK is the caller's: imported when asked
    for cls in base.__mro__:
        lib = cls.__module__.partition(".")[0]
        if lib in ("httpx", "httpx2"):
            return lib
    return "httpx2"


def http_clients(sdk: str = "openai", **kwargs: Any) -> tuple[Any, Any]:
    """A sync and an async HTTP client routed through the seam, of the library ``sdk`` is built on.

    For a framework's ``http_client=`` **and** ``http_async_client=`` (or ``async_http_client=``):
    give both, or its async path sends around the seam. Keyword arguments go to both clients.
    """
    lib = sdk_http_lib(sdk)
    return http_client(lib, **kwargs), async_http_client(lib, **kwargs)


def openai_agents(client: Any = None, *, tracing: bool = False) -> Any:
    """Make ``client`` (default: a new ``AsyncOpenAI()``) openai-agents' default client, instrumented,
    and returns the routed copy. ``tracing=False`` (the default) also turns off its trace export,
    which otherwise posts to api.openai.com from its own client at exit, on replay too."""
    import agents  # deferred: heavy optional dependency (openai-agents)

    if client is None:
        from openai import AsyncOpenAI  # deferred: an optional SDK (openai-agents depends on it)

        client = AsyncOpenAI()
    routed = instrument(client)
    agents.set_default_openai_client(routed, use_for_tracing=False)
    if not tracing:
        agents.set_tracing_disabled(True)
    return routed


def langchain_clients(sdk: str = "openai", **kwargs: Any) -> tuple[Any, Any]:
    """``(http_client, http_async_client)`` for ``ChatOpenAI``: pass both. (``ChatAnthropic`` of
    langchain-anthropic 1.7.10 takes neither: give it ``anthropic_api_url=`` the URL of a
    `cassette.proxy`; see docs/frameworks.md.)"""
    return http_clients(sdk, **kwargs)


def llama_index_clients(**kwargs: Any) -> tuple[Any, Any]:
    """``(http_client, async_http_client)`` for llama-index's ``OpenAI(...)``: pass both."""
    return http_clients("openai", **kwargs)


def litellm(**kwargs: Any) -> tuple[Any, Any]:
    """Set ``litellm.client_session`` and ``litellm.aclient_session`` (its globals for the clients of
    OpenAI-compatible calls) to httpx clients routed through the seam, and return them."""
    import litellm as lib  # deferred: heavy optional dependency

    sync, async_ = http_client("httpx", **kwargs), async_http_client("httpx", **kwargs)  # litellm: httpx
    lib.client_session, lib.aclient_session = sync, async_
    return sync, async_


def pydantic_ai_provider(sdk: str = "openai", client: Any = None, **kwargs: Any) -> Any:
    """A pydantic-ai ``OpenAIProvider`` (``sdk="openai"``) or ``AnthropicProvider``
    (``sdk="anthropic"``) whose SDK client (``client``, default a new async one) is instrumented."""
    if sdk == "anthropic":
        from pydantic_ai.providers.anthropic import AnthropicProvider  # deferred: heavy optional dependency

        if client is None:
            from anthropic import AsyncAnthropic  # deferred: an optional SDK

            client = AsyncAnthropic(**kwargs)
        return AnthropicProvider(anthropic_client=instrument(client))
    from pydantic_ai.providers.openai import OpenAIProvider  # deferred: heavy optional dependency

    if client is None:
        from openai import AsyncOpenAI  # deferred: an optional SDK

        client = AsyncOpenAI(**kwargs)
    return OpenAIProvider(openai_client=instrument(client))


def google_genai_http_options(**kwargs: Any) -> Any:
    """google-genai ``HttpOptions(httpx_client=..., httpx_async_client=...)`` routed through the seam
    (other keyword arguments, e.g. ``base_url``, go to ``HttpOptions``). Give it to
    ``genai.Client(http_options=...)``; both clients, or its async calls go through aiohttp."""
    from google.genai import types  # deferred: heavy optional dependency

    return types.HttpOptions(
        httpx_client=http_client("httpx2"), httpx_async_client=async_http_client("httpx2"), **kwargs
    )
