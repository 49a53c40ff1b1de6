"""Recall and precision of ``cassette scan`` on the labelled third-party secret corpus.

The corpus is ``tests/data/thirdparty/secrets/``: real cassettes with synthetic secrets planted
(``make_labels.py``), each file's true secrets and its must-not-find values in ``labels.json``.
Every file is scanned through the CLI (``cassette scan --format json``); each reported finding is
matched to a label by this rule, first that applies:

1. exact: the finding's fingerprint is ``sha256("<rule>\\0<value>")[:16]`` of a label's value (the
   scanner's documented fingerprint), i.e. the finding is exactly that value;
2. overlap: the finding's line lies within a line span of the label's value (for a value inside
   base64, the span of the encoded text), and the finding's masked head and tail (``sk-…Ab12``)
   occur within 24 characters around that occurrence, the tail ending inside or after the value
   (a finding that took a little more or less than the value). Of several such labels, the one
   whose value ends nearest the finding's tail wins; on a tie a secret beats a negative, and a
   label no other finding is exactly beats one that another is.

A labelled secret is a true positive when some finding matches it, else a false negative. A
finding that matches a labelled negative, or no label at all, is a false positive; the former are
also counted as ``negative_hits``. Several findings on one secret count it once.

    python -m tests.thirdparty_secrets     # print the table (values masked: last 4 characters)
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).parent / "data" / "thirdparty" / "secrets"
LABELS = CORPUS / "labels.json"
ROOT = Path(__file__).resolve().parent.parent
_AROUND = 24


def scan_json(paths: list[Path]) -> list[dict[str, Any]]:
    """``cassette scan --format json PATHS`` as a list of findings (the one place that runs the CLI)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    code = "import sys; from cassette.cli import main; raise SystemExit(main(sys.argv[1:]))"
    cmd = [sys.executable, "-c", code, "scan", "--format", "json", *map(str, paths)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=CORPUS, env=env, check=False)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"cassette scan failed ({done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout or "[]")


def fingerprint_of(rule: str, value: str) -> str:
    """The scanner's fingerprint of ``value`` under ``rule`` (see ``Finding.fingerprint``)."""
    return hashlib.sha256(f"{rule}\x00{value}".encode("utf-8", "surrogatepass")).hexdigest()[:16]


def masked(value: str) -> str:
    return f"…{value[-4:]}"


def file_text(path: Path, label: dict[str, Any]) -> str:
    raw = path.read_bytes()
    if label.get("file_encoding") == "gzip":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8")


@dataclass
class _Label:
    value: str
    kind: str
    where: str
    secret: bool
    spans: list[tuple[int, int, int]]  # (first line, last line, offset of the visible text)
    visible: str  # the text in the file: the value, or the base64 it is encoded in


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _spans(text: str, visible: str) -> list[tuple[int, int, int]]:
    out = []
    at = text.find(visible)
    while at >= 0:
        out.append((_line_of(text, at), _line_of(text, at + len(visible)), at))
        at = text.find(visible, at + 1)
    return out


def _labels_of(entry: dict[str, Any], text: str) -> list[_Label]:
    out = []
    for secret, items in ((True, entry["secrets"]), (False, entry["negatives"])):
        for item in items:
            visible = item.get("container", item["value"])
            out.append(
                _Label(
                    item["value"],
                    item["kind"],
                    item.get("where", "negative"),
                    secret,
                    _spans(text, visible),
                    visible,
                )
            )
    return out


def _distance(label: _Label, text: str, finding: dict[str, Any]) -> int | None:
    """How far the finding's end is from the end of the label's value on the finding's line, or None."""
    head, _, tail = str(finding.get("masked", "")).partition("…")
    line = int(finding.get("line", 0))
    best: int | None = None
    for first, last, at in label.spans:
        if not first <= line <= last:
            continue
        if label.visible != label.value or not tail:  # inside base64, or no tail shown: the line decides
            return 0
        lo = max(at - _AROUND, 0)
        window = text[lo : at + len(label.value) + _AROUND]
        if head and head not in window:
            continue
        end = at + len(label.value)
        i = window.find(tail)
        while i >= 0:
            tail_end = lo + i + len(tail)
            if tail_end > at:  # the finding reaches into the value
                d = abs(tail_end - end)
                best = d if best is None else min(best, d)
            i = window.find(tail, i + 1)
    return best


def exact(finding: dict[str, Any], labels: list[_Label]) -> _Label | None:
    """The label whose value the finding is exactly (by fingerprint), or None."""
    fp = finding.get("fingerprint")
    for label in labels:
        if fp == fingerprint_of(str(finding.get("rule")), label.value):
            return label
    return None


