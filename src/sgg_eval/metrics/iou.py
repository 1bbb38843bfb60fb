"""Every box IoU sgg-eval computes, side by side, each named after the tool whose arithmetic it copies. They differ
on purpose: a threshold of 0.5 decides differently at the border of each, and sgg-eval must decide as the tool does.

| function | tool | boxes | arithmetic |
|---|---|---|---|
| :func:`sgb_iou`, :func:`sgb_iou_matrix` | Scene-Graph-Benchmark.pytorch (``boxlist_iou``) | xyxy | float32, +1 pixel |
| :func:`sgg_benchmark_iou` | SGG-Benchmark (``box_ops.box_iou``) | xyxy | float32, +1 pixel in the intersection only |
| :func:`sttran_iou` | STTran's ``bbox_overlaps`` (Fast R-CNN's; TEMPURA, DSG-DETR) | xyxy | float64, +1 pixel |
| :func:`oed_iou` | OED's ``util/box_ops.box_iou`` (DETR's) | xyxy | float64, continuous, no clamp of the areas |
| :func:`coco_iou` | pycocotools (the detector's box AP) | xywh | float64, continuous |
| :func:`ovsgtr_iou` | OvSGTR's ``util/box_ops.box_iou`` | xyxy | float32, ``inter / (union + 1e-6)`` |
| :func:`sgbench_box_iou` | sgbench 1.0.0 (PSG on boxes) | xyxy | float64, continuous, empty: 0 |
| :func:`r1sgg_iou` | R1-SGG's ``compute_iou`` | xyxy | float64, continuous, NaN box: 0 |
| :func:`sgvlm_iou`, :func:`sgvlm_iou_matrix` | SceneGraphVLM | xyxy | Python's floats, ``max``/``min`` |
| :func:`torchvision_iou`, :func:`torchvision_pair_iou` | torchvision's ``box_iou`` (ASMv2, ProVision) | xyxy | below |

Masks (PSG's segments) are not boxes: their IoU is ``panoptic.matching.mask_ious``.

torchvision's ``box_iou`` as the MLLM evaluators call it (issue 48: ASMv2 and ProVision), bit for bit in numpy. Their
boxes reach it as ``torch.tensor(list)``: a list of Python ints becomes int64, one with a float float32
(``arrays.torch_tensors``). ``box_iou`` then works in those types (torchvision ``ops/boxes.py``):

    area = (x2 - x1) * (y2 - y1)                      each side in its own type
    lt = max(a[:, None, :2], b[:, :2]), rb = min(a[:, None, 2:], b[:, 2:])
    inter = clamp(rb - lt, min=0) product             int64 when both are int64, else float32
    union = (area_a + area_b) - inter
    iou = inter / union                               float32; int64 operands are cast to float32 first

so two integer boxes can meet the 0.5 threshold that exact arithmetic misses (``8388609 / 16777217`` is
``0.50000006`` there), a zero union gives ``nan`` (never a match), and an inverted box a negative area, as there.
numpy would promote int64 with float32 to float64: every step here casts to the type torch computes in.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.arrays.torch_tensors import tensor_dtype

OVSGTR_EPS = np.float32(1e-6)  # added to the union, as OvSGTR's util/box_ops.box_iou does


def sgb_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of xyxy boxes ``a[..., 4]`` and ``b[..., 4]`` elementwise (broadcast), inclusive pixels, float32.

    ``area = (x2 - x1 + 1) (y2 - y1 + 1)``, ``inter = max(0, min(x2) - max(x1) + 1) * max(0, ...)``,
    ``iou = inter / (area_a + area_b - inter)``; every step in float32 and in the reference's order, so a
    comparison ``iou >= 0.5`` decides exactly as the reference does, including IoU exactly 0.5.
    """
    one = np.float32(1)
    area_a = (a[..., 2] - a[..., 0] + one) * (a[..., 3] - a[..., 1] + one)
    area_b = (b[..., 2] - b[..., 0] + one) * (b[..., 3] - b[..., 1] + one)
    lt = np.maximum(a[..., :2], b[..., :2])
    rb = np.minimum(a[..., 2:], b[..., 2:])
    wh = np.maximum(rb - lt + one, np.float32(0))
    inter = wh[..., 0] * wh[..., 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return inter / (area_a + area_b - inter)


def sgg_benchmark_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of xyxy boxes ``a[..., 4]`` and ``b[..., 4]`` elementwise (broadcast) as Maelic/SGG-Benchmark's
    ``box_ops.box_iou`` computes it (a664201; its evaluator's ``bbox_overlaps`` makes float32 tensors): the +1 pixel
    in the intersection, none in the areas, which are clamped at 0:

    ``area = max(0, x2 - x1) * max(0, y2 - y1)``, ``inter = max(0, min(x2) - max(x1) + 1) * max(0, ... + 1)``,
    ``iou = inter / (area_a + area_b - inter)``, every step in float32 in its order.

    So it is larger than :func:`sgb_iou`; a box 1 pixel wide, or 2 × 2, has a negative IoU with itself and never
    matches; a 2 × 3 box gives ``inter / 0 = inf`` and always matches; ``0 / 0`` is NaN, which matches nothing."""
    zero, one = np.float32(0), np.float32(1)
    area_a = np.maximum(a[..., 2] - a[..., 0], zero) * np.maximum(a[..., 3] - a[..., 1], zero)
    area_b = np.maximum(b[..., 2] - b[..., 0], zero) * np.maximum(b[..., 3] - b[..., 1], zero)
    lt = np.maximum(a[..., :2], b[..., :2])
    rb = np.minimum(a[..., 2:], b[..., 2:])
    wh = np.maximum(rb - lt + one, zero)
    inter = wh[..., 0] * wh[..., 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return inter / (area_a + area_b - inter)


# A box protocol's IoU (``core.protocols.Protocol.box_iou``) -> the function; each protocol's record names its own.
BOX_IOUS = {"sgb": sgb_iou, "sgg_benchmark": sgg_benchmark_iou}


def sgb_iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`sgb_iou` of every box of ``a`` with every box of ``b``: ``[len(a), len(b)]``."""
    a = np.asarray(a, dtype=np.float32).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float32).reshape(-1, 4)
    return sgb_iou(a[:, None, :], b[None, :, :])


def sttran_iou(gt: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """IoU of xyxy float64 boxes ``gt[..., 4]`` and ``pred[..., 4]`` elementwise, as STTran's ``bbox_overlaps``
    (``lib/fpn/box_intersections_cpu/bbox.pyx``, Fast R-CNN's, shared by TEMPURA and DSG-DETR) computes it with
    ``gt`` as its boxes and ``pred`` as its query boxes, in float64:
    ``iw = min(x2) - max(x1) + 1``; if ``iw > 0``: ``ih`` likewise; if ``ih > 0``:
    ``iou = iw ih / ((gx2 - gx1 + 1)(gy2 - gy1 + 1) + (px2 - px1 + 1)(py2 - py1 + 1) - iw ih)``, else 0."""
    iw = np.minimum(gt[..., 2], pred[..., 2]) - np.maximum(gt[..., 0], pred[..., 0]) + 1.0
    ih = np.minimum(gt[..., 3], pred[..., 3]) - np.maximum(gt[..., 1], pred[..., 1]) + 1.0
    query_area = (pred[..., 2] - pred[..., 0] + 1.0) * (pred[..., 3] - pred[..., 1] + 1.0)
    union = (gt[..., 2] - gt[..., 0] + 1.0) * (gt[..., 3] - gt[..., 1] + 1.0) + query_area - iw * ih
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((iw > 0) & (ih > 0), iw * ih / union, 0.0)


def oed_iou(gt: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """IoU of xyxy float64 boxes ``gt[..., 4]`` and ``pred[..., 4]`` elementwise, as OED's ``box_iou`` (DETR's,
    ``util/box_ops.py`` @ 7712e7e) computes it on the float64 tensors its evaluator makes, ``gt`` first:
    ``area = (x2 - x1)(y2 - y1)``; ``inter = max(0, min(x2) - max(x1)) * max(0, min(y2) - max(y1))``;
    ``iou = inter / (area_gt + area_pred - inter)``. No +1 pixel: STTran's 0.5 example (GT 10 20 109 79 against
    10 20 109 49) is 2871/5841 here. A zero union gives NaN, which meets no threshold, as in torch."""
    area_gt = (gt[..., 2] - gt[..., 0]) * (gt[..., 3] - gt[..., 1])
    area_pred = (pred[..., 2] - pred[..., 0]) * (pred[..., 3] - pred[..., 1])
    w = np.maximum(np.minimum(gt[..., 2], pred[..., 2]) - np.maximum(gt[..., 0], pred[..., 0]), 0.0)
    h = np.maximum(np.minimum(gt[..., 3], pred[..., 3]) - np.maximum(gt[..., 1], pred[..., 1]), 0.0)
    inter = w * h
    with np.errstate(divide="ignore", invalid="ignore"):
        return inter / (area_gt + area_pred - inter)


def coco_iou(d: np.ndarray, g: np.ndarray) -> np.ndarray:
    """pycocotools' ``maskUtils.iou`` of ``[x, y, w, h]`` boxes, pairwise (row i of ``d`` with row i of ``g``):
    continuous, float64."""
    w = np.minimum(d[:, 0] + d[:, 2], g[:, 0] + g[:, 2]) - np.maximum(d[:, 0], g[:, 0])
    h = np.minimum(d[:, 1] + d[:, 3], g[:, 1] + g[:, 3]) - np.maximum(d[:, 1], g[:, 1])
    inter = np.where((w > 0) & (h > 0), w * h, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):  # two empty boxes: 0 / 0, NaN, no match (as there)
        return inter / (d[:, 2] * d[:, 3] + g[:, 2] * g[:, 3] - inter)


def ovsgtr_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``[N, M]`` IoU without the +1 pixel, ``inter / (union + 1e-6)`` in float32 (OvSGTR's ``box_iou``)."""
    a, b = a.astype(np.float32), b.astype(np.float32)
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    wh = np.clip(rb - lt, 0, None)
    inter = wh[:, :, 0] * wh[:, :, 1]
    union = area_a[:, None] + area_b[None, :] - inter
    return inter / (union + OVSGTR_EPS)


def sgbench_box_iou(gt_boxes: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """``[P, G]`` IoU of xyxy boxes as sgbench computes it (float64, its order; OpenPSG's box mode alike); two
    empty boxes: 0."""
    if len(boxes) == 0:
        return np.zeros((0, len(gt_boxes)))
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    gt_area = (gt_boxes[:, 2] - gt_boxes[:, 0]) * (gt_boxes[:, 3] - gt_boxes[:, 1])
    lt = np.maximum(boxes[:, None, :2], gt_boxes[:, :2])
    rb = np.minimum(boxes[:, None, 2:], gt_boxes[:, 2:])
    wh = np.clip(rb - lt, 0, None)
    inter = wh[:, :, 0] * wh[:, :, 1]
    union = area[:, None] + gt_area - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def r1sgg_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU ``[len(a), len(b)]`` of xyxy float64 boxes as R1-SGG's ``compute_iou`` computes it (same operations in
    the same order, so the same float64 values); a box with a NaN coordinate overlaps nothing."""
    iw = np.maximum(0.0, np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0]))
    ih = np.maximum(0.0, np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1]))
    inter = iw * ih
    union = ((a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]))[:, None] + ((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]))[None]
    union = union - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = np.where(union == 0, 0.0, inter / np.where(union == 0, 1.0, union))
    return np.where(np.isnan(b).any(axis=1)[None, :], 0.0, iou)


def sgvlm_iou(a: list, b: list) -> float:
    """SceneGraphVLM's IoU of two sorted xyxy boxes: continuous, with Python's own ``max``/``min`` (what they do
    with ``nan``)."""
    iw = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    union = max(0, a[2] - a[0]) * max(0, a[3] - a[1]) + max(0, b[2] - b[0]) * max(0, b[3] - b[1]) - inter
    return 0.0 if union <= 0 else inter / union


def sgvlm_iou_matrix(gt: list, pred: list) -> np.ndarray:
    """``[len(gt), len(pred)]`` IoU of the scenes' boxes: float64 arrays, the same operations as :func:`sgvlm_iou`
    (for finite boxes they give the same values); boxes with a non-finite coordinate go through
    :func:`sgvlm_iou` itself."""
    a, b = np.array(gt, dtype=np.float64).reshape(-1, 4), np.array(pred, dtype=np.float64).reshape(-1, 4)
    iw = np.maximum(0, np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0]))
    ih = np.maximum(0, np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1]))
    inter = iw * ih
    area_a = np.maximum(0, a[:, 2] - a[:, 0]) * np.maximum(0, a[:, 3] - a[:, 1])
    area_b = np.maximum(0, b[:, 2] - b[:, 0]) * np.maximum(0, b[:, 3] - b[:, 1])
    union = area_a[:, None] + area_b[None, :] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = np.where(union <= 0, 0.0, inter / np.where(union <= 0, 1.0, union))
    for i, j in zip(*np.nonzero(~np.isfinite(a).all(axis=1)[:, None] | ~np.isfinite(b).all(axis=1)[None, :])):
        iou[i, j] = sgvlm_iou(gt[i], pred[j])
    return np.where(np.isnan(iou), 0.0, iou)


def torchvision_pair_iou(a: list, b: list) -> np.ndarray:
    """``box_iou(torch.tensor([a_i]), torch.tensor([b_j]))`` for every pair, each box its own tensor (so its own
    type): ``[len(a), len(b)]`` float32. ``a`` and ``b`` are lists of boxes ``arrays.torch_tensors.as_tensor`` reads."""
    int_a, int_b = _torch_is_int(a), _torch_is_int(b)
    out = torchvision_iou(_torch_stack(a, np.float32), _torch_stack(b, np.float32))
    both = int_a[:, None] & int_b[None, :]
    if both.any():
        exact = torchvision_iou(_torch_stack(a, np.int64, int_a), _torch_stack(b, np.int64, int_b))
        out = np.where(both, exact, out)
    return out


def _torch_is_int(boxes: list) -> np.ndarray:
    return np.array([tensor_dtype(box) == np.int64 for box in boxes], dtype=bool)


def _torch_stack(boxes: list, dtype, keep: np.ndarray | None = None) -> np.ndarray:
    """The boxes as one ``[N, 4]`` array of ``dtype`` (rows not in ``keep``: zeros, never read)."""
    rows = [box if keep is None or keep[i] else [0, 0, 0, 0] for i, box in enumerate(boxes)]
    return np.array(rows, dtype=dtype).reshape(len(boxes), 4)


def torchvision_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """torchvision's ``box_iou(a, b)``, ``[len(a), len(b)]`` float32, in the types torch computes in (below)."""
    common = np.int64 if a.dtype == np.int64 and b.dtype == np.int64 else np.float32
    area_a, area_b = _torch_area(a), _torch_area(b)
    a, b = a.astype(common, copy=False), b.astype(common, copy=False)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        lt = np.maximum(a[:, None, :2], b[None, :, :2])
        wh = np.maximum(np.minimum(a[:, None, 2:], b[None, :, 2:]) - lt, common(0))
        inter = wh[..., 0] * wh[..., 1]
        union = (area_a.astype(common)[:, None] + area_b.astype(common)[None, :]) - inter
        return inter.astype(np.float32) / union.astype(np.float32)


def _torch_area(boxes: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
