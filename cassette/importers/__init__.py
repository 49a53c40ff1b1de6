"""Bring recordings made with other tools into cassette's format.

- `import_vcr`: vcrpy / pytest-recording cassettes (YAML, JSON, gzipped), including
  pydantic-ai's ``parsed_body`` and langchain's ``requests``/``responses`` serializers,
  gzip/base64 bodies and event streams; cassetter (YAML, TOML) and Ruby VCR files too.
- `import_cendor`: cendor-cassette files, format versions 1 and 2.

Both return an `ImportReport` that lists everything that could not be carried
over faithfully. The same converters read foreign lines in `cassette.promote`.

Example::

    from cassette.importers import import_vcr

    print(import_vcr("tests/cassettes/test_triage.yaml", "tests/cassettes/triage.json"))
"""

from __future__ import annotations

from cassette.errors import CassetteImportError
from cassette.importers._cendor import import_cendor
from cassette.importers._common import ImportReport
from cassette.importers._vcr import import_vcr

__all__ = ["CassetteImportError", "ImportReport", "import_cendor", "import_vcr"]