def match(
    finding: dict[str, Any], labels: list[_Label], text: str, taken: frozenset[int] = frozenset()
) -> _Label | None:
    """The label a finding is about (the rule in the module docstring), or None.

    ``taken`` (ids of labels another finding is exactly) loses a tie to a label not yet found."""
    label = exact(finding, labels)
    if label is not None:
        return label
    scored = []
    for i, lab in enumerate(labels):
        d = _distance(lab, text, finding)
        if d is not None:
            scored.append((d, not lab.secret, id(lab) in taken, len(lab.value), i))
    # the value whose end is nearest the finding's end; a secret beats a negative; then the shortest
    return labels[min(scored)[-1]] if scored else None


def _ratio(a: int, b: int) -> float:
    return a / b if b else 1.0


def measure() -> dict[str, Any]:
    """Scan the corpus; per-file, per-kind and total TP / FN / FP, recall and precision."""
    doc = json.loads(LABELS.read_text())
    entries = {e["file"]: e for e in doc["files"]}
    paths = [CORPUS / name for name in entries]
    by_file: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for finding in scan_json(paths):
        by_file[Path(finding["file"]).name].append(finding)

    files: dict[str, Any] = {}
    kinds: dict[str, dict[str, int]] = defaultdict(lambda: {"tp": 0, "fn": 0})
    misses: list[dict[str, str]] = []
    false_positives: list[dict[str, Any]] = []
    for name, entry in entries.items():
        text = file_text(CORPUS / name, entry)
        labels = _labels_of(entry, text)
        found: set[int] = set()
        fp = negative_hits = 0
        findings = by_file.get(name, [])
        taken = frozenset(id(lab) for f in findings if (lab := exact(f, labels)) is not None)
        for finding in findings:
            label = match(finding, labels, text, taken)
            if label is not None and label.secret:
                found.add(id(label))
                continue
            fp += 1
            negative_hits += label is not None
            false_positives.append(
                {
                    "file": name,
                    "line": finding.get("line"),
                    "rule": finding.get("rule"),
                    "masked": finding.get("masked"),
                    "negative": label.kind if label is not None else None,
                }
            )
        secrets = [lab for lab in labels if lab.secret]
        tp = sum(id(lab) in found for lab in secrets)
        for lab in secrets:
            kinds[lab.kind]["tp" if id(lab) in found else "fn"] += 1
            if id(lab) not in found:
                misses.append(
                    {"file": name, "kind": lab.kind, "where": lab.where, "masked": masked(lab.value)}
                )
        files[name] = {
            "tp": tp,
            "fn": len(secrets) - tp,
            "fp": fp,
            "negative_hits": negative_hits,
            "secrets": len(secrets),
            "negatives": len(labels) - len(secrets),
        }

    tp = sum(f["tp"] for f in files.values())
    fn = sum(f["fn"] for f in files.values())
    fp = sum(f["fp"] for f in files.values())
    return {
        "files": files,
        "kinds": {k: {**v, "recall": _ratio(v["tp"], v["tp"] + v["fn"])} for k, v in sorted(kinds.items())},
        "total": {
            "tp": tp,
            "fn": fn,
            "fp": fp,
            "negative_hits": sum(f["negative_hits"] for f in files.values()),
            "recall": _ratio(tp, tp + fn),
            "precision": _ratio(tp, tp + fp),
        },
        "misses": misses,
        "false_positives": false_positives,
    }


def render(result: dict[str, Any]) -> str:
    """The figures as text tables; values appear masked (last 4 characters) only."""
    lines = [f"{'file':<44} {'secrets':>7} {'tp':>3} {'fn':>3} {'fp':>3} {'neg-hit':>7}"]
    for name, f in result["files"].items():
        lines.append(
            f"{name:<44} {f['secrets']:>7} {f['tp']:>3} {f['fn']:>3} {f['fp']:>3} {f['negative_hits']:>7}"
        )
    lines += ["", f"{'kind':<24} {'tp':>3} {'fn':>3} {'recall':>7}"]
    for kind, k in result["kinds"].items():
        lines.append(f"{kind:<24} {k['tp']:>3} {k['fn']:>3} {k['recall']:>7.2f}")
    t = result["total"]
    lines += [
        "",
        f"total: tp={t['tp']} fn={t['fn']} fp={t['fp']} (on labelled negatives: {t['negative_hits']})"
        f"  recall={t['recall']:.3f}  precision={t['precision']:.3f}",
        "",
        "missed:",
    ]
    lines += [f"  {m['file']}: {m['kind']} ({m['where']}) {m['masked']}" for m in result["misses"]]
    lines += ["", "false positives:"]
    lines += [
        f"  {p['file']}:{p['line']}: {p['rule']} {p['masked']}"
        + (f" (labelled negative: {p['negative']})" if p["negative"] else " (unlabelled)")
        for p in result["false_positives"]
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(measure()))
