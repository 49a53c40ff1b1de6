"""The bench's quick mode, in the project venv, so the bench code cannot rot.

Each workload runs at its small size with whatever peers this environment has
(vcrpy is a dev dependency; cendor-cassette, cassetter and detect-secrets are
not), and its table must come out whole: our numbers present, each missing
peer saying "not installed". Speed is the bench's business, not this test's:
nothing here asserts a timing or a target.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import _report  # noqa: E402
from bench.__main__ import MODULES, main, run_workload  # noqa: E402
from bench._harness import NOT_INSTALLED, BenchConfig, Row, Section, Target, peer  # noqa: E402

PEER_MODULES = {
    "cendor-cassette": "cendor.cassette",
    "vcrpy": "vcr",
    "cassetter": "cassetter",
    "detect-secrets": "detect_secrets",
}


def _missing_peer(row: Row) -> bool:
    return any(row.peer.startswith(dist) and peer(mod) is None for dist, mod in PEER_MODULES.items())


@pytest.mark.parametrize("name", sorted(MODULES))
def test_quick_workload_produces_a_whole_table(name: str, tmp_path: Path) -> None:
    cfg = BenchConfig(quick=True, workdir=tmp_path, rounds=1, profile=name == "load")
    section = run_workload(name, cfg)
    assert section.error == "", section.error
    assert section.rows, f"{name} produced no rows"
    for row in section.rows:
        assert row.ours is not None, f"{name}: {row.metric} has no number of ours"
        if _missing_peer(row):
            assert row.theirs is None and row.status == NOT_INSTALLED, row
        elif row.peer and row.theirs is None:
            pytest.fail(f"{name}: {row.metric} vs {row.peer}: {row.status}")
    if name == "load":
        assert "cassette/store/" in section.profile
    text = _report.console([section])
    assert section.title in text
    assert all(r.verdict in ("met", "MISSED", "—", NOT_INSTALLED) for r in section.rows)


def test_report_says_missed_plainly_and_lists_the_machine() -> None:
    section = Section("replay", "1. Replay", lines=["context line"], profile="ncalls tottime")
    section.rows = [
        Row("replay, per call", "ms", 2.4, "bare SDK floor", 2.0, target=Target("<=", 1.10)),
        Row("replay, per call", "ms", 2.2, "cendor-cassette 1.1.1", None, NOT_INSTALLED, Target("<=", 0.2)),
        Row("throughput", "MB/s", 80.0, target=Target(">=", 50, on="ours")),
    ]
    assert [r.verdict for r in section.rows] == ["MISSED", NOT_INSTALLED, "met"]
    md = _report.markdown([section], "python -m bench", 61.0, quick=False)
    assert "**MISSED**" in md and "1.200×" in md and NOT_INSTALLED in md
    assert "## Machine" in md and "CPU:" in md and "cores:" in md
    assert "## Versions" in md and "python -m bench" in md and "ncalls tottime" in md


def test_command_line_help_does_not_need_the_bench_venv(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    assert "--quick" in capsys.readouterr().out


def test_unknown_workload_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--no-venv", "--only", "nonsense"])
    assert "unknown workload" in capsys.readouterr().err
