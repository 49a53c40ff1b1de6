"""A provider is one plugin: a third-party one, registered through the public ``cassette.hookimpl``,
is keyed, counted, reviewed and replayed through the provider hooks alone, and the core names no
provider. Also the two adapters over dependency internals, checked against the installed versions."""

from __future__ import annotations

import ast
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest

import cassette
from cassette import get_plugin_manager

ROOT = Path(__file__).resolve().parents[1]


class AcmeError(Exception):
    """The base error of the (imaginary) acme SDK: it re-raises its own errors untouched."""


class Acme:
    """The acme provider: ``POST /v1/acme/generate {"prompt": ...}`` answers ``{"output": {"text":
    ..., "call": {"fn": ..., "args": {...}}}, "meter": {"tokens": N}, "trace": ...}``."""

    @cassette.hookimpl
    def cassette_http_request(self, request: Any) -> dict[str, Any] | None:
        if request.method != "POST" or not request.path.startswith("/v1/acme/"):
            return None
        body = json.loads(request.body)
        return {"kind": "llm", "provider": "acme", "endpoint": request.path.rsplit("/", 1)[1], **body}

    @cassette.hookimpl
    def cassette_response_tokens(self, response: dict[str, Any], request: Any) -> int | None:
        if request is None or request.get("provider") != "acme":
            return None
        return int(((response.get("json") or {}).get("meter") or {}).get("tokens", 0))

    @cassette.hookimpl
    def cassette_response_output(self, kind: str, response: dict[str, Any], request: Any) -> Any:
        if request is None or request.get("provider") != "acme":
            return None
        output = response["json"]["output"]
        call = output.get("call")
        calls = [{"name": call["fn"], "arguments": call["args"]}] if call else []
        return {"text": output["text"], "tool_calls": calls, "finish": "done"}

    @cassette.hookimpl
    def cassette_volatile_fields(self, kind: str) -> list[str]:
        return ["trace", "meter"]

    @cassette.hookimpl
    def cassette_retry_headers(self, request: Any, status: int, headers: Any, date: Any) -> Any:
        if request is None or not request.path.startswith("/v1/acme/"):
            return None
        return headers  # acme's client never retries: the recorded wait is handed over as it was

    @cassette.hookimpl
    def cassette_sdk_errors(self) -> list[type[BaseException]]:
        return [AcmeError]


