"""``sgg-eval evaluate ANSWERS --text-graphs --gt ROWS --protocol r1sgg``: text scene graphs scored exactly as R1-SGG
scores them (issue 48; ``gpt4vision/R1-SGG`` at commit e4de64d: ``sgg_gather_preds.py``, then ``vg150_eval.py``).

- answers: its folder of per-image files (``text.r1sgg.answers``: what is a failure; names:
  ``text.r1sgg.names``: what is kept), or its gathered file (``text.r1sgg.gathered``: already read and
  mapped; its failures are placeholders, so the failure rate is unknown);
- **metric A**, R1-SGG's own loop (``text.r1sgg.loop``), over every GT row;
- **metric B**, its ``SggEvaluator`` (the Scene-Graph-Benchmark evaluator, SGDet), over the answered images only:
  sgg-eval's ``reference`` protocol on the answers made predictions as R1-SGG makes them. Every kept object has
  score 1 and every kept relation a one-hot predicate row, in answer order: R@K takes the first K relations as
  answered (``order="stored"``); an answer with objects but no kept relation is skipped (no predicted pair), a
  failure or an answer without kept objects is R1-SGG's placeholder (one pair, all scores 0; its box is
  uninitialised memory there, here a box that matches nothing) and scores 0. NG ranks every (relation, predicate)
  cell by ``1 x one-hot`` with numpy's default (unstable) argsort, as R1-SGG does: the zero cells that fill the
  top 100 after the answered ones, and can hit GT rows, are the ones that sort gives (the same numpy on the same
  CPU gives the same order; the engine is handed scores that encode that order). Because that order moves with
  numpy's version and the CPU, the document's ``ties`` says how many hits it decided and the ng numbers' range
  over tie orders (``text.r1sgg.ties``: the same evaluation with the ties ordered best and worst). zR uses
  R1-SGG's zero-shot list, the VG150 one, also on PSG (its 0-based PSG class ids read against VG ids, as there).
  ``det_mAP@50`` and ``det_mAP`` are its COCO box AP50 and AP over the answered images (``text.r1sgg.box_ap``).
- the failure rate is failures / answer files.
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np

from sgg_eval.core.defaults import PROTOCOL, RECALL_KS
from sgg_eval.core.tasks import SGDET
from sgg_eval.data.types import GTImage, PredImage, Vocabulary
from sgg_eval.formats.zeroshot import load_zeroshot
from sgg_eval.metrics.engine import evaluate
from sgg_eval.metrics.names import DETECTOR, R1_LOOP_VALUES, metric_name
from sgg_eval.metrics.options import EvalOptions
from sgg_eval.metrics.result_facts import ANY, PER_IMAGE, POOLED, fact
from sgg_eval.text.r1sgg.answers import MappedAnswer, read_r1sgg_folder
from sgg_eval.text.r1sgg.box_ap import r1sgg_box_ap
from sgg_eval.text.r1sgg.gathered import read_r1sgg_gathered
from sgg_eval.text.r1sgg.loop import LoopTotals, image_hits
from sgg_eval.text.r1sgg.names import R1Names, nltk_synsets, r1sgg_tables
from sgg_eval.text.r1sgg.rows import read_r1sgg_rows
from sgg_eval.text.r1sgg.ties import ORDERS, cell_hits, hits_within, orders

RANKED = [(f, ng) for f in ("R", "mR", "zR") for ng in (False, True)]
NOWHERE = -1e6  # the placeholder's box: no IoU with any box of an image


def run_r1sgg_evaluation(answers: str, gt: str, *, wordnet: bool = False) -> dict:
    """The metrics document of R1-SGG's answer folder ``answers`` on its GT rows ``gt``."""
    images, vocab, dataset = read_r1sgg_rows(gt)
    names = R1Names(dataset, vocab, nltk_synsets() if wordnet else None)
    if os.path.isdir(answers):
        parsed, found = read_r1sgg_folder(answers, {img.image_id: (img.width, img.height) for img in images})
        answered = {i: (names.map(a) if a.failure is None else None) for i, a in parsed.items()}
    else:  # the gathered file: read and mapped by R1-SGG already; failures are placeholders there
        answered = read_r1sgg_gathered(answers, {img.image_id for img in images}, vocab, dataset)
        found = Counter(files=len(answered), failures=None)
    loop = LoopTotals()
    for img in images:
        loop.add(img.rels[:, 2], image_hits(img, answered.get(img.image_id)))
    gts = [img.gt_image() for img in images if img.image_id in answered]
    ordered = [r1_predictions(gt, answered[gt.image_id], vocab) for gt in gts]
    zeroshot, zs_source = r1sgg_zeroshot(dataset, vocab)
    opts = EvalOptions(task=SGDET.name, protocol=PROTOCOL, order="stored")  # its SggEvaluator: the reference, SGDet
    by_order = {
        name: evaluate([(gt, o[name][0]) for gt, o in zip(gts, ordered)], vocab, opts, source=os.fspath(answers),
                       zeroshot=zeroshot, zeroshot_source=zs_source)
        for name in ORDERS
    }  # fmt: skip
    ranked = by_order["numpy"]
    metrics = dict(loop.values())
    metrics.update({n: ranked["metrics"][n] for f, ng in RANKED for n in (metric_name(f, k, ng=ng) for k in RECALL_KS)})
    metrics.update(zip(DETECTOR[::-1], r1sgg_box_ap(images, answered, dataset == "psg"), strict=True))
    counts = _counts(images, answered, found, ranked, names, os.path.isdir(answers))
    placeholder = "a failure or an answer without a kept object is R1-SGG's placeholder: 0"
    facts = [
        fact(R1_LOOP_VALUES, len(images), len(images), "every GT image (unanswered: 0)", ANY,
             f"{POOLED} (*_per_image: {PER_IMAGE})", placeholder, "none: every answered triplet"),
        fact([metric_name(f, k, ng=ng) for f, ng in RANKED for k in RECALL_KS], counts["images_ranked"], len(images),
             "answered images with GT relations and a kept relation", "one predicate per answered line (repeats "
             "kept); ngR: every predicate of every line", PER_IMAGE,
             placeholder + "; an answer whose relations were all dropped is skipped",
             "the first K relations in answer order"),
    ]  # fmt: skip
    return {
        "task": "text graphs",
        "protocol": "r1sgg",
        "facts": facts,
        "dataset": dataset,
        "metrics": metrics,
        "counts": counts,
        "names": {"tables": r1sgg_tables()["source"], "wordnet": _wordnet_version() if wordnet else None},
        "ties": (ties := _ties(by_order, ordered)),
        "notes": _notes(counts, wordnet, ties),
        "input": {"answers": os.fspath(answers), "gt": os.fspath(gt)},
    }


