"""Writes torch-format files (zip and legacy) without torch, for fixtures: numpy arrays become tensors.

Fake ``torch``/``maskrcnn_benchmark`` modules exist only while a file is written, so pickle can name the
same globals a real ``torch.save`` names; nothing of them is left in ``sys.modules`` afterwards.
"""

from __future__ import annotations

import collections
import contextlib
import io
import pickle
import struct
import sys
import types
import zipfile

import numpy as np

_STORAGE_NAMES = {
    np.dtype(np.float32): "FloatStorage",
    np.dtype(np.float64): "DoubleStorage",
    np.dtype(np.int64): "LongStorage",
    np.dtype(np.int32): "IntStorage",
    np.dtype(np.float16): "HalfStorage",
    np.dtype(np.uint8): "ByteStorage",
    np.dtype(np.bool_): "BoolStorage",
    np.dtype(np.int8): "CharStorage",
    np.dtype(np.int16): "ShortStorage",
}


class BoxList:
    """Pickles exactly like maskrcnn_benchmark's BoxList (its __dict__ via NEWOBJ + BUILD)."""

    def __init__(self, bbox, size, mode="xyxy", **fields):
        self.bbox, self.size, self.mode, self.extra_fields = bbox, size, mode, fields
        self.triplet_extra_fields = []

    def get_field(self, name):  # as maskrcnn_benchmark's (sgg_eval.Evaluator takes a BoxList as it is)
        return self.extra_fields[name]


class Deferred:
    """An array made only when its bytes are written, so a file larger than memory can be written (the
    benchmark's full-size SGDet file): ``make()`` returns it, C-contiguous, of ``shape`` and ``dtype``."""

    def __init__(self, shape, dtype, make):
        self.shape, self.dtype, self.make = tuple(shape), np.dtype(dtype), make
        self.size = int(np.prod(self.shape))

    def tobytes(self) -> bytes:
        a = np.ascontiguousarray(self.make(), dtype=self.dtype)
        assert a.shape == self.shape
        return a.tobytes()


class Strided:
    """A tensor with explicit geometry, as torch pickles a view: ``offset``, ``shape`` and ``stride`` (in
    elements) over the storage ``base`` (written as a flat array). In the legacy layout, ``view`` =
    (offset, size) makes the storage itself a view into ``base``, as torch < 1.6 saved storage views."""

    def __init__(self, base, offset, shape, stride, view=None, share=None):
        self.base, self.offset, self.shape, self.stride, self.view = np.ravel(base), offset, shape, stride, view
        self.share = share  # Strided tensors given the same ``share`` object use one storage


class _Storage:
    def __init__(self, key, array, view=None):
        self.key, self.array, self.view = key, array, view


MASKRCNN = "maskrcnn_benchmark.structures.bounding_box"
PYSGG = "pysgg.structures.bounding_box"  # PySGG (BGNN) saves its BoxList under this module


@contextlib.contextmanager
def _fake_modules(boxlist_module: str = MASKRCNN):
    parts = boxlist_module.split(".")
    names = ["torch", "torch._utils", *(".".join(parts[: i + 1]) for i in range(len(parts)))]
    saved = {n: sys.modules.get(n) for n in names}
    mods = {n: types.ModuleType(n) for n in names}
    torch_utils = mods["torch._utils"]

    def _rebuild_tensor_v2(*args):  # never called: only its name is pickled
        raise AssertionError

    _rebuild_tensor_v2.__module__, _rebuild_tensor_v2.__qualname__ = "torch._utils", "_rebuild_tensor_v2"
    torch_utils._rebuild_tensor_v2 = _rebuild_tensor_v2
    storage_classes = {}
    for name in set(_STORAGE_NAMES.values()):
        cls = type(name, (), {"__module__": "torch"})
        setattr(mods["torch"], name, cls)
        storage_classes[name] = cls
    BoxList.__module__, BoxList.__qualname__ = boxlist_module, "BoxList"
    mods[boxlist_module].BoxList = BoxList
    sys.modules.update(mods)
    try:
        yield _rebuild_tensor_v2, storage_classes
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m


