"""The zero-shot triplet set a box evaluation reports zR@K on: a file of one integer tensor ``[Z, 3]`` (subject,
object, predicate; ``torch.save`` format, read without torch), or Scene-Graph-Benchmark.pytorch's own VG150 list,
shipped with sgg-eval (``vg150``). Read by ``sgg-eval evaluate --zeroshot``, the audit and R1-SGG's protocol."""

from __future__ import annotations

import os

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.formats.torch.reader import load
from sgg_eval.formats.torch.tensor_table import LazyTensor


def load_zeroshot(spec: str) -> tuple[np.ndarray, str]:
    """A zero-shot triplet file ([Z, 3] subject, object, predicate; torch format), or ``vg150`` for the
    reference codebase's own list shipped with sgg-eval."""
    if spec == "vg150":
        from importlib import resources

        spec = str(resources.files("sgg_eval.data").joinpath("resources/zeroshot_triplet.pytorch"))
    obj = load(spec)
    raw = obj.numpy() if isinstance(obj, LazyTensor) else None
    if raw is None or raw.ndim != 2 or raw.shape[1] != 3 or raw.dtype.kind not in "iu":
        what = f"shape {list(raw.shape)} dtype {raw.dtype}" if raw is not None else type(obj).__name__
        raise InputError(
            f"expected one integer tensor [Z, 3] (subject, object, predicate), got {what}", path=spec, field="zeroshot"
        )
    zs = np.asarray(raw, dtype=np.int64)
    return zs, f"file {os.path.basename(spec)} ({len(zs)} triplets)"
