"""Write the secret corpus (the cassettes of this directory) and ``labels.json``, deterministically.

Each cassette is a real third-party one (see ``../README.md``), trimmed, with synthetic secrets from
``values.py`` planted where teams leak them. A template marks a planted value ``«name»``; ``«bin:k»``
is the base64 a vcrpy ``!!binary`` header holds for the text ``BLOBS[k]``, and ``«b64n:k»`` is the
base64 Ruby VCR's JSON serializer writes for a body (``\\n`` escapes every 60 characters). A value
planted inside such an encoding is labelled with ``encoding: base64`` and the encoded text it is in.

    python tests/data/thirdparty/secrets/make_labels.py          # rewrite the files
    python tests/data/thirdparty/secrets/make_labels.py --check  # exit 1 if a file differs
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import sys
from pathlib import Path

from specs import SPECS, Spec
from values import PUBLIC, V

HERE = Path(__file__).resolve().parent
_MARK = re.compile(r"«(?:(bin|b64n):)?([a-z0-9_]+)»")


def _fill(text: str) -> str:
    return _MARK.sub(lambda m: {**V, **PUBLIC}[m.group(2)], text)


def _bin(text: str, indent: str) -> str:
    raw = base64.encodebytes(text.encode()).decode().rstrip("\n")  # what PyYAML writes for !!binary
    return "\n".join(indent + line for line in raw.splitlines())


def _b64n(text: str) -> str:
    raw = base64.b64encode(text.encode()).decode()
    return "".join(raw[i : i + 60] + "\\n" for i in range(0, len(raw), 60))


def render(spec: Spec) -> tuple[str, dict[str, str]]:
    """The file's text, and for each blob key the encoded text it became."""
    encoded: dict[str, str] = {}

    def sub(m: re.Match[str]) -> str:
        how, key = m.group(1), m.group(2)
        if how is None:
            return {**V, **PUBLIC}[key]
        plain = _fill(spec.blobs[key])
        if how == "bin":
            line_start = spec.template.rfind("\n", 0, m.start()) + 1
            out = _bin(plain, spec.template[line_start : m.start()]).lstrip()
        else:
            out = _b64n(plain)
        encoded[key] = out
        return out

    return _MARK.sub(sub, spec.template), encoded


def labels_for(spec: Spec, text: str, encoded: dict[str, str]) -> dict[str, object]:
    secrets = []
    for name, (kind, where) in spec.secrets.items():
        value = V[name]
        entry: dict[str, object] = {"value": value, "kind": kind, "where": where}
        if value not in text:
            holders = [enc for key, enc in encoded.items() if value in _fill(spec.blobs[key])]
            if not holders:
                raise SystemExit(f"{spec.name}: {name} is neither in the text nor in a blob")
            entry["encoding"] = "base64"
            entry["container"] = holders[0]
        secrets.append(entry)
    negatives = [{"value": _fill(v), "kind": k} for v, k in spec.negatives.items()]
    for neg in negatives:
        if neg["value"] not in text:
            raise SystemExit(f"{spec.name}: negative {neg['value']!r} is not in the file")
    out: dict[str, object] = {"file": spec.name, "secrets": secrets, "negatives": negatives}
    if spec.gzip:
        out["file_encoding"] = "gzip"
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    labels = []
    differs = []
    for spec in SPECS:
        text, encoded = render(spec)
        labels.append(labels_for(spec, text, encoded))
        data = gzip.compress(text.encode(), mtime=0) if spec.gzip else text.encode()
        path = HERE / spec.name
        if check:
            old = path.read_bytes() if path.exists() else b""
            same = gzip.decompress(old) == text.encode() if spec.gzip and old else old == data
            if not same:
                differs.append(spec.name)
        else:
            path.write_bytes(data)
    doc = json.dumps({"files": labels}, indent=1, ensure_ascii=False) + "\n"
    if check:
        if (HERE / "labels.json").read_text() != doc:
            differs.append("labels.json")
        for name in differs:
            print(f"differs: {name}")
        return 1 if differs else 0
    (HERE / "labels.json").write_text(doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
