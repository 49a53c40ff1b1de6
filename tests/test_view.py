"""`cassette view`: the HTML of a run and of a drift, read back with `html.parser` (escaping, structure).

The same pages in a real browser: tests/test_view_browser.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
from html.parser import HTMLParser
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette.cli import main
from cassette.plugins.manager import tokens_of
from cassette.review.drift import compare_cassettes
from cassette.review.view import DriftSide, drift_page, mark_words, run_page
from cassette.testing.devserver import DevServer

from .view_runs import (
    HOSTILE,
    LONG_SYSTEM_CHARS,
    record_errored,
    record_hostile,
    record_multi_turn,
    record_streamed,
)

# every element the pages are built of: anything else in a page came from a cassette
ELEMENTS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "p", "span", "b", "dl",
    "dt", "dd", "div", "main", "ol", "ul", "li", "article", "section", "button", "details", "summary",
    "pre", "del", "ins", "script",
}  # fmt: skip


class Page(HTMLParser):
    """A page parsed flat: its elements (tag, attributes, path of enclosing tags), text, scripts."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None], tuple[str, ...]]] = []  # (tag, attrs, up)
        self.text: list[str] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._open: list[str] = []
        self._script: dict[str, str | None] | None = None
        self._body: list[str] = []
        self.feed(text)
        self.close()

    VOID = frozenset({"meta", "br", "img", "input", "link", "hr"})

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs), tuple(self._open)))
        if tag == "script":
            self._script, self._body = dict(attrs), []
        if tag not in self.VOID:  # "li.row.parallel-group": the enclosing elements, as CSS would name them
            self._open.append(".".join([tag, *(dict(attrs).get("class") or "").split()]))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script, "".join(self._body)))
            self._script = None
        if any(o.split(".")[0] == tag for o in self._open):
            while self._open.pop().split(".")[0] != tag:
                pass

    def handle_data(self, data: str) -> None:
        (self._body if self._script is not None else self.text).append(data)

    def all(self, tag: str, css: str | None = None) -> list[dict[str, str | None]]:
        return [
            a
            for t, a, _ in self.elements
            if t == tag and (css is None or css in (a.get("class") or "").split())
        ]

    @property
    def data(self) -> Any:
        [(attrs, body)] = [(a, b) for a, b in self.scripts if a.get("type") == "application/json"]
        assert attrs.get("id") == "cassette-data"
        return json.loads(body)

    @property
    def words(self) -> str:
        return "".join(self.text)


def _page(path: Path) -> Page:
    return Page(run_page(cassette.load_cassette(path)))


def test_a_hostile_cassette_is_text_and_nothing_else(devserver: DevServer) -> None:
    path = Path("hostile.json")
    record_hostile(path, devserver)
    raw = run_page(cassette.load_cassette(path))
    page = Page(raw)
    assert {t for t, _, _ in page.elements} <= ELEMENTS  # no <img>, <a>, <iframe>… from the cassette
    for tag, attrs, _ in page.elements:
        assert not [a for a in attrs if a.startswith("on")], (tag, attrs)  # no event handler attribute
        assert not {"href", "src", "action", "formaction", "srcdoc"} & set(attrs), (tag, attrs)
    for text in HOSTILE:  # every piece is on the page, as text
        assert text in page.words, text
    assert "javascript:alert(1)" in page.words  # the tool's "link" is text, not a link
    # two scripts: the JSON data (never run) and the page's own, exactly as shipped
    script = files("cassette.review").joinpath("view_page.js").read_text()
    assert [(a, b) for a, b in page.scripts if a.get("type") != "application/json"] == [({}, script)]
    assert len(page.scripts) == 2
    # the data survived a </script> inside it: it parses, and holds the hostile model name whole
    label = 'openai · gpt-4o-mini"><script>alert(1)</script> · chat.completions'
    assert page.data["calls"][0]["label"] == label
    assert "</script><script>" not in raw.split('id="cassette-data">')[1].split("</script>")[0]
    # only the page's own script and style may run, by their hashes; nothing loads from anywhere
    [csp] = [a["content"] for a in page.all("meta") if a.get("http-equiv") == "Content-Security-Policy"]
    assert csp is not None and csp.startswith("default-src 'none';")
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp


