"""What a board's model pages draw (``report.model_page``), gathered from the pipeline's files: the predicates in
training-frequency order with their head/body/tail groups, every entry's metrics, per-predicate values and
confusion matrix, and the image browser's graphs (``evaluate --per-image``, the ``site.images`` test images).

The graphs are kept compact (the page holds every model's): an object is ``[label, x1, y1, x2, y2]`` (label an
index into ``objects``, the box in whole pixels), a GT row ``[subject, object, predicate]``, a predicted triplet
``[subject, object, predicate]`` (into the entry's own objects), predicates index ``predicates``; per entry and
image the GT rows' ranks (null: not matched) and the top ``PER_IMAGE_K`` predicted triplets in rank order.
"""

from __future__ import annotations

import json
import os
import shutil

from sgg_eval.data.stats import frequency_order
from sgg_eval.data.types import Vocabulary
from sgg_eval.metrics.longtail import GROUPS

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")


def _read_records(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _objects(objects: list[dict], labels: dict[str, int]) -> list[list[int]]:
    return [[labels[o["label"]], *(round(v) for v in o["box"])] for o in objects]


def image_file(image_dir: str | None, image_id, folder: str) -> str | None:
    """``image_dir``'s picture of ``image_id`` copied into ``folder/images`` (the site stays one folder); its
    path there, relative to the site, or None when there is no folder or no such picture."""
    if not image_dir:
        return None
    for suffix in IMAGE_SUFFIXES:
        source = os.path.join(image_dir, f"{image_id}{suffix}")
        if os.path.isfile(source):
            os.makedirs(os.path.join(folder, "images"), exist_ok=True)
            shutil.copyfile(source, os.path.join(folder, "images", f"{image_id}{suffix}"))
            return f"images/{image_id}{suffix}"
    return None


def board_data(
    vocab: Vocabulary,
    train_counts,
    docs: dict[str, dict],
    records: dict[str, str],
    image_dir: str | None,
    folder: str,
) -> dict:
    """One board's data beside its rows' numbers (``report.site.SiteRow``): ``docs`` entry -> metrics document
    (its head/body/tail groups and confusion matrix), ``records`` entry -> its per-image JSONL (may be missing);
    ``train_counts`` per predicate (vocabulary order) or None; pictures from ``image_dir`` copied under
    ``folder``."""
    predicates = list(vocab.predicate_classes)
    order = frequency_order(train_counts) if train_counts is not None else list(range(len(predicates)))
    some = next((doc for doc in docs.values() if "longtail" in doc), None)
    groups = {g: some["longtail"][g] for g in GROUPS} if some else None
    entries = {entry: {"confusion": doc.get("confusion", {}).get("counts")} for entry, doc in docs.items()}
    images, graphs = _graphs(vocab, records, image_dir, folder)
    return {
        "predicates": predicates,
        "objects": list(vocab.object_classes),
        "order": order,  # predicate indices, most frequent in training first
        "train_counts": None if train_counts is None else [int(c) for c in train_counts],
        "groups": groups,
        "group_rule": some["longtail"]["rule"] if some else None,
        "entries": entries,
        "images": images,
        "graphs": graphs,
    }


def _graphs(vocab: Vocabulary, records: dict[str, str], image_dir: str | None, folder: str) -> tuple[list, dict]:
    """The browser's images (the GT, from the first entry that has them) and each entry's graphs on them."""
    labels = {name: i for i, name in enumerate(vocab.object_classes)}
    predicate = {name: i for i, name in enumerate(vocab.predicate_classes)}
    read = {entry: _read_records(path) for entry, path in records.items()}
    first = next((rs for rs in read.values() if rs), [])
    images = [
        {
            "image": r["image"],
            "width": r["width"],
            "height": r["height"],
            "file": image_file(image_dir, r["image"], folder),
            "objects": _objects(r["objects"], labels),
            "gt": [[g["subject"], g["object"], predicate[g["predicate"]]] for g in r["gt"]],
        }
        for r in first
    ]
    graphs = {}
    for entry, rs in read.items():
        by_id = {r["image"]: r for r in rs}
        graphs[entry] = [
            None
            if (r := by_id.get(img["image"])) is None
            else {
                "ranks": [g["rank"] for g in r["gt"]],
                "objects": _objects(r["predicted_objects"], labels),
                "predicted": [[p["subject"], p["object"], predicate[p["predicate"]]] for p in r["predicted"]],
            }
            for img in images
        ]
    return images, graphs
