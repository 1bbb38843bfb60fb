"""Training statistics (docs/definitions.md §4), computed from the training split only, streaming over its images.

- ``triplet_counts`` ``A[s, o, p]``: training GT rows with subject class s, object class o, predicate p (raw
  rows, duplicates counted). Index 0 of every axis is background and stays 0, so class ids index directly.
  ``drop_non_overlapping=True`` drops rows whose subject and object boxes do not intersect.
- ``subject_predicate`` ``A^s[p, s] = Σ_o A[s, o, p]``; ``object_predicate`` ``A^o[p, o] = Σ_s A[s, o, p]``.
- ``num_pairs`` ``n_c = |{(s, o) : A[s, o, c] > 0}|`` (compositional diversity of predicate c).
- class-triplet counts ``n_t`` are ``A`` itself: ``n_t = A[s, o, p]`` for triplet t = (s, o, p).
- ``background_counts[s, o]``: ordered object pairs of training images, only intersecting ones when
  ``background_must_overlap`` (falling back to all pairs in an image with none), as the reference
  frequency bias counts its background.
- ``zeroshot_triplets`` ``[Z, 3]`` (s, o, p): class triplets of the test split whose training count is 0.
- ``graph_density[i]`` = GT relation rows / ordered object pairs ``N (N - 1)`` of training image i (0 if N < 2).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.data.types import GTImage, Vocabulary, triplet_key
from sgg_eval.io.atomic import atomic_output, ensure_space
from sgg_eval.io.integrity import hdf5_create_options, open_sealed, seal

_ARRAYS = (
    "triplet_counts",
    "background_counts",
    "predicate_counts",
    "object_counts",
    "zeroshot_triplets",
    "graph_density",
)


@dataclass
class TrainingStats:
    """docs/definitions.md §4 statistics. Axes are documented in the module docstring; index 0 is background."""

    vocab: Vocabulary
    triplet_counts: np.ndarray
    background_counts: np.ndarray
    predicate_counts: np.ndarray
    object_counts: np.ndarray
    zeroshot_triplets: np.ndarray
    graph_density: np.ndarray
    simulated: bool
    source: str

    @property
    def subject_predicate(self) -> np.ndarray:
        """``A^s[p, s]``."""
        return self.triplet_counts.sum(axis=1).T

    @property
    def object_predicate(self) -> np.ndarray:
        """``A^o[p, o]``."""
        return self.triplet_counts.sum(axis=0).T

    @property
    def num_pairs(self) -> np.ndarray:
        """``n_c`` per predicate (index 0 = background, always 0)."""
        return (self.triplet_counts > 0).sum(axis=(0, 1))


def _intersecting(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Positive intersection area between paired boxes (reference ``bbox_overlaps`` with ``to_move=0``)."""
    w = np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0])
    h = np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1])
    return (w > 0) & (h > 0)


