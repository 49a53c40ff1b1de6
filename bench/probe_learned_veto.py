"""Can a veto learned from the static vectors catch the contradictions the guards let through?

The embeddings backend passes about a tenth of the calibration contradictions of
``tests/data/semantic_pairs.jsonl``; the guards that catch the rest are hand-written. This probe
asks whether a linear model over the same 256-d static vectors would catch more without vetoing
entailments: among the calibration pairs that pass today, it fits a ridge-regression probe
(contradiction = 1) on nine tenths of them in file order (so the held-back tenth is mostly other
batches' answers) and vetoes the held-back pairs it scores above a cut-off, for each tenth in turn.

Features of a pair: the expected text's vector times (and minus) the vector of the answer's span
that matched it best, the vector of the expected words the answer does not have times that of the
answer's words the expected text does not have, the former alone, the best cosine and the share
of expected words that are new. Only the calibration split is read.

Run from the repository root (about 30 s)::

    .venv/bin/python bench/probe_learned_veto.py
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calibrate_semantic import DEFAULT_PAIRS, read_entailment_pairs

FOLDS = 10
CUT_OFFS = (0.3, 0.4, 0.5, 0.6, 0.7)
_WORD = re.compile(r"[a-z0-9$%']+")


def features(model: Any, actual: str, expected: str) -> Any:
    """The probe's feature vector of one pair (see the module's text)."""
    import numpy as np

    from cassette.plugins.semantic_embeddings import SHORT, split_sentences, windows

    answer_words, expected_words = set(_WORD.findall(actual.lower())), set(_WORD.findall(expected.lower()))
    new_expected = sorted(expected_words - answer_words)
    new_answer = sorted(answer_words - expected_words)
    sentences = split_sentences(actual)
    size = len(expected.split())
    spans = [actual, *sentences, *(windows(sentences, size) if size <= SHORT else [])]
    vectors = model.encode([expected, *spans, " ".join(new_expected) or ".", " ".join(new_answer) or "."])
    want, found, new_e, new_a = vectors[0], vectors[1:-2], vectors[-2], vectors[-1]
    cosines = found @ want
    best = found[int(cosines.argmax())]
    extra = [float(cosines.max()), len(new_expected) / max(1, len(expected_words))]
    return np.concatenate([want * best, np.abs(want - best), new_e * new_a, new_e, extra])


def ridge_scores(train_x: Any, train_y: Any, test_x: Any, alpha: float = 10.0) -> Any:
    """A ridge-regression probe's scores of ``test_x`` (features standardised on ``train_x``)."""
    import numpy as np

    mean, std = train_x.mean(axis=0), train_x.std(axis=0) + 1e-6
    a, b = (train_x - mean) / std, (test_x - mean) / std
    a1 = np.hstack([a, np.ones((len(a), 1))])
    weights = np.linalg.solve(a1.T @ a1 + alpha * np.eye(a1.shape[1]), a1.T @ train_y)
    return np.hstack([b, np.ones((len(b), 1))]) @ weights


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pairs", type=Path, default=DEFAULT_PAIRS, help=f"entailment pairs (default {DEFAULT_PAIRS})"
    )
    parser.add_argument("--limit", type=int, help="read only the first N calibration pairs")
    args = parser.parse_args(argv)
    import numpy as np

    from cassette.plugins.semantic_embeddings import EMBEDDINGS

    rows = [r for r in read_entailment_pairs(args.pairs) if r["split"] == "calibration"]
    rows = rows[: args.limit] if args.limit else rows
    entailments = sum(r["label"] == "entailment" for r in rows)
    contradictions = len(rows) - entailments
    threshold = EMBEDDINGS.default_threshold
    passing = [r for r in rows if EMBEDDINGS.score(r["actual"], r["expected"])[0] >= threshold]
    model = EMBEDDINGS.model()
    x = np.array([features(model, r["actual"], r["expected"]) for r in passing])
    y = np.array([r["label"] == "contradiction" for r in passing], dtype=float)
    fold = np.arange(len(passing)) * FOLDS // max(1, len(passing))
    scores = np.zeros(len(passing))
    for k in range(FOLDS):
        train, test = fold != k, fold == k
        if test.any() and train.any():
            scores[test] = ridge_scores(x[train], y[train], x[test])
    passed_e = int((y == 0).sum())
    passed_c = int(y.sum())
    base = passed_e / entailments - passed_c / contradictions
    print(f"calibration: {entailments} entailments, {contradictions} contradictions")
    print(f"passing today: {passed_e} entailments, {passed_c} contradictions")
    print(f"entailment-pass - contradiction-pass today: {base:.4f}")
    for cut in CUT_OFFS:
        veto = scores >= cut
        caught, lost = int((veto & (y == 1)).sum()), int((veto & (y == 0)).sum())
        after = (passed_e - lost) / entailments - (passed_c - caught) / contradictions
        print(f"probe veto at {cut:.1f}: catches {caught}, vetoes {lost} entailments, difference {after:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
