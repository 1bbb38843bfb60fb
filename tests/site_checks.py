"""What a model page of the results site must do in a real browser (issue 49), checked the same way on the tiny
pipeline's site (``test_pipeline``) and on the default one (``test_site``, which also takes the screenshots)."""

from __future__ import annotations

import json


def ready(page) -> None:
    page.wait_until("document.body.getAttribute('data-ready') === '1'")


def count(page, selector: str) -> int:
    return page.eval(f"document.querySelectorAll({json.dumps(selector)}).length")


def shown_image(page) -> str:
    return page.eval("document.getElementById('img-panels').getAttribute('data-image')")


def check_model_page(page, compare: str) -> None:
    """Every chart present, the console clean, the compare view and the image browser working; ``page`` is a
    PredCls model page of a board with a confusion matrix and per-image graphs, ``compare`` another entry."""
    ready(page)
    assert page.errors == []
    board = page.eval("window.SGG_BOARD")
    entry = board["entries"][page.eval("document.body.getAttribute('data-entry')")]
    c = len(board["predicates"])
    metric = page.eval("document.getElementById('pp-metric').value")
    assert count(page, "#pp-chart rect.pbar") == sum(
        1 for v in entry["per_predicate"][metric].values() if v is not None
    )
    if board.get("groups"):  # the groups shaded: one band per predicate
        assert count(page, "#pp-chart rect[class^=band-]") == c
    assert count(page, "#confusion-chart rect.cell") == c * c
    assert count(page, "table.grid td[data-m]") >= len(entry["metrics"]) - 1
    assert count(page, "#gains svg") == 0 and count(page, "td .d") == 0  # no comparison yet
    # the image browser: one image's GT graph beside the predicted one; next shows another image
    assert count(page, "#img-panels svg.graph") == 2
    first = shown_image(page)
    assert first == str(board["images"][0]["image"])
    page.eval("document.getElementById('img-next').click()")
    assert shown_image(page) not in (None, first)
    page.eval("document.getElementById('img-prev').click()")
    assert shown_image(page) == first
    # compare with another model: the differences in the grid, the gains-and-losses chart, the browser's filters
    page.eval(
        f"var s=document.getElementById('compare'); s.value={json.dumps(compare)}; s.dispatchEvent(new Event('change'))"
    )
    assert count(page, "td .d") > 0 and count(page, "#gains rect.diff") > 0
    assert count(page, "#pp-chart line.tick") > 0
    page.eval("var f=document.getElementById('img-filter'); f.value='mine'; f.dispatchEvent(new Event('change'))")
    assert not page.eval("document.getElementById('img-filter').options[1].disabled")
    shown = page.eval("Array.from(document.getElementById('img-pick')?.options || []).map(o => o.textContent)")
    graphs, images = board["graphs"], board["images"]
    me, them = page.eval("document.body.getAttribute('data-entry')"), compare

    def gained(i: int) -> bool:  # a GT row this model hits within 20 and the other does not
        a, b = graphs[me][i]["ranks"], graphs[them][i]["ranks"]
        return any(x is not None and x < 20 and (y is None or y >= 20) for x, y in zip(a, b))

    assert shown == [f"image {images[i]['image']}" for i in range(len(images)) if gained(i)]
    page.eval("var f=document.getElementById('img-filter'); f.value='all'; f.dispatchEvent(new Event('change'))")
    assert page.errors == []
