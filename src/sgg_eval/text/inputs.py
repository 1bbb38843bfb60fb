"""The files the ``sets`` protocol reads (issue 48): any answers on any GT, each made into the same model, so that
sgg-eval's own protocol scores R1-SGG's or ASMv2's outputs as fairly as its own JSONL.

GT (``read_gt``): a split store (``.h5``); R1-SGG's GT rows (JSON/JSONL with ``relationships``,
``text.r1sgg.rows``); ASMv2's ``psg_eval.jsonl`` (``relation_tuples``, ``text.asmv2.questions``: each question's
objects are its tuples' distinct ``(name, box)``, classes by PSG's raw names).

Answers (``read_answers``), as :class:`text.graphs.TextGraph` by GT image id:
- sgg-eval's JSONL (``image_id``, ``objects``, ``relations``; ``text.graphs``);
- R1-SGG's folder of per-image files, read by its own rules of what a failure is (``text.r1sgg.answers``): an
  object's name is its id's text before the first ``.``, a relation names objects by id (the first of a
  repeated id);
- ASMv2's answers JSONL (``question_id``, ``text``; ``text.asmv2.answers``): an object is a box's first name
  (``Unknown`` without one) with the box in pixels as ASMv2 computes it; a tuple whose box is not 4 numbers is
  dropped and counted; an answer whose ``text`` is not text is a failure.
Names are then read by the ``sets`` protocol's own table, never the tools'.
"""

from __future__ import annotations

import json
import os

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.data.types import GTImage, Vocabulary
from sgg_eval.io.jsonio import jsonl_lines, read_text
from sgg_eval.text.graphs import AnswerReport, TextGraph, read_text_graphs, refuse_foreign

MAX_SNIFF = 1 << 20


def _first_row(path: str):
    """The first JSON object of a JSON list, or of a JSONL file the first line that reads as one (None if there is
    none in its first ``MAX_SNIFF`` bytes): the format is told by a readable row, so one unreadable line at the top
    of a file is that line's own fault (its reader counts it), not the whole file's."""
    with open(path, "rb") as fh:
        head = fh.read(MAX_SNIFF).decode("utf-8", errors="replace").lstrip()
    try:
        if head.startswith("["):
            doc = json.loads(read_text(path, "GT file", None))
            return doc[0] if isinstance(doc, list) and doc else None
    except (ValueError, IndexError, RecursionError):
        return None
    for line in jsonl_lines(head):
        try:
            doc = json.loads(line) if line.strip() else None
        except (ValueError, RecursionError):
            continue
        if isinstance(doc, dict):
            return doc
    return None


def read_gt(gt: str) -> tuple[list[GTImage], Vocabulary, str]:
    """The GT images of ``gt``, their vocabulary and the file's kind (``split``, ``r1sgg`` or ``asmv2``)."""
    gt = os.fspath(gt)
    if gt.endswith(".h5"):
        from sgg_eval.data.store import SplitStore

        with SplitStore(gt) as split:
            return list(split), split.vocab, "split"
    if not os.path.isfile(gt):
        raise InputError("file not found" if not os.path.exists(gt) else "not a file", path=gt)
    row = _first_row(gt)
    if isinstance(row, dict) and "relationships" in row:
        from sgg_eval.text.r1sgg.rows import read_r1sgg_rows

        rows, vocab, _ = read_r1sgg_rows(gt)
        return [r.gt_image() for r in rows], vocab, "r1sgg"
    if isinstance(row, dict) and "relation_tuples" in row:
        return _asmv2_gt(gt) + ("asmv2",)
    raise InputError("expected a split store (.h5), R1-SGG's GT rows or ASMv2's psg_eval.jsonl", path=gt)


def _asmv2_gt(path: str) -> tuple[list[GTImage], Vocabulary]:
    from sgg_eval.text.asmv2.questions import read_asmv2_questions
    from sgg_eval.text.r1sgg.rows import psg_vocabulary

    vocab = psg_vocabulary()
    class_id = {c: i for i, c in enumerate(vocab.object_classes, 1)}
    images = []
    predicate_id = {p: i for i, p in enumerate(vocab.predicate_classes, 1)}
    for qid, q in read_asmv2_questions(path).items():
        where = dict(path=path, image_id=qid, field="relation_tuples")
        objects, rels = {}, []
        for k in range(len(q.predicates)):
            ends = []
            for name, box in ((q.raw_subjects[k], q.subject_boxes[k]), (q.raw_objects[k], q.object_boxes[k])):
                if name not in class_id:
                    raise InputError(f"{name!r:.40} is not a PSG class", **where)
                ends.append(objects.setdefault((name, *box.tolist()), len(objects)))
            if q.predicates[k] not in predicate_id:
                raise InputError(f"{q.predicates[k]!r:.40} is not a PSG predicate", **where)
            rels.append([*ends, predicate_id[q.predicates[k]]])
        keys = list(objects)
        boxes = np.array([k[1:] for k in keys], dtype=np.float32).reshape(-1, 4)
        labels, rows = [class_id[k[0]] for k in keys], np.array(rels, dtype=np.int64).reshape(-1, 3)
        images.append(GTImage(qid, q.width, q.height, boxes, labels, rows))
    return images, vocab


