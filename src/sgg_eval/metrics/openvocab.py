"""The open-vocabulary protocols' rules, as OvSGTR, VS3 and PGSG compute them (docs/openvocab.md). Each rule is
stated once here; the ranking and the matching are the reference evaluator's (``metrics.ranking``), which all
three evaluators are derived from.

Subsets of an image's GT rows ``(subject label s, object label o, predicate p)`` (:func:`row_subsets`):

- ``novel_obj``: ``s`` and ``o`` both novel object classes (OvSGTR's and VS3's rule: a row with exactly one
  novel end is in no subset; it counts in Base+Novel R@K only);
- ``novel_rel``: ``p`` a novel predicate (OvSGTR);
- ``either_obj``: ``s`` or ``o`` novel (the rule OvSGTR's code has commented out; the audit reports it);
- ``all``: every row, ranked at PGSG's K (up to 300).

A subset's recall is ``R_S@K = mean over the images i with S_i ≠ ∅ of |S_i ∩ hits_i(K)| / |S_i|`` (image-weighted,
not pooled); PGSG's per-predicate recall ``p@K`` is the reference's (mean over the images containing p of
hits / count), ``mR_novel@K`` the plain mean of ``p@K`` over its novel predicates (one absent from the GT counts
0), ``mR_seen@K`` over the others, and its ``mR@K = Σ_p p@K / (C + 0.001)``.

GT preparation (:func:`prepare_gt`), before anything else sees the image:

- ``ovsgtr``: an image with more than 100 GT boxes keeps 100 drawn as OvSGTR draws them
  (``np.random.choice(n, 100, replace=False)``, in the drawn order; relations with a dropped end are dropped,
  the others re-indexed). OvSGTR draws from numpy's unseeded global generator; here the same call is seeded 0
  for every image, so a run is reproducible (OvSGTR gives the same boxes after ``np.random.seed(0)``). Then
  same-class boxes are merged as OvSGTR merges them: for box ``e`` in index order, the boxes of its class with
  plain IoU ``> 0.9`` (no +1 pixel; ``inter / (union + 1e-6)`` in float32) among those not yet absorbed; if any,
  ``e`` becomes a new entity and all of them map to it. Relations are re-indexed, never de-duplicated. Boxes
  are not clipped (OvSGTR's loader does not clip). A box that overlaps nothing, not even itself (zero area),
  would crash OvSGTR's loader; here it is its own entity.
- every other protocol: boxes clipped to ``[0, W - 1] x [0, H - 1]`` (Scene-Graph-Benchmark's loader, VS3's),
  which changes only a split made with ``--no-clip``.

Images: ``pgsg`` does not evaluate the first 5,000 images of the split (PGSG's loader keeps
``image_index[5000:]`` of its test set).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sgg_eval.core.defaults import OPENVOCAB_PROTOCOLS, OPENVOCAB_SETTINGS
from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import protocol as protocol_record
from sgg_eval.data.openvocab import OpenVocabSplit
from sgg_eval.data.types import GTImage, Vocabulary
from sgg_eval.metrics.iou import ovsgtr_iou
from sgg_eval.metrics.names import openvocab_subsets

MAX_BOXES = 100  # OvSGTR's num_obj: GT boxes kept per image
MERGE_IOU = 0.9  # OvSGTR merges same-class GT boxes with IoU above this
CAP_SEED = 0  # the draw of the 100 boxes, seeded (OvSGTR's is not)
PGSG_MR_EPS = 0.001  # PGSG divides the sum of per-predicate recalls by C + this


@dataclass(frozen=True)
class OpenVocab:
    """An open-vocabulary protocol as an evaluation runs it: ``protocol`` (``ovsgtr``, ``vs3``, ``pgsg``), its
    ``setting`` (``ovd``, ``ovr``, ``ovd+r``), the novel classes as 1-based ids, and the split's name and
    source for the notes."""

    protocol: str
    setting: str
    novel_objects: tuple[int, ...]
    novel_predicates: tuple[int, ...]
    split: str
    source: str
    audit: bool = False  # every subset rule at once, for ``sgg-eval audit --protocol openvocab``

    def __post_init__(self) -> None:
        check_setting(self.protocol, self.setting)
        if self.audit:
            return  # every rule, whatever the split has
        needs = {"novel_obj": ("novel object classes", self.novel_objects)}
        needs["novel_rel"] = ("novel predicates", self.novel_predicates)
        for subset in ("novel_rel",) if self.rules.means_ks else openvocab_subsets(self.setting):
            what, ids = needs[subset]
            if not ids:
                raise InputError(f"setting {self.setting} of {self.protocol} needs {what}, and the split has none")

    @property
    def rules(self):
        """The protocol's record (``sgg_eval.core.protocols``)."""
        return protocol_record(self.protocol)

    def subsets(self) -> tuple[tuple[str, tuple[int, ...] | None], ...]:
        """The subsets this run accumulates, each with its K (None: the family's usual K)."""
        if self.audit:
            return (("novel_obj", None), ("either_obj", None), ("novel_rel", None))
        if self.rules.means_ks:
            return (("all", self.rules.means_ks),)
        return tuple((subset, None) for subset in openvocab_subsets(self.setting))