def compute_stats(
    train: Iterable[GTImage],
    vocab: Vocabulary,
    test: Iterable[GTImage] = (),
    *,
    drop_non_overlapping: bool = False,
    background_must_overlap: bool = True,
    simulated: bool = False,
    source: str = "",
    seen: Iterable[GTImage] = (),
) -> TrainingStats:
    """Accumulate the statistics over ``train`` (and the test split's class triplets for the zero-shot set: those
    neither ``train`` nor ``seen`` holds; ``seen``, e.g. GQA's val split, counts for nothing else)."""
    n_obj, n_pred = vocab.num_objects + 1, vocab.num_predicates + 1
    sizes = (vocab.num_objects, vocab.num_predicates)
    triplets = np.zeros(n_obj * n_obj * n_pred, dtype=np.int64)
    background = np.zeros(n_obj * n_obj, dtype=np.int64)
    objects = np.zeros(n_obj, dtype=np.int64)
    density: list[float] = []
    pending: dict[str, list[np.ndarray]] = {"triplets": [], "background": [], "objects": []}

    def flush() -> None:
        # One bincount per batch of images: per-image bincounts over 1.2M bins would dominate the cost.
        for name, acc in (("triplets", triplets), ("background", background), ("objects", objects)):
            if pending[name]:
                acc += np.bincount(np.concatenate(pending[name]), minlength=acc.size)
                pending[name].clear()

    for count, img in enumerate(train, 1):
        s, o, p = img.rels.T
        keep = _intersecting(img.boxes[s], img.boxes[o]) if drop_non_overlapping else slice(None)
        pending["triplets"].append(triplet_key(img.labels[s[keep]], img.labels[o[keep]], p[keep], *sizes))
        pending["objects"].append(img.labels)
        n = len(img.labels)
        density.append(len(img.rels) / (n * (n - 1)) if n > 1 else 0.0)
        pending["background"].append(_background_keys(img, n_obj, background_must_overlap))
        if count % 4096 == 0:
            flush()
    flush()
    A = triplets.reshape(n_obj, n_obj, n_pred)
    test_flat, seen_flat = _triplet_set(test, sizes), _triplet_set(seen, sizes)
    unseen = test_flat[(triplets[test_flat] == 0) & ~np.isin(test_flat, seen_flat)]
    s, o, p = np.unravel_index(unseen, A.shape)
    return TrainingStats(
        vocab,
        A,
        background.reshape(n_obj, n_obj),
        A.sum(axis=(0, 1)),
        objects,
        np.column_stack([s, o, p]).astype(np.int64),
        np.asarray(density, dtype=np.float64),
        simulated,
        source,
    )


def _background_keys(img: GTImage, n_obj: int, must_overlap: bool) -> np.ndarray:
    """The (subject class, object class) keys of the image's ordered object pairs that count as background: every
    pair, or (``must_overlap``, the reference's rule) those whose boxes intersect, all pairs when none does."""
    n = len(img.labels)
    off_diag = ~np.eye(n, dtype=bool)
    pairs = off_diag & _intersecting(img.boxes[:, None], img.boxes[None, :]) if must_overlap else off_diag
    if must_overlap and not pairs.any():
        pairs = off_diag
    si, oi = np.nonzero(pairs)
    return img.labels[si] * n_obj + img.labels[oi]


def _triplet_set(images: Iterable[GTImage], sizes: tuple[int, int]) -> np.ndarray:
    """The distinct class-triplet keys of ``images``' relations, sorted."""
    keys = [
        triplet_key(img.labels[img.rels[:, 0]], img.labels[img.rels[:, 1]], img.rels[:, 2], *sizes) for img in images
    ]
    return np.unique(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.int64)


def write_stats(path: str | os.PathLike, stats: TrainingStats) -> None:
    """Write the statistics as a self-describing HDF5 file, atomically and deterministically."""
    with atomic_output(path) as tmp:
        ensure_space(tmp, sum(getattr(stats, name).nbytes for name in _ARRAYS))
        _write_stats_h5(tmp, stats)
        seal(tmp)


def _write_stats_h5(tmp, stats: TrainingStats) -> None:
    import h5py  # here, not at import: evaluating a torch file without statistics never needs it

    from sgg_eval.data.ragged_h5 import write_attrs

    with h5py.File(tmp, "w", **hdf5_create_options()) as h5:
        write_attrs(
            h5,
            {
                "kind": "train_stats",
                "simulated": bool(stats.simulated),
                "source": stats.source,
                "object_classes": list(stats.vocab.object_classes),
                "predicate_classes": list(stats.vocab.predicate_classes),
            },
        )
        for name in _ARRAYS:
            h5.create_dataset(
                name, data=getattr(stats, name), compression="gzip", compression_opts=4, shuffle=True, track_times=False
            )


