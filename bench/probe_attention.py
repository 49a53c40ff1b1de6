"""Would a small attention model over the static vectors, trained on our own pairs, sharpen the veto?

A decomposable-attention model (Parikh et al., 2016: align each word of one side with the words of
the other, compare each with what it is aligned to, sum the comparisons) reads the frozen 256-d
word vectors of the ``embeddings`` backend and scores a pair's chance of being a contradiction. It
is trained on the calibration split of ``tests/data/semantic_pairs.jsonl`` (five contiguous folds
give each calibration pair a score from a model that did not see it), then once on the whole split
to score the two held-out splits. A pair passes when it passes today and scores below a cut-off;
the script prints entailment-pass, contradiction-pass and their difference per split and cut-off
(a cut-off above 1 is today's backend). Only rates are printed, never a pair.

Training needs PyTorch, which cassette does not depend on; run it in a scratch environment (about
4 minutes on 2 cores)::

    python -m venv /tmp/probe && /tmp/probe/bin/pip install torch==2.13.0 -e ".[embeddings]"
    /tmp/probe/bin/python bench/probe_attention.py
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calibrate_semantic import DEFAULT_PAIRS, read_entailment_pairs

CUT_OFFS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 1.01)
FOLDS = 5


def read(path: Path) -> list[dict[str, Any]]:
    """The pairs with their token ids and whether the ``embeddings`` backend passes them today."""
    from cassette.plugins.semantic_embeddings import EMBEDDINGS

    model = EMBEDDINGS.model()

    def ids(text: str) -> list[int]:
        return [i for i in model.tokenizer.encode(text, add_special_tokens=False).ids if i != model.unknown]

    rows = read_entailment_pairs(path)
    threshold = EMBEDDINGS.default_threshold
    return [
        {
            "split": r["split"],
            "y": float(r["label"] == "contradiction"),
            "passed": EMBEDDINGS.score(r["actual"], r["expected"])[0] >= threshold,
            "a": ids(r["actual"]) or [0],
            "e": ids(r["expected"]) or [0],
        }
        for r in rows
    ]


def build(vectors: Any, hidden: int) -> Any:
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            d = vectors.shape[1]
            self.emb = nn.Embedding.from_pretrained(torch.tensor(vectors), freeze=True)
            self.attend = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
            self.compare = nn.Sequential(
                nn.Linear(4 * d, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
            )
            self.out = nn.Sequential(nn.Linear(4 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

        def forward(self, a: Any, a_mask: Any, e: Any, e_mask: Any) -> Any:
            answer, expected = self.emb(a), self.emb(e)
            scores = self.attend(expected) @ self.attend(answer).transpose(1, 2)
            to_answer = scores.masked_fill(~a_mask[:, None, :], -1e9)
            to_expected = scores.transpose(1, 2).masked_fill(~e_mask[:, None, :], -1e9)
            beta = torch.softmax(to_answer, -1) @ answer
            alpha = torch.softmax(to_expected, -1) @ expected
            ve = (
                self.compare(torch.cat([expected, beta, expected * beta, expected - beta], -1))
                * e_mask[..., None]
            )
            va = (
                self.compare(torch.cat([answer, alpha, answer * alpha, answer - alpha], -1))
                * a_mask[..., None]
            )
            mean_a = va.sum(1) / a_mask.sum(1, keepdim=True)
            return self.out(torch.cat([ve.sum(1), ve.max(1).values, mean_a, va.max(1).values], -1)).squeeze(
                -1
            )

    return Attention()


def batch(rows: Sequence[dict[str, Any]]) -> tuple[Any, ...]:
    import torch

    def pad(key: str) -> tuple[Any, Any]:
        lengths = torch.tensor([len(r[key]) for r in rows])
        ids = torch.zeros(len(rows), int(lengths.max()), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r[key])] = torch.tensor(r[key])
        return ids, torch.arange(ids.shape[1])[None] < lengths[:, None]

    return (*pad("a"), *pad("e"), torch.tensor([r["y"] for r in rows]))


def train(vectors: Any, rows: list[dict[str, Any]], hidden: int, epochs: int) -> Any:
    import torch

    model = build(vectors, hidden)
    optimiser = torch.optim.Adam(
        [p for p in model.parameters() if p.requires_grad], lr=1e-3, weight_decay=1e-5
    )
    rows = list(rows)
    for _ in range(epochs):
        random.shuffle(rows)
        model.train()
        for i in range(0, len(rows), 32):
            *inputs, y = batch(rows[i : i + 32])
            loss = torch.nn.functional.binary_cross_entropy_with_logits(model(*inputs), y)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    return model


def predict(model: Any, rows: Sequence[dict[str, Any]]) -> list[float]:
    import torch

    model.eval()
    out: list[float] = []
    with torch.no_grad():
        for i in range(0, len(rows), 256):
            *inputs, _ = batch(rows[i : i + 256])
            out.extend(torch.sigmoid(model(*inputs)).tolist())
    return out


def report(name: str, rows: Sequence[dict[str, Any]], scores: Sequence[float]) -> None:
    for cut in CUT_OFFS:
        rates = []
        for label in (0.0, 1.0):
            chosen = [(r, s) for r, s in zip(rows, scores, strict=True) if r["y"] == label]
            rates.append(sum(r["passed"] and s < cut for r, s in chosen) / len(chosen))
        print(
            f"{name} cut-off {cut:.2f}: entailments {rates[0]:.4f} contradictions {rates[1]:.4f} "
            f"difference {rates[0] - rates[1]:.4f}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, default=DEFAULT_PAIRS)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--only-passing", action="store_true", help="train only on the pairs that pass today")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print(
            "this probe trains with PyTorch: pip install torch==2.13.0 (see the module's text)",
            file=sys.stderr,
        )
        return 2
    from cassette.plugins.semantic_embeddings import EMBEDDINGS

    torch.manual_seed(0)
    random.seed(0)
    rows = read(args.pairs)
    vectors = EMBEDDINGS.model().vectors
    calibration = [r for r in rows if r["split"] == "calibration"]

    def fit(chosen: list[dict[str, Any]]) -> Any:
        return train(
            vectors, [r for r in chosen if r["passed"] or not args.only_passing], args.hidden, args.epochs
        )

    n, scores = len(calibration), []
    for k in range(FOLDS):
        lo, hi = k * n // FOLDS, (k + 1) * n // FOLDS
        scores.extend(predict(fit(calibration[:lo] + calibration[hi:]), calibration[lo:hi]))
    report("calibration (out of fold)", calibration, scores)
    model = fit(calibration)
    for split in ("heldout", "heldout-plain"):
        chosen = [r for r in rows if r["split"] == split]
        report(split, chosen, predict(model, chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