def _counts(images: list, answered: dict, found: Counter, ranked: dict, names: R1Names, folder: bool) -> dict:
    """The document's counts: GT images, answer files and failures, placeholders, images ranked and skipped, names
    dropped (``folder``: the answers are R1-SGG's folder, not its gathered file)."""
    read = found["files"] - found["unreadable_files"]
    counts = {
        "images_gt": len(images),
        "images_gt_with_relations": sum(len(img.rels) > 0 for img in images),
        "answer_files": found["files"],
        "unreadable_files": found["unreadable_files"],
        "duplicate_answers": found["duplicate_answers"],
        "failures": found["failures"],
        "failure_rate": found["failures"] / read if read and found["failures"] is not None else None,
        "placeholders": sum(a is None or a.placeholder for a in answered.values()),
        "images_ranked": ranked["counts"]["images_evaluated"],
        **{k: v for k, v in ranked["counts"].items() if k.startswith("images_skipped")},
        **{k: names.counts[k] for k in ("objects_dropped", "relations_dropped", "names_wordnet_not_tried")},
        "answers_nonfinite_boxes": found["nonfinite_boxes"] if folder else None,
    }
    return counts


def r1_predictions(gt: GTImage, answer: MappedAnswer | None, vocab: Vocabulary) -> dict[str, tuple]:
    """The answer as R1-SGG hands it to its ``SggEvaluator`` (module docstring; ``None`` for a failure), once per
    order of its tied ng cells (``text.r1sgg.ties.ORDERS``): ``{order: (PredImage, cell order, cell hits)}``."""
    width = vocab.num_predicates + 1
    if answer is None or answer.placeholder:
        box = np.full((1, 4), NOWHERE, np.float32)
        placeholder = PredImage(gt.image_id, box, [1], [0.0], [[0, 0]], np.zeros((1, width), np.float32))
        nothing = np.zeros((0, len(gt.rels)), dtype=bool)  # its cells match no GT box: no hit in any order
        return {name: (placeholder, np.zeros(0, np.int64), nothing) for name in ORDERS}
    n = len(answer.predicates)
    onehot = np.zeros((n, width), np.int64)
    onehot[np.arange(n), answer.predicates] = 1
    cells = (np.ones(n, np.float32)[:, None] * onehot[:, 1:]).ravel()  # obj-score product x predicate row: float64
    hits = cell_hits(gt, answer.labels, answer.boxes, answer.subjects, answer.objects, answer.predicates, width - 1)
    pairs = np.column_stack([answer.subjects, answer.objects])
    boxes, ones = answer.boxes.astype(np.float32), np.ones(len(answer.labels))
    out = {}
    for name, order in orders(cells, hits).items():
        ranked = np.empty(cells.size, np.float32)
        ranked[order] = (cells.size - np.arange(cells.size)) / max(cells.size, 1)  # decreasing along it, distinct
        scores = np.zeros((n, width), np.float32)
        scores[:, 1:] = ranked.reshape(n, width - 1)
        out[name] = (PredImage(gt.image_id, boxes, answer.labels, ones, pairs, scores), order, hits)
    return out