def check_setting(protocol: str, setting: str) -> None:
    """An InputError unless ``setting`` is one of ``protocol``'s (``OPENVOCAB_SETTINGS``)."""
    if protocol not in OPENVOCAB_PROTOCOLS:
        raise ValueError(f"{protocol} is not an open-vocabulary protocol")
    if setting not in OPENVOCAB_SETTINGS[protocol]:
        raise InputError(
            f"{setting!r} is not a setting of {protocol} ({', '.join(OPENVOCAB_SETTINGS[protocol])})", field="setting"
        )


def open_vocab(protocol: str, setting: str | None, split: OpenVocabSplit, vocab: Vocabulary) -> OpenVocab:
    """The :class:`OpenVocab` of ``protocol`` at ``setting`` (default: the protocol's first, every subset it has)
    with ``split`` applied to ``vocab`` (an InputError when a name is not among its classes)."""
    objects, predicates = split.masks(vocab)
    return OpenVocab(
        protocol,
        setting or OPENVOCAB_SETTINGS[protocol][0],
        tuple(int(i) for i in np.flatnonzero(objects)),
        tuple(int(i) for i in np.flatnonzero(predicates)),
        split.name,
        split.source,
    )


def row_subsets(
    ov: OpenVocab, subjects: np.ndarray, objects: np.ndarray, predicates: np.ndarray, sizes: tuple[int, int]
) -> dict[str, np.ndarray]:
    """Each subset's flag per GT row, from the rows' subject and object labels and predicates (1-based);
    ``sizes`` = (C_obj, C_pred)."""
    novel_obj = np.zeros(sizes[0] + 1, dtype=bool)
    novel_obj[list(ov.novel_objects)] = True
    novel_pred = np.zeros(sizes[1] + 1, dtype=bool)
    novel_pred[list(ov.novel_predicates)] = True
    rules = {
        "novel_obj": lambda: novel_obj[subjects] & novel_obj[objects],
        "either_obj": lambda: novel_obj[subjects] | novel_obj[objects],
        "novel_rel": lambda: novel_pred[predicates],
        "all": lambda: np.ones(len(predicates), dtype=bool),
    }
    return {name: rules[name]() for name, _ in ov.subsets()}


@dataclass
class Prepared:
    """What GT preparation did to a batch of images: images cut to 100 boxes, boxes merged away, boxes clipped."""

    capped_images: int = 0
    merged_boxes: int = 0
    clipped_boxes: int = 0


def prepare_images(images: list, protocol: str, clip: bool, done: Prepared) -> list:
    """``(GT, prediction)`` pairs with each GT prepared (:func:`prepare_gt`); clipping looks at the block's boxes at
    once and touches only the images with a box past the border (most have none)."""
    if protocol_record(protocol).merges_gt:
        return [(prepare_gt(gt, protocol, clip, done), pred) for gt, pred in images]
    if not clip:
        return list(images)
    sizes = np.array([len(gt.boxes) for gt, _ in images], dtype=np.int64)
    if not sizes.sum():
        return list(images)
    boxes = np.concatenate([gt.boxes for gt, _ in images if len(gt.boxes)])
    edge = protocol_record(protocol).gt_clip_edge
    width = np.repeat([gt.width - edge for gt, _ in images], sizes)[:, None]
    height = np.repeat([gt.height - edge for gt, _ in images], sizes)[:, None]
    outside = (boxes < 0).any(axis=1) | (boxes[:, 0::2] > width).any(axis=1) | (boxes[:, 1::2] > height).any(axis=1)
    # an image of unknown size (0 x 0) cannot be clipped
    outside &= (width + edge > 0)[:, 0] & (height + edge > 0)[:, 0]
    touched = np.repeat(np.arange(len(images)), sizes)[outside]
    out = list(images)
    for i in np.unique(touched).tolist():
        out[i] = (prepare_gt(images[i][0], protocol, clip, done), images[i][1])
    return out


