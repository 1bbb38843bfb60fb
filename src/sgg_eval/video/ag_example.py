"""Generated Action Genome files, SIMULATED (no real video or model): the release's ``annotations/`` folder
(``person_bbox.pkl``, ``object_bbox_and_relationship.pkl``, the two class lists in the release's spellings) and a
model's per-video predictions in STTran's form, for ``make ag-example``, the tests and ``make bench``.

The files exercise every rule of STTran's loader: frame keys interleaved across videos, frames without a person
box, videos left with one or two frames, invisible objects, training frames, multi-label spatial and contacting
relations, and (for SGCls and SGDet) a small-box-filtered object file in which small objects are invisible; and
OED's: boxes past the frame's border (480 x 270), some wholly outside it, and contacting names repeated in a list.
"""

from __future__ import annotations

import os
import pickle

import numpy as np

from sgg_eval.core.tasks import task_spec
from sgg_eval.io.atomic import atomic_output
from sgg_eval.video.ag_names import NUM_OBJECTS, OBJECT_FILE, PREDICATE_FILE
from sgg_eval.video.ag_predictions import object_keys

# The release's spellings (``YuqiZhang2020/SEAD`` annotations/ @ 3475c34 lists the same names): STTran renames the
# lines it overwrites (``ag_names``).
RELEASE_OBJECTS = (
    "person bag bed blanket book box broom chair closetcabinet clothes cupglassbottle dish door doorknob doorway "
    "floor food groceries laptop light medicine mirror papernotebook phonecamera picture pillow refrigerator "
    "sandwich shelf shoe sofacouch table television towel vacuum window"
).split()
RELEASE_PREDICATES = (
    "lookingat notlookingat unsure above beneath infrontof behind onthesideof in carrying coveredby drinkingfrom "
    "eating haveitonthback holding leaningon lyingon notcontacting otherrelationship sittingon standingon touching "
    "twisting wearing wiping writingon"
).split()
ATTENTION = ("looking_at", "not_looking_at", "unsure")
SPATIAL = ("above", "beneath", "in_front_of", "behind", "on_the_side_of", "in")
CONTACTING = ("carrying", "covered_by", "drinking_from", "eating", "have_it_on_the_back", "holding", "leaning_on",
              "lying_on", "not_contacting", "other_relationship", "sitting_on", "standing_on", "touching",
              "twisting", "wearing", "wiping", "writing_on")  # fmt: skip
_OBJECT_NAMES = (
    "bag bed blanket book box broom chair closet/cabinet clothes cup/glass/bottle dish door doorknob doorway floor "
    "food groceries laptop light medicine mirror paper/notebook phone/camera picture pillow refrigerator sandwich "
    "shelf shoe sofa/couch table television towel vacuum window"
).split()
SMALL_EDGE = 16  # the STTran authors' filter: "bounding boxes with short edges larger than 16 pixels"


def write_release(root: str, videos: int, seed: int = 0, frames: tuple[int, int] = (1, 9),
                  test_share: float = 0.75) -> dict[str, str]:  # fmt: skip
    """Write ``root/annotations/`` and ``root/object_bbox_and_relationship_filtersmall.pkl`` (``videos`` videos of
    ``frames`` frames, about ``test_share`` of them in the test split); returns their paths."""
    rng = np.random.default_rng(seed)
    person, objects, small = {}, {}, {}
    keys = []
    for v in range(videos):
        name = f"{_video_name(rng)}{v:03d}.mp4"
        split = "test" if rng.random() < test_share else "train"
        numbers = np.sort(rng.choice(np.arange(1, 999), size=int(rng.integers(*frames)), replace=False))
        for n in numbers:
            keys.append((rng.random(), f"{name}/{int(n):06d}.png", split))
    keys.sort()  # interleave the videos, as the release's key order does
    for _, key, split in keys:
        no_person = rng.random() < 0.08
        box = np.zeros((0, 4), np.float32) if no_person else _person_box(rng)
        person[key] = {"bbox": box, "bbox_score": np.float32(rng.random()), "bbox_size": (480, 270),
                       "bbox_mode": "xyxy", "keypoints": np.zeros((0 if no_person else 1, 17, 3), np.float32),
                       "keypoints_logits": np.zeros((0 if no_person else 1, 17), np.float32)}  # fmt: skip
        entries = [_object(rng, split) for _ in range(int(rng.integers(1, 5)))]
        if rng.random() < 0.05:
            for e in entries:  # a frame without a visible object is no candidate
                e.update(visible=False, bbox=None, attention_relationship=None, spatial_relationship=None,
                         contacting_relationship=None)  # fmt: skip
        objects[key] = entries
        small[key] = [_filtered(e) for e in entries]
    paths = {}
    annotations = os.path.join(root, "annotations")
    os.makedirs(annotations, exist_ok=True)
    for name, data in (("person_bbox.pkl", person), ("object_bbox_and_relationship.pkl", objects)):
        paths[name] = _dump(os.path.join(annotations, name), data)
    paths["filtersmall"] = _dump(os.path.join(root, "object_bbox_and_relationship_filtersmall.pkl"), small)
    for name, lines in ((OBJECT_FILE, RELEASE_OBJECTS), (PREDICATE_FILE, RELEASE_PREDICATES)):
        with atomic_output(os.path.join(annotations, name)) as tmp, open(tmp, "w") as fh:
            fh.write("\n".join(lines) + "\n")
    return paths


