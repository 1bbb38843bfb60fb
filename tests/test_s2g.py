"""Sentence-to-Graph retrieval (issue 50): the evaluation against a slow loop reference and against
Scene-Graph-Benchmark.pytorch's own ``evaluator`` (its ranks and the lines it logs, recorded by
``scripts/s2g_reference.py evaluate``); the graphs against its preprocessing (``... preprocess``); the caption
file's refusals."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from s2g_fixture import embeddings

from sgg_eval.core.defaults import S2G_KS
from sgg_eval.metrics.names import metric_name
from sgg_eval.retrieval.ranking import cosine_similarity, gold_ranks, retrieval_metrics

GOLDEN = json.loads((Path(__file__).parent / "data" / "s2g_golden.json").read_text())


def loop_ranks(image: np.ndarray, text: np.ndarray) -> list[int]:
    """From the definition: image i's rank is the number of captions at least as similar to it as its own,
    cosine similarity in float64 sums of float32 products."""

    def cos(a, b):
        dot = sum(float(x) * float(y) for x, y in zip(a, b))
        return dot / (math.sqrt(sum(float(x) ** 2 for x in a)) * math.sqrt(sum(float(y) ** 2 for y in b)))

    ranks = []
    for i in range(len(image)):
        own = cos(image[i], text[i])
        ranks.append(sum(cos(image[i], text[j]) >= own for j in range(len(text))))
    return ranks


@pytest.mark.parametrize("name", ["random", "ties", "model"])
def test_ranks_and_recall_equal_the_upstream_evaluator(name):
    image, text = embeddings()[name]
    ranks = gold_ranks(cosine_similarity(image, text))
    assert ranks.tolist() == GOLDEN[name]["ranks"]
    metrics = retrieval_metrics(image, text, len(image))
    logged = [f"Recall @ {k}: {metrics[metric_name('R', k)]:.4f}; " for k in S2G_KS]
    assert logged == GOLDEN[name]["logged"]
    assert metrics[metric_name("R", 1)] == 0.0  # rank >= 1: the evaluator's R@1 is 0 by construction


def test_ranks_equal_the_loop_reference_ties_included():
    image, text = (a[:60] for a in embeddings()["ties"])
    ranks = gold_ranks(cosine_similarity(image, text)).tolist()
    assert ranks == loop_ranks(image, text)
    assert ranks[10] >= 2 and ranks[11] >= 2 and ranks[40] >= 3  # a caption as similar as its own ranks first


def test_a_gallery_is_the_first_images_and_the_metrics_follow_the_definitions():
    image, text = embeddings()["model"]
    small = retrieval_metrics(image, text, 1000)
    assert small == retrieval_metrics(image[:1000], text[:1000], 5000) and small["images"] == 1000
    ranks = gold_ranks(cosine_similarity(image[:1000], text[:1000]))
    for k in S2G_KS:
        assert small[metric_name("R", k)] == np.mean(ranks < k)
        assert small[metric_name("R_within", k)] == np.mean(ranks <= k)
    assert small["mean_rank"] == ranks.mean() and small["median_rank"] == np.median(ranks)
    assert 0.3 < small[metric_name("R_within", 100)] < 1.0  # a model-like gallery: neither chance nor perfect


def _names(graph, objects: dict[str, int], predicates: dict[str, int]) -> dict:
    obj, pred = {i: n for n, i in objects.items()}, {i: n for n, i in predicates.items()}
    return {
        "entities": [obj[i] for i in graph.entities.tolist()],
        "relations": [[obj[s], obj[o], pred[p]] for s, o, p in graph.relations.tolist()],
    }


def test_graphs_equal_the_upstream_preprocessing(tmp_path):
    """The image and caption graphs of every image equal what the reference's preprocess_scene_graphs_output
    wrote on the same files (scripts/s2g_reference.py preprocess, tests/data/s2g_preprocess_golden.json), name for name
    and in its order; its numbering of the names is by Python's string hashes, so names are compared."""
    from s2g_fixture import OBJECTS, PREDICATES, inputs

    from sgg_eval.data.store import write_split
    from sgg_eval.data.types import SplitMeta, Vocabulary
    from sgg_eval.formats.s2g_captions import read_caption_graphs
    from sgg_eval.retrieval.dataset import Vocabularies, read_split

    cases = inputs(tmp_path)
    vocab = Vocabulary(OBJECTS, PREDICATES)
    write_split(tmp_path / "test.h5", SplitMeta("test", vocab, "unit", True, "unit"), [g for g, _ in cases])
    captions = read_caption_graphs(str(tmp_path / "vg_capgraphs_anno.json"), len(PREDICATES))
    v = Vocabularies.of(OBJECTS, captions)
    split = read_split(str(tmp_path / "eval_results.pytorch"), str(tmp_path / "test.h5"), captions, v, keep_small=True)
    ours = {
        str(coco): {
            "img": _names(img, v.image_objects, v.image_predicates),
            "txt": _names(txt, v.text_objects, v.text_predicates),
        }
        for coco, img, txt in zip(split.coco_ids, split.image, split.text)
    }
    golden = json.loads((Path(__file__).parent / "data" / "s2g_preprocess_golden.json").read_text())
    names = {coco: {side: g[side] for side in ("img", "txt")} for coco, g in golden.items()}
    assert list(ours) == list(names) and ours == names
    assert any(not g["img"]["entities"] for g in golden.values())  # an image whose objects all scored under 0.1
    kept = read_split(str(tmp_path / "eval_results.pytorch"), str(tmp_path / "test.h5"), captions, v)
    assert kept.dropped > 0 and len(kept.coco_ids) + kept.dropped == len(golden)
    assert all(i.usable() and t.usable() for i, t in zip(kept.image, kept.text))


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda d: d.pop("cap_predicate"), "has no 'cap_predicate'"),
        (lambda d: d["vg_valids"].pop(), "one length"),
        (lambda d: d["vg_valids"].__setitem__(0, 2), "not 0 or 1"),
        (lambda d: d["idx_to_meta_predicate"].pop("5"), "predicate ids 1..5"),
        (
            lambda d: d["vg_coco_id_to_capgraphs"]["5000"][0]["entities"].append("zebra"),
            "'zebra' is not in cap_category",
        ),
        (lambda d: d["vg_coco_id_to_capgraphs"]["5000"][0].__setitem__("relations", [[0, 9, "on"]]), "relation [0, 9"),
        (lambda d: d["vg_coco_id_to_capgraphs"]["5000"][0].__setitem__("relations", [[0, 0, ["on"]]]), "relation"),
        (lambda d: d["vg_coco_id_to_capgraphs"].__setitem__("x1", []), "COCO id (digits)"),
    ],
)
def test_a_bad_caption_file_is_refused_naming_the_field(tmp_path, change, says):
    from s2g_fixture import PREDICATES, inputs

    from sgg_eval.core.errors import InputError
    from sgg_eval.formats.s2g_captions import read_caption_graphs

    inputs(tmp_path, n=6)
    path = tmp_path / "vg_capgraphs_anno.json"
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as err:
        read_caption_graphs(str(path), len(PREDICATES))
    assert says in str(err.value) and str(path) in str(err.value)


