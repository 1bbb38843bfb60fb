"""The dataset interface and what is built from it: split stores (``load_split`` stage) and training statistics
(``train_stats``)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, fields
from typing import Protocol

from sgg_eval.core.errors import InputError
from sgg_eval.data.coco_sgg import CocoSGG, CocoSGGFiles
from sgg_eval.data.gqa import GQA, GQAFiles
from sgg_eval.data.gqa200 import GQA200, GQA200Files
from sgg_eval.data.oiv6 import OIV6, OIV6Files
from sgg_eval.data.stats import compute_stats, summarize, write_stats
from sgg_eval.data.store import SplitStore, write_split
from sgg_eval.data.types import GTImage, SplitMeta
from sgg_eval.data.vg150 import VG150, VG150Files
from sgg_eval.io.atomic import atomic_outputs, write_json
from sgg_eval.simulate.world import SimParams, SimulatedWorld


class Dataset(Protocol):
    """What the pipeline needs of a box-level dataset: its name, its splits as GT images (``open_split``:
    metadata, image count, images) and which splits' class triplets count as seen for the zero-shot set. A
    reader module defines one class with these (``VG150``, ``GQA200``, ``GQA``, ``OIV6``, the simulated world), its conf
    keys in ``OPTIONS``, and one line of ``READERS`` builds it from ``conf/dataset/<name>.yaml`` (CONTRIBUTING.md,
    "A new dataset")."""

    name: str
    zeroshot_seen: tuple[str, ...]

    def open_split(self, split: str) -> tuple[SplitMeta, int, Iterator[GTImage]]: ...


@dataclass(frozen=True)
class Reader:
    """How a ``conf/dataset`` entry of one ``kind`` becomes its :class:`Dataset`: ``options``, the conf keys it
    reads besides ``name``, ``kind`` and ``raw`` (the pipeline's parameter check allows exactly these), and
    ``build(conf)``."""

    options: tuple[str, ...]
    build: Callable[[Mapping], Dataset]


def _files_reader(cls, files) -> Reader:
    """A reader class over files in the folder ``raw`` (``files.in_dir``), its options its dataclass fields
    named in ``cls.OPTIONS``; an option the conf leaves out takes the field's default."""
    kinds = {f.name: type(f.default) for f in fields(cls) if f.name in cls.OPTIONS}

    def build(conf: Mapping) -> Dataset:
        options = {key: kinds[key](conf[key]) for key in cls.OPTIONS if key in conf}
        # `files`: the files named one by one (`sgg-eval split --h5 ...`) instead of a folder
        return cls(conf["name"], conf["files"] if "files" in conf else files.in_dir(conf["raw"]), **options)

    return Reader(cls.OPTIONS, build)


def _simulated(conf: Mapping) -> Dataset:
    return SimulatedWorld(SimParams(**conf.get("world", {}), **conf["sim"]))


# conf/dataset/<name>.yaml's `kind` -> its reader
READERS: dict[str, Reader] = {
    "simulated": Reader(("sim",), _simulated),
    "vg150": _files_reader(VG150, VG150Files),
    "gqa200": _files_reader(GQA200, GQA200Files),
    "gqa": _files_reader(GQA, GQAFiles),
    "oiv6": _files_reader(OIV6, OIV6Files),
    "coco_sgg": _files_reader(CocoSGG, CocoSGGFiles),
}
DATASET_KINDS = tuple(READERS)


def open_dataset(conf: Mapping) -> Dataset:
    """The dataset a ``conf/dataset`` entry describes (a simulated one with ``world``: the simulation's shape)."""
    if conf.get("kind") not in READERS:
        raise InputError(f"dataset kind must be one of {DATASET_KINDS}, got {conf.get('kind')!r}", field="dataset.kind")
    return READERS[conf["kind"]].build(conf)


def build_splits(
    dataset: Dataset, outputs: Mapping[str, str | os.PathLike], source: str | os.PathLike | None = None
) -> dict[str, int]:
    """Write one split store per ``outputs`` entry (split name -> path); all of them or none. A training or test
    split of no image is refused, naming ``source`` (the dataset's files): nothing could be counted or evaluated on
    it (an empty validation split is what ``num_val_im: 0`` asks for)."""
    counts = {}
    with atomic_outputs(list(outputs.values())) as temps:
        for (split, _), tmp in zip(outputs.items(), temps):
            meta, _, images = dataset.open_split(split)
            counts[split] = write_split(tmp, meta, images)
            if not counts[split] and split != "val":
                held = getattr(dataset, "num_val_im", None)
                hint = f", or --num-val-im {held} holds out every one" if split == "train" and held else ""
                raise InputError(
                    f"the {split} split has no image (0 images): its split codes or annotations leave none{hint}",
                    path=os.fspath(source) if source is not None else None,
                    field=split,
                )
    return counts


def build_stats(
    train_path: str | os.PathLike,
    test_path: str | os.PathLike | None,
    out_path: str | os.PathLike,
    summary_path: str | os.PathLike | None = None,
    *,
    drop_non_overlapping: bool = False,
    background_must_overlap: bool = True,
    seen_paths: Sequence[str | os.PathLike] = (),
) -> dict:
    """Compute docs/definitions.md §4 statistics from split stores and write them (and a JSON summary); returns
    the summary. ``seen_paths``: more splits whose class triplets are not zero-shot (GQA's val, as Knyazev et
    al. count it), counted in nothing else."""
    with ExitStack() as stack:
        train = stack.enter_context(SplitStore(train_path))
        if len(train) == 0:
            raise InputError("the training split has no image: there is nothing to count", path=str(train_path))
        others = [stack.enter_context(SplitStore(p)) for p in ([test_path] if test_path else []) + list(seen_paths)]
        for other in others:
            if other.vocab != train.vocab:
                raise InputError(
                    "class or predicate names differ from the training split's",
                    path=other.path,
                    field="object_classes/predicate_classes",
                )
        seen = f"; zero-shot: unseen in it and {', '.join(map(os.fspath, seen_paths))}" if seen_paths else ""
        stats = compute_stats(
            iter(train),
            train.vocab,
            iter(others[0]) if test_path else (),
            drop_non_overlapping=drop_non_overlapping,
            background_must_overlap=background_must_overlap,
            simulated=train.meta.simulated,
            source=f"training split {os.fspath(train_path)} ({train.meta.source}){seen}",
            seen=itertools.chain.from_iterable(others[1:] if test_path else others),
        )
    summary = summarize(stats)
    write_stats(out_path, stats)
    if summary_path:
        write_json(summary_path, summary)
    return summary