def _video_name(rng) -> str:
    return "".join(rng.choice(list("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"), size=2))


def _person_box(rng) -> np.ndarray:
    x1, y1 = rng.uniform(0, 200), rng.uniform(0, 100)
    return np.array([[x1, y1, x1 + rng.uniform(40, 250), y1 + rng.uniform(60, 170)]], np.float32)


def _object(rng, split: str) -> dict:
    if rng.random() < 0.1:
        return {"class": str(rng.choice(_OBJECT_NAMES)), "bbox": None, "attention_relationship": None,
                "spatial_relationship": None, "contacting_relationship": None, "metadata": {"tag": "x", "set": split},
                "visible": False}  # fmt: skip
    x, y = round(float(rng.uniform(0, 400)), 2), round(float(rng.uniform(0, 220)), 2)
    w, h = round(float(rng.uniform(8, 120)), 2), round(float(rng.uniform(8, 90)), 2)
    if rng.random() < 0.03:
        x = round(float(rng.uniform(480, 500)), 2)  # past the frame's right border (480 wide): OED drops it
    return {
        "class": str(rng.choice(_OBJECT_NAMES)),
        "bbox": (x, y, w, h),
        "attention_relationship": [str(rng.choice(ATTENTION))],
        "spatial_relationship": [str(s) for s in rng.choice(SPATIAL, size=int(rng.integers(0, 3)), replace=False)],
        "contacting_relationship": [str(c) for c in rng.choice(CONTACTING, size=int(rng.integers(0, 3)))],
        "metadata": {"tag": "x", "set": split},
        "visible": True,
    }


def _filtered(entry: dict) -> dict:
    """The small-box file's entry: a visible object whose short edge is at most 16 pixels becomes invisible."""
    if entry["visible"] and min(entry["bbox"][2:]) <= SMALL_EDGE:
        return {**entry, "visible": False, "bbox": None, "attention_relationship": None,
                "spatial_relationship": None, "contacting_relationship": None}  # fmt: skip
    return dict(entry)


def _dump(path: str, data) -> str:
    with atomic_output(path) as tmp, open(tmp, "wb") as fh:
        pickle.dump(data, fh, protocol=4)
    return path


