"""Regenerate docs/images/view.png: the `cassette view` page of a demo cassette, in headless Chromium.

    python docs/images/make_view_screenshot.py        # needs `chromium` (Debian: apt-get install chromium)

The cassette is examples/support_agent/cassettes/status_then_refund.json, the one
`examples/demo.py` records from the example's test of the same name.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import cassette
from cassette.review.view import run_page

ROOT = Path(__file__).resolve().parents[2]
CASSETTE = ROOT / "examples" / "support_agent" / "cassettes" / "status_then_refund.json"
OUT = Path(__file__).resolve().parent / "view.png"
SIZE = (1100, 860)  # the header and the first calls; keeps the PNG well under 200 KB
LIMIT = 200_000


def main() -> int:
    browser = next(
        (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None
    )
    if browser is None:
        print(
            "no chromium on PATH: apt-get install chromium (or brew install --cask chromium)", file=sys.stderr
        )
        return 2
    page = run_page(
        cassette.load_cassette(CASSETTE), title="examples/support_agent/cassettes/status_then_refund.json"
    )
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "view.html"
        html.write_text(page, encoding="utf-8")
        subprocess.run(
            [
                browser,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--force-device-scale-factor=1",
                f"--window-size={SIZE[0]},{SIZE[1]}",
                f"--screenshot={OUT}",
                html.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    size = OUT.stat().st_size
    print(f"wrote {OUT.relative_to(ROOT)} ({size:,} bytes)")
    if size >= LIMIT:
        print(f"the screenshot is {size:,} bytes, over {LIMIT:,}: make SIZE smaller", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