class AcmeServer:
    """A loopback acme API whose next answer the test sets."""

    def __init__(self) -> None:
        self.answer: dict[str, Any] = {}
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                server.requests += 1
                busy = self.path.endswith("/busy")
                body = json.dumps({"error": "busy"} if busy else server.answer).encode()
                self.send_response(429 if busy else 200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                if busy:
                    self.send_header("retry-after", "5")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()


@pytest.fixture
def acme() -> Iterator[AcmeServer]:
    plugin = Acme()
    get_plugin_manager().register(plugin)
    server = AcmeServer()
    try:
        yield server
    finally:
        server.http.shutdown()
        server.http.server_close()
        get_plugin_manager().unregister(plugin)


def _answer(text: str, fn: str, trace: str) -> dict[str, Any]:
    return {
        "output": {"text": text, "call": {"fn": fn, "args": {"order": "A1"}}},
        "meter": {"tokens": 17},
        "trace": trace,
    }


def _ask(client: Any) -> str:
    reply = client.post("/v1/acme/generate", json={"prompt": "I was charged twice for A1", "model": "acme-1"})
    return str(reply.json()["output"]["text"])


def test_a_third_party_provider_is_keyed_counted_and_reviewed_through_its_hooks(acme: AcmeServer) -> None:
    client = cassette.http_client(base_url=acme.url)
    acme.answer = _answer("I will refund order A1.", "issue_refund", "t-1")
    with cassette.using("acme.json", mode="record") as session:
        live = _ask(client)
    (recorded,) = session.interactions
    assert (recorded.kind, recorded.request["provider"], recorded.request["endpoint"]) == (
        "llm",
        "acme",
        "generate",
    )

    seen = acme.requests
    with cassette.using("acme.json", mode="replay") as session:
        assert _ask(client) == live
    assert acme.requests == seen  # served from the cassette
    assert session.stats()["served"] == {"llm": 1}
    assert session.stats()["tokens_saved"] == 17  # acme's `meter`, read by its cassette_response_tokens

    acme.answer = _answer("I will refund order A1.", "issue_refund", "t-2")  # only the volatile trace
    with cassette.using("acme.json", mode="rerecord"):
        _ask(client)
    assert cassette.drift() == []

    acme.answer = _answer("Let me pass this on.", "escalate", "t-3")  # another tool called
    with cassette.using("acme.json", mode="rerecord"):
        _ask(client)
    (item,) = cassette.drift()
    assert item.category == "tools" and item.tools_changed == ("response",), item
    assert "escalate" in item.reason and item.tokens == (17, 17)


def test_a_third_party_provider_decides_its_retry_waits_and_its_sdk_errors(acme: AcmeServer) -> None:
    client = cassette.http_client(base_url=acme.url)
    with cassette.using("busy.json", mode="record"):
        live = client.post("/v1/acme/busy", json={"prompt": "hi"})
    with cassette.using("busy.json", mode="replay"):
        replayed = client.post("/v1/acme/busy", json={"prompt": "hi"})
    missed: BaseException | None = None
    with pytest.raises(cassette.CassetteMiss), cassette.using("busy.json", mode="replay"):
        try:
            client.post("/v1/acme/generate", json={"prompt": "never recorded"})
        except cassette.CassetteMiss as exc:
            missed = exc  # raised again as the session ends
    assert replayed.status_code == live.status_code == 429
    assert replayed.headers["retry-after"] == "5" and "retry-after-ms" not in replayed.headers  # as recorded
    assert isinstance(missed, AcmeError)  # the acme SDK would re-raise it untouched

    # another API's 429, which no plugin claims: the generic provider makes the recorded wait none
    with cassette.using("other.json", mode="record"):
        client.post("/v1/other/busy", json={})
    with cassette.using("other.json", mode="replay"):
        assert client.post("/v1/other/busy", json={}).headers["retry-after-ms"] == "1"


# --- the core names no provider ------------------------------------------------------------------

# Where a provider may be named (relative to cassette/): the provider plugins, the devserver, the
# importers (which convert files a provider's SDK or a tool wrote, and say which API a call went
# to), and the semantic judge and embeddings backends (which call a provider's API themselves).
_MAY_NAME = (
    "plugins/providers/",
    "testing/",
    "importers/",
    "plugins/semantic_remote.py",
    "plugins/semantic_embeddings.py",
    "frameworks.py",  # the helpers issue 25 asks for: one per framework, each naming the SDK it takes
)
# ... and one docstring: the package's own (`help(cassette)`), whose example is a user's first
# look at cassette, with a real SDK client as in the README.
_MAY_NAME_IN_DOCSTRING = ("__init__.py",)
_PROVIDER_WORDS = re.compile(r"openai|anthropic", re.IGNORECASE)


def _modules() -> list[tuple[str, Path]]:
    package = ROOT / "cassette"
    return sorted((p.relative_to(package).as_posix(), p) for p in package.rglob("*.py"))


def _docstring_lines(tree: ast.Module) -> range:
    first = tree.body[0] if tree.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return range(first.lineno, (first.end_lineno or first.lineno) + 1)
    return range(0)


def test_the_whitelist_names_what_exists() -> None:
    modules = dict(_modules())
    assert len(modules) > 80  # the walk sees the whole package
    for allowed in (*_MAY_NAME, *_MAY_NAME_IN_DOCSTRING):
        assert allowed in modules or any(m.startswith(allowed) for m in modules), allowed


def test_no_module_outside_the_providers_names_one() -> None:
    """The words openai/anthropic, in code, comments and docstrings alike, only where a provider is the
    subject; everything else learns what a provider means through the hooks."""
    named = []
    for rel, path in _modules():
        if rel.startswith(_MAY_NAME):
            continue
        text = path.read_text(encoding="utf-8")
        skip = _docstring_lines(ast.parse(text)) if rel in _MAY_NAME_IN_DOCSTRING else range(0)
        for number, line in enumerate(text.splitlines(), 1):
            if number not in skip and _PROVIDER_WORDS.search(line):
                named.append(f"cassette/{rel}:{number}: {line.strip()}")
    assert named == [], "a provider named outside plugins/providers/:\n" + "\n".join(named)


def test_no_module_outside_the_plugins_imports_a_provider() -> None:
    """Built-in providers are registered by the plugin manager, as third-party ones are: nothing
    outside cassette/plugins/ imports them."""
    found = []
    for rel, path in _modules():
        if rel.startswith("plugins/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            else:
                continue
            if any(
                n == "cassette.plugins.providers" or n.startswith("cassette.plugins.providers.")
                for n in names
            ):
                found.append(f"cassette/{rel}:{node.lineno}")
    assert found == []


def test_every_hook_is_documented_in_the_plugin_guide() -> None:
    from cassette import hookspecs

    guide = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    hooks = [name for name in vars(hookspecs) if name.startswith("cassette_")]
    assert len(hooks) >= 12
    for name in hooks:
        assert f"| `{name}(" in guide, f"docs/plugins.md's table has no row for {name}"
        assert (getattr(hookspecs, name).__doc__ or "").strip(), f"{name} has no docstring"


# --- the adapters over dependency internals ---------------------------------------------------------


@pytest.mark.parametrize("lib", [httpx, httpx2])
@pytest.mark.parametrize("flavour", ["Client", "AsyncClient"])
def test_the_httpx_adapter_reads_what_this_httpx_keeps(lib: Any, flavour: str) -> None:
    """`client_internals` is the one read of httpx's private attributes: if a release moves them,
    this fails naming the version, before a user's instrument() does."""
    from cassette.seam.transport import client_internals

    mine = getattr(lib, "AsyncHTTPTransport" if flavour == "AsyncClient" else "HTTPTransport")()
    client = getattr(lib, flavour)(
        transport=mine, mounts={"http://no-proxy.example": None}, default_encoding="latin-1"
    )
    try:
        transport, mounts, encoding = client_internals(client)
    except cassette.UninstrumentableClientError as exc:
        pytest.fail(f"{lib.__name__} {lib.__version__} changed the internals cassette reads: {exc}")
    assert transport is mine, f"{lib.__name__} {lib.__version__}"
    assert mounts == {"http://no-proxy.example": None}, f"{lib.__name__} {lib.__version__}"
    assert encoding == "latin-1", f"{lib.__name__} {lib.__version__}"


def test_the_httpx_adapter_fails_loudly_naming_the_version() -> None:
    from cassette.seam.transport import client_internals

    class Renamed(httpx2.Client):  # as a release that moved its mounts would look
        moved = False

        def __getattribute__(self, name: str) -> Any:
            if name == "_mounts" and object.__getattribute__(self, "moved"):
                raise AttributeError(name)
            return super().__getattribute__(name)

    client = Renamed()
    client.moved = True
    with pytest.raises(cassette.UninstrumentableClientError, match=f"httpx2 {httpx2.__version__}"):
        client_internals(client)
    with pytest.raises(cassette.UninstrumentableClientError, match=f"httpx2 {httpx2.__version__}"):
        cassette.instrument(client)


def test_the_sdk_adapter_finds_the_http_client_of_these_sdks() -> None:
    """`sdk_http_client` is the one read of an SDK's private attribute (``_client``)."""
    import anthropic
    import openai

    from cassette.seam.transport import sdk_http_client

    mine = httpx2.Client()
    for sdk, client in (
        (openai, openai.OpenAI(api_key="sk-test", http_client=mine)),
        (anthropic, anthropic.Anthropic(api_key="x", http_client=mine)),
    ):
        assert sdk_http_client(client) is mine, (
            f"{sdk.__name__} {sdk.__version__} keeps its HTTP client elsewhere"
        )
