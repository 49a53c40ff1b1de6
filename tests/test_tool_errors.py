"""A tool's exception replays with what its __init__ set, not only its args.

An agent's `except` reads the error's attributes: `raise_for_status()`'s HTTPStatusError carries
the response (`e.response.status_code == 404` means "not found", 503 "try later"), a custom
error its `code`. Those were lost on replay (the class rebuilt from args alone).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest

import cassette

KEY = "sk-proj-" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF" + "T3BlbkFJ" + "Xy2zA5bC8dE1fG4hJ7kL0mN3pQ6rS9tU"


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status = 404 if "missing" in self.path else 503
        body = json.dumps(
            {"error": {"code": status, "message": "no such order" if status == 404 else "busy"}}
        )
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("retry-after", "30")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def base_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class OrderError(Exception):
    def __init__(self, *, code: int, detail: str) -> None:
        super().__init__(f"order error {code}")
        self.code = code
        self.detail = detail


def make_tools(base: str, lib: Any) -> tuple[Any, Any]:
    @cassette.tool(name=f"fetch_order_{lib.__name__}")
    def fetch_order(order_id: str) -> dict[str, Any]:
        with lib.Client(base_url=base, headers={"authorization": f"Bearer {KEY}"}) as http:
            response = http.get(f"/orders/{order_id}")
            response.raise_for_status()
            return dict(response.json())

    @cassette.tool
    def check_order(order_id: str) -> None:
        raise OrderError(code=409, detail=f"{order_id} is locked")

    return fetch_order, check_order


def agent(fetch_order: Any, check_order: Any, lib: Any) -> list[Any]:
    seen: list[Any] = []
    for order in ("missing-1", "A-2"):
        try:
            fetch_order(order)
        except lib.HTTPStatusError as e:
            seen.append(
                (
                    type(e),
                    str(e),
                    e.response.status_code,
                    e.response.json(),
                    e.response.headers.get("retry-after"),
                    str(e.request.url),
                    e.request.method,
                )
            )
    try:
        check_order("A-3")
    except OrderError as e:
        seen.append((e.code, e.detail, str(e)))
    return seen


@pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_an_http_status_error_and_a_keyword_error_replay_with_their_attributes(
    lib: Any, base_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "errors.json"
    fetch_order, check_order = make_tools(base_url, lib)
    with cassette.using(path, mode="record"):
        live = agent(fetch_order, check_order, lib)
    assert [s[2] for s in live[:2]] == [404, 503] and live[2][0] == 409
    with cassette.using(path, mode="replay", unused="error"):
        replayed = agent(*make_tools("http://127.0.0.1:1", lib), lib)  # nothing listens there
    assert replayed == live
    text = path.read_text()
    assert KEY not in text  # the request's authorization header, kept on the error, is redacted
    assert '"date"' not in text


def test_a_recording_without_attrs_still_replays(tmp_path: Path) -> None:
    # recorded before attributes were kept: the class from its args, as then
    path = tmp_path / "old.json"
    with cassette.using(path, mode="record"):
        with pytest.raises(OrderError):
            make_tools("http://127.0.0.1:1", httpx2)[1]("A-1")
    doc = json.loads(path.read_text())
    del doc["interactions"][0]["response"]["error"]["attrs"]
    path.write_text(json.dumps(doc))
    with cassette.using(path, mode="replay"), pytest.raises(OrderError) as caught:
        make_tools("http://127.0.0.1:1", httpx2)[1]("A-1")
    assert caught.value.args == ("order error 409",) and not hasattr(caught.value, "code")


def test_attrs_of_the_wrong_shape_are_a_cassette_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    with cassette.using(path, mode="record"):
        with pytest.raises(OrderError):
            make_tools("http://127.0.0.1:1", httpx2)[1]("A-1")
    doc = json.loads(path.read_text())
    doc["interactions"][0]["response"]["error"]["attrs"] = ["code", 409]
    path.write_text(json.dumps(doc))
    with cassette.using(path, mode="replay"), pytest.raises(cassette.CassetteError, match="attrs"):
        make_tools("http://127.0.0.1:1", httpx2)[1]("A-1")


class QuotaError(Exception):
    def __init__(self, used: tuple[int, int], limit: Any) -> None:
        super().__init__(used, limit)
        self.used = used
        self.reset_at = {("eu", 1): limit}


def test_an_errors_arguments_and_attributes_replay_with_their_types(tmp_path: Path) -> None:
    from decimal import Decimal

    @cassette.tool
    def spend(amount: Decimal) -> None:
        raise QuotaError((3, 5), Decimal("10.00"))

    path = tmp_path / "quota.json"
    with cassette.using(path, mode="record"), pytest.raises(QuotaError) as live:
        spend(Decimal("1.50"))
    with cassette.using(path, mode="replay"), pytest.raises(QuotaError) as replayed:
        spend(Decimal("1.50"))
    assert replayed.value.args == live.value.args == ((3, 5), Decimal("10.00"))
    assert type(replayed.value.args[0]) is tuple and type(replayed.value.args[1]) is Decimal
    assert replayed.value.used == (3, 5) and replayed.value.reset_at == {("eu", 1): Decimal("10.00")}
