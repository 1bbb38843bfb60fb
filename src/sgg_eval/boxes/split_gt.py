"""An ``eval_results.pytorch`` scored on a GT split store: its own groundtruths checked against the split's, image
by image in split order (``on_split_gt``); how a GT stores its boxes (``gt_boxes_of``: clipped to the image, as
Scene-Graph-Benchmark's loader does, unclipped, as OvSGTR's and PGSG's read them, or a file's own, which nothing
guarantees either way), and what each box protocol does with that (``clips_gt``, ``check_gt_boxes``)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from sgg_eval.core.defaults import UNCLIPPED_GT_PROTOCOLS
from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import protocol as protocol_record
from sgg_eval.data.types import GTImage, PredImage
from sgg_eval.formats.eval_results import EvalResults

Pairs = Iterator[tuple[GTImage, PredImage]]

# Boxes of the file's groundtruths and of the split agree to this many pixels (both come from the same
# 1024-scale boxes; only float rounding may differ).
BOX_ATOL = 0.01


# ``PredictionSource.gt_extra`` of an eval_results.pytorch read without --gt: its groundtruths are its own
FILE_GT_EXTRA = {"gt_source": "file"}
FILE_GT = "the file's own"
CLIPPED, CLIPPED_TO_W = "clipped", "clipped to [0, W]"


def gt_boxes_of(extra: dict) -> str:
    """``PredictionSource.gt_boxes`` from a split store's ``extra`` (the VG150 and COCO-style readers record
    ``boxes_clipped``; the COCO-style one ``boxes_clip_edge`` 0, as SGG-Benchmark clips to ``[0, W]``), or
    ``FILE_GT`` for a file's own groundtruths (``FILE_GT_EXTRA``)."""
    if extra.get("gt_source") == "file":
        return FILE_GT
    if "boxes_clipped" not in extra:
        return "as given"
    if not extra["boxes_clipped"]:
        return "unclipped"
    return CLIPPED_TO_W if extra.get("boxes_clip_edge", 1) == 0 else CLIPPED


def clips_gt(protocol: str, gt_boxes: str) -> bool:
    """Whether ``protocol`` clips this GT's boxes to ``[0, W − edge] × [0, H − edge]`` before scoring (its record's
    ``gt_clip_edge``): its loader clips (every box protocol but ``UNCLIPPED_GT_PROTOCOLS``) and the GT may hold a
    box past that border (a split made with ``--no-clip``, a file's own groundtruths, which nothing guarantees
    clipped, or a COCO-style split clipped to ``[0, W]`` scored by a protocol that clips to ``W − 1``). A box inside
    the border is left as it is, so a GT already clipped gives the same numbers either way."""
    if protocol in UNCLIPPED_GT_PROTOCOLS:
        return False
    tighter = gt_boxes == CLIPPED_TO_W and protocol_record(protocol).gt_clip_edge > 0
    return gt_boxes in ("unclipped", FILE_GT) or tighter


def check_gt_boxes(protocol: str, gt_boxes: str, path: str) -> None:
    """Refuse a GT that ``protocol``'s loader would see otherwise: OvSGTR and PGSG keep boxes past the border, which a
    clipped split has lost and a file's own groundtruths may have lost (Scene-Graph-Benchmark's loader clips them
    before it stores them)."""
    if protocol not in UNCLIPPED_GT_PROTOCOLS or gt_boxes not in (CLIPPED, CLIPPED_TO_W, FILE_GT):
        return
    clipped = gt_boxes in (CLIPPED, CLIPPED_TO_W)
    which = "this GT was clipped" if clipped else "a file's own groundtruths may have been clipped"
    key = protocol_record(protocol).split_key
    again = "--coco-sgg DIR" if gt_boxes == CLIPPED_TO_W else f"--vg150-dir DIR --split-key {key}"
    raise InputError(
        f"{protocol}'s loader does not clip GT boxes to the image, and {which}: make the split with "
        f"`sgg-eval split {again} --no-clip` and pass it with --gt",
        path=path,
    )