def prepare_gt(gt: GTImage, protocol: str, clip: bool, done: Prepared) -> GTImage:
    """``gt`` as ``protocol``'s evaluator sees it (module docstring); ``clip``: whether other protocols clip (the
    split kept its boxes unclipped). Counts what changed in ``done``."""
    if not protocol_record(protocol).merges_gt:
        if not clip or not len(gt.boxes) or gt.width <= 0 or gt.height <= 0:  # (a size unknown: taken as given)
            return gt
        clipped = gt.clipped(protocol_record(protocol).gt_clip_edge)
        done.clipped_boxes += int(np.count_nonzero((clipped.boxes != gt.boxes).any(axis=1)))
        return clipped
    boxes, labels, rels = gt.boxes, gt.labels, gt.rels
    if len(boxes) > MAX_BOXES:
        boxes, labels, rels = cap_boxes(boxes, labels, rels)
        done.capped_images += 1
    keep, new_id = merge_plan(boxes, labels)
    done.merged_boxes += len(boxes) - len(keep)
    rels = np.column_stack([new_id[rels[:, 0]], new_id[rels[:, 1]], rels[:, 2]]) if len(rels) else rels
    return GTImage(gt.image_id, gt.width, gt.height, boxes[keep], labels[keep], rels)


def cap_boxes(boxes: np.ndarray, labels: np.ndarray, rels: np.ndarray) -> tuple[np.ndarray, ...]:
    """OvSGTR's cut to ``MAX_BOXES`` boxes (seeded ``CAP_SEED``): the drawn boxes in drawn order, the relations
    between two of them re-indexed, the others dropped."""
    drawn = np.random.RandomState(CAP_SEED).choice(len(boxes), MAX_BOXES, replace=False)
    position = np.full(len(boxes), -1, dtype=np.int64)
    position[drawn] = np.arange(MAX_BOXES)
    kept = (position[rels[:, 0]] >= 0) & (position[rels[:, 1]] >= 0)
    rels = np.column_stack([position[rels[kept, 0]], position[rels[kept, 1]], rels[kept, 2]])
    return boxes[drawn], labels[drawn], rels.reshape(-1, 3).astype(np.int64)


def merge_plan(boxes: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """OvSGTR's merge of same-class boxes (module docstring): the kept boxes' indices, and each box's new index."""
    n = len(boxes)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    match = (ovsgtr_iou(boxes, boxes) > MERGE_IOU) & (labels[:, None] == labels[None, :])
    np.fill_diagonal(match, True)  # a zero-area box would match nothing, not even itself (module docstring)
    keep, new_id, free = [], np.full(n, -1, dtype=np.int64), np.ones(n, dtype=bool)
    for e in range(n):
        hits = match[e] & free
        if hits.any():
            new_id[hits] = len(keep)
            keep.append(e)
            free &= ~hits
    return np.asarray(keep, dtype=np.int64), new_id


def pgsg_mean_recalls(per_c: np.ndarray, novel: np.ndarray) -> dict[str, np.ndarray]:
    """PGSG's ``mR``, ``mR_novel`` and ``mR_seen`` at each K from the per-predicate recalls ``per_c[C, k]`` and the
    novel flags ``novel[C + 1]`` (index 0, background, unused)."""
    flags = novel[1:]
    return {
        "mR": per_c.sum(axis=0) / (len(per_c) + PGSG_MR_EPS),
        "mR_novel": per_c[flags].mean(axis=0),
        "mR_seen": per_c[~flags].mean(axis=0),
    }