def test_a_multi_turn_run_with_parallel_tool_calls(devserver: DevServer) -> None:
    path = Path("multi.json")
    answers = record_multi_turn(path, devserver)
    page = _page(path)
    calls = page.all("article", "call")
    assert [(a["data-seq"], a["data-kind"]) for a in calls] == [
        ("0", "llm"), ("1", "tool"), ("2", "tool"), ("3", "llm"), ("4", "llm"),
    ]  # fmt: skip
    # the two tool calls in flight at once share one row, side by side
    rows = [[u for u in up if u.startswith("li.")] for t, _, up in page.elements if t == "article"]
    assert rows == [["li.row"], *[["li.row.parallel-group"]] * 2, ["li.row"], ["li.row"]]
    grouped = [a["data-seq"] for t, a, up in page.elements if t == "article" and "div.side-by-side" in up]
    assert grouped == ["1", "2"]
    assert len(page.all("li", "parallel-group")) == 1 and "2 calls in flight at once" in page.words
    for answer in answers:
        assert answer in page.words
    assert "lookup_order" in page.words and "issue_refund" in page.words  # asked for, then run
    # the long system prompt folds; later calls fold the conversation they repeat
    buttons = page.all("button", "unfold")  # in #0, and in the earlier messages #3 and #4 fold away
    assert [b["data-more"] for b in buttons] == [f"show all {LONG_SYSTEM_CHARS:,} characters"] * 3
    assert "2 earlier messages, as sent in #0" in page.words
    assert "5 earlier messages, as sent in #3" in page.words
    doc = cassette.load_cassette(path)
    totals = page.data["totals"]
    assert totals["calls"] == {"llm": 3, "tool": 2} and totals["parallel"] == 2
    assert totals["tokens"] == sum(tokens_of(doc.hydrate(i.response)) for i in doc.interactions) > 0
    assert totals["blobs"] > 0 and totals["blob_bytes"] > LONG_SYSTEM_CHARS
    assert [c["latency_ms"] is not None for c in page.data["calls"]] == [True, False, False, True, True]


def test_a_streamed_run(devserver: DevServer) -> None:
    path = Path("stream.json")
    text = record_streamed(path, devserver)
    page = _page(path)
    assert len(page.all("article", "call")) == 1
    assert [b for b in page.all("span", "badge")] == [{"class": "badge streamed"}]
    assert text in page.words and "streamed" in page.words
    [data] = page.data["calls"]
    assert data["streamed"] is True and data["finish"] == "stop" and data["tokens"] > 0


def test_errors_and_retries_are_marked(devserver: DevServer) -> None:
    path = Path("errored.json")
    record_errored(path, devserver)
    page = _page(path)
    calls = page.all("article", "call")
    assert ["failed" in (a["class"] or "") for a in calls] == [True, False, True, True]
    assert "retry of #0" in page.words and "HTTP 429" in page.words and "HTTP 500" in page.words
    assert "ValueError: order A1001 has shipped and cannot be cancelled" in page.words
    assert [c["retry_of"] for c in page.data["calls"]] == [None, 0, None, None]
    assert page.data["totals"]["errors"] == 3 and page.data["totals"]["retries"] == 1


def test_a_secret_in_a_cassette_stays_masked_on_the_page(devserver: DevServer) -> None:
    path = Path("multi.json")
    record_multi_turn(path, devserver)
    key = "ghp_" + "x7Kq2LmN9pR4sT1vW8yZ3bC6dF0gH5jK2mP9"  # a hand edit put back what redaction took
    doc = json.loads(path.read_text())
    doc["interactions"][1]["response"]["result"]["status"] = f"token {key}"
    path.write_text(json.dumps(doc, indent=2))
    raw = run_page(cassette.load_cassette(path))
    assert key not in raw and key[4:20] not in raw and "<redacted:github-token>" in Page(raw).words


