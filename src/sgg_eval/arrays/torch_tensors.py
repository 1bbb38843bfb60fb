"""What ``torch.tensor`` makes of JSON numbers (issue 48: the MLLM evaluators build their box tensors from the
answers' JSON): a list of Python ints becomes int64, one with a float float32; a bool or an int beyond int64 is
not read alike (torch mixes a bool in, or overflows). ``metrics.iou.torchvision_iou`` computes in these types."""

from __future__ import annotations

import numpy as np

INT64_RANGE = (-(2**63), 2**63)


def tensor_dtype(values: list) -> type | None:
    """The type ``torch.tensor`` gives a flat list of JSON numbers: int64 for ints only, float32 with any float;
    None for what it cannot read alike (a bool, an int beyond int64, anything not a number)."""
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values):
        return None
    if any(isinstance(v, int) and not INT64_RANGE[0] <= v < INT64_RANGE[1] for v in values):
        return None
    return np.float32 if any(isinstance(v, float) for v in values) else np.int64


def as_tensor(boxes: list) -> np.ndarray | None:
    """``torch.tensor(boxes)`` for a list of 4-number boxes, ``[N, 4]`` in its type; None when it is not that."""
    if not isinstance(boxes, list) or any(not isinstance(b, list) or len(b) != 4 for b in boxes):
        return None
    flat = [v for b in boxes for v in b]
    dtype = tensor_dtype(flat)
    if dtype is None:
        return None
    return np.array(flat, dtype=dtype).reshape(len(boxes), 4)
