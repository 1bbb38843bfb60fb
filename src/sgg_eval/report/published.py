"""The papers' published tables shipped with sgg-eval (``data/resources/published/``), and ours beside Li et al.'s."""

from __future__ import annotations

import csv
from importlib import resources

from sgg_eval.metrics.names import metric_name
from sgg_eval.report.agreement import AGREEMENT_BAND, against_order, agreement, directions
from sgg_eval.report.tables import PAPER_COLUMNS, Row, Table


def published_rows(name: str = "li2022_tables.csv") -> list[dict]:
    """A paper's published table shipped with sgg-eval (``data/resources/published/<name>``; ``#`` lines are
    its caption), one dict per row; by default Li et al.'s Tables 2-3 (percent)."""
    text = resources.files("sgg_eval.data").joinpath(f"resources/published/{name}").read_text("utf-8")
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    return list(csv.DictReader(lines))


# The backbone of a row that has none (Li et al.'s PKO-only: the prior alone), in the published tables and ours
NO_BACKBONE = "-"

# Li et al.'s published tables are VG150 test results: compared with the real VG150 split and the simulated
# VG150-like benchmark (calibrated to them), never with another dataset's numbers (GQA, GQA200)
PUBLISHED_ON = ("vg150", "simulated")


def _family(metric: str) -> str:
    """``R@50`` -> ``R``: the metric family a column belongs to."""
    return metric.partition("@")[0]


def agreement_figures(rows: list[Row]) -> tuple[int, int, dict[str, float], int, int]:
    """What the caption states of a ``published_vs_reproduced`` table's rows (``report.agreement``): ``(within,
    cells, family means, agree, total)``, the cells within the band of the ``cells`` both sides have, each metric
    family's mean relative difference, and the method-versus-baseline directions (per task, backbone and metric)
    that agree with the paper's, of ``total``."""
    cells = [r for r in rows if r.values["reproduced"] is not None and r.values["published"]]
    within, means = agreement([(_family(r.labels[3]), r.values["published"], r.values["reproduced"]) for r in cells])
    agree, total = directions(
        [
            ((r.labels[0], r.labels[1], r.labels[3]), r.labels[2], r.values["published"], r.values["reproduced"])
            for r in cells
        ]  # fmt: skip
    )
    return within, len(cells), means, agree, total


# The columns whose order of the rows the comparison states (issue 70 keeps the paper's on them; the VG150 fit's
# order term reads them from here)
ORDERED = (metric_name("R", 50), metric_name("mR", 50))


def order_tables(cells, with_shared: bool = True) -> dict[tuple[str, str], dict[str, dict[str, tuple]]]:
    """``{(task, backbone): {method: {metric: (published, ours)}}}`` of the cells ``((task, backbone, method,
    metric), published, ours)`` on ``ORDERED`` that have ours: the tables whose order of the rows the paper's is
    compared with. A row of no backbone (``NO_BACKBONE``: PKO-only) has no table of its own; with ``with_shared`` it
    is in each of its task's tables. The caption (:func:`order_figures`) and the VG150 fit's order term read these."""
    tables: dict = {}
    shared: dict = {}  # {task: {method: {metric: cell}}}, the rows of no backbone
    for (task, backbone, method, metric), published, ours in cells:
        if metric in ORDERED and ours is not None:
            rows = shared.setdefault(task, {}) if backbone == NO_BACKBONE else tables.setdefault((task, backbone), {})
            rows.setdefault(method, {})[metric] = (published, ours)
    if with_shared:
        for (task, _), rows in tables.items():
            rows.update(shared.get(task, {}))
    return tables


def _orders(rows: list[Row], with_shared: bool) -> dict[tuple[str, str, str], bool]:
    """Per (task, backbone, metric of ``ORDERED``) order of at least two rows of :func:`order_tables`: whether it is
    the paper's, i.e. no two rows are the other way round (``report.agreement.against_order``)."""
    cells = ((r.labels, r.values["published"], r.values["reproduced"]) for r in rows)
    kept = {}
    for (task, backbone), methods in order_tables(cells, with_shared).items():
        for metric in ORDERED:
            ranked = [own[metric] for own in methods.values() if metric in own]
            if len(ranked) > 1:
                pairs = [(a, b) for i, a in enumerate(ranked) for b in ranked[i + 1 :]]
                kept[task, backbone, metric] = not any(against_order(a, b) for a, b in pairs)
    return kept


