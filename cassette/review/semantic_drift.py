"""``semantic_drift``: the real regressions of a rerecord, rewordings and volatile fields filtered out."""

from __future__ import annotations

from pathlib import Path

from cassette.errors import CassetteError
from cassette.review.drift import DriftItem, compare_cassettes, regressions
from cassette.seam.session import Mode, Session, last_session, pending_path
from cassette.store.cassettes import load_cassette


def semantic_drift(
    path: str | Path | Session | None = None, *, backend: str | None = None
) -> list[DriftItem]:
    """What a ``rerecord`` really changed in the LLM outputs and tool calls, interaction by interaction.

    Returns only regressions, each with ``.category`` (``changed``, ``negated``,
    ``numbers``, ``tools``, ``shape``, ``error``, ``added`` or ``removed``),
    ``.seq``, ``.score`` (the semantic score, or ``None`` when a guard or a
    structural check decided) and ``.reason``. Rewordings (same meaning under
    ``semantic_match``) and changes of ids, timestamps and usage are left out.

    With no argument it reports on the last rerecord finished in this thread or
    task (drift belongs to its session, so parallel rerecords never mix); pass
    the ``Session`` itself, or a cassette path to compare the committed file
    with its ``.pending.json`` re-recording on disk. ``backend`` picks the
    semantic backend (default: ``[tool.cassette] semantic_backend``).

    Example::

        with cassette.using("tests/cassettes/triage.json", mode="rerecord"):
            agent.run("My card was charged twice")
        for item in cassette.semantic_drift():
            print(item.seq, item.category, item.reason)
        assert not cassette.semantic_drift(), "the agent's answers changed meaning"
    """
    if path is None or isinstance(path, Session):
        session = last_session() if path is None else path
        if session is None or session.requested_mode is not Mode.RERECORD:
            raise CassetteError(
                "cassette.semantic_drift() reports on a rerecord, and none has finished in this context. "
                "Run the block with mode='rerecord' (or CASSETTE_MODE=rerecord) first, or pass the "
                "cassette path to compare it with its .pending.json re-recording."
            )
        if session.cassette is None or session.written is None:
            raise CassetteError(
                f"the rerecord of {session.path} has not finished yet; call semantic_drift() after its block."
            )
        if session.written != pending_path(session.path):
            raise CassetteError(
                f"the rerecord of {session.path} failed, so there is no new recording to compare "
                f"(the partial run is in {session.written}). Fix the failure and rerecord."
            )
        if backend is None:
            return regressions(session.drift)
        return regressions(compare_cassettes(session.committed, session.cassette, backend=backend))
    committed = Path(path)
    pending = pending_path(committed)
    if not pending.exists():
        raise CassetteError(
            f"no re-recording to compare for {committed}: {pending} does not exist. "
            "Run the test with CASSETTE_MODE=rerecord first."
        )
    old = load_cassette(committed) if committed.exists() else None
    return regressions(compare_cassettes(old, load_cassette(pending), backend=backend))
