"""``sgg-eval evaluate ANSWERS --text-graphs --gt SPLIT``: scene graphs written as text by a multimodal LLM, scored
as sets (issue 48; ``text.sets``) on every image of the GT split.

The images are the split's: an image with a GT relation is evaluated whether answered or not (an unanswered image,
and one whose answer could not be read, is an empty answer: recall 0), so a subset of answers is never compared
with a full split. An answer's names are read as classes by ``text.names``; an object whose name is no class
is dropped with its relations, a relation whose predicate is no predicate is dropped, and every one is counted.
"""

from __future__ import annotations

import os

import numpy as np

from sgg_eval.metrics.names import TEXT_SET_VALUES, text_set_name
from sgg_eval.metrics.result_facts import PER_IMAGE, POOLED, fact
from sgg_eval.text.graphs import TextGraph
from sgg_eval.text.inputs import read_answers, read_gt
from sgg_eval.text.names import name_map
from sgg_eval.text.sets import SetTotals, match_image


def run_text_evaluation(answers: str, gt: str) -> dict:
    """The metrics document of the answers ``answers`` on the GT ``gt`` (any of the files ``inputs`` reads:
    sgg-eval's JSONL, R1-SGG's folder or ASMv2's answers; a split store, R1-SGG's rows or ASMv2's questions)."""
    images, vocab, _ = read_gt(gt)
    graphs, report = read_answers(answers, images)
    names = name_map(vocab)
    totals, counts = SetTotals(vocab.num_predicates), {"images_input": len(images), "images_skipped_no_gt": 0}
    counts.update(images_unanswered=0, images_failed=0, objects_unknown_name=0, relations_unknown_predicate=0)
    counts["relations_without_object"] = 0
    for img in images:
        graph = graphs.get(img.image_id)
        counts["images_unanswered"] += graph is None
        counts["images_failed"] += graph is not None and graph.failure is not None
        if not len(img.rels):
            counts["images_skipped_no_gt"] += 1
            continue
        answer = _mapped(graph, names, counts)
        totals.add(match_image(img.boxes, img.labels, img.rels, *answer), img.rels[:, 2])
    counts["images_evaluated"] = totals.images
    metrics = {text_set_name(v, ng): None for ng in (False, True) for v in TEXT_SET_VALUES}
    for ng, variant in ((False, "gc"), (True, "ng")):
        metrics.update({text_set_name(k, ng): v for k, v in totals.values(variant).items()})
    total, rule = len(images), "every GT image with relations (unanswered and unreadable: empty answers)"
    names_of = [[text_set_name(v, ng) for v in TEXT_SET_VALUES] for ng in (False, True)]
    pooling = f"{PER_IMAGE} (*_pooled: {POOLED})"
    facts = [
        fact(names_of[0], counts["images_evaluated"], total, rule, "one predicate per answered pair, one-to-one",
             pooling, "an unreadable answer is an empty one: 0", "none: the answer as a set"),
        fact(names_of[1], counts["images_evaluated"], total, rule, "no graph constraint, one-to-one", pooling,
             "an unreadable answer is an empty one: 0", "none: the answer as a set"),
    ]  # fmt: skip
    return {
        "task": "text graphs",
        "protocol": "sets",
        "facts": facts,
        "metrics": metrics,
        "counts": counts,
        "answers": dict(sorted(report.counts.items())),
        "names": {"table": names.table, "version": names.version, "read_through_the_table": names.used(vocab)},
        "notes": _notes(counts, len(images)),
        "input": {"answers": os.fspath(answers), "gt": os.fspath(gt)},
    }


def _mapped(graph: TextGraph | None, names, counts: dict) -> tuple:
    """The answer with known names only, as arrays (an unanswered or failed image: nothing)."""
    if graph is None or graph.failure is not None:
        empty = np.zeros(0, dtype=np.int64)
        return np.zeros((0, 4), np.float32), empty, empty, empty, empty
    labels = names.map(graph.names, "objects")
    known = labels > 0
    counts["objects_unknown_name"] += int((~known).sum())
    new_index = np.cumsum(known) - 1
    predicates = names.map(graph.predicates, "predicates")
    ends_kept = known[graph.subjects] & known[graph.objects] if len(graph.subjects) else np.zeros(0, bool)
    counts["relations_without_object"] += int((~ends_kept).sum())
    counts["relations_unknown_predicate"] += int((ends_kept & (predicates <= 0)).sum())
    keep = ends_kept & (predicates > 0)
    boxes = graph.boxes[known].astype(np.float32)
    return boxes, labels[known], new_index[graph.subjects[keep]], new_index[graph.objects[keep]], predicates[keep]


def _notes(counts: dict, total: int) -> list[str]:
    notes = [
        "protocol sets: each answer is a set (a repeated triplet counts once) matched one-to-one to the GT rows at "
        "IoU >= 0.5 (+1 pixel, as trained models' predictions are); GC (R_set, ...) counts one predicate per "
        "answered pair, NG (ng-R_set, ...) every distinct triplet"
    ]
    missing = counts["images_unanswered"] + counts["images_failed"]
    if missing:
        notes.append(
            f"{counts['images_unanswered']} of {total} images have no answer and {counts['images_failed']} an "
            "unreadable one: each is scored as an empty answer (recall 0), over the full split"
        )
    return notes
