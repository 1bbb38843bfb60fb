"""Build split stores from a dataset source: the real VG150 files or the simulator (``load_split`` stage)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from sgg_eval.atomic import atomic_outputs, write_json
from sgg_eval.data.gqa200 import GQA200Files, read_gqa200_split
from sgg_eval.data.store import SplitStore, write_split
from sgg_eval.data.types import GTImage, SplitMeta
from sgg_eval.data.vg150 import VG150Files, read_vg150_split
from sgg_eval.errors import InputError
from sgg_eval.simulate.world import SimParams, SimulatedWorld
from sgg_eval.stats import compute_stats, summarize, write_stats

DATASET_KINDS = ("simulated", "vg150")  # the pipeline's (conf/dataset/)
SPLIT_ONLY_KINDS = ("gqa200",)  # `sgg-eval split` only: the pipeline does not read GQA200 yet


@dataclass(frozen=True)
class DatasetSpec:
    """Where a split comes from. ``kind='simulated'`` uses ``sim``; ``kind='vg150'`` uses ``files``;
    ``kind='gqa200'`` uses ``gqa200``."""

    name: str
    kind: str
    sim: SimParams = field(default_factory=SimParams)
    files: VG150Files | None = None
    gqa200: GQA200Files | None = None
    num_val_im: int = 5000
    box_scale: int = 1024

    def __post_init__(self) -> None:
        if self.kind not in DATASET_KINDS + SPLIT_ONLY_KINDS:
            raise InputError(f"dataset kind must be one of {DATASET_KINDS}, got {self.kind!r}", field="dataset.kind")
        if (self.kind == "vg150" and self.files is None) or (self.kind == "gqa200" and self.gqa200 is None):
            raise ValueError(f"a {self.kind} dataset needs its files")


def open_split(spec: DatasetSpec, split: str) -> tuple[SplitMeta, int, Iterator[GTImage]]:
    """Metadata, image count and image generator of one split of ``spec``."""
    if spec.kind == "simulated":
        return SimulatedWorld(spec.sim).split(split)
    if spec.kind == "gqa200":
        vocab, count, images = read_gqa200_split(spec.gqa200, split, num_val_im=spec.num_val_im)
        source = f"GQA200 files {spec.gqa200.id_info}, {spec.gqa200.test if split != 'train' else spec.gqa200.train}"
        return SplitMeta(split, vocab, spec.name, False, source, {"simulated": False}), count, images
    vocab, count, images = read_vg150_split(spec.files, split, num_val_im=spec.num_val_im, box_scale=spec.box_scale)
    source = f"VG150 files {spec.files.h5}, {spec.files.dicts}, {spec.files.image_data}"
    return SplitMeta(split, vocab, spec.name, False, source, {"simulated": False}), count, images


def build_splits(spec: DatasetSpec, outputs: Mapping[str, str | os.PathLike]) -> dict[str, int]:
    """Write one split store per ``outputs`` entry (split name -> path); all of them or none."""
    counts = {}
    with atomic_outputs(list(outputs.values())) as temps:
        for (split, _), tmp in zip(outputs.items(), temps):
            meta, _, images = open_split(spec, split)
            counts[split] = write_split(tmp, meta, images)
    return counts


def build_stats(
    train_path: str | os.PathLike,
    test_path: str | os.PathLike | None,
    out_path: str | os.PathLike,
    summary_path: str | os.PathLike | None = None,
    *,
    drop_non_overlapping: bool = False,
    background_must_overlap: bool = True,
) -> dict:
    """Compute docs/definitions.md §4 statistics from split stores and write them (and a JSON summary); returns
    the summary."""
    with SplitStore(train_path) as train:
        if len(train) == 0:
            raise InputError("the training split has no image: there is nothing to count", path=str(train_path))
        test = SplitStore(test_path) if test_path else None
        if test is not None and test.vocab != train.vocab:
            test.close()
            raise InputError(
                "class or predicate names differ from the training split's",
                path=str(test_path),
                field="object_classes/predicate_classes",
            )
        try:
            stats = compute_stats(
                iter(train),
                train.vocab,
                iter(test) if test else (),
                drop_non_overlapping=drop_non_overlapping,
                background_must_overlap=background_must_overlap,
                simulated=train.meta.simulated,
                source=f"training split {os.fspath(train_path)} ({train.meta.source})",
            )
        finally:
            if test:
                test.close()
    summary = summarize(stats)
    write_stats(out_path, stats)
    if summary_path:
        write_json(summary_path, summary)
    return summary
