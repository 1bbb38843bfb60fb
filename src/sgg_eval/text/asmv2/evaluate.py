"""``sgg-eval evaluate ANSWERS.jsonl --text-graphs --gt psg_eval.jsonl --protocol asmv2``: text scene graphs scored as
ASMv2 scores its open-ended PSG task (issue 48; ``text.asmv2.metrics``), over the answered questions only, as it does.

The answers are ``model_vqa_loader.py``'s JSONL (``question_id``, ``text``); every answer line is scored. A line
that is not a JSON object with a ``question_id`` is counted and left out; an answer whose ``text`` is not text is
scored as an empty answer with an incorrect format, and counted. Answers for questions the GT lacks are refused in
one line. ASMv2 reports no failure rate: ``correct_format_ratio`` is its closest number.
"""

from __future__ import annotations

import os
from collections import defaultdict

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.metrics.names import ASMV2_VALUES
from sgg_eval.metrics.result_facts import ANY, POOLED, fact
from sgg_eval.text.asmv2.answers import NO_ID, answer_lines, parse_answer
from sgg_eval.text.asmv2.metrics import asmv2_synonyms, expand, hits, spacy_lemmas, word_lemmas
from sgg_eval.text.asmv2.questions import read_asmv2_questions
from sgg_eval.text.graphs import refuse_foreign


def run_asmv2_evaluation(answers: str, gt: str, *, spacy: bool = False) -> dict:
    """The metrics document of ASMv2-style answers ``answers`` on its question file ``gt``."""
    questions = read_asmv2_questions(gt)
    lemmas, synonyms = (spacy_lemmas() if spacy else word_lemmas), asmv2_synonyms()
    path = os.fspath(answers)
    hit_all, by_predicate, formats, tuples, answered = [], defaultdict(list), [], [], set()
    counts = {"answer_lines": 0, "unreadable_lines": 0, "unreadable_answers": 0}
    foreign = []
    for qid, text in answer_lines(path):
        counts["answer_lines"] += 1
        if qid is NO_ID:
            counts["unreadable_lines"] += 1
            continue
        if qid not in questions:  # ASMv2's dict look-up: 0.0 and true find 0 and 1; "5" finds "5", not 5
            foreign.append(qid)
            continue
        question = questions[qid]
        answered.add(question.question_id)
        raw, correct = parse_answer(text) if isinstance(text, str) else ([], False)
        counts["unreadable_answers"] += not isinstance(text, str)
        scored = expand(raw, question.width, question.height, lemmas, synonyms)
        hit = hits(question, scored)
        hit_all.append(hit)
        for predicate, h in zip(question.predicates, hit.tolist()):
            by_predicate[predicate].append(h)
        formats.append(correct)
        tuples.append(len(scored[0]))
    refuse_foreign(foreign, path, "questions the GT file does not have", "question file")
    if not formats:
        raise InputError("no answers: expected one JSON object per line (question_id, text)", path=path)
    rows = np.concatenate(hit_all)
    values = (
        float(rows.mean()) if len(rows) else None,
        _left_to_right([sum(v) / len(v) for v in by_predicate.values()]) / len(by_predicate) if by_predicate else None,
    )
    counts.update(answers_scored=len(formats), questions=len(questions), questions_answered=len(answered))
    counts["gt_tuples_scored"] = int(len(rows))
    counts.update(correct_format_ratio=float(np.mean(formats)), num_pred_tuples=float(np.mean(tuples)))
    return {
        "task": "text graphs",
        "protocol": "asmv2",
        "facts": [
            fact(
                ASMV2_VALUES,
                len(answered),
                len(questions),
                f"answered questions only ({counts['answers_scored']} answers: one answered twice counts twice)",
                ANY,
                POOLED,
                "none reported: an unreadable answer hits nothing (correct_format_ratio)",
                "none: every answered triplet",
            )
        ],
        "metrics": dict(zip(ASMV2_VALUES, values, strict=True)),
        "counts": counts,
        "names": {"lemmas": "spaCy en_core_web_sm" if spacy else "lowercase words (no spaCy)"},
        "notes": _notes(counts, spacy),
        "input": {"answers": path, "gt": os.fspath(gt)},
    }


def _left_to_right(values: list[float]) -> float:
    """``sum(values)`` as Python before 3.12 adds floats, one after the other in list order (ASMv2's Mean Recall;
    Python 3.12's ``sum`` compensates its rounding, ``np.mean`` adds pairwise: both may differ in the last bit)."""
    total = 0.0
    for v in values:
        total += v
    return total


def _notes(counts: dict, spacy: bool) -> list[str]:
    notes = [
        f"protocol asmv2: ASMv2's open-ended PSG recall, pooled over the GT tuples of the {counts['answers_scored']} "
        f"answered of {counts['questions']} questions; any answered tuple may hit any GT tuple, no K, no graph "
        "constraint: compare it with no-graph-constraint recall on the same questions only"
    ]
    if not spacy:
        notes.append(
            "names were read as lowercase words, not spaCy's lemmas as ASMv2 reads them (--spacy): plural and "
            "inflected names may score differently from ASMv2's own numbers"
        )
    return notes
