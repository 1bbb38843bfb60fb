"""Action Genome's release into split stores, as ``sgg-eval split --ag-dir`` and the pipeline's ``video_data``
stage write them: ``train.h5`` and ``test.h5`` from the release's object file, and, given the STTran authors'
small-box-filtered file, ``test_filtersmall.h5`` (what STTran scores SGCls and SGDet on). Every file is read and
checked before the first store is written."""

from __future__ import annotations

import os

from sgg_eval.core.defaults import AG_SMALL_BOX_STORE
from sgg_eval.core.errors import InputError
from sgg_eval.video.ag_annotations import OBJECT_FILE, SPLITS, AGSplit, load_persons, read_ag_split
from sgg_eval.video.ag_names import read_vocabulary
from sgg_eval.video.ag_store import write_ag_store

SMALL_BOX_STORE = AG_SMALL_BOX_STORE


def write_ag_splits(ag_dir: str, out_dir: str, splits: tuple[str, ...] = SPLITS,
                    small_boxes: str | None = None) -> list[tuple[str, AGSplit]]:  # fmt: skip
    """Write the stores of ``splits`` (and ``test_filtersmall.h5`` with ``small_boxes``) from the release in
    ``ag_dir`` (the folder holding ``annotations/``) into ``out_dir``; returns ``(path, split)`` of each."""
    annotations = os.path.join(ag_dir, "annotations")
    if not os.path.isdir(annotations):
        raise InputError("no annotations/ folder here (Action Genome's release has one)", path=ag_dir)
    vocab = read_vocabulary(annotations)
    jobs = [(s, os.path.join(out_dir, f"{s}.h5"), None) for s in SPLITS if s in splits]
    if small_boxes:
        jobs.append(("test", os.path.join(out_dir, SMALL_BOX_STORE), small_boxes))
    persons = load_persons(annotations)
    read = [(path, read_ag_split(annotations, vocab, split, small, persons=persons), small)
            for split, path, small in jobs]  # fmt: skip
    os.makedirs(out_dir, exist_ok=True)
    for path, split, small in read:
        write_ag_store(path, split, vocab, os.path.basename(small) if small else OBJECT_FILE)
    return [(path, split) for path, split, _ in read]
