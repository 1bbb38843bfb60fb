"""The papers' published tables shipped with sgg-eval (``data/resources/published/``), and ours beside Li et al.'s."""

from __future__ import annotations

import csv
from importlib import resources

from sgg_eval.report.agreement import AGREEMENT_BAND, agreement, directions
from sgg_eval.report.tables import PAPER_COLUMNS, Row, Table


def published_rows(name: str = "li2022_tables.csv") -> list[dict]:
    """A paper's published table shipped with sgg-eval (``data/resources/published/<name>``; ``#`` lines are
    its caption), one dict per row; by default Li et al.'s Tables 2-3 (percent)."""
    text = resources.files("sgg_eval.data").joinpath(f"resources/published/{name}").read_text("utf-8")
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    return list(csv.DictReader(lines))


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


def _agreement_caption(rows: list[Row]) -> str:
    """How close ours is to the paper: :func:`agreement_figures` in words, the largest family mean of them."""
    within, cells, means, agree, total = agreement_figures(rows)
    if not cells:
        return ""
    worst = max(means, key=means.get)
    return (
        f" Agreement: {within} of {cells} cells within ±{AGREEMENT_BAND:.0%} of the published value; the "
        f"largest mean |relative difference| of a metric family is {100 * means[worst]:.1f}% ({worst}); {agree} of "
        f"{total} method-versus-baseline directions agree with the paper's."
    )


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
