"""Box overlap exactly as the reference evaluator computes it (maskrcnn_benchmark ``boxlist_iou``)."""

from __future__ import annotations

import numpy as np


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
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


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`iou` of every box of ``a`` with every box of ``b``: ``[len(a), len(b)]``."""
    a = np.asarray(a, dtype=np.float32).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float32).reshape(-1, 4)
    return iou(a[:, None, :], b[None, :, :])
