"""The embeddings backend's figures on STS-B dev and on the hand-written agent-answer pairs.

STS-B dev is read from ``../shared/data`` beside the repository (never copied in); the test
skips when it is absent. The pairs live in ``tests/data/semantic_pairs.jsonl``: the default
threshold was chosen on their calibration half, the held-out half is reported alongside.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
STSB = ROOT.parent / "shared" / "data" / "stsb-en-dev.csv"
sys.path.insert(0, str(ROOT / "bench"))

from calibrate_semantic import DEFAULT_PAIRS, SPLITS, pass_rates, read_entailment_pairs, read_pairs, roc_auc  # noqa: E402


@pytest.fixture(scope="module")
def embeddings():  # type: ignore[no-untyped-def]
    for module in ("numpy", "safetensors", "tokenizers", "wordllama"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} not installed (pip install 'cassette[embeddings]')")
    from cassette.review.semantic import get_backend

    backend = get_backend("embeddings")
    backend.model()  # type: ignore[attr-defined]
    return backend


def test_embeddings_separate_same_meaning_on_stsb_dev(embeddings) -> None:  # type: ignore[no-untyped-def]
    if not STSB.is_file():
        pytest.skip(f"{STSB} absent: the STS-B dev split is read from ../shared/data beside the repository")
    pairs = read_pairs(STSB)
    start = time.process_time()  # CPU time: the clock measures the other processes on shared cores too
    scores = [embeddings.score(a, b)[0] for a, b, _ in pairs]
    rate = len(pairs) / max(time.process_time() - start, 1e-9)
    auc = roc_auc(scores, [y for _, _, y in pairs])
    print(f"STS-B dev ROC-AUC {auc:.3f}, {rate:,.0f} pairs/s in CPU time")
    assert auc >= 0.85
    assert rate >= 500  # the 2,000 pairs/s target is measured by bench/calibrate_semantic.py; CI shares cores


@pytest.mark.parametrize("split", SPLITS)
def test_embeddings_pass_entailments_and_fail_contradictions(embeddings, split: str) -> None:  # type: ignore[no-untyped-def]
    entail, contra = pass_rates(embeddings, read_entailment_pairs(DEFAULT_PAIRS), split)
    difference = entail - contra
    print(f"{split}: entailment-pass {entail:.2f}, contradiction-pass {contra:.2f}, diff {difference:.2f}")
    # Measured (docs/semantic.md#calibration): calibration, 8,814 pairs read to design the guards,
    # 0.80; held-out, never read, in batches written by sessions that saw neither the guards nor any
    # pair: 810 pairs of gists and paraphrases, 0.74, and 1,200 of plain restatements, 0.75. The 0.80
    # target of issue 28 is not met on held-out data.
    assert difference >= {"calibration": 0.79, "heldout": 0.72, "heldout-plain": 0.73}[split]


def test_learned_veto_probe_reports_what_it_catches_and_costs(embeddings, capsys) -> None:  # type: ignore[no-untyped-def]
    """bench/probe_learned_veto.py (the measurement docs/semantic.md cites) runs and reports each cut-off."""
    from probe_learned_veto import CUT_OFFS
    from probe_learned_veto import main as probe

    assert probe(["--limit", "400"]) == 0
    out = capsys.readouterr().out
    print(out)
    lines = out.splitlines()
    numbers = [[int(word) for word in line.replace(",", "").split() if word.isdigit()] for line in lines]
    entailments, contradictions = numbers[0]
    passed_e, passed_c = numbers[1]
    assert 0 < passed_e <= entailments and 0 < passed_c <= contradictions
    vetoes = [line for line in lines if line.startswith("probe veto at")]
    assert len(vetoes) == len(CUT_OFFS)
    for caught, lost in numbers[3:]:
        assert caught <= passed_c and lost <= passed_e  # a veto only removes pairs that pass today


def test_attention_probe_says_how_to_get_pytorch_when_it_is_absent(capsys) -> None:  # type: ignore[no-untyped-def]
    """bench/probe_attention.py trains with PyTorch, not a dependency: without it, a hint, not a trace."""
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed here: the probe would train for minutes (run it by hand)")
    from probe_attention import main as probe

    assert probe([]) == 2
    assert "pip install torch==2.13.0" in capsys.readouterr().err
