"""torchvision's ``box_iou`` as the MLLM evaluators call it (issue 48: ASMv2 and ProVision), bit for bit in numpy.

Their boxes reach it as ``torch.tensor(list)``: a list of Python ints becomes int64, one with a float float32
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


def pair_iou(a: list, b: list) -> np.ndarray:
    """``box_iou(torch.tensor([a_i]), torch.tensor([b_j]))`` for every pair, each box its own tensor (so its own
    type): ``[len(a), len(b)]`` float32. ``a`` and ``b`` are lists of boxes ``arrays.torch_tensors.as_tensor`` reads."""
    int_a, int_b = _is_int(a), _is_int(b)
    out = box_iou(_stack(a, np.float32), _stack(b, np.float32))
    both = int_a[:, None] & int_b[None, :]
    if both.any():
        exact = box_iou(_stack(a, np.int64, int_a), _stack(b, np.int64, int_b))
        out = np.where(both, exact, out)
    return out


def _is_int(boxes: list) -> np.ndarray:
    return np.array([tensor_dtype(box) == np.int64 for box in boxes], dtype=bool)


def _stack(boxes: list, dtype, keep: np.ndarray | None = None) -> np.ndarray:
    """The boxes as one ``[N, 4]`` array of ``dtype`` (rows not in ``keep``: zeros, never read)."""
    rows = [box if keep is None or keep[i] else [0, 0, 0, 0] for i, box in enumerate(boxes)]
    return np.array(rows, dtype=dtype).reshape(len(boxes), 4)


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """torchvision's ``box_iou(a, b)``, ``[len(a), len(b)]`` float32 (module docstring)."""
    common = np.int64 if a.dtype == np.int64 and b.dtype == np.int64 else np.float32
    area_a, area_b = _area(a), _area(b)
    a, b = a.astype(common, copy=False), b.astype(common, copy=False)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        lt = np.maximum(a[:, None, :2], b[None, :, :2])
        wh = np.maximum(np.minimum(a[:, None, 2:], b[None, :, 2:]) - lt, common(0))
        inter = wh[..., 0] * wh[..., 1]
        union = (area_a.astype(common)[:, None] + area_b.astype(common)[None, :]) - inter
        return inter.astype(np.float32) / union.astype(np.float32)


def _area(boxes: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
