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

from typing import Any

from cassette.core.model import Cassette, HttpRequest, Interaction
from cassette.errors import (
    AmbiguousSessionError,
    BlobError,
    CassetteConfigError,
    CassetteError,
    CassetteFormatError,
    CassetteIOError,
    CassetteMiss,
    CassetteNotFoundError,
    CassetteOrderError,
    CassetteShapeError,
    CassetteToolError,
    CassetteUnusedError,
    CassetteWarning,
    CorruptCassetteError,
    InvalidBlobRefError,
    MissingBlobError,
    NetworkBlockedError,
    PromoteError,
    RecordedControlFlowError,
    TamperedBlobError,
    TraceError,
    TruncatedCassetteError,
    UnencodableValueError,
    UnimportedTypeError,
    UninstrumentableClientError,
    UnknownCodecTagError,
    UnknownModeError,
    UnrebuildableValueError,
    UnsupportedVersionError,
    ValueCodecError,
)
from cassette.hookspecs import hookimpl
from cassette.importers import CassetteImportError, ImportReport
from cassette.maintenance.promote import PromoteReport, promote
from cassette.review.drift import drift
from cassette.review.semantic import MatchResult
from cassette.seam import botocore as _botocore  # noqa: F401  (registers the botocore seam with `instrument`)
from cassette.seam.api import use, using
from cassette.seam.mcp import mcp_transport
from cassette.seam.netguard import block_network
from cassette.seam.session import Mode, Session, current_session
from cassette.seam.tools import ValueCodec, tool
from cassette.seam.trace import trace
from cassette.seam.transport import async_http_client, async_transport, http_client, instrument, transport
from cassette.secrets.rules import SecretRule
from cassette.store.cassettes import load_cassette

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
    "CorruptCassetteError",
    "HttpRequest",
    "ImportReport",
    "Interaction",
    "InvalidBlobRefError",
    "MatchResult",
    "MissingBlobError",
    "Mode",
    "NetworkBlockedError",
    "PromoteError",
    "PromoteReport",
    "RecordedControlFlowError",
    "SecretRule",
    "Session",
    "TamperedBlobError",
    "TraceError",
    "TruncatedCassetteError",
    "UnencodableValueError",
    "UnimportedTypeError",
    "UninstrumentableClientError",
    "UnknownCodecTagError",
    "UnknownModeError",
    "UnrebuildableValueError",
    "UnsupportedVersionError",
    "ValueCodec",
    "ValueCodecError",
    "async_http_client",
    "async_transport",
    "block_network",
    "current_session",
    "drift",
    "hookimpl",
    "http_client",
    "instrument",
    "load_cassette",
    "mcp_transport",
    "promote",
    "semantic_drift",
    "semantic_match",
    "tool",
    "trace",
    "transport",
    "use",
    "using",
]


def semantic_match(actual: Any, expected: Any, **kwargs: Any) -> Any:
    """Does ``actual`` carry the meaning of ``expected``? Returns a truthy/falsy ``MatchResult``.

    Example::

        assert cassette.semantic_match(answer, "offers a refund")
    """
    from cassette.review.semantic import semantic_match as _match

    return _match(actual, expected, **kwargs)


def semantic_drift(*args: Any, **kwargs: Any) -> Any:
    """Real regressions of the last rerecord, each with a category (see docs/semantic.md)."""
    from cassette.review.semantic_drift import semantic_drift as _drift

    return _drift(*args, **kwargs)
