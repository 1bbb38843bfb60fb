"""``sgg-eval evaluate ANSWERS --text-graphs``: scene graphs written as text by multimodal LLMs (issue 48), under
sgg-eval's ``sets`` protocol or a published evaluator's (``r1sgg``, ``sgvlm``, ``asmv2``, ``provision``); each
protocol a runner and a printer of the lines its tool prints (docs/text_graphs.md)."""

from __future__ import annotations

import argparse
import sys

from sgg_eval.core.defaults import PROVISION_SBERT_MODEL, PROVISION_TOP_K, RECALL_KS, TEXT_PROTOCOLS
from sgg_eval.core.errors import InputError
from sgg_eval.metrics.names import metric_name


def shown(name: str, value: float | None) -> str:
    return f"{name}=null" if value is None else f"{name}={100 * value:.2f}"


def evaluate_text(args: argparse.Namespace) -> None:
    """Check the options the protocol takes, run it, write ``-o``, print its lines."""
    from sgg_eval.io.atomic import write_json

    protocol = args.protocol or TEXT_PROTOCOLS[0]
    others = [f for f, on in (("--task", args.task), ("--stats", args.stats), ("--zeroshot", args.zeroshot),
                              ("--setting", args.setting), ("--split-file", args.split_file)) if on]  # fmt: skip
    if others or protocol not in TEXT_PROTOCOLS:
        raise InputError(
            f"--text-graphs takes --gt, --protocol {', '.join(TEXT_PROTOCOLS)}, --wordnet, --spacy, --sbert, "
            "--top-k, --seed and -o only",
            field="--text-graphs",
        )
    if protocol == "sgvlm" and args.gt:
        raise InputError("--protocol sgvlm reads the GT from each sample (content): no --gt", field="--gt")
    if not args.gt and protocol not in ("sgvlm", "provision"):
        raise InputError("--text-graphs scores the answers on the GT: give --gt", field="--gt")
    for flag, owner in (("wordnet", "r1sgg"), ("spacy", "asmv2"), ("sbert", "provision"), ("top_k", "provision"),
                        ("seed", "provision")):  # fmt: skip
        if getattr(args, flag) not in (None, False) and protocol != owner:
            name = "--" + flag.replace("_", "-")
            raise InputError(f"{name} is an option of --protocol {owner} only", field=name)
    run, show = PROTOCOLS[protocol]
    result = run(args)
    if args.output:
        write_json(args.output, result)
    show(result)


def _sets(args):
    from sgg_eval.boxes.text_evaluate import run_text_evaluation

    return run_text_evaluation(args.predictions, args.gt, "sets")


def _show_sets(result: dict) -> None:
    from sgg_eval.metrics.names import text_set_name

    m, c = result["metrics"], result["counts"]
    for ng, label in ((False, "one predicate per answered pair"), (True, "every distinct triplet")):
        print(" ".join(shown(n, m[n]) for n in (text_set_name(v, ng) for v in ("R", "P", "F1", "mR", "R_pooled")))
              + f" ({label})")  # fmt: skip
    print(
        f"{c['images_evaluated']} of {c['images_input']} images evaluated ({c['images_unanswered']} unanswered and "
        f"{c['images_failed']} unreadable, scored as empty answers; {c['images_skipped_no_gt']} without GT "
        f"relations); {c['objects_unknown_name']} objects with no class name dropped"
    )


def _r1sgg(args):
    from sgg_eval.boxes.r1sgg_evaluate import run_r1sgg_evaluation

    return run_r1sgg_evaluation(args.predictions, args.gt, wordnet=args.wordnet)


def _show_r1sgg(result: dict) -> None:
    """R1-SGG's numbers, as its two scripts print them, under sgg-eval's names; then the counts."""
    from sgg_eval.metrics.names import DETECTOR, R1_LOOP_VALUES

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


def _sgvlm(args):
    from sgg_eval.boxes.sgvlm_evaluate import run_sgvlm_evaluation

    return run_sgvlm_evaluation(args.predictions)


def _show_sgvlm(result: dict) -> None:
    from sgg_eval.metrics.names import SGVLM_VALUES

    c = result["counts"]
    print(" ".join(shown(n, result["metrics"][n]) for n in SGVLM_VALUES))
    print(f"{c['samples']} samples, {c['samples'] - c['samples_valid']} invalid ({100 * c['invalid_rate']:.2f}%, "
          f"scored 0); {c['unreadable_lines']} unreadable lines left out")  # fmt: skip


def _asmv2(args):
    from sgg_eval.boxes.asmv2_evaluate import run_asmv2_evaluation

    return run_asmv2_evaluation(args.predictions, args.gt, spacy=args.spacy)


def _show_asmv2(result: dict) -> None:
    from sgg_eval.metrics.names import ASMV2_VALUES

    c = result["counts"]
    print(" ".join(shown(n, result["metrics"][n]) for n in ASMV2_VALUES) + " (ASMv2: answered questions only)")
    print(f"{c['answers_scored']} answers to {c['questions']} questions; correct_format_ratio "
          f"{c['correct_format_ratio']:.2f}, num_pred_tuples {c['num_pred_tuples']:.1f}; "
          f"{c['unreadable_lines']} unreadable lines left out")  # fmt: skip


def _provision(args):
    from sgg_eval.boxes.provision_evaluate import run_provision_evaluation
    from sgg_eval.metrics.provision import sbert_encoder

    model = args.sbert or PROVISION_SBERT_MODEL
    top_k = PROVISION_TOP_K if args.top_k is None else args.top_k
    return run_provision_evaluation(args.predictions, args.gt, sbert_encoder(model), model=model, top_k=top_k,
                                    seed=args.seed or 0)  # fmt: skip


def _show_provision(result: dict) -> None:
    from sgg_eval.metrics.names import PROVISION_VALUES

    c = result["counts"]
    print(" ".join(shown(n, result["metrics"][n]) for n in PROVISION_VALUES) + " (ProVision: answers it reads)")
    print(f"{c['images_scored']} of {c['answers']} answers scored ({c['answers_no_relations']} without Relations:, "
          f"scored empty; {c['answers_dropped']} dropped and {c['answers_crashed']} that stop ProVision, left out "
          f"with their GT); {c['relations_cut_by_top_k']} relations cut by top_k; {c['unreadable_lines']} "
          "unreadable lines left out")  # fmt: skip


PROTOCOLS = {"sets": (_sets, _show_sets), "r1sgg": (_r1sgg, _show_r1sgg), "sgvlm": (_sgvlm, _show_sgvlm),
             "asmv2": (_asmv2, _show_asmv2), "provision": (_provision, _show_provision)}  # fmt: skip
