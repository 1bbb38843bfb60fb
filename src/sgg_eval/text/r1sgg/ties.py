"""R1-SGG's no-graph-constraint ranking and the order of its tied scores (``--protocol r1sgg``, docs/text_graphs.md).

R1-SGG's ``SggEvaluator`` ranks every (relation, predicate) cell of an answer by ``obj-score product × predicate
score`` with numpy's default argsort (``argsort_desc``), and keeps the first 100. An answer's rows are one-hot and its
object scores 1, so the cells take two values: 1 for the answered predicates, 0 for the others. Which cells of a
value come first is what that unstable sort leaves, and it changes with numpy's version and the CPU (numpy ≥ 1.25
sorts with AVX-512 where the CPU has it). Where a cut K falls inside a run of equal cells, the ng numbers
(``ngR@K``, ``ng-mR@K``, ``ng-zR@K``) hang on that order.

Three orders of the cells, each a permutation of ``range(n · C)`` with the values non-increasing along it:

- ``numpy``: ``np.argsort(-cells)`` as R1-SGG calls it (what this numpy on this CPU gives);
- ``best``: within each run of equal values, the cells that hit a GT row not yet hit come first, greedily (the cell
  with most such rows first, ties by index); GT rows hit by the cells of a higher value count as hit;
- ``worst``: within each run, the cells that hit no GT row not yet hit come first, then greedily the fewest.

A cell ``(i, c)`` hits GT row ``(s, o, p)`` when ``c = p`` and relation ``i``'s subject and object boxes each have
the GT box's label and IoU ≥ 0.5 with it (``metrics.iou.sgb_iou``, the reference's +1-pixel float32 IoU). The greedy
orders reach the fewest and the most GT rows any order can at every K whenever each cell's rows are either disjoint
from or equal to another's (every case but a cell hitting two GT rows of which another cell hits one).
``hits_decided(K)`` is how many GT rows are hit within the first K cells under ``best`` and not under ``worst``.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.data.types import GTImage
from sgg_eval.metrics.iou import sgb_iou_matrix

ORDERS = ("numpy", "best", "worst")


def cell_hits(gt: GTImage, labels, boxes, subjects, objects, predicates, num_predicates: int) -> np.ndarray:
    """``[n · C, R]`` bool: whether cell ``i · C + (c − 1)`` (relation ``i``, predicate ``c``) hits GT row ``r``."""
    n, rows = len(predicates), len(gt.rels)
    hits = np.zeros((n * num_predicates, rows), dtype=bool)
    if not n or not rows:
        return hits
    ok = (sgb_iou_matrix(boxes, gt.boxes) >= np.float32(0.5)) & (np.asarray(labels)[:, None] == gt.labels[None, :])
    s, o, p = gt.rels[:, 0], gt.rels[:, 1], gt.rels[:, 2]
    both = ok[np.asarray(subjects)][:, s] & ok[np.asarray(objects)][:, o]  # [n, R]: the pair stands for the row's
    for i, r in zip(*np.nonzero(both)):
        hits[i * num_predicates + p[r] - 1, r] = True
    return hits


def orders(cells: np.ndarray, hits: np.ndarray) -> dict[str, np.ndarray]:
    """The three orders of the module docstring for the flat cell values ``cells`` and their ``hits``."""
    out = {"numpy": np.argsort(-cells)}  # its argsort_desc: numpy's default kind, ties as that sort leaves them
    for name in ("best", "worst"):
        covered = np.zeros(hits.shape[1], dtype=bool)
        order = []
        for value in np.unique(cells)[::-1]:  # runs of equal cells, the highest first
            run = np.flatnonzero(cells == value)
            order.append(_greedy(run, hits, covered, most=name == "best"))
            covered |= hits[run].any(axis=0)
        out[name] = np.concatenate(order) if order else np.zeros(0, dtype=np.int64)
    return out


def _greedy(run: np.ndarray, hits: np.ndarray, covered: np.ndarray, *, most: bool) -> np.ndarray:
    """The cells of one run: those that hit rows not ``covered`` taken greedily (most or fewest new rows first, ties
    by index) after (``most``) or before the others, which keep their index order."""
    useful = run[hits[run][:, ~covered].any(axis=1)] if hits.shape[1] else run[:0]
    rest = np.setdiff1d(run, useful, assume_unique=True)
    seen, picked, left = covered.copy(), [], list(useful)
    while left:
        gains = [int(np.count_nonzero(hits[c] & ~seen)) for c in left]
        k = int(np.argmax(gains)) if most else int(np.argmin(gains))
        picked.append(left.pop(k))
        seen |= hits[picked[-1]]
    picked = np.asarray(picked, dtype=np.int64)
    return np.concatenate([picked, rest] if most else [rest, picked]).astype(np.int64)


def hits_within(order: np.ndarray, hits: np.ndarray, k: int) -> int:
    """GT rows hit by the first ``k`` cells of ``order``."""
    return int(np.count_nonzero(hits[order[:k]].any(axis=0))) if hits.shape[1] else 0