def read_stats(path: str | os.PathLike) -> TrainingStats:
    """Read a statistics file written by :func:`write_stats`."""
    from sgg_eval.data.ragged_h5 import check_schema_version, read_attr, read_names

    path = str(path)
    with open_sealed(path, "write it again with `sgg-eval stats`") as h5:
        check_schema_version(h5, path)
        if read_attr(h5, "kind", path) != "train_stats":
            raise InputError("not a training-statistics file", path=path, field="kind")
        vocab = Vocabulary(read_names(h5, "object_classes", path), read_names(h5, "predicate_classes", path))
        missing = [n for n in _ARRAYS if n not in h5]
        if missing:
            raise InputError("missing dataset", path=path, field=missing[0])
        arrays = {n: h5[n][()] for n in _ARRAYS}
        _validate_arrays(arrays, vocab, path)
        return TrainingStats(
            vocab, simulated=read_attr(h5, "simulated", path, kind=bool), source=read_attr(h5, "source", path), **arrays
        )


def check_zeroshot_ids(zs: np.ndarray, vocab: Vocabulary, path: str, field: str) -> None:
    """Zero-shot triplets ``[Z, 3]`` (subject, object, predicate) must use ids of ``vocab`` (1-based)."""
    if len(zs) and (
        zs[:, :2].min() < 1
        or zs[:, :2].max() > vocab.num_objects
        or zs[:, 2].min() < 1
        or zs[:, 2].max() > vocab.num_predicates
    ):
        raise InputError("class or predicate id outside the vocabulary", path=path, field=field)


def _validate_arrays(arrays: dict, vocab: Vocabulary, path: str) -> None:
    """Shapes from the vocabulary, non-negative integer counts, finite densities, zero-shot ids in range:
    a hand-edited or foreign statistics file fails here, not as a wrong wIMR."""
    o, p = vocab.num_objects + 1, vocab.num_predicates + 1
    shapes = {
        "triplet_counts": (o, o, p),
        "background_counts": (o, o),
        "predicate_counts": (p,),
        "object_counts": (o,),
        "zeroshot_triplets": (None, 3),
        "graph_density": (None,),
    }
    for name, shape in shapes.items():
        a = arrays[name]
        if a.ndim != len(shape) or any(w is not None and g != w for g, w in zip(a.shape, shape)):
            raise InputError(
                f"shape {list(a.shape)}, expected {[('n' if w is None else w) for w in shape]}", path=path, field=name
            )
        if name == "graph_density":
            if a.dtype.kind != "f" or not np.all(np.isfinite(a)) or np.any(a < 0):
                raise InputError("densities must be finite non-negative numbers", path=path, field=name)
        elif a.dtype.kind not in "iu" or (a.size and a.min() < 0):
            raise InputError("counts must be non-negative integers", path=path, field=name)
    check_zeroshot_ids(arrays["zeroshot_triplets"], vocab, path, "zeroshot_triplets")
    if not np.array_equal(arrays["predicate_counts"], arrays["triplet_counts"].sum(axis=(0, 1))):
        raise InputError("predicate_counts disagree with triplet_counts", path=path, field="predicate_counts")


def frequency_order(counts) -> list[int]:
    """Predicate indices (into ``counts``, training instances per predicate), most frequent first, ties by index:
    the one order of every per-predicate figure, table and head/body/tail grouping."""
    return np.argsort(-np.asarray(counts, dtype=np.int64), kind="stable").tolist()


def summarize(stats: TrainingStats) -> dict:
    """A small human-readable summary: per-predicate count and n_c, totals, density, zero-shot size."""
    names = stats.vocab.predicate_classes
    n_c = stats.num_pairs
    return {
        "simulated": bool(stats.simulated),
        "source": stats.source,
        "num_train_images": int(len(stats.graph_density)),
        "num_train_relations": int(stats.predicate_counts.sum()),
        "num_train_objects": int(stats.object_counts.sum()),
        "mean_graph_density": round(float(stats.graph_density.mean()) if len(stats.graph_density) else 0.0, 6),
        "num_zeroshot_test_triplets": int(len(stats.zeroshot_triplets)),
        "predicates": {
            names[c - 1]: {"count": int(stats.predicate_counts[c]), "num_pairs": int(n_c[c])}
            for c in range(1, len(names) + 1)
        },
    }
