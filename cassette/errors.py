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


class DuplicateKeyError(CorruptCassetteError):
    """A manifest (or a JSON blob) gives one key twice in an object: which one counts is not defined."""


class UnroutedClientError(CassetteError):
    """While recording, an HTTP client connected out without passing through the cassette seam."""