def test_words_are_marked_escaped() -> None:
    assert mark_words("refund $20 <b>", "refund $200 <b>") == (
        "refund $<del>20</del> &lt;b&gt;",
        "refund $<ins>200</ins> &lt;b&gt;",
    )
    assert mark_words("same", "same") == ("same", "same")


# --- the drift page ---------------------------------------------------------------------------------


def _committed_and_pending(seed: int = 5) -> tuple[Path, Path]:
    committed = Path("tests/cassettes/refund.json")
    with DevServer(seed=seed) as srv:
        record_multi_turn(committed, srv)
    with DevServer(seed=seed + 1) as srv:  # other ids and wordings; a changed system prompt
        record_multi_turn(committed, srv, system="You are the support agent of Acme.", mode="rerecord")
    return committed, committed.with_name("refund.pending.json")


def test_the_drift_page_pairs_calls_as_drift_does(capsys: pytest.CaptureFixture[str]) -> None:
    committed, pending = _committed_and_pending()
    old, new = cassette.load_cassette(committed), cassette.load_cassette(pending)
    items = compare_cassettes(old, new)
    page = Page(drift_page([DriftSide(str(committed), old, new, items)]))
    pairs = page.all("li", "pair")
    by_seq = {i.seq: i.category for i in items}
    assert [(p["data-old-seq"], p["data-new-seq"]) for p in pairs] == [(str(n), str(n)) for n in range(5)]
    assert [p["data-category"] for p in pairs] == [by_seq.get(n, "same") for n in range(5)]
    assert pairs[0]["data-category"] == "request"  # the system prompt changed, with its values shown
    [first] = [i for i in items if i.seq == 0]
    assert first.request_changes[0].startswith('messages[0].content: "You are the support agent of Acme.')
    assert '→ "You are the support agent of Acme."' in first.request_changes[0]
    assert first.request_changes[0] in page.words
    assert page.all("del") and page.all("ins")  # changed words marked on both sides
    # each call appears once per side: 5 pairs, 10 articles
    assert len(page.all("article", "call")) == 10
    data = page.data["cassettes"][0]
    assert [p["category"] for p in data["pairs"]] == [p["data-category"] for p in pairs]

    assert main(["drift", "--pending", "--format", "html"]) == 0
    cli = Page(capsys.readouterr().out)
    assert [p["data-category"] for p in cli.all("li", "pair")] == [p["data-category"] for p in pairs]

    assert main(["view", "--drift", str(committed)]) == 0
    assert "refund.drift.html" in capsys.readouterr().out
    written = Page(Path("tests/cassettes/refund.drift.html").read_text())
    assert [p["data-category"] for p in written.all("li", "pair")] == [p["data-category"] for p in pairs]


def test_the_view_command(devserver: DevServer, capsys: pytest.CaptureFixture[str]) -> None:
    path = Path("tests/cassettes/multi.json")
    record_multi_turn(path, devserver)
    assert main(["view", str(path)]) == 0  # default: beside the cassette
    assert "wrote tests/cassettes/multi.html" in capsys.readouterr().out
    assert len(Page(Path("tests/cassettes/multi.html").read_text()).all("article", "call")) == 5
    assert main(["view", str(path), "-o", "out/run.html"]) == 0 and Path("out/run.html").is_file()
    assert "wrote out/run.html" in capsys.readouterr().out
    assert main(["view", str(path), "-o", "copy.json"]) == 2
    assert "give -o a name ending in .html" in capsys.readouterr().err
    assert main(["view", "--drift", str(path)]) == 2
    assert "multi.pending.json does not exist" in capsys.readouterr().err
    assert main(["view", "--rev", "HEAD~1..HEAD", str(path)]) == 2
    assert "--rev goes with --drift" in capsys.readouterr().err
    assert main(["view", "nowhere.json"]) == 2
    assert "no cassette at" in capsys.readouterr().err