def _ties(by_order: dict[str, dict], ordered: list[dict]) -> dict:
    """The document's ``ties``: per K, the GT-row hits within the first K ng cells under the best tie order and
    not under the worst (R1-SGG's ng ranking keeps 100), and each ng number's range over tie orders."""
    decided = {
        str(k): sum(hits_within(o["best"][1], o["best"][2], k) - hits_within(o["worst"][1], o["worst"][2], k)
                    for o in ordered)
        for k in RECALL_KS
    }  # fmt: skip
    names = [metric_name(f, k, ng=True) for f in ("R", "mR", "zR") for k in RECALL_KS]
    span = {}
    for name in names:
        values = [doc["metrics"][name] for doc in by_order.values()]
        span[name] = None if None in values else [min(values), max(values)]
    return {
        "order": f"numpy {np.__version__}'s default argsort on this machine (R1-SGG's argsort_desc); numpy sorts "
        "tied values in an order that changes with its version and the CPU",
        "hits_decided": decided,
        "range": span,
    }


def r1sgg_zeroshot(dataset: str, vocab: Vocabulary) -> tuple[np.ndarray, str]:
    """R1-SGG's zero-shot list (Scene-Graph-Benchmark's VG150 one), in ``vocab``'s ids: on PSG its class ids are
    compared with PSG's 0-based ones, so they name the PSG classes one further on (and past the last, none)."""
    zs, source = load_zeroshot("vg150")
    if dataset == "psg":
        zs = zs + np.array([1, 1, 0])
        zs = zs[(zs[:, :2] <= vocab.num_objects).all(axis=1) & (zs[:, 2] <= vocab.num_predicates)]
        source += ", read against PSG's 0-based class ids as R1-SGG does"
    return zs, source


def _wordnet_version() -> str:
    import nltk
    from nltk.corpus import wordnet

    return f"nltk {nltk.__version__}, WordNet {wordnet.get_version()}"


def _notes(counts: dict, wordnet: bool, ties: dict) -> list[str]:
    notes = [
        "protocol r1sgg: R1-SGG's own numbers. The *_loop values are its recall loop over every GT image (any "
        "answer may hit any GT row, no K); R@K, mR@K, zR@K and det_mAP@50 are its SggEvaluator over the answered "
        "images only, skipping answers whose relations were all dropped: not comparable with each other, nor with "
        "a trained model's numbers over the full split (sgg-eval audit says why)"
    ]
    if any(ties["hits_decided"].values()):
        decided = ", ".join(f"{n} at K={k}" for k, n in ties["hits_decided"].items())
        worst, best = ties["range"][metric_name("R", max(RECALL_KS), ng=True)]
        notes.append(
            f"R1-SGG's ngR, ng-mR and ng-zR hang on the order numpy leaves tied scores in (its version, the CPU): the "
            f"tie order decided {decided} GT-row hits; over tie orders ngR@{max(RECALL_KS)} lies in "
            f"[{worst:.6f}, {best:.6f}] (every range: the document's ties)"
        )
    if counts["answers_nonfinite_boxes"]:
        notes.append(
            f"WARNING: {counts['answers_nonfinite_boxes']} answers have boxes that scale to NaN or ±inf (a box_scale "
            "or a coordinate that is not a finite number): R1-SGG scores them all the same, and so does sgg-eval; "
            "their boxes match nothing and count as false detections in det_mAP"
        )
    if not wordnet and counts["names_wordnet_not_tried"]:
        notes.append(
            f"{counts['names_wordnet_not_tried']} names matched no class and no table entry; R1-SGG would then try "
            "WordNet (--wordnet), so these numbers may be lower than its own"
        )
    return notes
