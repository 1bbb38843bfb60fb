"""Small GENERATED Open Images V6 files in PySGG's layout, and a PySGG-style ``eval_results.pytorch`` on them; no
real data. ``python tests/oiv6_fixture.py OUT`` (``make oiv6-example``) writes ``OUT/oiv6/annotations/...`` and
``OUT/oiv6/eval_results_<task>.pytorch`` for sgdet and predcls.

The annotations have 601 classes and 30 predicates (generated names; the predicate names are the ones
third-party OIv6 code lists) and every case the reader's rules treat: images without a relation or without a box
(dropped), duplicate GT triplets, boxes past the image (clipped), predicates that never occur in test. The
predictions, written as PySGG saves them (``pysgg.structures.bounding_box.BoxList``, 31 score columns with the
background first, pairs in the post-processor's order), have what the protocol's rules decide on: boxes at IoU
exactly 0.5 with their GT, tied scores, images without a predicted pair, pairs whose second predicate is right.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from torch_writer import PYSGG, BoxList, save_zip  # noqa: E402

PREDICATES = [
    "at", "holds", "wears", "surf", "hang", "drink", "holding_hands", "on", "ride", "dance", "skateboard", "catch",
    "highfive", "inside_of", "eat", "cut", "contain", "handshake", "kiss", "talk_on_phone", "interacts_with",
    "under", "hug", "throw", "hits", "snowboard", "kick", "ski", "plays", "read",
]  # fmt: skip
OBJECTS = [f"class_{i:03d}" for i in range(601)]
COMMON = list(range(12))  # the classes most boxes take, so that triplets repeat
TEST_ABSENT = set(range(21, 30))  # predicates (0-based) that never occur in the test split, as in OIv6


def _image(rng, name: str, absent: set[int]) -> dict:
    w, h = int(rng.integers(80, 1200)), int(rng.integers(80, 1200))
    n = int(rng.integers(2, 8))
    x1, y1 = rng.integers(0, w - 20, n), rng.integers(0, h - 20, n)
    bw, bh = rng.integers(10, 400, n), rng.integers(10, 400, n)
    boxes = np.stack([x1, y1, x1 + bw, y1 + bh], axis=1).astype(float)  # some past the image: clipped
    boxes[0, :2] += 0.5  # a fractional coordinate
    labels = [int(rng.choice(COMMON)) if rng.random() < 0.8 else int(rng.integers(0, 601)) for _ in range(n)]
    allowed = [p for p in range(30) if p not in absent]
    rels = []
    for _ in range(int(rng.integers(1, 5))):
        s, o = (int(v) for v in rng.choice(n, 2, replace=False))
        rels.append([s, o, int(rng.choice(allowed[:8])) if rng.random() < 0.7 else int(rng.choice(allowed))])
    if rng.random() < 0.2:
        rels.append(list(rels[0]))  # a duplicate GT triplet
    return {"img_fn": name, "img_size": [w, h], "bbox": boxes.tolist(), "det_labels": labels, "rel": rels}


def annotations(seed: int, n: int, absent: set[int] = frozenset(), drop: bool = True) -> list[dict]:
    """``n`` images of one split; with ``drop``, every 9th without relations and every 13th without boxes (both
    dropped by the reader)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        entry = _image(rng, f"{rng.integers(0, 2**63):016x}", absent)
        if drop and i % 9 == 4:
            entry["rel"] = []
        if drop and i % 13 == 6:
            entry.update(bbox=[], det_labels=[], rel=[])
        out.append(entry)
    return out


def write_oiv6(
    root: Path, n_train: int = 300, n_val: int = 40, n_test: int = 120, seed: int = 0, drop: bool = True
) -> Path:
    """PySGG's annotation files under ``root/annotations``; returns that folder."""
    ann = root / "annotations"
    ann.mkdir(parents=True, exist_ok=True)
    (ann / "categories_dict.json").write_text(json.dumps({"rel": PREDICATES, "obj": OBJECTS}))
    for split, n, absent in (("train", n_train, set()), ("val", n_val, set()), ("test", n_test, TEST_ABSENT)):
        (ann / f"vrd-{split}-anno.json").write_text(json.dumps(annotations(seed + len(split), n, absent, drop)))
    return ann


def kept(entries: list[dict]) -> list[dict]:
    """The images PySGG keeps (a box and a relation), in order."""
    return [e for e in entries if e["rel"] and e["bbox"]]


def _clipped(entry: dict) -> np.ndarray:
    w, h = entry["img_size"]
    b = np.array(entry["bbox"], dtype=np.float32)
    b[:, 0::2] = np.clip(b[:, 0::2], 0, w - 1)
    b[:, 1::2] = np.clip(b[:, 1::2], 0, h - 1)
    return b


