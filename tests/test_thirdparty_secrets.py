"""The scanner's recall and precision on real third-party cassettes with planted secrets.

The corpus and its labels are in ``tests/data/thirdparty/secrets/`` (see ``make_labels.py`` and
``../README.md``); the measurement is ``tests/thirdparty_secrets.py``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from pathlib import Path

import pytest

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


# -- YAML binary values: decoded and scanned ------------------------------------------------------

SESSION_TOKEN = "IQoJb3JpZ2luX2VjEBoaCXVzLWVhc3QtMSJHMEUCIQD7xK2mPq9Lw4Zr8Tn1Yp6Jd3Hs5Gf0Ce2Ba7VuXo4"
KEY_ID = "ASIA" + "QYLPMN5HHHFPZAM2"
OAUTH = "ya29." + "a0AfH6SMBx7Qm2Lk9Vw3Zr8Tn4Yp1Jd6Hs5Gf0Ce2Ba7"
REQUEST_ID = "6f1c2a9e-0d4b-4c7e-9a3f-2b8d1e5c7a90"


def _block(value: bytes, indent: str = "        ") -> str:
    return "".join(f"{indent}{line}\n" for line in base64.encodebytes(value).decode().splitlines())


def test_yaml_binary_headers_and_bodies_are_decoded_and_scanned(capsys: pytest.CaptureFixture[str]) -> None:
    import gzip

    from cassette.cli import main
    from cassette.plugins.manager import default_rules
    from cassette.secrets import Scanner

    scope = "20250301/us-east-1/bedrock/aws4_request"
    sigv4 = f"AWS4-HMAC-SHA256 Credential={KEY_ID}/{scope}, Signature={'5d2b' * 16}"
    body = gzip.compress(
        json.dumps({"access_token": OAUTH, "token_type": "Bearer", "id": REQUEST_ID}).encode()
    )
    vcrpy = (
        "interactions:\n- request:\n    headers:\n      Authorization:\n      - !!binary |\n"
        + _block(sigv4.encode())
        + "      X-Amz-Security-Token:\n      - !!binary |\n"
        + _block(SESSION_TOKEN.encode())
        + "      amz-sdk-invocation-id:\n      - !!binary |\n"
        + _block(REQUEST_ID.encode())
        + f"      content-type: !!binary {base64.b64encode(b'application/json').decode()}\n"
    )
    ruby = (
        "http_interactions:\n- response:\n    body:\n      encoding: ASCII-8BIT\n      string: !binary |-\n"
    )
    ruby += _block(body) + "    http_version:\n"
    scanner = Scanner(default_rules())
    found = scanner.scan(vcrpy, "vcrpy.yaml")
    lines = vcrpy.splitlines()
    tag = lines.index("      X-Amz-Security-Token:") + 2  # the line of its `- !!binary |`
    assert [(f.rule, f.line) for f in found] == [("aws-access-key-id", 5), ("generic-secret", tag)], found
    assert found[1].masked == "…" + SESSION_TOKEN[-4:]  # read under its header's name
    assert [(f.rule, f.line) for f in scanner.scan(ruby, "ruby.yml")] == [("google-oauth-token", 5)]
    # no UUID, signature or content type is a finding, and nothing printed holds a secret
    capsys.readouterr()
    Path("vcrpy.yaml").write_text(vcrpy)
    Path("ruby.yml").write_text(ruby)
    assert main(["scan", "vcrpy.yaml", "ruby.yml"]) == 1
    out = capsys.readouterr().out
    assert out.count("(fingerprint ") == 3 and REQUEST_ID not in out
    assert not any(s[6:] in out for s in (SESSION_TOKEN, KEY_ID, OAUTH))