def _dump(obj, legacy: bool, boxlist_module: str = MASKRCNN):
    storages: list[_Storage] = []
    shared: dict[int, _Storage] = {}
    with _fake_modules(boxlist_module) as (rebuild, storage_classes):

        class P(pickle.Pickler):
            def reducer_override(self, o):
                if isinstance(o, Strided):
                    st = shared.get(id(o.share)) if o.share is not None else None
                    if st is None:
                        st = _Storage(str(len(storages)), o.base, o.view)
                        storages.append(st)
                        if o.share is not None:
                            shared[id(o.share)] = st
                    return rebuild, (st, o.offset, tuple(o.shape), tuple(o.stride), False, collections.OrderedDict())
                if isinstance(o, (np.ndarray, Deferred)):
                    a = np.ascontiguousarray(o) if isinstance(o, np.ndarray) else o
                    st = _Storage(str(len(storages)), a)
                    storages.append(st)
                    stride = tuple(int(np.prod(a.shape[d + 1 :])) for d in range(len(a.shape)))  # C order
                    return rebuild, (st, 0, a.shape, stride, False, collections.OrderedDict())
                return NotImplemented

            def persistent_id(self, o):
                if isinstance(o, _Storage):
                    cls = storage_classes[_STORAGE_NAMES[o.array.dtype]]
                    pid = ("storage", cls, o.key, "cpu", o.array.size)
                    if legacy and o.view is not None:
                        return pid + ((f"{o.key}v", *o.view),)
                    return pid + (None,) if legacy else pid
                return None

        buf = io.BytesIO()
        P(buf, protocol=2).dump(obj)
    return buf.getvalue(), storages


def save_zip(obj, path, boxlist_module: str = MASKRCNN) -> None:
    data, storages = _dump(obj, legacy=False, boxlist_module=boxlist_module)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("archive/data.pkl", data)
        zf.writestr("archive/byteorder", "little")
        for st in storages:
            zf.writestr(f"archive/data/{st.key}", st.array.tobytes())
        zf.writestr("archive/version", "3\n")


def save_legacy(obj, path, boxlist_module: str = MASKRCNN) -> None:
    data, storages = _dump(obj, legacy=True, boxlist_module=boxlist_module)
    with open(path, "wb") as fh:
        for plain in (
            0x1950A86A20F9469CFC6C,
            1001,
            {"protocol_version": 1001, "little_endian": True, "type_sizes": {"short": 2, "int": 4, "long": 4}},
        ):
            pickle.dump(plain, fh, protocol=2)
        fh.write(data)
        pickle.dump([st.key for st in storages], fh, protocol=2)
        for st in storages:
            fh.write(struct.pack("<q", st.array.size))
            fh.write(st.array.tobytes())


def eval_results_object(cases):
    """The {'groundtruths', 'predictions'} dict of BoxLists for (GTImage, PredImage) cases."""
    gts, preds = [], []
    for gt, pred in cases:
        gts.append(
            BoxList(
                gt.boxes.astype(np.float32),
                (gt.width, gt.height),
                labels=gt.labels.astype(np.int64),
                relation_tuple=gt.rels.astype(np.int64),
            )
        )
        preds.append(
            BoxList(
                pred.boxes.astype(np.float32),
                (gt.width, gt.height),
                pred_labels=pred.labels.astype(np.int64),
                pred_scores=pred.obj_scores.astype(np.float32),
                rel_pair_idxs=pred.pairs.astype(np.int64),
                pred_rel_scores=pred.rel_scores.astype(np.float32),
                pred_rel_labels=(1 + pred.rel_scores[:, 1:].argmax(1)).astype(np.int64)
                if len(pred.pairs)
                else np.zeros(0, dtype=np.int64),
            )
        )
    return {"groundtruths": gts, "predictions": preds}
