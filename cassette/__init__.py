"""cassette: record an LLM agent run once - every LLM call and tool call - and replay it offline.

Example::

    import cassette
    from openai import OpenAI

    client = cassette.instrument(OpenAI())

    @cassette.tool
    def lookup_order(order_id: str) -> dict: ...

    @cassette.use("tests/cassettes/triage.json")  # records if missing, replays if present
    def test_triage():
        ...
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from cassette.errors import (
    AmbiguousSessionError,
    BlobError,
    CassetteConfigError,
    CassetteError,
    CassetteFormatError,
    CassetteImportError,
    CassetteIOError,
    CassetteMiss,
    CassetteNotFoundError,
    CassetteOrderError,
    CassetteShapeError,
    CassetteToolError,
    CassetteUnusedError,
    CassetteWarning,
    CompressedDataError,
    CorruptCassetteError,
    DuplicateKeyError,
    GitIndexError,
    HookExistsError,
    InvalidBlobRefError,
    MissingBlobError,
    NetworkBlockedError,
    NotAGitRepositoryError,
    NotRegularFileError,
    PromoteError,
    ProxyUpstreamError,
    RecordedControlFlowError,
    RecordingFailedError,
    SemanticBackendError,
    TamperedBlobError,
    TraceError,
    TruncatedCassetteError,
    UnencodableValueError,
    UnimportedTypeError,
    UninstrumentableClientError,
    UnknownCodecTagError,
    UnknownModeError,
    UnknownRevisionError,
    UnknownSemanticBackendError,
    UnrebuildableValueError,
    UnroutedClientError,
    UnsupportedVersionError,
    UpstreamUnreachableError,
    ValueCodecError,
)

if TYPE_CHECKING:  # what the names below are, for type checkers; at run time they load on first use
    from cassette.core.model import Cassette, HttpRequest, Interaction
    from cassette.hookspecs import hookimpl
    from cassette.importers import ImportReport
    from cassette.maintenance.promote import PromoteReport, promote
    from cassette.plugins.manager import get_plugin_manager
    from cassette.review.drift import drift
    from cassette.review.semantic import MatchResult, semantic_match
    from cassette.review.semantic_drift import semantic_drift
    from cassette.seam.api import use, using
    from cassette.seam.mcp import mcp_transport
    from cassette.seam.netguard import block_network
    from cassette.seam.proxy import proxy
    from cassette.seam.session import Mode, Session, current_session
    from cassette.seam.tools import ValueCodec, tool
    from cassette.seam.trace import trace
    from cassette.seam.transport import async_http_client, async_transport, http_client, instrument, transport
    from cassette.secrets.rules import SecretRule
    from cassette.store.cassettes import load_cassette

# The errors are cheap and caught everywhere: imported at once. The rest is imported from its module on
# first use, so `import cassette` stays cheap: a pre-commit hook or one sub-command of the CLI must not
# pay for the seam, httpx and the importers.
_LAZY: dict[str, str] = {
    "Cassette": "cassette.core.model",
    "HttpRequest": "cassette.core.model",
    "ImportReport": "cassette.importers",
    "Interaction": "cassette.core.model",
    "MatchResult": "cassette.review.semantic",
    "Mode": "cassette.seam.session",
    "PromoteReport": "cassette.maintenance.promote",
    "SecretRule": "cassette.secrets.rules",
    "Session": "cassette.seam.session",
    "ValueCodec": "cassette.seam.tools",
    "async_http_client": "cassette.seam.transport",
    "async_transport": "cassette.seam.transport",
    "block_network": "cassette.seam.netguard",
    "current_session": "cassette.seam.session",
    "drift": "cassette.review.drift",
    "get_plugin_manager": "cassette.plugins.manager",
    "hookimpl": "cassette.hookspecs",
    "http_client": "cassette.seam.transport",
    "instrument": "cassette.seam.botocore",  # registers the botocore seam with instrument, then gives it
    "load_cassette": "cassette.store.cassettes",
    "mcp_transport": "cassette.seam.mcp",
    "promote": "cassette.maintenance.promote",
    "proxy": "cassette.seam.proxy",
    "semantic_drift": "cassette.review.semantic_drift",
    "semantic_match": "cassette.review.semantic",
    "tool": "cassette.seam.tools",
    "trace": "cassette.seam.trace",
    "transport": "cassette.seam.transport",
    "use": "cassette.seam.api",
    "using": "cassette.seam.api",
}

__version__ = "0.1.0"

__all__ = [
    "AmbiguousSessionError",
    "BlobError",
    "Cassette",
    "CassetteConfigError",
    "CassetteError",
    "CassetteFormatError",
    "CassetteIOError",
    "CassetteImportError",
    "CassetteMiss",
    "CassetteNotFoundError",
    "CassetteOrderError",
    "CassetteShapeError",
    "CassetteToolError",
    "CassetteUnusedError",
    "CassetteWarning",
    "CompressedDataError",
    "CorruptCassetteError",
    "DuplicateKeyError",
    "GitIndexError",
    "HookExistsError",
    "HttpRequest",
    "ImportReport",
    "Interaction",
    "InvalidBlobRefError",
    "MatchResult",
    "MissingBlobError",
    "Mode",
    "NetworkBlockedError",
    "NotAGitRepositoryError",
    "NotRegularFileError",
    "PromoteError",
    "PromoteReport",
    "ProxyUpstreamError",
    "RecordedControlFlowError",
    "RecordingFailedError",
    "SecretRule",
    "SemanticBackendError",
    "Session",
    "TamperedBlobError",
    "TraceError",
    "TruncatedCassetteError",
    "UnencodableValueError",
    "UnimportedTypeError",
    "UninstrumentableClientError",
    "UnknownCodecTagError",
    "UnknownModeError",
    "UnknownRevisionError",
    "UnknownSemanticBackendError",
    "UnrebuildableValueError",
    "UnroutedClientError",
    "UnsupportedVersionError",
    "UpstreamUnreachableError",
    "ValueCodec",
    "ValueCodecError",
    "async_http_client",
    "async_transport",
    "block_network",
    "current_session",
    "drift",
    "get_plugin_manager",
    "hookimpl",
    "http_client",
    "instrument",
    "load_cassette",
    "mcp_transport",
    "promote",
    "proxy",
    "semantic_drift",
    "semantic_match",
    "tool",
    "trace",
    "transport",
    "use",
    "using",
]


if not TYPE_CHECKING:  # type checkers see the imports above, so a misspelt name stays an error

    def __getattr__(name: str) -> Any:
        """``cassette.X`` for a public name not imported yet: import its module once, keep the value."""
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'cassette' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        if module.startswith("cassette.seam."):
            # a session may rerecord: drift registers the comparison it reports (session.set_rerecord_review)
            importlib.import_module("cassette.review.drift")
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
