"""The scanner's recall and precision on real third-party cassettes with planted secrets.

The corpus and its labels are in ``tests/data/thirdparty/secrets/`` (see ``make_labels.py`` and
``../README.md``); the measurement is ``tests/thirdparty_secrets.py``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re

from tests import thirdparty_secrets as corpus

RECALL = 0.9
PRECISION = 0.95


def _entries() -> list[dict]:
    return json.loads(corpus.LABELS.read_text())["files"]


def _decoded(container: str) -> str:
    compact = re.sub(r"\\n|\s", "", container)
    try:
        return base64.b64decode(compact, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return ""


def test_the_labels_are_sound() -> None:
    """Every labelled value is in its file (verbatim, or inside the base64 text it names); every
    file has a labelled negative; the cassettes on disk are what ``make_labels.py`` writes."""
    entries = _entries()
    assert 25 <= len(entries) <= 40
    names = {e["file"] for e in entries}
    on_disk = {p.name for p in corpus.CORPUS.iterdir() if p.suffix in (".json", ".yml", ".yaml", ".gz")}
    assert on_disk - {"labels.json"} == names
    for entry in entries:
        text = corpus.file_text(corpus.CORPUS / entry["file"], entry)
        assert entry["negatives"], f"{entry['file']}: no labelled negative"
        for item in entry["negatives"]:
            assert item["value"] in text, f"{entry['file']}: negative {item['kind']} not in the file"
        for item in entry["secrets"]:
            where = f"{entry['file']}: {item['kind']} {corpus.masked(item['value'])}"
            if item.get("encoding") == "base64":
                assert item["container"] in text, where
                assert item["value"] in _decoded(item["container"]), where
            else:
                assert item["value"] in text, where
            assert not any(item["value"] == n["value"] for n in entry["negatives"]), where
    assert sum(1 for e in entries if not e["secrets"]) >= 3  # files with no secret at all


def test_a_finding_on_a_negative_counts_as_a_false_positive() -> None:
    entry = next(e for e in _entries() if e["file"] == "vcrpy_django_sessionid.yaml")
    text = corpus.file_text(corpus.CORPUS / entry["file"], entry)
    labels = corpus._labels_of(entry, text)
    csrf = next(lab for lab in labels if not lab.secret and "csrftoken" in lab.kind)
    line = csrf.spans[0][0]
    finding = {"rule": "generic-secret", "line": line, "masked": corpus.masked(csrf.value), "fingerprint": ""}
    assert corpus.match(finding, labels, text) is csrf


def test_recall_and_precision_meet_the_targets() -> None:
    result = corpus.measure()
    print(corpus.render(result))  # masked values only
    total = result["total"]
    assert total["recall"] >= RECALL, f"recall {total['recall']:.3f} < {RECALL}"
    assert total["precision"] >= PRECISION, f"precision {total['precision']:.3f} < {PRECISION}"
