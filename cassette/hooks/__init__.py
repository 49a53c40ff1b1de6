"""Git and pre-commit entry points: the secret scan, the blob check and the drift summary.

Every check reads what is *staged* from the git index with dulwich (no git
binary, no ``git diff`` output, which a textconv driver can rewrite):

- :func:`cassette.hooks.scan.scan_staged`: secrets in staged cassettes and blobs;
- :func:`cassette.maintenance.verify.verify_staged`: every referenced blob staged and hash-correct;
- :func:`cassette.hooks.drift.drift_staged`: what changed, interaction by interaction.

``python -m cassette.hooks pre-commit [FILES]`` runs all three in one process (what ``cassette
install-hooks`` wires into ``.git/hooks/pre-commit``, and the pre-commit hook ``cassette``, what
``cassette init`` writes); the pre-commit framework can also run them one process each as the hooks
``cassette-secrets``, ``cassette-verify`` and ``cassette-drift`` (``cassette init --separate-hooks``;
see ``.pre-commit-hooks.yaml``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from cassette.errors import CassetteError


def pre_commit(files: Sequence[str] = ()) -> int:
    """Run the secret scan, the blob check and the drift summary on the staged files; 1 if a check fails.

    ``files`` are the file names pre-commit passes (the ``cassette`` hook: all three checks in one
    process, one interpreter start-up per commit instead of three); their index entries are read,
    so ``pre-commit run --all-files`` checks every tracked file. Without, what is staged.

    Example::

        sys.exit(pre_commit())
    """
    # this package is imported before each of its modules: at the top, `cassette scan` (which
    # imports cassette.hooks.scan) would load the drift review and verify's checks too
    # deferred: each hook process loads only its own check
    from cassette.hooks.drift import drift_staged, render_text

    # deferred: as above
    from cassette.hooks.scan import render_text as render_findings

    # deferred: as above
    from cassette.hooks.scan import scan_staged

    # deferred: as above
    from cassette.maintenance.verify import verify_staged

    only = list(files) or None
    code = 0
    try:
        found = scan_staged(only=only)
        if found:
            print(render_findings(found, staged=True), file=sys.stderr)
            code = 1
        report = verify_staged(only=only)
        if not report.ok:
            print(report.render(), file=sys.stderr)
            code = 1
        summary = render_text(drift_staged(only=only))
        if summary:
            print("cassette drift (staged vs HEAD):\n" + summary, file=sys.stderr)
        elif only:  # as `cassette drift --staged FILES`: under --all-files, one line, not silence
            print(
                f"no staged cassette differs from HEAD among the {len(only):,} file(s) given: "
                "no drift to summarise.",
                file=sys.stderr,
            )
    except CassetteError as exc:
        print(f"cassette pre-commit: error: {exc}", file=sys.stderr)
        return 2
    return code
