"""How close a reproduced table is to a paper's, the one measure every caption states (the simulated PSG table's and
the simulated VG150 one's; issues 51 and 70): the cells within ``AGREEMENT_BAND`` of the published value, each
metric's (or family's) mean relative difference, and the method-versus-baseline directions that agree."""

from __future__ import annotations

import math

AGREEMENT_BAND = 0.2  # a cell agrees when |ours - published| <= 20% of published (issue 51's measure)
BAND_WEIGHT = 10.0  # fit_loss's weight of a cell's squared excess over the band, unless a fit asks another


def agreement(cells: list[tuple[str, float, float]]) -> tuple[int, dict[str, float]]:
    """How close ours is to the paper, over ``(metric, published, ours)`` cells: the number of cells with
    ``|ours - published| <= AGREEMENT_BAND · published``, and per metric the mean of
    ``|ours - published| / published`` over its cells (in first-seen metric order)."""
    within, per_metric = 0, {}
    for metric, published, ours in cells:
        rel = abs(ours - published) / published
        within += rel <= AGREEMENT_BAND
        per_metric.setdefault(metric, []).append(rel)
    return within, {m: sum(v) / len(v) for m, v in per_metric.items()}


def directions(cells: list[tuple[tuple, str, float, float]], baseline: str = "Baseline") -> tuple[int, int]:
    """``(agree, total)`` over the method-versus-baseline directions of ``(group, method, published, ours)`` cells,
    ``group`` what a method is compared within (task, backbone, metric): for each cell of another method whose group
    has a ``baseline`` cell, whether ours is above the baseline exactly where the paper's is (equal to it where the
    paper's is equal)."""
    base = {group: (p, o) for group, method, p, o in cells if method == baseline}
    agree = total = 0
    for group, method, p, o in cells:
        if method == baseline or group not in base:
            continue
        bp, bo = base[group]
        total += 1
        agree += (o == bo) if p == bp else ((p > bp) == (o > bo))
    return agree, total


def against_order(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two rows' cells ``(published, ours)`` of one column are the other way round from the paper's:
    ``(published_a − published_b) · (ours_a − ours_b) < 0`` (rows tied in either are not)."""
    return (a[0] - b[0]) * (a[1] - b[1]) < 0


def fit_loss(
    cells: dict[str, tuple[float, float]],
    weights: dict[str, float],
    band: float = AGREEMENT_BAND,
    band_weight: float = BAND_WEIGHT,
) -> float:
    """What the simulations' fits minimise (``scripts/fit_*_simulation.py``) over ``{column: (published, ours)}``:

        Σ_c w_c r_c² / Σ_c w_c  +  β · mean_c max(|r_c| − log(1 + b), 0)²
        r_c = log(max(ours, 1e-3) / published)

    the weighted mean of squared log ratios (``weights``, every other column 1; ours floored at 1e-3: a zero is far,
    not infinite), plus β (``band_weight``, ``BAND_WEIGHT`` by default) × the mean squared excess over a band b
    (``band``: by default the one the agreement counts, ±20%; a fit may ask a narrower one, to keep a margin) — a
    cell outside costs more."""
    w = [weights.get(c, 1.0) for c in cells]
    r = [math.log(max(o, 1e-3) / p) for p, o in cells.values()]
    outside = [max(abs(x) - math.log(1 + band), 0.0) for x in r]
    return sum(wi * x * x for wi, x in zip(w, r)) / sum(w) + band_weight * sum(x * x for x in outside) / len(r)
