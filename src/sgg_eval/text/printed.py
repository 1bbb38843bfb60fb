"""What each text protocol's tool prints, under sgg-eval's names (docs/text_graphs.md): one ``show_<protocol>``
each, named by the protocol's record (``printer``), then the counts."""

from __future__ import annotations

import sys

from sgg_eval.core.defaults import RECALL_KS
from sgg_eval.metrics.names import (
    ASMV2_VALUES,
    DETECTOR,
    PROVISION_VALUES,
    R1_LOOP_VALUES,
    SGVLM_VALUES,
    metric_name,
    text_set_name,
)


def shown(name: str, value: float | None) -> str:
    return f"{name}=null" if value is None else f"{name}={100 * value:.2f}"


def show_sets(result: dict) -> None:
    m, c = result["metrics"], result["counts"]
    for ng, label in ((False, "one predicate per answered pair"), (True, "every distinct triplet")):
        print(" ".join(shown(n, m[n]) for n in (text_set_name(v, ng) for v in ("R", "P", "F1", "mR", "R_pooled")))
              + f" ({label})")  # fmt: skip
    print(
        f"{c['images_evaluated']} of {c['images_input']} images evaluated ({c['images_unanswered']} unanswered and "
        f"{c['images_failed']} unreadable, scored as empty answers; {c['images_skipped_no_gt']} without GT "
        f"relations); {c['objects_unknown_name']} objects with no class name dropped"
    )


def show_r1sgg(result: dict) -> None:
    """R1-SGG's numbers, as its two scripts print them, under sgg-eval's names; then the counts."""
    m, c = result["metrics"], result["counts"]
    print(" ".join(shown(n, m[n]) for n in R1_LOOP_VALUES) + " (R1-SGG's loop: every GT image)")
    for family, ng in (("R", False), ("R", True), ("mR", False), ("mR", True), ("zR", False)):
        print(" ".join(shown(metric_name(family, k, ng=ng), m[metric_name(family, k, ng=ng)]) for k in RECALL_KS))
    print(" ".join(shown(n, m[n]) for n in DETECTOR) + " (SggEvaluator: answered images only)")
    failures = (
        "failures unknown (a gathered file)"
        if c["failures"] is None
        else (f"{c['failures']} failures ({100 * c['failure_rate']:.2f}%)" if c["failure_rate"] is not None else "")
    )
    print(
        f"{c['answer_files']} answers for {c['images_gt']} GT images; {failures}; {c['placeholders']} scored as "
        f"R1-SGG's placeholder (failed, or no kept object); {c['images_ranked']} images ranked; "
        f"{c['objects_dropped']} objects and {c['relations_dropped']} relations dropped by R1-SGG's name rules"
    )
    warnings = [n for n in result["notes"] if n.startswith("WARNING")]
    if warnings:
        print(" | ".join(warnings), file=sys.stderr)
    ties = result["ties"]
    if any(ties["hits_decided"].values()):  # its ng numbers hang on numpy's order of tied scores
        moved = {n: span for n, span in ties["range"].items() if span and span[0] != span[1]}
        spans = " ".join(f"{n}=[{100 * lo:.2f}, {100 * hi:.2f}]" for n, (lo, hi) in moved.items())
        decided = ", ".join(f"{n} at K={k}" for k, n in ties["hits_decided"].items())
        print(f"tie order (numpy's unstable sort) decided {decided} GT-row hits; over tie orders: {spans}")


def show_sgvlm(result: dict) -> None:
    c = result["counts"]
    print(" ".join(shown(n, result["metrics"][n]) for n in SGVLM_VALUES))
    print(f"{c['samples']} samples, {c['samples'] - c['samples_valid']} invalid ({100 * c['invalid_rate']:.2f}%, "
          f"scored 0); {c['unreadable_lines']} unreadable lines left out")  # fmt: skip


def show_asmv2(result: dict) -> None:
    c = result["counts"]
    print(" ".join(shown(n, result["metrics"][n]) for n in ASMV2_VALUES) + " (ASMv2: answered questions only)")
    print(f"{c['answers_scored']} answers to {c['questions']} questions; correct_format_ratio "
          f"{c['correct_format_ratio']:.2f}, num_pred_tuples {c['num_pred_tuples']:.1f}; "
          f"{c['unreadable_lines']} unreadable lines left out")  # fmt: skip


def show_provision(result: dict) -> None:
    c = result["counts"]
    print(" ".join(shown(n, result["metrics"][n]) for n in PROVISION_VALUES) + " (ProVision: answers it reads)")
    print(f"{c['images_scored']} of {c['answers']} answers scored ({c['answers_no_relations']} without Relations:, "
          f"scored empty; {c['answers_dropped']} dropped and {c['answers_crashed']} that stop ProVision, left out "
          f"with their GT); {c['relations_cut_by_top_k']} relations cut by top_k; {c['unreadable_lines']} "
          "unreadable lines left out")  # fmt: skip
