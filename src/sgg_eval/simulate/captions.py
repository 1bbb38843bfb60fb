"""SIMULATED caption graphs for S2G (issue 50), and two reference models' SGDet graphs: the GT graph and a random one.

**Captions.** Each image of the simulated world gets, with probability ``captioned``, ``per_image`` captions (COCO
gives five). A caption is a partial, noisy view of the image's GT graph: it mentions ``1 +
Poisson(extra_relations)`` of the GT relations, drawn without replacement, each as ``subject, object, predicate``;
a subject or object name is replaced by a random class with probability ``name_noise``, and the predicate by a
random predicate with probability ``predicate_noise``; with probability ``lone_entity`` the caption also names an
object of the image that is in none of its relations. Captions use the dataset's own names (the caption
vocabularies are the names that occur). The file is in Scene-Graph-Benchmark.pytorch's layout
(``formats/s2g_captions``), so the pipeline reads it as it reads a real one; each COCO id is the VG image id plus
``COCO_OFFSET``, and it says SIMULATED in ``"info"``.

**GT graphs** (the perfect model): the GT objects with score 1 and each GT pair with its first GT predicate at
probability 1, the rest of its row 0 (``S2G`` then keeps exactly the GT graph, one predicate per pair). **Random
graphs**: the GT objects' count and pairs, with uniformly random labels and predicates: graphs of the right size
that say nothing about the image, whose retrieval is at chance.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

import numpy as np

from sgg_eval.data.types import GTImage, PredImage, Vocabulary

COCO_OFFSET = 1_000_000
CAPTION_KNOBS = ("seed", "captioned", "per_image", "extra_relations", "name_noise", "predicate_noise", "lone_entity")


def _caption(rng: np.random.Generator, gt: GTImage, vocab: Vocabulary, knobs: dict) -> dict:
    objects, predicates = vocab.object_classes, vocab.predicate_classes
    rels = gt.rels
    count = min(len(rels), 1 + int(rng.poisson(knobs["extra_relations"])))
    chosen = rels[rng.choice(len(rels), size=count, replace=False)]
    entities, index, relations = [], {}, []

    def name(obj: int) -> int:
        if obj not in index:
            label = int(gt.labels[obj])
            if rng.random() < knobs["name_noise"]:
                label = int(rng.integers(1, len(objects) + 1))
            index[obj] = len(entities)
            entities.append(objects[label - 1])
        return index[obj]

    for s, o, p in chosen.tolist():
        if rng.random() < knobs["predicate_noise"]:
            p = int(rng.integers(1, len(predicates) + 1))
        relations.append([name(s), name(o), predicates[p - 1]])
    lone = np.setdiff1d(np.arange(len(gt.labels)), rels[:, :2].ravel())
    if len(lone) and rng.random() < knobs["lone_entity"]:
        name(int(rng.choice(lone)))
    return {"entities": entities, "relations": relations}


def simulated_captions(images: Iterable[GTImage], vocab: Vocabulary, knobs: dict) -> dict:
    """The caption-graph document (module docstring) for ``images`` (every split's, in one order)."""
    rng = np.random.default_rng([int(knobs["seed"]), 50])
    ids, cocos, valids, graphs = [], [], [], {}
    objects, predicates = set(), set()
    for gt in images:
        coco = int(gt.image_id) + COCO_OFFSET
        captioned = len(gt.rels) > 0 and rng.random() < knobs["captioned"]
        ids.append(int(gt.image_id))
        cocos.append(coco)
        valids.append(int(captioned))
        if captioned:
            captions = [_caption(rng, gt, vocab, knobs) for _ in range(int(knobs["per_image"]))]
            for c in captions:
                objects.update(c["entities"])
                predicates.update(r[2] for r in c["relations"])
            graphs[str(coco)] = captions
    return {
        "info": "SIMULATED caption graphs (sgg_eval.simulate.captions): partial, noisy views of the GT graphs",
        "vg_image_ids": ids,
        "vg_coco_ids": cocos,
        "vg_valids": valids,
        "idx_to_meta_predicate": {str(i + 1): name for i, name in enumerate(vocab.predicate_classes)},
        "cap_category": {name: 1 for name in sorted(objects)},
        "cap_predicate": {name: 1 for name in sorted(predicates)},
        "vg_coco_id_to_capgraphs": graphs,
    }


def _graph_prediction(gt: GTImage, labels: np.ndarray, predicates: np.ndarray, num_predicates: int) -> PredImage:
    pairs, first = np.unique(gt.rels[:, :2], axis=0, return_index=True)
    scores = np.zeros((len(pairs), num_predicates + 1), dtype=np.float32)
    scores[np.arange(len(pairs)), predicates[first]] = 1.0
    return PredImage(gt.image_id, gt.boxes, labels, np.ones(len(labels), np.float32), pairs, scores)


def gt_graphs(images: Iterable[GTImage], vocab: Vocabulary) -> Iterator[PredImage]:
    """The perfect model: every image's GT graph as a prediction (probabilities)."""
    for gt in images:
        yield _graph_prediction(gt, gt.labels, gt.rels[:, 2], vocab.num_predicates)


def random_graphs(images: Iterable[GTImage], vocab: Vocabulary, seed: int) -> Iterator[PredImage]:
    """Graphs of the GT's size with random labels and predicates (probabilities)."""
    rng = np.random.default_rng([seed, 51])
    for gt in images:
        labels = rng.integers(1, vocab.num_objects + 1, size=len(gt.labels))
        predicates = rng.integers(1, vocab.num_predicates + 1, size=len(gt.rels))
        yield _graph_prediction(gt, labels, predicates, vocab.num_predicates)


BOUNDS = ("gt", "random")  # the two reference models: GT graphs, random graphs


def write_bound(kind: str, split_path: str | os.PathLike, out: str | os.PathLike, seed: int = 0) -> None:
    """The SGDet prediction store of reference model ``kind`` (``BOUNDS``) on the split store ``split_path``."""
    from sgg_eval.core.tasks import SGDET
    from sgg_eval.data.store import SplitStore, write_predictions
    from sgg_eval.data.types import PredictionMeta

    with SplitStore(split_path) as split:
        graphs = gt_graphs(split, split.vocab) if kind == "gt" else random_graphs(split, split.vocab, seed)
        meta = PredictionMeta(SGDET.name, "probabilities", split.vocab, f"{kind} graphs", True,
                              "SIMULATED by sgg_eval.simulate.captions")  # fmt: skip
        write_predictions(out, meta, graphs)