def test_the_incidence_matrices_equal_the_upstream_preprocessing():
    """``graphs.incidence`` on the reference's own ids gives the "image_graph" and "text_graph" matrices its
    preprocessing wrote, cell for cell, including the cells where an entity's class id equals a relation's
    predicate id (its ``es in rs``); a graph without relations it writes as one column of zeros."""
    from sgg_eval.retrieval.graphs import EncodedGraph, incidence

    golden = json.loads((Path(__file__).parent / "data" / "s2g_preprocess_golden.json").read_text())
    coincidences = compared = 0
    for g in golden.values():
        for side in ("img", "txt"):
            ids, theirs = g["ids"][side], np.array(g["incidence"][side], dtype=np.float32)
            graph = EncodedGraph(np.array(ids["entities"], dtype=np.int64), np.array(ids["relations"]).reshape(-1, 3))
            ours = incidence(graph)
            if not len(graph.relations):
                assert theirs.size == len(graph.entities) and not theirs.any()  # [E, 1] of zeros
                continue
            np.testing.assert_array_equal(ours, theirs)
            compared += ours.size
            coincidences += int((
                (graph.entities[:, None] == graph.relations[None, :, 2])
                & ~(graph.entities[:, None, None] == graph.relations[None, :, :2]).any(axis=2)
            ).sum())  # fmt: skip
    assert compared > 200 and coincidences > 10
