"""``sgg-eval evaluate ANSWERS.jsonl --text-graphs --protocol provision [--gt GT.json]``: text scene graphs scored
as ProVision scores them (issue 48; ``text.provision.metrics``, ``text.provision.rows``), over the images it keeps.

Its numbers are pooled over the GT triplets of the answers it reads: an answer it drops (its ``ValueError``) takes
its GT with it, an answer without ``Relations:`` is scored as empty. sgg-eval drops what would stop its script too,
and counts each case. An answer keeps a random ``top_k`` of its relations when it has more, drawn with ``seed``.
Names are read by SBERT (``encode``: :func:`text.provision.metrics.sbert_encoder`, the optional extra).
"""

from __future__ import annotations

import os
import random
from collections import Counter

import numpy as np

from sgg_eval.core.defaults import PROVISION_TOP_K
from sgg_eval.core.errors import InputError
from sgg_eval.metrics.names import PROVISION_VALUES
from sgg_eval.metrics.result_facts import ANY, POOLED, fact
from sgg_eval.text.graphs import refuse_foreign
from sgg_eval.text.provision.answers import CRASHED, DROPPED
from sgg_eval.text.provision.gt import psg_names, read_provision_gt
from sgg_eval.text.provision.metrics import (
    Encoder,
    NearestClass,
    coverage,
    image_hits,
    object_query,
    predicate_query,
    sample_top_k,
    sbert_encoder,
)
from sgg_eval.text.provision.rows import read_provision_answers


def run_provision(answers: str, gt: str | None, *, sbert: str, top_k: int, seed: int) -> dict:
    """:func:`run_provision_evaluation` with names read by the SentenceTransformer ``sbert`` (the runner its
    protocol record names)."""
    return run_provision_evaluation(answers, gt, sbert_encoder(sbert), model=sbert, top_k=top_k, seed=seed)


def run_provision_evaluation(
    answers: str, gt: str | None, encode: Encoder, *, model: str, top_k: int = PROVISION_TOP_K, seed: int = 0
) -> dict:
    """The metrics document of ProVision-style ``answers`` (end-to-end lines, or GPT scene graphs on ``gt``)."""
    path = os.fspath(answers)
    rows, gpt, unreadable = read_provision_answers(path)
    if gpt != (gt is not None):
        raise InputError(
            "GPT scene graphs (updated_sg) are scored on --gt; end-to-end answers carry their GT: no --gt"
            if gpt else "end-to-end answers (pred_raw) carry their GT: no --gt",
            path=path, field="--gt",
        )  # fmt: skip
    truth = read_provision_gt(gt) if gpt else {}
    refuse_foreign([r.key for r in rows if gpt and r.key not in truth], path, "images the GT file does not have",
                   "GT file")  # fmt: skip
    objects, predicates = psg_names()
    object_names = NearestClass(encode, objects, object_query)
    predicate_names = NearestClass(encode, predicates, predicate_query)
    outcomes = Counter(r.parsed.outcome for r in rows)
    scored = [(row, truth[row.key] if gpt else row.gt) for row in rows if row.parsed.outcome not in (DROPPED, CRASHED)]
    hits, subject_hits, gt_predicates, shares, cut = _score(scored, object_names, predicate_names, top_k, seed)
    counts = {
        "answer_lines": len(rows) + unreadable,
        "unreadable_lines": unreadable,
        "answers": len(rows),
        "images_scored": len(shares),
        **{f"answers_{kind}": outcomes[kind] for kind in ("read", "no_relations", "dropped", "crashed")},
        "relations_cut_by_top_k": cut,
    }
    hit_all = np.concatenate(hits) if hits else np.zeros(0, bool)
    counts["gt_triplets_scored"] = int(len(hit_all))
    values = _values(hit_all, np.concatenate(subject_hits) if hits else hit_all, gt_predicates, shares)
    return {
        "task": "text graphs",
        "protocol": "provision",
        "facts": [
            fact(
                PROVISION_VALUES,
                len(shares),
                len(rows),
                "answers ProVision reads: dropped and unreadable answers and their GT left out",
                ANY,
                POOLED,
                "dropped with its GT (an answer without Relations: scores as empty)",
                f"a random {top_k} of an answer's relations (seed {seed})" if top_k else "none: every triplet",
            )
        ],
        "metrics": dict(zip(PROVISION_VALUES, values, strict=True)),
        "counts": counts,
        "names": {"model": model, "mapped": object_names.listing("objects") + predicate_names.listing("predicates")},
        "notes": _notes(counts, top_k, seed),
        "input": {"answers": path, **({"gt": os.fspath(gt)} if gpt else {})},
    }


def _score(scored: list, object_names: NearestClass, predicate_names: NearestClass, top_k: int, seed: int) -> tuple:
    """Each scored answer's GT-triplet hits and subject hits, its GT predicates and box coverage, and how many
    relations the random cut to ``top_k`` left out (one ``random.Random(seed)`` over the answers in order)."""
    rng = random.Random(seed)
    hits, subject_hits, gt_predicates, shares, cut = [], [], [], [], 0
    for row, image_gt in scored:
        names, triplets = row.parsed.names, row.parsed.triplets
        labels = predicate_names.labels([t[2] for t in triplets])
        kept = sample_top_k([(s, o, p) for (s, o, _), p in zip(triplets, labels)], rng, top_k)
        cut += len(triplets) - len(kept)
        hit, subject_hit = image_hits(image_gt, (kept, object_names.labels(names), row.boxes))
        hits.append(hit)
        subject_hits.append(subject_hit)
        gt_predicates += [p for _, _, p in image_gt[0]]
        shares.append(coverage(image_gt[2], row.boxes))
    return hits, subject_hits, gt_predicates, shares, cut


def _values(hit: np.ndarray, subject_hit: np.ndarray, gt_predicates: list, shares: list) -> tuple:
    """ngR, ng-mR (per-predicate recall summed in order of first appearance, as ProVision sums), objR, coverage."""
    if not len(hit):
        return None, None, None, float(np.mean(shares)) if shares else None
    order = list(dict.fromkeys(gt_predicates))
    p = np.array(gt_predicates)
    per = [int(np.count_nonzero(hit[p == q])) / int(np.count_nonzero(p == q)) for q in order]
    n = len(hit)
    return (int(np.count_nonzero(hit)) / n, sum(per) / len(per), int(np.count_nonzero(subject_hit)) / n,
            float(np.mean(shares)))  # fmt: skip


def _notes(counts: dict, top_k: int, seed: int) -> list[str]:
    notes = [
        f"protocol provision: ProVision's scene-graph recall, pooled over the GT triplets of the "
        f"{counts['images_scored']} answers it reads ({counts['answers_dropped']} dropped by its parser, "
        f"{counts['answers_crashed']} that would stop its script, both with their GT); any answered triplet may hit "
        "any GT triplet, no graph constraint; names are read by SBERT, so no name is unknown"
    ]
    if top_k and counts["relations_cut_by_top_k"]:
        notes.append(f"{counts['relations_cut_by_top_k']} relations were left out by a random top_k={top_k} sample "
                     f"(ProVision's is unseeded; here seed {seed}): another seed gives other numbers")  # fmt: skip
    return notes