def _prediction(rng, entry: dict, gt_boxes: np.ndarray, i: int, task: str, detections: int | None = None) -> BoxList:
    """A model's output for one image, as PySGG saves it (``i``: the image's position, picks the edge cases;
    ``detections``: SGDet's number of boxes, else the GT's and up to two more)."""
    w, h = entry["img_size"]
    labels = np.array(entry["det_labels"]) + 1
    if task == "predcls":
        boxes, pred_labels, obj_scores = gt_boxes.copy(), labels.copy(), np.ones(len(labels), np.float32)
    else:
        jitter = rng.normal(0, 4, gt_boxes.shape).astype(np.float32) * (rng.random(len(gt_boxes)) < 0.7)[:, None]
        boxes = gt_boxes + jitter
        boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2])
        if i % 4 == 1:  # a box at IoU exactly 0.5 with its GT: one side of (x2 - x1 + 1)(y2 - y1 + 1) halved
            for b in range(1, len(gt_boxes)):  # box 0 has fractional corners (annotations())
                x1, y1, x2, y2 = (float(v) for v in gt_boxes[b])
                if (y2 - y1 + 1) % 2 == 0:
                    boxes[b] = [x1, y1, x2, y1 + (y2 - y1 + 1) / 2 - 1]
                    break
                if (x2 - x1 + 1) % 2 == 0:
                    boxes[b] = [x1, y1, x1 + (x2 - x1 + 1) / 2 - 1, y2]
                    break
        extra = int(rng.integers(0, 3)) if detections is None else max(0, detections - len(gt_boxes))
        more = np.array([[rng.uniform(0, w / 2), rng.uniform(0, h / 2)] for _ in range(extra)]).reshape(-1, 2)
        boxes = np.vstack([boxes, np.hstack([more, more + 30])]).astype(np.float32)
        pred_labels = np.concatenate(
            [
                np.where(rng.random(len(labels)) < 0.85, labels, rng.choice(COMMON, len(labels)) + 1),
                rng.choice(COMMON, extra) + 1,
            ]
        )
        obj_scores = rng.uniform(0.2, 1.0, len(boxes)).astype(np.float32)
        if i % 6 == 2:
            obj_scores[:] = 0.5  # ties
    n = len(boxes)
    pairs = np.array([(s, o) for s in range(n) for o in range(n) if s != o], dtype=np.int64).reshape(-1, 2)
    if i % 10 == 7:
        pairs = pairs[:0]  # no predicted pair
    logits = rng.normal(0, 1.5, (len(pairs), 31))
    for s, o, p in entry["rel"]:  # the GT predicate likely first, sometimes second
        at = np.flatnonzero((pairs[:, 0] == s) & (pairs[:, 1] == o))
        logits[at, p + 1] += 3.0 if rng.random() < 0.6 else 1.2
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    probs = probs.astype(np.float32)
    if i % 5 == 3 and len(pairs):
        probs[:, 0], probs[:, 1:] = np.float32(0.25), np.float32(0.025)  # every predicate tied (rows sum to 1)
    # the post-processor's order: best foreground probability x subject x object score, descending
    key = probs[:, 1:].max(axis=1) * obj_scores[pairs[:, 0]] * obj_scores[pairs[:, 1]] if len(pairs) else np.zeros(0)
    order = np.argsort(-key, kind="stable")
    pairs, probs = pairs[order], probs[order]
    return BoxList(
        boxes.astype(np.float32),
        (w, h),
        pred_labels=pred_labels.astype(np.int64),
        pred_scores=obj_scores,
        rel_pair_idxs=pairs,
        pred_rel_scores=probs,
        pred_rel_labels=(probs[:, 1:].argmax(axis=1) + 1).astype(np.int64) if len(probs) else np.zeros(0, np.int64),
    )


def _groundtruth(entry: dict) -> BoxList:
    boxes = _clipped(entry)
    n = len(boxes)
    rel = np.array(entry["rel"], dtype=np.int64) + np.array([0, 0, 1])
    relation = np.zeros((n, n), dtype=np.int64)
    relation[rel[:, 0], rel[:, 1]] = rel[:, 2]
    return BoxList(
        boxes,
        tuple(entry["img_size"]),
        labels=np.array(entry["det_labels"], dtype=np.int64) + 1,
        attributes=np.zeros((n, 10)),
        relation=relation,
        relation_tuple=rel,
    )


def write_eval_results(ann: Path, path: Path, task: str, seed: int = 1, detections: int | None = None) -> int:
    """A PySGG ``eval_results.pytorch`` for the test split of ``ann`` (``task``: sgdet or predcls); returns the
    number of images."""
    entries = kept(json.loads((ann / "vrd-test-anno.json").read_text()))
    rng = np.random.default_rng(seed)
    gts = [_groundtruth(e) for e in entries]
    preds = [_prediction(rng, e, _clipped(e), i, task, detections) for i, e in enumerate(entries)]
    save_zip({"groundtruths": gts, "predictions": preds}, path, boxlist_module=PYSGG)
    return len(entries)


def main(out: str) -> None:
    root = Path(out) / "oiv6"
    ann = write_oiv6(root)
    for task in ("sgdet", "predcls"):
        n = write_eval_results(ann, root / f"eval_results_{task}.pytorch", task)
    print(
        f"GENERATED Open Images V6 files (no real data) in {root}: annotations/ and eval_results_*.pytorch "
        f"({n} test images)"
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "data/examples")