def _gt_mismatch(mine: GTImage, split: GTImage) -> str | None:
    """What differs between the file's GT of one image and the split's, or ``None``."""
    if len(mine.labels) != len(split.labels):
        return f"labels: {len(mine.labels)} objects in the file, {len(split.labels)} in the split"
    if not np.array_equal(mine.labels, split.labels):
        return "labels: the object classes differ"
    # plain array operations, not np.allclose / np.unique(axis=0): this runs once per image, and those two
    # cost ~130 µs of the ~700 µs a PredCls image takes in all (boxes are finite: validated when read)
    worst = float(np.abs(mine.boxes.astype(np.float64) - split.boxes).max()) if len(mine.boxes) else 0.0
    if worst > BOX_ATOL:
        return f"bbox: boxes differ by up to {worst:.3g} px"
    if not np.array_equal(mine.rels, split.rels) and not np.array_equal(
        np.unique(mine.rels, axis=0), np.unique(split.rels, axis=0)
    ):
        return "relation_tuple: the GT relations differ"  # (the same rows in another order are the same GT)
    return None


def _same_gt(mine: list[GTImage], split: list[GTImage]) -> bool:
    """Whether every file GT image equals its split image as ``_gt_mismatch`` sees it, checked for a whole batch
    at once (relations in the same order; another order falls back to the per-image check)."""
    if [len(g.labels) for g in mine] != [len(g.labels) for g in split] or [len(g.rels) for g in mine] != [
        len(g.rels) for g in split
    ]:
        return False
    if not mine:
        return True
    labels = np.concatenate([g.labels for g in mine])
    if not np.array_equal(labels, np.concatenate([g.labels for g in split])):
        return False
    boxes = np.concatenate([g.boxes for g in mine]).astype(np.float64)
    if len(boxes) and np.abs(boxes - np.concatenate([g.boxes for g in split])).max() > BOX_ATOL:
        return False
    return np.array_equal(np.concatenate([g.rels for g in mine]), np.concatenate([g.rels for g in split]))


_GT_BATCH = 256  # images whose GT is compared with the split's at once


def on_split_gt(loaded: EvalResults, opened_split, path: str, start: int, stop: int) -> Pairs:
    """The file's predictions scored on the split's GT, image by image in split order (as the reference
    evaluates the test split), after checking that the GT stored in the file is that split's: every entry of
    a table (the model, the model + PKO, PKO-only) is then scored on one and the same GT. Checked a batch at a
    time; image by image, to name the first that differs, only when a batch does not match at once."""
    split, gt_path = opened_split(), opened_split.path
    stop = min(stop, len(split))
    unclipped = gt_boxes_of(split.meta.extra) == "unclipped"
    as_stored = GTImage.clipped if unclipped else (lambda gt: gt)  # as Scene-Graph-Benchmark's loader stored them
    for lo in range(start, stop, _GT_BATCH):
        batch = list(zip(loaded.read(lo, min(stop, lo + _GT_BATCH)), split.images(lo, min(stop, lo + _GT_BATCH))))
        mine, truths = [m for (m, _), _ in batch], [truth for _, truth in batch]
        # (or a file whose GT was not clipped either)
        if not _same_gt(mine, [as_stored(t) for t in truths]) and not (unclipped and _same_gt(mine, truths)):
            for i, ((mine, _), truth) in enumerate(batch, lo):
                problem = _gt_mismatch(mine, as_stored(truth))
                if problem:
                    raise InputError(
                        f"the file's groundtruths are not the GT split {gt_path} ({problem}); "
                        "evaluate it on the split it was made from",
                        path=path,
                        image_id=truth.image_id,
                        position=i,
                        field="groundtruths",
                    )
        for (_, pred), truth in batch:
            pred.image_id = truth.image_id
            yield truth, pred
