"""STTran's triplets, ranking and matching (``yrcong/STTran`` @ 6b559e1, ``lib/evaluation_recall.py``:
``evaluate_scene_graph``, ``evaluate_from_dict``, ``evaluate_recall``, ``_compute_pred_matches``), for a batch of
frames at once. TEMPURA and DSG-DETR copy these lines; only their mean recalls differ (``video.ag_metrics``).

Per frame with ``P`` pairs there are ``3P`` rows of 26 scores: the attention rows (the pair as given, columns 0-2),
the spatial rows (the pair reversed, object -> person, columns 3-8) and the contacting rows (the pair as given,
columns 9-25); every other column is 0. The constraint turns rows into triplets ``(row's pair, column, score)``:

- ``with``: one per row, the first column of the row's maximum, that maximum as its score;
- ``semi`` (threshold ``t``): an attention row with column 0 or 1 above 0 as ``with``; a spatial row with column 3
  or 4 above 0 gives one triplet per column above ``t``; a contacting row with column 9 or 10 above 0 likewise;
  any other row nothing (compared in float64: a float32 0.9 is below 0.9);
- ``no``: every entry of the ``3P x 26`` matrix ``s(pair) x score``, ``s(pair)`` the product of the pair's two box
  scores in float32; the 100 largest, each with its row's score.

A triplet's score is ``s(subject) s(object) score`` in float64; triplets are ranked by it, descending. A triplet
hits a GT relation of its frame when the subject label, the predicate and the object label are equal and both
boxes overlap theirs at IoU >= 0.5 (:func:`sgg_eval.metrics.iou.sttran_iou`, the +1 pixel convention; OED, which
copies these lines with DETR's IoU: :func:`sgg_eval.metrics.iou.oed_iou`); one triplet
may hit several relations and a relation may be hit by several triplets. The result is, for each GT relation, the
rank of the first triplet that hits it: it counts at every K above that rank.

Ties. STTran orders with NumPy's default (unstable) argsort, so among equal scores its order is unspecified.
sgg-eval's is stable: equal scores keep the order the triplets were made in (rows in order, columns ascending;
for ``no``, the order of its top-100 cut, itself stable over the matrix read row by row).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sgg_eval.arrays.segments import expand_segments, position_in_runs, segment_min
from sgg_eval.core.protocols import STTRAN_CONSTRAINTS as CONSTRAINTS
from sgg_eval.core.protocols import STTRAN_SEMI_THRESHOLD as SEMI_THRESHOLD
from sgg_eval.metrics.iou import sttran_iou
from sgg_eval.video.ag_names import GROUPS, NUM_OBJECTS, NUM_PREDICATES

WITH, SEMI, NO = CONSTRAINTS
IOU_THRESHOLD = 0.5
K_VALUES = (10, 20, 50, 100)
NO_CONSTRAINT_CUT = 100  # "no" keeps the 100 best entries of each frame's score matrix
MISSED = K_VALUES[-1]  # the first-hit rank of a GT relation no triplet of the top 100 hits


@dataclass
class FrameTruth:
    """The GT of a batch of ``F`` frames, flat: ``boxes [N, 4]`` float64, ``labels [N]``, ``box_offsets [F + 1]``,
    ``rels [R, 3]`` (subject, object: indices within the frame; predicate 1..26), ``rel_offsets [F + 1]``."""

    boxes: np.ndarray
    labels: np.ndarray
    box_offsets: np.ndarray
    rels: np.ndarray
    rel_offsets: np.ndarray

    @property
    def num_frames(self) -> int:
        return len(self.box_offsets) - 1


@dataclass
class FramePredictions:
    """What a model predicted for the same frames, flat: ``boxes [N, 4]`` float64 (the file's float32 values),
    ``labels [N]`` int64, ``scores [N]`` float32; ``pairs [P, 2]`` (person box, object box: indices into
    ``boxes``, whatever their frame, as STTran allows), ``pair_frame [P]`` (the frame, 0..F-1), and the pairs'
    ``attention [P, 3]`` (probabilities), ``spatial [P, 6]`` and ``contacting [P, 17]`` float32 scores."""

    boxes: np.ndarray
    labels: np.ndarray
    scores: np.ndarray
    pairs: np.ndarray
    pair_frame: np.ndarray
    attention: np.ndarray
    spatial: np.ndarray
    contacting: np.ndarray


@dataclass
class Triplets:
    """Ranked triplets, each frame's best first: ``frame [T]``, ``subject``/``object [T]`` (box indices),
    ``predicate [T]`` (1..26), ``score [T]`` float64, ``rank [T]`` within its frame in sgg-eval's stable order,
    and ``best``/``worst [T]``, its rank in the most and least favourable order of tied scores STTran's sort may
    take (a triplet STTran's ``no`` cut may drop has no worst); ``in_predicate [T]``, its rank among its frame's
    triplets of the same predicate in sgg-eval's order (IMR's ranking, ``video.ag_beyond``). Ranks of 100 or more
    read as :data:`MISSED`; only triplets with a rank below 100 are kept (no K reads further)."""

    frame: np.ndarray
    subject: np.ndarray
    object: np.ndarray
    predicate: np.ndarray
    score: np.ndarray
    rank: np.ndarray
    best: np.ndarray
    worst: np.ndarray
    in_predicate: np.ndarray


@dataclass
class FirstHits:
    """Per GT relation ``[R]`` int16: ``ours`` (sgg-eval's stable order), ``best`` and ``worst`` (the most and
    least favourable order of tied scores STTran's unstable sort may take), ``imr`` (the rank among the triplets
    predicted with the relation's predicate, IMR's). A relation counts at K when its rank is below K; STTran's
    number lies between the ``worst`` and the ``best`` one."""

    ours: np.ndarray
    best: np.ndarray
    worst: np.ndarray
    imr: np.ndarray

    @classmethod
    def missed(cls, count: int) -> FirstHits:
        """``count`` relations no triplet hits."""
        return cls(*(np.full(count, MISSED, np.int16) for _ in range(4)))

    def put(self, at: np.ndarray, source: FirstHits, source_at=slice(None)) -> None:
        """Write ``source``'s ranks (at ``source_at``) into this one's at ``at``."""
        for name in ("ours", "best", "worst", "imr"):
            getattr(self, name)[at] = getattr(source, name)[source_at]


def ranked_triplets(pred: FramePredictions, constraint: str, threshold: float = SEMI_THRESHOLD) -> Triplets:
    """The frames' triplets under ``constraint`` (``with``, ``semi``, ``no``), ranked (module docstring)."""
    order = np.argsort(pred.pair_frame, kind="stable")  # each frame's pairs, in pair order
    frame = pred.pair_frame[order]
    per_frame = np.bincount(frame, minlength=1)
    rows = _Rows(pred, order, frame, expand_segments(per_frame)[1], per_frame[frame])
    if constraint == NO:
        cand = _no_constraint(rows)
    else:
        cand = _with_or_semi(rows, constraint == SEMI, threshold)
    return _rank(cand, pred)


@dataclass
class _Rows:
    """Per pair (in frame order): its frame, its position ``j`` among the frame's ``P`` pairs; row ``g P + j`` of
    group ``g`` is made in that order."""

    pred: FramePredictions
    order: np.ndarray
    frame: np.ndarray
    j: np.ndarray
    count: np.ndarray

    def group(self, g: int) -> np.ndarray:
        return (self.pred.attention, self.pred.spatial, self.pred.contacting)[g][self.order]

    def ends(self, g: int) -> tuple[np.ndarray, np.ndarray]:
        """Subject and object boxes of group ``g``'s rows: spatial rows take the pair reversed."""
        pairs = self.pred.pairs[self.order]
        return (pairs[:, 1], pairs[:, 0]) if g == 1 else (pairs[:, 0], pairs[:, 1])

    def made(self, g: int) -> np.ndarray:
        """The row's position in its frame's 3P rows."""
        return g * self.count + self.j


def _with_or_semi(rows: _Rows, semi: bool, threshold: float) -> dict[str, np.ndarray]:
    parts = []
    for g, (_name, start, _end) in enumerate(GROUPS):
        scores = rows.group(g)
        sub, obj = rows.ends(g)
        best, first = scores.max(axis=1, initial=0), scores.argmax(axis=1)
        if not semi or g == 0:
            # argmax over the 26 columns of a row that is zero outside its group: the group's own argmax, or
            # column 0 when the whole group is 0
            keep = np.ones(len(scores), bool) if not semi else (scores[:, 0] > 0) | (scores[:, 1] > 0)
            col = np.where(best > 0, start + first, 0)
            parts.append((rows.frame[keep], rows.made(g)[keep] * NUM_PREDICATES + col[keep], sub[keep], obj[keep],
                          col[keep], best[keep].astype(np.float64)))  # fmt: skip
            continue
        alive = (scores[:, 0] > 0) | (scores[:, 1] > 0)
        row, c = np.nonzero((scores.astype(np.float64) > threshold) & alive[:, None])
        col = start + c
        parts.append((rows.frame[row], rows.made(g)[row] * NUM_PREDICATES + col, sub[row], obj[row], col,
                      scores[row, c].astype(np.float64)))  # fmt: skip
    frame, made, sub, obj, col, value = (np.concatenate(x) for x in zip(*parts, strict=True))
    order = np.lexsort((made, frame))
    every = np.ones(len(order), bool)
    return {"frame": frame[order], "subject": sub[order], "object": obj[order], "column": col[order],
            "value": value[order], "kept": every, "sure": every}  # fmt: skip


def _no_constraint(rows: _Rows) -> dict[str, np.ndarray]:
    """Every entry of each frame's ``3P x 26`` matrix, its 100 largest by ``s(pair) x score`` (ties: the matrix
    read row by row): ``kept``. Where entries tie with the 100th, STTran's unstable sort may keep others: every
    entry tied with it is a candidate too, ``sure`` only those above it (for the tie range)."""
    parts = []
    scores32 = rows.pred.scores
    for g, (_name, start, end) in enumerate(GROUPS):
        sub, obj = rows.ends(g)
        full = np.zeros((len(sub), NUM_PREDICATES), np.float64)
        full[:, start:end] = rows.group(g)
        pair_score = (scores32[sub] * scores32[obj]).astype(np.float32)  # float32, as STTran's .prod(1)
        parts.append((rows.frame, rows.made(g), sub, obj, full, pair_score.astype(np.float64)))
    frame, made, sub, obj, full, pair_score = (np.concatenate(x) for x in zip(*parts, strict=True))
    by_row = np.lexsort((made, frame))  # the 3P rows of each frame in order: the matrix read row by row
    frame, sub, obj, full = frame[by_row], sub[by_row], obj[by_row], full[by_row]
    key = (pair_score[by_row][:, None] * full).reshape(-1)
    entry_frame = np.repeat(frame, NUM_PREDICATES)
    order = _descending(entry_frame, key)
    frame, key = entry_frame[order], key[order]
    rank = position_in_runs(frame)
    last = np.full(frame.max(initial=-1) + 1, -np.inf)  # each frame's 100th key (-inf: fewer entries)
    last[frame[rank == NO_CONSTRAINT_CUT - 1]] = key[rank == NO_CONSTRAINT_CUT - 1]
    near = key >= last[frame]
    order, kept, sure = order[near], rank[near] < NO_CONSTRAINT_CUT, key[near] > last[frame[near]]
    row, col = np.divmod(order, NUM_PREDICATES)
    return {"frame": frame[near], "subject": sub[row], "object": obj[row], "column": col,
            "value": full.reshape(-1)[order], "kept": kept, "sure": sure}  # fmt: skip


def _descending(frame: np.ndarray, value: np.ndarray) -> np.ndarray:
    """The order that sorts entries by frame, then by ``value`` descending, equal values kept in their order, for
    entries grouped by frame (``frame`` non-decreasing) with ``value >= 0``. Most entries are 0 (the matrix's
    columns outside a row's group): only the positive ones are sorted; the zeros follow them in their order."""
    positive = value > 0
    head = np.flatnonzero(positive)
    head = head[np.lexsort((-value[head], frame[head]))]
    tail = np.flatnonzero(~positive)
    both = np.concatenate([head, tail])
    # two runs, each sorted by frame: a stable sort merges them in linear time
    return both[np.argsort(np.concatenate([frame[head], frame[tail]]), kind="stable")]


def _rank(cand: dict[str, np.ndarray], pred: FramePredictions) -> Triplets:
    """Score ``s(subject) s(object) value`` in float64 and rank the kept triplets within each frame, stable
    (``cand`` is in the order the triplets were made); and each candidate's best and worst rank over every order
    of tied scores: best, the sure candidates with a higher score before it; worst (a sure one's), every candidate
    with a score as high but itself."""
    s = pred.scores.astype(np.float64)
    score = s[cand["subject"]] * s[cand["object"]] * cand["value"]
    order = _descending(cand["frame"], score)
    frame, score_s, kept, sure = cand["frame"][order], score[order], cand["kept"][order], cand["sure"][order]
    n = len(frame)
    if not n:
        none = np.zeros(0, np.int64)
        return Triplets(none, none, none, none, np.zeros(0), none, none, none, none)
    at_frame = np.arange(n) - position_in_runs(frame)
    group = np.cumsum(np.r_[True, (frame[1:] != frame[:-1]) | (score_s[1:] != score_s[:-1])])  # equal scores
    at_group = np.arange(n) - position_in_runs(group)
    group_end = at_group + np.bincount(group)[group]
    kept_before, sure_before = np.cumsum(kept) - kept, np.cumsum(sure) - sure
    ours = np.where(kept, kept_before - kept_before[at_frame], MISSED)
    best = sure_before[at_group] - sure_before[at_frame]
    worst = np.where(sure, group_end - at_frame - 1, MISSED)
    in_predicate = _rank_in_predicate(frame, cand["column"][order], kept)
    keep = (best < MISSED) | (in_predicate < MISSED)
    order = order[keep]
    cap = np.int64(MISSED)
    return Triplets(frame[keep], cand["subject"][order], cand["object"][order], cand["column"][order] + 1,
                    score_s[keep], np.minimum(ours[keep], cap), np.minimum(best[keep], cap),
                    np.minimum(worst[keep], cap), np.minimum(in_predicate[keep], cap))  # fmt: skip


def _rank_in_predicate(frame: np.ndarray, column: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Each kept triplet's rank among its frame's kept triplets of its predicate, in their (ranked) order;
    :data:`MISSED` for the others."""
    out = np.full(len(frame), MISSED, np.int64)
    idx = np.flatnonzero(kept)
    key = frame[idx].astype(np.int64) * NUM_PREDICATES + column[idx]
    order = np.argsort(key, kind="stable")
    out[idx[order]] = position_in_runs(key[order])
    return out


def first_hits(truth: FrameTruth, triplets: Triplets, pred: FramePredictions, iou_threshold: float = IOU_THRESHOLD,
               iou=sttran_iou) -> FirstHits:  # fmt: skip
    """For each GT relation, the rank of the first triplet of its frame that hits it (or :data:`MISSED`): in
    sgg-eval's order, and in the most and least favourable order of the tool's tied scores. ``iou(gt, pred)``:
    STTran's (+1 pixel) or OED's (``metrics.iou.oed_iou``)."""
    gt_frame = expand_segments(np.diff(truth.rel_offsets))[0]
    first_box = truth.box_offsets[:-1][gt_frame]
    gt_sub, gt_obj = first_box + truth.rels[:, 0], first_box + truth.rels[:, 1]
    gt_key = triplet_key(gt_frame, truth.labels[gt_sub], truth.rels[:, 2], truth.labels[gt_obj])
    tr_key = triplet_key(
        triplets.frame, pred.labels[triplets.subject], triplets.predicate, pred.labels[triplets.object]
    )
    by_key = np.argsort(gt_key, kind="stable")
    lo = np.searchsorted(gt_key[by_key], tr_key, side="left")
    hi = np.searchsorted(gt_key[by_key], tr_key, side="right")
    tr, within = expand_segments(hi - lo)  # each triplet's run of GT relations with its labels
    gt = by_key[np.repeat(lo, hi - lo) + within]
    hit = (iou(truth.boxes[gt_sub[gt]], pred.boxes[triplets.subject[tr]]) >= iou_threshold) & (
        iou(truth.boxes[gt_obj[gt]], pred.boxes[triplets.object[tr]]) >= iou_threshold
    )
    return FirstHits(*(segment_min(len(gt_key), gt[hit], ranks[tr[hit]], MISSED).astype(np.int16)
                       for ranks in (triplets.rank, triplets.best, triplets.worst, triplets.in_predicate)))  # fmt: skip


_LABELS = NUM_OBJECTS + 1  # the keys' radix for an object label (0..36), and for a predicate (0..26)
_PREDICATES = NUM_PREDICATES + 1


def triplet_key(frame, subject: np.ndarray, predicate: np.ndarray, obj: np.ndarray) -> np.ndarray:
    """One int64 per (frame, subject label, predicate, object label): equal keys, equal triplets of one frame
    (``frame`` 0: the triplet alone, as the training split's zero-shot set holds it)."""
    frame = np.asarray(frame, dtype=np.int64)
    return ((frame * _LABELS + subject) * _PREDICATES + predicate) * _LABELS + obj


def key_predicate(key: np.ndarray) -> np.ndarray:
    """The predicate (1..26) of :func:`triplet_key`'s keys."""
    return key // _LABELS % _PREDICATES