def read_answers(answers: str, images: list[GTImage]) -> tuple[dict, AnswerReport]:
    """The answers of ``answers`` (module docstring) by the id of the GT image they answer."""
    answers = os.fspath(answers)
    sizes = {img.image_id: (img.width, img.height) for img in images}
    if os.path.isdir(answers):
        return _r1sgg_answers(answers, sizes)
    row = _first_row(answers) if os.path.isfile(answers) else None
    if isinstance(row, dict) and "question_id" in row and "text" in row:
        return _asmv2_answers(answers, sizes)
    return read_text_graphs(answers, sizes)


def _r1sgg_answers(folder: str, sizes: dict) -> tuple[dict, AnswerReport]:
    from sgg_eval.text.r1sgg.answers import read_r1sgg_folder

    by_text = {str(k): k for k in sizes}
    parsed, found = read_r1sgg_folder(folder, {str(k): v for k, v in sizes.items()})
    report = AnswerReport()
    report.counts.update({k: v for k, v in found.items() if k not in ("failures", "nonfinite_boxes")})
    graphs = {}
    for key, a in parsed.items():
        image_id = by_text[key]
        # boxes scaled to NaN or ±inf: a failure here, as the sets protocol's own JSONL reader counts a non-finite box
        failure = a.failure or ("a box_scale or box coordinate that is not a finite number" if a.nonfinite else None)
        if failure is not None:
            report.note("failures", image_id, failure)
            graphs[image_id] = TextGraph(image_id, failure=failure)
            continue
        first = {}
        for i, name in enumerate(a.ids):
            first.setdefault(name, i)
        kept = [(first[s], p, first[o]) for s, p, o in a.relations if s in first and o in first]
        if len(kept) < len(a.relations):
            report.note("relations_dropped", image_id, "an end names no object", n=len(a.relations) - len(kept))
        graphs[image_id] = _graph(image_id, [i.split(".")[0] for i in a.ids], a.boxes, kept, report)
    return graphs, report


def _asmv2_answers(path: str, sizes: dict) -> tuple[dict, AnswerReport]:
    from sgg_eval.text.asmv2.answers import NO_ID, answer_lines, parse_answer
    from sgg_eval.text.asmv2.metrics import answer_box

    by_text, report, graphs, foreign = {str(k): k for k in sizes}, AnswerReport(), {}, []
    for qid, text in answer_lines(path):
        if qid is NO_ID or isinstance(qid, bool) or not isinstance(qid, (int, str)):  # ids as sets reads them
            report.note("unreadable_lines")
            continue
        if str(qid) not in by_text:
            foreign.append(qid)
            continue
        image_id = by_text[str(qid)]
        if image_id in graphs:
            report.note("duplicate_answers", image_id)
            continue
        if not isinstance(text, str):
            report.note("failures", image_id, "text is not text")
            graphs[image_id] = TextGraph(image_id, failure="text is not text")
            continue
        width, height = sizes[image_id]
        objects, rels = {}, []
        for t in parse_answer(text)[0]:
            ends = []
            for names, box in ((t.subject_names, t.subject_box), (t.object_names, t.object_box)):
                pixels = answer_box(box, width, height)
                if pixels is not None:
                    ends.append(objects.setdefault((names[0] if names else "Unknown", *pixels.tolist()), len(objects)))
            if len(ends) < 2:
                report.note("relations_dropped", image_id, "a box that is not 4 numbers")
                continue
            rels.append((ends[0], t.predicate, ends[1]))
        keys = list(objects)
        graphs[image_id] = _graph(image_id, [k[0] for k in keys], [list(k[1:]) for k in keys], rels, report)
    refuse_foreign(foreign, path, "questions the GT file does not have", "question file")
    return graphs, report


def _graph(image_id, names: list, boxes: list, rels: list, report: AnswerReport) -> TextGraph:
    """The answer with the objects the JSONL reader would keep (4 finite numbers, ``x2 >= x1``, ``y2 >= y1``) and
    the relations between them; what is dropped is counted, as there."""
    arr = np.array(boxes, dtype=np.float64).reshape(-1, 4)
    ok = np.isfinite(arr).all(axis=1) & (arr[:, 2] >= arr[:, 0]) & (arr[:, 3] >= arr[:, 1])
    if not ok.all():
        report.note("objects_dropped", image_id, "a box that is not 4 finite numbers in order", n=int((~ok).sum()))
    new = np.cumsum(ok) - 1
    kept = [(int(new[s]), str(p), int(new[o])) for s, p, o in rels if ok[s] and ok[o]]
    if len(kept) < len(rels):
        report.note("relations_dropped", image_id, "an end was dropped", n=len(rels) - len(kept))
    ends = np.array([(s, o) for s, _, o in kept], dtype=np.int64).reshape(-1, 2)
    kept_names = tuple(n for n, k in zip(names, ok) if k)
    return TextGraph(image_id, kept_names, arr[ok], ends[:, 0], ends[:, 1], tuple(p for _, p, _ in kept))
