"""ProVision's scene-graph scores (issue 48, ``--protocol provision``; JieyuZ2/ProVision at 579ef22,
``osprey/eval/psg/``: ``SceneGraphParser`` in ``eval_psg.py``, ``SceneGraphRecall`` in ``scene_graph_evaluator.py``,
``get_scene_graph_metric.py``):

- **names**: every object name and predicate gets the class whose SBERT embedding (``all-MiniLM-L6-v2``) is the
  most cosine-similar, templates ``this object is {name}`` (text after a ``-`` appended as ``in …``, except
  ``stuff``/``other``/``merged``) and ``object is {predicate} another object``: no name is ever unknown;
- **K**: an answer with more than ``top_k`` relations keeps a random ``top_k`` of them (ProVision's sample is
  unseeded; here ``random.Random(seed)``, drawn image by image in file order as its global ``random`` would be);
- **match** (``_eval_sg``): a GT triplet ``(s, o, p)`` is hit when **any** kept answered triplet has s's class
  with IoU(subject boxes) >= 0.5, o's class with IoU(object boxes) >= 0.5 and p's class; a triplet whose region
  number points past the objects or boxes is skipped (-1 is the last one). IoU is torchvision's
  (``metrics.iou.torchvision_iou``), each box its own tensor;
- ``ngR_provision`` = hits / GT triplets pooled over the scored images; ``ng-mR_provision`` = the mean over the
  predicates present in that GT (in order of first appearance, as it sums) of each one's pooled recall;
  ``objR_provision`` = the share of GT triplets whose **subject** alone is matched;
- ``coverage_provision`` (``get_bbox_coverage``) = the mean over scored images of the share of GT boxes whose best
  IoU with an answered box is > 0.5 (strict); 0 with no answered box, 1 with no GT box; each image's share in
  float32, as torch takes its mean.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np

from sgg_eval.arrays.rowwise import unit_rows
from sgg_eval.arrays.torch_tensors import as_tensor
from sgg_eval.core.defaults import PROVISION_SBERT_MODEL
from sgg_eval.metrics.informative import load_sentence_model
from sgg_eval.metrics.iou import torchvision_iou, torchvision_pair_iou

Encoder = Callable[[list[str]], np.ndarray]


def object_query(name: str) -> str:
    """``obj_to_query``: ``this object is person``, ``this object is floor in wood``."""
    parts = name.split("-")
    attributes = [p.strip() for p in parts[1:] if p not in ("stuff", "other", "merged") and p.strip()]
    return f"this object is {parts[0]}" + (f" in {', '.join(attributes)}" if attributes else "")


def predicate_query(name: str) -> str:
    return f"object is {name} another object"


def sbert_encoder(model: str = PROVISION_SBERT_MODEL) -> Encoder:
    """SentenceTransformer ``model`` (a Hub name or a local folder) on the CPU (``metrics.informative.
    load_sentence_model``); :class:`InputError` naming what to install, or why the model does not load."""
    st = load_sentence_model(
        model,
        "--sbert",
        "--protocol provision maps names with SBERT, as ProVision does: pip install 'sgg-eval[provision]' "
        "(sentence-transformers, torch)",
        "the SBERT model",
    )
    return lambda texts: np.asarray(st.encode(list(texts), convert_to_numpy=True), dtype=np.float32)


class NearestClass:
    """Names -> the index of the class whose query embedding is the most cosine-similar (``util.cos_sim``: rows
    divided by max(norm, 1e-12), float32; the first class wins a tie). Each distinct name is embedded once;
    ``used`` counts how often each was read as which class (the document lists them)."""

    def __init__(self, encode: Encoder, classes: list[str], query: Callable[[str], str]):
        self.encode, self.classes, self.query = encode, list(classes), query
        self.table = unit_rows(encode([query(c) for c in self.classes]))
        self.known: dict[str, int] = {}
        self.used: dict[str, int] = {}

    def labels(self, names: list[str]) -> list[int]:
        new = list(dict.fromkeys(n for n in names if n not in self.known))
        if new:
            sims = unit_rows(self.encode([self.query(n) for n in new])) @ self.table.T
            self.known.update(zip(new, np.argmax(sims, axis=1).tolist()))
        for n in names:
            self.used[n] = self.used.get(n, 0) + 1
        return [self.known[n] for n in names]

    def listing(self, kind: str) -> list[dict]:
        return [{"kind": kind, "name": n, "read_as": self.classes[self.known[n]], "times": t}
                for n, t in sorted(self.used.items())]  # fmt: skip


def sample_top_k(labels: list, rng: random.Random, top_k: int) -> list:
    """ProVision's cut: more than ``top_k`` relations are shuffled and the first ``top_k`` kept; its second
    shuffle (of the names, the same length) is drawn too, so the stream stays in step with its ``random``."""
    if not top_k or len(labels) <= top_k:
        return labels
    labels = list(labels)
    rng.shuffle(labels)
    rng.shuffle(list(range(len(labels))))
    return labels[:top_k]


def image_hits(gt: tuple, answer: tuple) -> tuple[np.ndarray, np.ndarray]:
    """``(hit, subject_hit)`` per GT triplet of one image. ``gt`` = (triplets ``[(s, o, p)]``, class per object,
    boxes as lists); ``answer`` = (labelled triplets, class per object, boxes as lists)."""
    gt_triplets, gt_classes, gt_boxes = gt
    triplets, classes, boxes = answer
    hit, subject_hit = np.zeros(len(gt_triplets), bool), np.zeros(len(gt_triplets), bool)
    rows = [(_at(s, classes), _at(s, boxes), _at(o, classes), _at(o, boxes), p) for s, o, p in triplets]
    rows = np.array([r for r in rows if None not in r], dtype=np.int64).reshape(-1, 5)
    if not len(rows) or not gt_triplets:
        return hit, subject_hit
    gs, go, gp = np.array(gt_triplets, dtype=np.int64).T
    near = torchvision_pair_iou(gt_boxes, boxes) >= np.float32(0.5)
    label, gt_label = np.array(classes, dtype=np.int64), np.array(gt_classes, dtype=np.int64)
    subject = (label[rows[:, 0]][None, :] == gt_label[gs][:, None]) & near[gs][:, rows[:, 1]]
    obj = (label[rows[:, 2]][None, :] == gt_label[go][:, None]) & near[go][:, rows[:, 3]]
    same = rows[:, 4][None, :] == gp[:, None]
    return (subject & obj & same).any(axis=1), subject.any(axis=1)


def _at(i: int, items: list) -> int | None:
    """Where Python's ``items[i]`` points (-1: the last), None for its ``IndexError``."""
    return i % len(items) if -len(items) <= i < len(items) else None


def coverage(gt_boxes: list, boxes: list) -> float:
    """``get_bbox_coverage``: the share of GT boxes whose best IoU with an answered box is > 0.5, float32."""
    if not boxes:
        return 0.0
    if not gt_boxes:
        return 1.0
    best = torchvision_iou(as_tensor(gt_boxes), as_tensor(boxes)).max(axis=1)
    return float(np.float32(np.count_nonzero(best > np.float32(0.5))) / np.float32(len(gt_boxes)))
