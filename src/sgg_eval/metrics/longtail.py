"""Head, body and tail predicates, and mean recall on each (issue 49), as PySGG and BGNN report them.

**Groups.** PySGG (SHTUPLUS/PySGG at a63942a, ``pysgg/config/defaults.py``,
``MODEL.ROI_RELATION_HEAD.LONGTAIL_PART_DICT``) fixes VG150's 50 predicates in three parts: 4 head (``on``,
``has``, ``of``, ``wearing``), 12 body, 34 tail (``data/resources/longtail_groups.json``, by name). Its list is
not a cut of any frequency order (``in``, VG150's third most frequent predicate, is body; ``riding`` is body
above more frequent tail ones), so two rules:

- ``pysgg``: PySGG's parts, verbatim, for a vocabulary whose predicates are VG150's (the default there: numbers
  comparable with BGNN's and PySGG's tables);
- ``frequency``: the dataset's own training statistics (GQA, PSG, a user's data; the default elsewhere): the
  predicates in decreasing order of training instances (ties by index), the first ``round(4/50 · C)`` head, the
  next ``round(12/50 · C)`` body, the rest tail: PySGG's VG150 group sizes, scaled. Other statistics, other
  groups.

**Values.** ``R_<group>@K`` = (1/|I_g|) Σ_{i ∈ I_g} hits_i(g, K) / M_i(g): recall on the GT rows whose
predicate is in the group, averaged over the images I_g with such a row (the K predictions are still the image's
first K, over every predicate); ``ngR_<group>@K`` the same with the no-graph-constraint ranks.
``mR_<group>@K`` = the mean over the group's predicates of the per-predicate recall behind
``mR@K`` (a predicate absent from the evaluated GT counts 0, as in ``mR@K``): PySGG's
``np.mean(part_recall[group])`` of ``longtail_part_eval``. ``ng-mR_<group>@K`` likewise from ``ng-mR@K``.
"""

from __future__ import annotations

import json
from importlib import resources

import numpy as np

from sgg_eval.core.defaults import LONGTAIL_RULE, RECALL_KS
from sgg_eval.data.stats import frequency_order
from sgg_eval.metrics.document import BEYOND, every_per_predicate
from sgg_eval.metrics.names import metric_name, subset_name

GROUPS = ("head", "body", "tail")
PYSGG_SIZES = (4, 12, 50)  # head, body, all: PySGG's VG150 parts


def pysgg_groups() -> dict[str, str]:
    """PySGG's VG150 parts: predicate name -> ``head``, ``body`` or ``tail``."""
    text = resources.files("sgg_eval.data").joinpath("resources/longtail_groups.json").read_text("utf-8")
    return json.loads(text)["vg150"]


def predicate_groups(predicates: tuple[str, ...], train_counts: np.ndarray | None, rule: str = LONGTAIL_RULE):
    """``(group index per predicate [C] (0 head, 1 body, 2 tail), the rule used)``; ``train_counts`` ``[C]`` are
    training instances per predicate (needed by ``frequency``). None when the rule cannot apply (no
    statistics for ``frequency``; not VG150's predicates for ``pysgg``)."""
    table = pysgg_groups()
    if rule == "auto":
        rule = "pysgg" if set(predicates) == set(table) else "frequency"
    if rule == "pysgg":
        if set(predicates) != set(table):
            return None, rule
        return np.array([GROUPS.index(table[p]) for p in predicates], dtype=np.int64), rule
    if train_counts is None:
        return None, rule
    c = len(predicates)
    order = frequency_order(train_counts)
    head = round(PYSGG_SIZES[0] / PYSGG_SIZES[2] * c)
    body = round(PYSGG_SIZES[1] / PYSGG_SIZES[2] * c)
    groups = np.full(c, 2, dtype=np.int64)
    groups[order[:head]] = 0
    groups[order[head : head + body]] = 1
    return groups, rule


def group_recalls(per_predicate: dict[str, dict[str, float]], predicates: tuple[str, ...], groups) -> dict:
    """``mR_<group>@K`` and ``ng-mR_<group>@K`` for K in RECALL_KS, from a document's per-predicate vectors
    (None where the document has no such vector, or the group is empty)."""
    out = {}
    for k in RECALL_KS:
        for ng in (False, True):
            vector = per_predicate.get(metric_name("mR", k, ng=ng)) or {}
            for g, group in enumerate(GROUPS):
                # the predicates the vector lists (every one, for the box tasks)
                members = [vector[p] for p, code in zip(predicates, groups) if code == g and p in vector]
                out[subset_name("mR", group, k, ng=ng)] = float(np.mean(members)) if members else None
    return out


def subset_recalls(acc) -> dict:
    """``R_<group>@K`` and ``ngR_<group>@K`` for K in RECALL_KS from an accumulator whose ``subsets`` hold each
    group's rows (``metrics.ranking.blocks``; None where no evaluated image has a row of the group)."""
    out = {}
    for group in GROUPS:
        sub = acc.subsets.get(group)
        for ng in (False, True):
            family = "ng" if ng else "gc"
            ok = sub is not None and sub.images > 0 and family in sub.families
            for k in RECALL_KS:
                value = float(sub.recall[family][sub.k_index(k)] / sub.images) if ok else None
                out[subset_name("R", group, k, ng=ng)] = value
    return out


def add_group_recalls(doc: dict, predicates: tuple[str, ...], groups, rule: str) -> dict:
    """``doc`` (a metrics document, with ``R_<group>@K`` already in it when the run had the groups) with its
    head/body/tail mean recalls (beside a protocol's own numbers, in its ``beyond_protocol`` section) and
    ``longtail``: the rule used and each group's predicates; a note instead when the groups (``groups``, ``rule``:
    :func:`predicate_groups`'s answer) could not be made."""
    if groups is None:
        doc["notes"].append(
            "head/body/tail recall: "
            + (
                "the frequency rule needs the training statistics (--stats)"
                if rule == "frequency"
                else "PySGG's groups are VG150's predicates, which this vocabulary does not have"
            )  # fmt: skip
        )
        return doc
    values = group_recalls(every_per_predicate(doc), predicates, groups)
    (doc[BEYOND]["metrics"] if BEYOND in doc else doc["metrics"]).update(values)
    doc["longtail"] = {"rule": rule, **{g: [p for p, code in zip(predicates, groups) if code == i]
                                        for i, g in enumerate(GROUPS)}}  # fmt: skip
    return doc