def broken_orders(rows: list[Row], with_shared: bool = False) -> list[tuple[str, str, str]]:
    """The (task, backbone, metric) orders of ``ORDERED`` where two rows of ``published_vs_reproduced`` are the other
    way round from the paper's (rows the paper ties are not compared), sorted; see :func:`_orders`."""
    return sorted(k for k, ok in _orders(rows, with_shared).items() if not ok)


def order_figures(rows: list[Row]) -> tuple[int, int, int]:
    """``(kept, kept with the rows of no backbone, total)`` over the (task, backbone, metric) orders of ``ORDERED``."""
    plain, shared = _orders(rows, False), _orders(rows, True)
    return sum(plain.values()), sum(shared.values()), len(plain)


def _agreement_caption(rows: list[Row]) -> str:
    """How close ours is to the paper: :func:`agreement_figures` and :func:`order_figures` in words, the largest
    family mean of them."""
    within, cells, means, agree, total = agreement_figures(rows)
    if not cells:
        return ""
    worst = max(means, key=means.get)
    text = (
        f" Agreement: {within} of {cells} cells within ±{AGREEMENT_BAND:.0%} of the published value; the "
        f"largest mean |relative difference| of a metric family is {100 * means[worst]:.1f}% ({worst}); {agree} of "
        f"{total} method-versus-baseline directions agree with the paper's."
    )
    kept, kept_shared, orders = order_figures(rows)
    if orders:
        shared = sorted({r.labels[2] for r in rows if r.labels[1] == NO_BACKBONE and r.labels[3] in ORDERED})
        in_each = f", {kept_shared} with {', '.join(shared)} in each" if shared else ""
        text += (
            f" The paper's order of the rows on {' and '.join(ORDERED)} holds in {kept} of {orders} (task, backbone, "
            f"metric) orders{in_each}."
        )
    return text


def _compared(pub: dict, col: str, ours: float | None) -> Row:
    """One cell of ours beside the published one: the difference (ours - published) and the relative one."""
    p = float(pub[col]) / 100
    diff = None if ours is None else ours - p
    values = {"published": p, "reproduced": ours, "difference": diff, "relative": None if diff is None else diff / p}
    return Row((pub["task"], pub["backbone"], pub["method"], col), values)


def published_vs_reproduced(
    results: dict[tuple[str, str], dict],
    entries: list[str],
    simulated: bool,
    tau: float,
    dataset_kind: str = "vg150",
    dataset: str = "",
) -> Table:
    """Ours beside the published values with the difference (ours - published) and the relative difference,
    matched on (task, backbone, method); rows the paper has but we did not evaluate are left out. On the
    simulated benchmark the caption says so: the comparison then shows how close the simulation is. On a
    dataset the paper did not report (``PUBLISHED_ON``) the table is empty and says why."""
    rows = []
    for pub in published_rows() if dataset_kind in PUBLISHED_ON else ():
        for e in entries:
            doc = results.get((e, pub["task"]))
            if doc is None:
                continue
            info = doc["entry"]
            if (info["backbone"], info["method"]) != (pub["backbone"], pub["method"]):
                continue
            rows += [_compared(pub, col, doc["metrics"].get(col)) for col in PAPER_COLUMNS]
    what = "SIMULATED vs published" if simulated else "Published vs reproduced"
    base = [r for r in rows if r.labels[2] == "Baseline" and r.values["relative"] is not None]
    if base:
        w = max(base, key=lambda r: abs(r.values["relative"]))
        what += (
            f"; the baselines' largest relative difference is {100 * w.values['relative']:+.0f}% "
            f"({' '.join(w.labels[:2])} {w.labels[3]})"
        )
    caveat = (
        (
            " The reproduced column is the SIMULATED benchmark, calibrated to resemble the paper: it shows how "
            "close the simulation is, not a result on Visual Genome."
        )
        if simulated
        else ""
    ) + _agreement_caption(rows)
    if dataset_kind not in PUBLISHED_ON:
        caveat = f" Nothing to compare: this run is on {dataset or dataset_kind}, and the published values are VG150's."
    return Table(
        "published_vs_reproduced",
        f"{what} (Li et al. 2022, VG150 test), percent; relative = "
        f"difference / published; wIMR tau = {tau:g} here, 0.5 in the paper.{caveat}",
        ("Task", "Backbone", "Method", "Metric"),
        ["published", "reproduced", "difference", "relative"],
        rows,
        mark_best=False,
    )
