"""`cassette view` pages in a real browser: headless Chromium through selenium reads the DOM, clicks to
unfold a long message, checks that calls in flight at once sit side by side, that nothing from a
hostile cassette runs, and takes a screenshot that is not blank.

Skipped, saying why, where no Chromium can be driven (CI installs Debian's `chromium` and
`chromium-driver`: see .ci/run).
"""

from __future__ import annotations

import shutil
import struct
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette.review.drift import compare_cassettes
from cassette.review.view import DriftSide, drift_page, run_page
from cassette.testing.devserver import DevServer

from .view_runs import HOSTILE, record_errored, record_hostile, record_multi_turn, record_streamed

webdriver = pytest.importorskip(
    "selenium.webdriver", reason="selenium is not installed: pip install -e '.[dev]' brings it"
)
from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

BROWSER = next(
    (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None
)
DRIVER = shutil.which("chromedriver")
if BROWSER is None or DRIVER is None:
    pytest.skip(
        f"no Chromium to drive here (browser: {BROWSER or 'none'}, chromedriver: {DRIVER or 'none'}); "
        "install Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver), "
        "as .ci/run does",
        allow_module_level=True,
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(BROWSER)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.add_argument("--window-size=1280,1000")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=str(DRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


def _open(driver: Any, page: str, name: str) -> None:
    path = Path(name).resolve()
    path.write_text(page, encoding="utf-8")
    driver.get(path.as_uri())
    driver.get_log("browser")  # start each page with an empty console


def _console_problems(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e.get("level") in ("SEVERE", "WARNING")]


def _pixels(png: bytes) -> list[bytes]:
    """The pixels of an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium writes)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", data)
            assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += data
        pos += 12 + length
    raw, stride = zlib.decompress(idat), width * channels
    rows: list[bytearray] = []
    prev = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = prev[i], prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(line)
        prev = line
    return [bytes(r[x : x + 3]) for r in rows[::4] for x in range(0, stride, channels * 4)]


def test_a_run_page_in_chromium(browser: Any, devserver: DevServer) -> None:
    path = Path("multi.json")
    answers = record_multi_turn(path, devserver)
    _open(browser, run_page(cassette.load_cassette(path)), "multi.html")
    assert browser.execute_script(
        "return document.documentElement.classList.contains('js')"
    )  # CSP let it run
    calls = browser.find_elements(By.CSS_SELECTOR, "article.call")
    assert [c.get_attribute("data-seq") for c in calls] == ["0", "1", "2", "3", "4"]
    assert [c.get_attribute("data-kind") for c in calls] == ["llm", "tool", "tool", "llm", "llm"]
    assert answers[0] in calls[3].text and answers[1] in calls[4].text
    # the two tool calls in flight at once: side by side, the rest one under another
    one, two = calls[1].rect, calls[2].rect
    assert abs(one["y"] - two["y"]) < 2 and two["x"] >= one["x"] + one["width"]
    assert calls[3].rect["y"] > max(one["y"] + one["height"], two["y"] + two["height"])
    assert calls[0].rect["y"] + calls[0].rect["height"] <= one["y"]

    # the long system prompt is folded; a click unfolds it, another folds it again
    text = calls[0].find_element(By.CSS_SELECTOR, ".msg .text.long")
    button = calls[0].find_element(By.CSS_SELECTOR, "button.unfold")
    folded = text.size["height"]
    assert button.text.startswith("show all ") and button.get_attribute("aria-expanded") == "false"
    button.click()
    assert text.size["height"] > 2 * folded and button.text == "fold"
    assert button.get_attribute("aria-expanded") == "true"
    button.click()
    assert text.size["height"] == folded
    # the conversation a later call repeats is folded under one line, and opens on click
    earlier = calls[3].find_element(By.CSS_SELECTOR, "details.earlier")
    assert earlier.get_attribute("open") is None
    earlier.find_element(By.TAG_NAME, "summary").click()
    assert earlier.get_attribute("open") is not None and "I was charged twice" in earlier.text

    assert _console_problems(browser) == []  # no script or style refused by the CSP, nothing fetched
    pixels = _pixels(browser.get_screenshot_as_png())
    colours = Counter(pixels)
    assert len(colours) > 50, "the screenshot is (nearly) one colour"
    assert colours.most_common(1)[0][1] < 0.8 * len(pixels), "the screenshot is mostly blank"


def test_streamed_and_errored_runs_in_chromium(browser: Any, devserver: DevServer) -> None:
    record_streamed(Path("stream.json"), devserver)
    _open(browser, run_page(cassette.load_cassette(Path("stream.json"))), "stream.html")
    [call] = browser.find_elements(By.CSS_SELECTOR, "article.call")
    assert call.find_element(By.CSS_SELECTOR, ".badge.streamed").is_displayed()
    assert "Paris" in call.find_element(By.CSS_SELECTOR, ".answer-text").text

    record_errored(Path("errored.json"), devserver)
    _open(browser, run_page(cassette.load_cassette(Path("errored.json"))), "errored.html")
    calls = browser.find_elements(By.CSS_SELECTOR, "article.call")
    assert ["failed" in c.get_attribute("class") for c in calls] == [True, False, True, True]
    assert calls[1].find_element(By.CSS_SELECTOR, ".badge.retry").text == "retry of #0"
    assert "ValueError: order A1001 has shipped" in calls[3].text
    assert _console_problems(browser) == []


def test_nothing_from_a_hostile_cassette_runs(browser: Any, devserver: DevServer) -> None:
    record_hostile(Path("hostile.json"), devserver)
    _open(browser, run_page(cassette.load_cassette(Path("hostile.json"))), "hostile.html")
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018
    assert browser.find_elements(By.CSS_SELECTOR, "img, a, iframe, object, embed, form") == []
    assert len(browser.find_elements(By.TAG_NAME, "script")) == 2
    messages = browser.find_elements(By.CSS_SELECTOR, ".msg .text")
    for element in [*messages, *browser.find_elements(By.CSS_SELECTOR, ".what, .answer-text")]:
        ActionChains(browser).move_to_element(element).perform()  # an onmouseover would fire here
    assert browser.execute_script("return window.pwned === undefined")
    for text in HOSTILE:
        assert text in messages[0].text, text
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018


def test_a_drift_page_in_chromium(browser: Any) -> None:
    committed = Path("tests/cassettes/refund.json")
    with DevServer(seed=5) as srv:
        record_multi_turn(committed, srv)
    with DevServer(seed=6) as srv:
        record_multi_turn(committed, srv, system="You are the support agent of Globex.", mode="rerecord")
    old = cassette.load_cassette(committed)
    new = cassette.load_cassette(committed.with_name("refund.pending.json"))
    items = compare_cassettes(old, new)
    expected = {i.seq: i.category for i in items}
    _open(browser, drift_page([DriftSide(str(committed), old, new, items)]), "drift.html")

    pairs = browser.find_elements(By.CSS_SELECTOR, "li.pair")
    assert [p.get_attribute("data-category") for p in pairs] == [expected.get(n, "same") for n in range(5)]
    assert pairs[0].find_element(By.CSS_SELECTOR, ".category").text.startswith("request changed · output ")
    assert (
        '→ "You are the support agent of Globex."'
        in pairs[0].find_element(By.CSS_SELECTOR, ".request-changes").text
    )
    old_side, new_side = (
        pairs[0].find_element(By.CSS_SELECTOR, f".side.{s} article") for s in ("old", "new")
    )
    assert old_side.rect["y"] == new_side.rect["y"] and new_side.rect["x"] > old_side.rect["x"]
    assert old_side.find_elements(By.TAG_NAME, "del") and new_side.find_elements(By.TAG_NAME, "ins")
    for pair in pairs:  # pairs with nothing to review are closed
        if pair.get_attribute("data-category") in ("same", "volatile-only"):
            assert not pair.find_element(By.CSS_SELECTOR, "article.call").is_displayed()
    assert _console_problems(browser) == []
