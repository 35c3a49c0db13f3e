"""report.html opens in headless Chromium and shows its charts.

Chromium comes from Debian's `chromium` package, which `make test` installs (Makefile system-deps;
a browser download of playwright's own is not possible on these machines). Missing, it is a failure.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
SECTIONS = ("classic-protocol", "rebalances-over-time", "rebalances-per-group", "rebalance-durations",
            "membership-churn", "commit-rate", "commits-per-group", "timeline", "current-state", "consumer-protocol",
            "transactional-commits", "share-groups")


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.svg_ids: list[str] = []
        self.shapes = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "section":
            self.sections.append(a.get("id") or "")
        elif tag == "svg":
            self.svg_ids.append(a.get("id") or "")
        elif tag in ("rect", "polyline", "circle"):
            self.shapes += 1


def _png_size_and_colours(path: Path) -> tuple[int, int, int]:
    """(width, height, distinct byte values in the image data): enough to tell a blank page from a drawn one."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    pos, idat = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    return width, height, len(set(zlib.decompress(idat)))


@pytest.fixture(scope="module")
def report_html(spark_session, tmp_path_factory) -> Path:
    from spark_jobs.generate import generate
    from spark_jobs.group_history import build_report

    work = tmp_path_factory.mktemp("html")
    generate(work / "data", 20_000, groups=12, partitions=2, workers=1)
    build_report(spark_session, work / "data", work / "out")
    return work / "out" / "report.html"


def test_report_page_renders_every_section_with_its_charts_in_headless_chromium(report_html, tmp_path):
    if CHROMIUM is None:
        pytest.fail("no headless Chromium on PATH; `make test` installs Debian's chromium (Makefile system-deps)")
    common = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
              "--allow-file-access-from-files", "--window-size=1200,5000"]
    dom = subprocess.run([*common, "--dump-dom", report_html.as_uri()], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    page = _Page()
    page.feed(dom)
    assert list(SECTIONS) == page.sections
    assert {"chart-rebalances-per-hour", "chart-duration-histogram", "chart-churn", "chart-commit-rate",
            "chart-consumer-epochs"} <= set(page.svg_ids)
    assert page.shapes > 50

    shot = tmp_path / "report.png"
    subprocess.run([*common, f"--screenshot={shot}", report_html.as_uri()], capture_output=True, timeout=120,
                   check=True)
    width, height, colours = _png_size_and_colours(shot)
    assert (width, height) == (1200, 5000)
    assert colours > 20, "the screenshot looks blank"
    shutil.copy(shot, report_html.with_suffix(".png"))  # kept next to the report for a person to look at
