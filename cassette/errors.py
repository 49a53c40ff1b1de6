"""Every error cassette raises: one root, one class per thing that went wrong.

Each message names the file involved, what was expected, and the next step.
"""

from __future__ import annotations

import os


class CassetteError(Exception):
    """Root of every error raised by cassette."""

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None) -> None:
        self.path = os.fspath(path) if path is not None else None
        super().__init__(message)


class CassetteConfigError(CassetteError):
    """`[tool.cassette]`, a mode name or an argument is invalid."""


class UnknownModeError(CassetteConfigError):
    """A mode name that is not one of auto, record, replay, rerecord."""


class CassetteNotFoundError(CassetteError):
    """Replay was asked for but the cassette file does not exist."""


class CassetteIOError(CassetteError):
    """The cassette file, its directory or its blob store cannot be read or written.

    No permission, a file where a directory should be, a name the system rejects, an I/O error.
    """


class CassetteFormatError(CassetteError):
    """The cassette file exists but cannot be read as a cassette."""


class CorruptCassetteError(CassetteFormatError):
    """The file is not valid JSON (or not valid UTF-8)."""


class TruncatedCassetteError(CorruptCassetteError):
    """The file ends in the middle of its JSON: an interrupted copy or write."""


class CassetteShapeError(CassetteFormatError):
    """Valid JSON, but not the shape of a cassette manifest."""


class UnimportedTypeError(CassetteShapeError):
    """A recorded tool value names a class whose module is not imported: replay never imports it."""


class UnsupportedVersionError(CassetteFormatError):
    """The manifest's `version` is one this release cannot read."""


class BlobError(CassetteError):
    """A content-addressed blob is missing, tampered with, or referenced badly."""


class MissingBlobError(BlobError):
    """A manifest references a blob that is not in the blob store."""


class TamperedBlobError(BlobError):
    """A blob's bytes do not hash to the id it is stored under."""


class InvalidBlobRefError(BlobError):
    """A `{"$blob": ...}` reference that is not a 40-hex git blob id."""


class CassetteMiss(CassetteError):
    """Replay met a call that the cassette does not hold.

    Deliberately not an httpx error: SDK retry loops must not retry it and must
    not turn it into a connection error.
    """

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None, request: object = None):
        super().__init__(message, path=path)
        self.request = request


class UninstrumentableClientError(CassetteError, TypeError):
    """`cassette.instrument()` was given something that is not an SDK client on httpx or httpx2."""


class CassetteUnusedError(CassetteError):
    """Recorded interactions were never requested during replay (when asked to fail)."""


class CassetteOrderError(CassetteError):
    """Replayed calls came in a different order than recorded (when asked to fail)."""


class CassetteToolError(CassetteError):
    """A recorded tool exception whose class could not be rebuilt on replay."""


class RecordingFailedError(CassetteError):
    """Raised when nothing can be recorded (for example a stream could not be read)."""


class CassetteWarning(UserWarning):
    """Unused interactions, order divergences and other non-fatal findings."""


class SemanticBackendError(CassetteError):
    """A semantic backend cannot run: its optional extra is missing or its model failed to load."""


class UnknownSemanticBackendError(SemanticBackendError, CassetteConfigError):
    """`semantic_match(backend=...)` or `[tool.cassette] semantic_backend` names no installed backend."""


class HookExistsError(CassetteError):
    """A hook that cassette did not write is in the way."""


class TraceError(CassetteError):
    """A trace file cannot be opened, or a trace handle is used after it was closed."""


class NetworkBlockedError(CassetteError):
    """A connection was attempted while the network guard was on (replay makes no connection)."""

    def __init__(
        self, message: str, *, host: str, port: int | None = None, path: str | None = None, hint: str = ""
    ) -> None:
        super().__init__(message, path=path)
        self.host = host
        self.port = port
        self.hint = hint  # how to turn the traffic off, when a plugin knows (cassette_network_hint)


class AmbiguousSessionError(CassetteError):
    """A call came from a thread with no session context while several sessions are active."""


class GitIndexError(CassetteError):
    """The git index cannot be read: a split index, a damaged file, a format dulwich does not know."""


class UnknownRevisionError(CassetteError):
    """``--rev`` names a commit, branch or range that the repository does not have."""


class NotAGitRepositoryError(CassetteError):
    """A git-reading command (``--staged``, ``--rev``, ``install-hooks``) ran outside a git work tree."""


class CassetteImportError(CassetteError):
    """A file given to `cassette import` cannot be read or converted."""


class PromoteError(CassetteError):
    """A trace cannot be promoted: unreadable lines, no such run, several runs and none chosen."""


class NotRegularFileError(CassetteError, OSError):
    """An `OSError` for a path that is a FIFO, a socket or a device (``kind`` says which)."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(f"{os.fspath(path)}: not a regular file: it is {kind}", path=path)
        self.filename = os.fspath(path)
        self.strerror = f"not a regular file: it is {kind}"
        self.kind = kind

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


class CompressedDataError(CassetteError, ValueError):
    """A compressed cassette that cannot be expanded; ``truncated`` when its gzip data ends early."""

    def __init__(self, reason: str, *, truncated: bool = False) -> None:
        super().__init__(reason)
        self.truncated = truncated


class UnencodableValueError(CassetteError, TypeError):
    """A tool's argument, result or error holds a value a cassette cannot hold losslessly.

    Refused when the call is recorded (and when it is replayed: its match key cannot be computed),
    never written as something that would replay as another type or value.
    """


class ValueCodecError(CassetteConfigError):
    """A codec a plugin returned from `cassette_value_codecs` is invalid: a tag or a type registered
    twice, a built-in type, or a decoder that rebuilds another type than it was given."""


class UnrebuildableValueError(CassetteShapeError):
    """A recorded tool value cannot be rebuilt as the type it was recorded as (its class is gone
    from its module, or an earlier release kept only the object's state): re-record."""


class UnknownCodecTagError(UnrebuildableValueError):
    """A recorded tool value was written by a codec (`{"$codec": tag}`) no loaded plugin registers."""


class RecordedControlFlowError(CassetteShapeError):
    """A cassette says a tool raised control flow (`unittest.SkipTest`, pytest's skip/fail/xfail,
    `SystemExit`, `KeyboardInterrupt`, ...), which is never recorded: the cassette was edited."""


class DuplicateKeyError(CorruptCassetteError):
    """A manifest (or a JSON blob) gives one key twice in an object: which one counts is not defined."""


class UnroutedClientError(CassetteError):
    """While recording, an HTTP client connected out without passing through the cassette seam."""


class ProxyUpstreamError(CassetteConfigError):
    """`cassette.proxy(upstream)` was given an upstream that is not an ``http(s)://host`` URL."""


class UpstreamUnreachableError(CassetteError):
    """While recording through `cassette.proxy`, the upstream could not be reached."""


class EventStreamError(CassetteShapeError, ValueError):
    """Bytes that are not an AWS event-stream message (a bad length or CRC)."""
