"""The results page: static, offline (no address outside the folder), one table per board; and in a real
headless Chromium: it loads with no console error, sorting by a column reorders the rows, the metric chooser
fills the last column, and a row's link opens its entry page (settings, input files, per-predicate bars).

Chromium is the system's (Debian: apt install chromium). Without it the browser test is skipped, unless
SGG_EVAL_BROWSER_REQUIRED=1 (CI sets it): then its absence fails."""

from __future__ import annotations

import os
import re

import pytest
from browser import Browser, chromium

from sgg_eval.metrics.names import metric_name
from sgg_eval.report.site import Board, SiteRow, entry_page_name, write_site

R50, MR50 = metric_name("R", 50), metric_name("mR", 50)


def _boards() -> list[Board]:
    rows = [
        SiteRow(
            f"m{i}",
            f"Method {i}",
            {R50: r, MR50: m, "PRk": k, metric_name("R", 100): None if i == 2 else r + 0.01},
            {MR50: {"on": m, "holding": m / 2}},
            {"protocol": "sgbench", "tau (wIMR)": "0.5", "IoU threshold": "0.5"},
            {"predictions": f"preds/m{i}.zip", "sha256": f"{i:064x}"},
        )
        for i, (r, m, k) in enumerate([(0.30, 0.10, 1.5), (0.50, 0.05, 0.5), (0.10, 0.20, 2.5)])
    ]
    return [
        Board("psg_sim-panoptic-sgbench", "psg_sim · panoptic SGG (protocol sgbench)", True, [R50, MR50, "PRk"], rows),
        Board("vg-predcls", "vg · PredCls", False, [R50], rows[:2], metric_name("R", 100)),
    ]


@pytest.fixture()
def site(tmp_path):
    written = write_site(_boards(), tmp_path)
    assert len(written) == 1 + 3 + 2
    return tmp_path


def test_the_page_is_static_and_offline(site):
    for path in [site / "index.html", *sorted((site / "entries").iterdir())]:
        text = path.read_text()
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", text), path  # nothing fetched from elsewhere
        assert "<script src" not in text and "<link" not in text
    index = (site / "index.html").read_text()
    assert index.count("<table") == 2 and "SIMULATED data" in index and "protocol sgbench" in index
    page = (site / entry_page_name(_boards()[0], _boards()[0].rows[1])).read_text()
    assert "0000000000000001" in page and "IoU threshold" in page and 'class="bar"' in page
    assert "<h2>Metrics</h2>" in page and "<td>PRk</td><td>0.50</td>" in page and "<td>R@50</td><td>50.00</td>" in page


def _browser_or_skip():
    if chromium() is None:
        if os.environ.get("SGG_EVAL_BROWSER_REQUIRED") == "1":
            pytest.fail("no Chromium on PATH, and SGG_EVAL_BROWSER_REQUIRED=1")
        pytest.skip("no Chromium on PATH (apt install chromium); CI installs it")


def _column(page, table: int, col: int) -> list[str]:
    return page.eval(
        f"Array.from(document.querySelectorAll('table')[{table}].tBodies[0].rows).map(r => r.cells[{col}].textContent)"
    )


def test_in_a_real_browser_sorting_choosing_and_opening_an_entry(site):
    _browser_or_skip()
    with Browser() as browser:
        page = browser.open((site / "index.html").as_uri())
        assert page.errors == []
        assert _column(page, 0, 0) == ["Method 0", "Method 1", "Method 2"]
        click = "document.querySelectorAll('table')[0].tHead.rows[0].cells[{}].click()"
        page.eval(click.format(1))  # R@50, best first
        assert _column(page, 0, 1) == ["50.00", "30.00", "10.00"]
        page.eval(click.format(1))  # again: ascending
        assert _column(page, 0, 1) == ["10.00", "30.00", "50.00"]
        page.eval(click.format(3))  # PRk: a rank, shown as is
        assert _column(page, 0, 3) == ["2.50", "1.50", "0.50"]
        # the chooser: R@100 in the last column, undefined shown as '-'
        page.eval(
            "var s=document.querySelectorAll('select.metric')[0]; s.value='R@100'; s.dispatchEvent(new Event('change'))"
        )
        last = _column(page, 0, 4)
        assert sorted(last) == ["-", "31.00", "51.00"]
        assert page.eval("document.querySelectorAll('table')[0].tHead.rows[0].cells[4].textContent") == "R@100"
        assert _column(page, 1, 2) == ["31.00", "51.00"]  # the second board starts on its own chosen metric
        page.eval("document.querySelectorAll('table')[0].tBodies[0].rows[0].cells[0].querySelector('a').click()")
        page.wait_until("location.href.includes('/entries/')")
        page.wait_until("document.readyState === 'complete'")
        assert page.eval("document.querySelector('h1').textContent").startswith("Method")
        assert page.eval("document.querySelectorAll('.bar').length") == 2
        assert "Settings" in page.eval("document.body.textContent")
        assert page.errors == []


def test_numbers_beyond_the_protocol_are_marked_grouped_and_shown_apart(tmp_path):
    """A panoptic board: a column its protocol's source does not report is marked †, the chooser lists such
    metrics in their own group, and an entry's page shows them in their own table."""
    imr = metric_name("IMR", 20)
    row = SiteRow(
        "m0",
        "Method 0",
        {R50: 0.3},
        {R50: {"on": 0.3}},
        {"protocol": "openpsg"},
        {},
        beyond={imr: 0.2, "InstR": 0.5},
        beyond_per_predicate={imr: {"on": 0.2}},
    )
    label = "beyond protocol openpsg: computed by sgg-eval with its matching, not reported by OpenPSG's evaluator"
    board = Board("psg-openpsg", "psg · panoptic SGG (protocol openpsg)", True, [R50, imr], [row], "", label)
    write_site([board], tmp_path)
    index = (tmp_path / "index.html").read_text()
    assert f"<th>{imr} \u2020</th>" in index and f"<th>{R50}</th>" in index
    assert 'optgroup label="the protocol\'s"' in index and '<option value="InstR" data-beyond' in index
    assert "\u2020 beyond protocol openpsg" in index
    page = (tmp_path / entry_page_name(board, row)).read_text()
    protocol_part, beyond_part = page.split("Beyond the protocol")
    assert "Metrics of protocol openpsg" in protocol_part and "InstR" not in protocol_part
    assert "InstR" in beyond_part and f"{imr} per predicate (beyond the protocol)" in beyond_part
