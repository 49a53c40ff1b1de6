"""Any other HTTP traffic (generic JSON-over-HTTP): method, URL, sorted query and body.

A JSON body is kept parsed, a ``multipart/form-data`` upload as its parts (the random
boundary dropped, each file as its name, size and SHA-256), other text as text, and
binary as its SHA-256.

Registered like every provider, but runs last so the specific ones win.
"""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from cassette._model import HttpRequest
from cassette.hookspecs import hookimpl
from cassette.plugins._http import json_body, multipart_parts, query


@hookimpl(trylast=True)
def cassette_http_request(request: HttpRequest) -> dict[str, Any]:
    parts = urlsplit(request.url)
    out: dict[str, Any] = {
        "kind": "http",
        "method": request.method,
        "url": urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")),
    }
    q = query(request)
    if q:
        out["query"] = q
    if request.body:
        body = json_body(request)
        upload = multipart_parts(request) if body is None else None
        if upload is not None:  # its fields and files, not its random boundary
            out["multipart"] = upload
        elif body is not None:
            out["json"] = body
        else:
            try:
                out["text"] = request.body.decode("utf-8")
            except UnicodeDecodeError:
                out["sha256"] = hashlib.sha256(request.body).hexdigest()
    return out