def predictions_for(split, task: str, seed: int = 0, skill: float = 2.0,
                    attention: str = "logits") -> dict[str, dict[str, np.ndarray]]:  # fmt: skip
    """A SIMULATED model's per-video dicts for the frames of ``split`` (an ``AGSplit``): the GT boxes (PredCls,
    SGCls) or jittered ones with extra detections (SGDet), one pair per person-object box, scores that favour the
    GT predicates by ``skill``; attention as ``logits`` (STTran's model) or ``probabilities`` (TEMPURA's, OED's)."""
    rng = np.random.default_rng(seed)
    spec, (label_key, score_key) = task_spec(task), object_keys(task)
    out = {}
    frames_of = np.bincount(split.frame_video, minlength=len(split.videos))
    start = np.r_[0, np.cumsum(frames_of)]
    for v, video in enumerate(split.videos):
        boxes, labels, scores, pairs, im_idx, dists = [], [], [], [], [], [[], [], []]
        for i, f in enumerate(range(start[v], start[v + 1])):
            b0, b1 = split.box_offsets[f], split.box_offsets[f + 1]
            gt_boxes, gt_labels = split.boxes[b0:b1], split.labels[b0:b1]
            if not spec.gt_boxes:
                gt_boxes = gt_boxes + rng.normal(0, 4, gt_boxes.shape)
                extra = int(rng.integers(0, 3))
                gt_boxes = np.vstack([gt_boxes, gt_boxes[rng.integers(1, len(gt_boxes), extra)] + 30])
                gt_labels = np.r_[gt_labels, rng.integers(2, NUM_OBJECTS + 1, extra)]
            n0 = len(labels)
            labels.extend(int(x) if spec.gt_labels or rng.random() < 0.7 else int(rng.integers(2, 37))
                          for x in gt_labels)  # fmt: skip
            labels[n0] = 1
            boxes.extend(np.c_[np.full(len(gt_boxes), i), gt_boxes].tolist())
            scores.extend([1.0] * len(gt_boxes) if spec.gt_labels else rng.uniform(0.05, 1, len(gt_boxes)))
            rels = split.rels[split.rel_offsets[f] : split.rel_offsets[f + 1]]
            for m in range(1, len(gt_boxes)):
                pairs.append((n0, n0 + m))
                im_idx.append(i)
                truth = rels[((rels[:, 0] == m) | (rels[:, 1] == m))][:, 2] - 1
                for g, (s, e) in enumerate(((0, 3), (3, 9), (9, 26))):
                    logit = rng.normal(0, 1, e - s)
                    logit[[p - s for p in truth if s <= p < e]] += skill
                    if g == 0 and attention != "logits":
                        logit = np.exp(logit) / np.exp(logit).sum()
                    dists[g].append(logit if g == 0 else 1 / (1 + np.exp(-logit)))
        out[video] = {
            "boxes": np.asarray(boxes, np.float32).reshape(-1, 5),
            label_key: np.asarray(labels, np.int64),
            score_key: np.asarray(scores, np.float32),
            "pair_idx": np.asarray(pairs, np.int64).reshape(-1, 2),
            "im_idx": np.asarray(im_idx, np.float32),
            "attention_distribution": np.asarray(dists[0], np.float32).reshape(-1, 3),
            "spatial_distribution": np.asarray(dists[1], np.float32).reshape(-1, 6),
            "contacting_distribution": np.asarray(dists[2], np.float32).reshape(-1, 17),
        }
    return out


def write_example(out: str, videos: int = 40, seed: int = 0) -> None:
    """``make ag-example``: the release under ``out/AG`` and a SIMULATED model's per-video ``.npz`` files for each
    task under ``out/preds_<task>`` (PredCls on the full object file's frames, SGCls and SGDet on the small-box
    file's, as STTran scores them)."""
    from sgg_eval.core.tasks import TASKS
    from sgg_eval.video.ag_annotations import read_ag_split
    from sgg_eval.video.ag_names import read_vocabulary

    paths = write_release(os.path.join(out, "AG"), videos, seed=seed)
    annotations = os.path.join(out, "AG", "annotations")
    vocab = read_vocabulary(annotations)
    for task in TASKS:
        small = None if task_spec(task).gt_labels else paths["filtersmall"]
        split = read_ag_split(annotations, vocab, "test", small)
        folder = os.path.join(out, f"preds_{task}")
        os.makedirs(folder, exist_ok=True)
        for video, arrays in predictions_for(split, task, seed=seed + 1).items():
            np.savez(os.path.join(folder, f"{video}.npz"), **arrays)
    print(f"{out}: Action Genome's files for {videos} videos and a model's predictions for {', '.join(TASKS)} "
          "(SIMULATED: generated, no real video or model)")  # fmt: skip


if __name__ == "__main__":
    import sys

    write_example(sys.argv[1])
