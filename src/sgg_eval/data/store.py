"""Self-describing HDF5 stores for GT splits and model predictions, readable a batch of images at a time.

Split store (``kind = "split"``)::

    attrs   schema_version, kind, split, dataset, simulated, source, object_classes, predicate_classes, extra
    images/ image_id [I] int64 or ASCII bytes (text ids: GQA), width [I] int32, height [I] int32
    objects/ boxes [N, 4] float32 (xyxy pixels), labels [N] int32, offsets [I + 1] int64
    relations/ rels [R, 3] int32 (subject, object, predicate; indices local to the image), offsets [I + 1]

Prediction store (``kind = "predictions"``)::

    attrs   ..., task, score_kind ("probabilities" | "logits"), model
    images/ image_id [I] int64 (or ASCII bytes, as the split's)
    objects/ boxes [Q, 4] float32, labels [Q] int32, obj_scores [Q] float32, offsets [I + 1]
    pairs/  pairs [P, 2] int32, rel_scores [P, C_pred + 1] float16 or float32, offsets [I + 1]
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

import h5py
import numpy as np

from sgg_eval.core import tuning
from sgg_eval.core.errors import InputError
from sgg_eval.data.image_ids import image_id_value
from sgg_eval.data.ragged_h5 import Column, RaggedReader, RaggedWriter, read_attr, read_names, write_attrs
from sgg_eval.data.store_checks import check_batch, check_columns
from sgg_eval.data.types import GTImage, PredictionMeta, PredImage, SplitMeta, Vocabulary
from sgg_eval.io.atomic import atomic_output
from sgg_eval.io.integrity import hdf5_create_options, open_sealed, seal

_SPLIT_SEGMENTS = {
    "objects": [Column("boxes", "float32", (4,)), Column("labels", "int32")],
    "relations": [Column("rels", "int32", (3,))],
}
_SPLIT_IMAGE = [Column("image_id", "int64"), Column("width", "int32"), Column("height", "int32")]


def _pred_segments(num_predicates: int, score_dtype: str) -> dict[str, list[Column]]:
    return {
        "objects": [Column("boxes", "float32", (4,)), Column("labels", "int32"), Column("obj_scores", "float32")],
        "pairs": [Column("pairs", "int32", (2,)), Column("rel_scores", score_dtype, (num_predicates + 1,))],
    }


def _vocab_attrs(vocab: Vocabulary) -> dict:
    return {"object_classes": list(vocab.object_classes), "predicate_classes": list(vocab.predicate_classes)}


def _read_vocab(h5: h5py.File, path: str) -> Vocabulary:
    return Vocabulary(
        read_names(h5, "object_classes", path),
        read_names(h5, "predicate_classes", path),
    )


def write_split(path: str | os.PathLike, meta: SplitMeta, images: Iterable[GTImage]) -> int:
    """Write a split store atomically, streaming ``images``; validates each image; returns the image count."""
    with atomic_output(path) as tmp:
        with h5py.File(tmp, "w", track_order=False, **hdf5_create_options()) as h5:
            write_attrs(
                h5,
                {
                    "kind": "split",
                    "split": meta.split,
                    "dataset": meta.dataset,
                    "simulated": bool(meta.simulated),
                    "source": meta.source,
                    "extra": meta.extra,
                    **_vocab_attrs(meta.vocab),
                },
            )
            writer = RaggedWriter(h5, _SPLIT_SEGMENTS, _SPLIT_IMAGE)
            for img in images:
                img.validate(meta.vocab, str(path))
                writer.append(
                    {"image_id": img.image_id, "width": img.width, "height": img.height},
                    {"objects": {"boxes": img.boxes, "labels": img.labels}, "relations": {"rels": img.rels}},
                )
            count = writer.close()
        seal(tmp)
    return count


def write_predictions(
    path: str | os.PathLike, meta: PredictionMeta, images: Iterable[PredImage], *, score_dtype: str = "float32"
) -> int:
    """Write a prediction store atomically, streaming ``images``; ``score_dtype`` may be float16 to halve disk."""
    with atomic_output(path) as tmp:
        with h5py.File(tmp, "w", track_order=False, **hdf5_create_options()) as h5:
            write_attrs(
                h5,
                {
                    "kind": "predictions",
                    "task": meta.task,
                    "score_kind": meta.score_kind,
                    "model": meta.model,
                    "simulated": bool(meta.simulated),
                    "source": meta.source,
                    "extra": meta.extra,
                    **_vocab_attrs(meta.vocab),
                },
            )
            writer = RaggedWriter(
                h5, _pred_segments(meta.vocab.num_predicates, score_dtype), [Column("image_id", "int64")]
            )
            for img in images:
                img.validate(meta.vocab, str(path))
                writer.append(
                    {"image_id": img.image_id},
                    {
                        "objects": {"boxes": img.boxes, "labels": img.labels, "obj_scores": img.obj_scores},
                        "pairs": {"pairs": img.pairs, "rel_scores": img.rel_scores},
                    },
                )
            count = writer.close()
        seal(tmp)
    return count


_REWRITE = {
    "split": "write it again with `sgg-eval split`",
    "predictions": "write it again with the command that made it (`sgg-eval pko`, `simulate`)",
}


class _Store:
    """Shared open/close/batching for both store kinds."""

    kind = ""
    probabilities = False  # relation scores declared as probabilities: checked to lie in [0, 1]

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)
        if not os.path.exists(self.path):
            raise InputError("file not found", path=self.path)
        self.h5 = open_sealed(self.path, _REWRITE[self.kind])
        kind = read_attr(self.h5, "kind", self.path)
        if kind != self.kind:
            self.h5.close()
            raise InputError(f"is a '{kind}' store, expected '{self.kind}'", path=self.path, field="kind")
        self.vocab = _read_vocab(self.h5, self.path)
        self._reader = self._make_reader()
        check_columns(
            {c: self.h5[f"{seg}/{c}"] for seg, cols in self._reader.segments.items() for c in cols},
            self.vocab,
            self.path,
        )

    def _make_reader(self) -> RaggedReader:  # pragma: no cover - overridden
        raise NotImplementedError

    def __len__(self) -> int:
        return self._reader.num_images

    @property
    def image_ids(self) -> np.ndarray:
        """Image ids in stored order (read once when the store is opened)."""
        return np.asarray(self._reader.images["image_id"])

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.h5 is not None:
            self.h5.close()
            self.h5 = None

    def load(self) -> _Store:
        """Read every column into memory and close the file: the store then reads without HDF5, here or in a
        forked process (a split's GT: ~11 MB for VG150's test split). Content is still validated per read."""
        self._reader.load()
        self.close()
        return self

    def _convert(self, raw: dict):  # pragma: no cover - overridden
        raise NotImplementedError

    def read(self, start: int, stop: int) -> list:
        """Images ``start:stop`` (stored order), their content validated over the whole batch at once (shapes,
        ranges, finite values): a store written by another tool or edited by hand fails here, naming the image."""
        scalars, blocks, offsets = self._reader.read_blocks(start, stop)
        check_batch(
            blocks, offsets, scalars["image_id"], start, self.vocab, self.path, probabilities=self.probabilities
        )
        return [self._convert(r) for r in self._reader.split(scalars, blocks, offsets)]

    def batches(self, batch_size: int | None = None, start: int = 0, stop: int | None = None) -> Iterator[list]:
        """Consecutive batches (``tuning.STORE_READ_BATCH`` images by default) of images ``start:stop``; only one
        batch is in memory at a time."""
        size = batch_size or tuning.STORE_READ_BATCH
        stop = len(self) if stop is None else min(stop, len(self))
        for lo in range(start, stop, size):
            yield self.read(lo, min(stop, lo + size))

    def images(self, start: int = 0, stop: int | None = None) -> Iterator:
        """Images ``start:stop`` one by one, read a batch at a time."""
        for batch in self.batches(start=start, stop=stop):
            yield from batch

    def __iter__(self):
        return self.images()

    def image(self, index: int):
        return self.read(index, index + 1)[0]


class SplitStore(_Store):
    """Read a split store. ``meta`` describes it; iterate for :class:`GTImage` objects."""

    kind = "split"

    def _make_reader(self) -> RaggedReader:
        h5, p = self.h5, self.path
        self.meta = SplitMeta(
            split=read_attr(h5, "split", p),
            vocab=self.vocab,
            dataset=read_attr(h5, "dataset", p),
            simulated=read_attr(h5, "simulated", p, kind=bool),
            source=read_attr(h5, "source", p),
            extra=read_attr(h5, "extra", p, as_json=True),
        )
        return RaggedReader(
            h5, p, {"objects": ["boxes", "labels"], "relations": ["rels"]}, ["image_id", "width", "height"]
        )

    def _convert(self, raw: dict) -> GTImage:
        return GTImage(
            image_id_value(raw["image_id"]),
            int(raw["width"]),
            int(raw["height"]),
            raw["boxes"],
            raw["labels"],
            raw["rels"],
        )


class PredictionStore(_Store):
    """Read a prediction store. ``meta`` describes it; iterate for :class:`PredImage` objects."""

    kind = "predictions"

    def _make_reader(self) -> RaggedReader:
        h5, p = self.h5, self.path
        try:
            self.meta = PredictionMeta(
                task=read_attr(h5, "task", p),
                score_kind=read_attr(h5, "score_kind", p),
                vocab=self.vocab,
                model=read_attr(h5, "model", p),
                simulated=read_attr(h5, "simulated", p, kind=bool),
                source=read_attr(h5, "source", p),
                extra=read_attr(h5, "extra", p, as_json=True),
            )
        except InputError as exc:
            raise InputError(str(exc), path=p) from None
        self.probabilities = self.meta.score_kind == "probabilities"
        return RaggedReader(
            h5, p, {"objects": ["boxes", "labels", "obj_scores"], "pairs": ["pairs", "rel_scores"]}, ["image_id"]
        )

    def _convert(self, raw: dict) -> PredImage:
        return PredImage(
            image_id_value(raw["image_id"]),
            raw["boxes"],
            raw["labels"],
            raw["obj_scores"],
            raw["pairs"],
            raw["rel_scores"],
        )
