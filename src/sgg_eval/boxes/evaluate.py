"""``sgg-eval evaluate``: open a prediction source, run the engine with the right ranking, return the JSON."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from sgg_eval.boxes.sources import open_predictions
from sgg_eval.boxes.split_gt import check_gt_boxes, clips_gt
from sgg_eval.core.defaults import IOU_THRESHOLD, LONGTAIL_RULE, OPENVOCAB_PROTOCOLS, PER_IMAGE_K, PROTOCOL, TAU
from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import OPEN_IMAGES_DOCUMENT, SGG_BENCHMARK_DOCUMENT
from sgg_eval.core.protocols import protocol as protocol_record
from sgg_eval.data.openvocab import read_split_file, shipped_split, split_from_mapping
from sgg_eval.data.stats import TrainingStats, check_zeroshot_ids, read_stats
from sgg_eval.data.types import Vocabulary
from sgg_eval.formats.captions import read_captions
from sgg_eval.formats.zeroshot import load_zeroshot
from sgg_eval.io.atomic import atomic_output
from sgg_eval.metrics.engine import evaluate, require_evaluated
from sgg_eval.metrics.informative import EXACT, Informative
from sgg_eval.metrics.longtail import add_group_recalls, predicate_groups
from sgg_eval.metrics.openvocab import check_setting, open_vocab
from sgg_eval.metrics.options import EvalOptions
from sgg_eval.metrics.ranking.per_image import write_records


class _Progress:
    """Told the number of images done after each block; reports it on stderr: a running count on a terminal,
    otherwise (a DVC stage, a log file) one line every ``every_s`` seconds, so a long run never looks hung."""

    every_s = 15.0

    def __init__(self):
        self.tty = sys.stderr.isatty()
        self.start = self.last = time.monotonic()
        self.done = 0

    def __call__(self, done: int) -> None:
        self.done = done
        now = time.monotonic()
        if self.tty:
            print(f"\r  evaluated {done} images", end="", file=sys.stderr, flush=True)
        elif now - self.last >= self.every_s:
            self.last = now
            print(f"  evaluated {done} images ({done / (now - self.start):.0f}/s)", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.tty and self.done:
            print(file=sys.stderr)


@dataclass(frozen=True)
class Setup:
    """What one evaluation runs with, however its images come (a file, or ``api.Evaluator``): the options, the
    training statistics, the zero-shot set and its description, and the head/body/tail groups
    (``metrics.longtail.predicate_groups``: ``groups`` per predicate or None, ``used`` the rule applied)."""

    opts: EvalOptions
    train: TrainingStats | None
    zeroshot: np.ndarray | None
    zeroshot_source: str
    groups: np.ndarray | None
    used: str


def check_setting_given(protocol: str, setting: str | None, split_file: str | None, split: dict | None) -> None:
    """Refuse an open-vocabulary setting or split with another protocol, and a bad setting, before reading."""
    if protocol not in OPENVOCAB_PROTOCOLS and (setting or split_file or split):
        raise InputError(f"--setting and --split-file are for --protocol {', '.join(OPENVOCAB_PROTOCOLS)}")
    if protocol in OPENVOCAB_PROTOCOLS and setting:
        check_setting(protocol, setting)


def check_captions_given(protocol: str, captions, ir_encoder: str) -> None:
    """Refuse a caption file with a protocol that has no InformativeRecall, and an encoder without a file."""
    if captions and protocol_record(protocol).document != SGG_BENCHMARK_DOCUMENT:
        raise InputError(
            "--captions gives InformativeRecall@K, a metric of --protocol sgg-benchmark", field="--captions"
        )
    if not captions and ir_encoder != EXACT:
        raise InputError("--ir-encoder reads the caption triplets of --captions: give the file", field="--ir-encoder")


def evaluation_setup(
    vocab: Vocabulary,
    task: str,
    *,
    protocol: str = PROTOCOL,
    train: TrainingStats | None = None,
    stats_name: str = "",
    zeroshot: str | None = None,
    tau: float = TAU,
    iou_threshold: float = IOU_THRESHOLD,
    setting: str | None = None,
    split_file: str | None = None,
    split: dict | None = None,
    longtail: str = LONGTAIL_RULE,
    order: str = "stored",
    score_kind: str = "probabilities",
    clip_gt: bool = False,
) -> Setup:
    """The :class:`Setup` of an evaluation on ``vocab``: the one place the options are built from what a user
    gives (the CLI's flags, ``api.Evaluator``'s arguments). ``zeroshot`` is a triplet file or ``vg150``; without
    it the zero-shot set comes from ``train`` (named ``stats_name``)."""
    check_setting_given(protocol, setting, split_file, split)
    opts = EvalOptions(task=task, protocol=protocol, tau=tau, iou_threshold=iou_threshold)
    zs, zs_source = None, ""
    if zeroshot:
        zs, zs_source = load_zeroshot(zeroshot)
        check_zeroshot_ids(zs, vocab, zeroshot, "zeroshot")
    elif train is not None:
        zs = train.zeroshot_triplets
        zs_source = f"computed from {stats_name} ({len(zs)} triplets)"
    if protocol in OPENVOCAB_PROTOCOLS:
        if split is not None:
            where = "metrics.openvocab.split"
            chosen = split_from_mapping(split, vocab, where, "conf", where)
        else:
            chosen = read_split_file(split_file, vocab) if split_file else shipped_split(protocol)
        opts = replace(opts, openvocab=open_vocab(protocol, setting, chosen, vocab))
    opts = replace(opts, order=order, score_kind=score_kind, clip_gt=clip_gt)  # how the input ranks
    counts = None if train is None else train.predicate_counts[1:]
    groups, used = predicate_groups(vocab.predicate_classes, counts, longtail)
    if groups is not None:
        opts = replace(opts, longtail=tuple(groups.tolist()))
    return Setup(opts, train, zs, zs_source, groups, used)


def run_evaluation(
    predictions: str,
    task: str,
    *,
    gt: str | None = None,
    protocol: str = PROTOCOL,
    stats: str | None = None,
    zeroshot: str | None = None,
    tau: float = TAU,
    iou_threshold: float = IOU_THRESHOLD,
    progress: bool = False,
    jobs: int = 1,
    setting: str | None = None,
    split_file: str | None = None,
    split: dict | None = None,
    longtail: str = LONGTAIL_RULE,
    per_image: str | os.PathLike | None = None,
    per_image_ids: frozenset | None = None,
    captions: str | os.PathLike | None = None,
    ir_encoder: str = EXACT,
) -> dict:
    """Evaluate ``predictions`` and return the metrics document; ``jobs`` processes rank blocks of images
    in parallel (``metrics.ranking.blocks``), with the same document for any number. An open-vocabulary
    ``protocol`` takes its ``setting`` and the shipped split, or the user's ``split_file``, or ``split``, the same
    mapping given inline (the pipeline's ``metrics.openvocab.split``). ``longtail`` is the head/body/tail rule
    (``metrics.longtail``). ``captions``: a caption-triplet file for InformativeRecall@K (``--protocol
    sgg-benchmark``; ``metrics.informative``), read by ``ir_encoder``."""
    check_setting_given(protocol, setting, split_file, split)
    EvalOptions(task=task, protocol=protocol, tau=tau, iou_threshold=iou_threshold)  # checked before any file is read
    check_captions_given(protocol, captions, ir_encoder)
    train: TrainingStats | None = read_stats(stats) if stats else None
    source = open_predictions(predictions, gt=gt, vocab=train.vocab if train else None)
    if train is not None and train.vocab != source.vocab:
        raise InputError("class or predicate names differ from the predictions'", path=stats)
    if protocol_record(protocol).document == OPEN_IMAGES_DOCUMENT and source.score_kind == "ranked":
        raise InputError(
            f"--protocol {protocol} ranks triplets by score (subject x object x predicate), and this file has ranks "
            "only",
            path=predictions,
        )
    check_gt_boxes(protocol, source.gt_boxes, gt or predictions)
    run_setup = evaluation_setup(
        source.vocab,
        task,
        protocol=protocol,
        train=train,
        stats_name=os.path.basename(stats) if stats else "",
        zeroshot=zeroshot,
        tau=tau,
        iou_threshold=iou_threshold,
        setting=setting,
        split_file=split_file,
        split=split,
        longtail=longtail,
        order=source.order,
        score_kind=source.score_kind,
        clip_gt=clips_gt(protocol, source.gt_boxes),
    )
    opts, train, groups, used = run_setup.opts, run_setup.train, run_setup.groups, run_setup.used
    if captions:
        vocab = source.vocab
        informative = Informative(read_captions(captions), ir_encoder, vocab.object_classes, vocab.predicate_classes,
                                  os.fspath(captions))  # fmt: skip
        opts = replace(opts, informative=informative)
    zs, zs_source = run_setup.zeroshot, run_setup.zeroshot_source
    report = _Progress() if progress else None
    run = partial(
        evaluate,
        source,
        source.vocab,
        source=predictions,
        jobs=jobs,
        progress=report,
        triplet_counts=train.triplet_counts if train else None,
        num_pairs=train.num_pairs if train else None,
        zeroshot=zs,
        zeroshot_source=zs_source,
    )
    if per_image is None:
        result = run(opts)
    else:
        with atomic_output(per_image) as tmp, open(tmp, "w", encoding="utf-8") as out:
            recorded = replace(opts, per_image=PER_IMAGE_K, per_image_ids=per_image_ids)
            result = run(recorded, on_records=partial(write_records, out))
    if report is not None:
        report.close()
    require_evaluated(result, predictions, gt)
    result = add_group_recalls(result, source.vocab.predicate_classes, groups, used)
    result["notes"] = list(source.notes) + result["notes"]
    result["input"] = {"predictions": os.fspath(predictions), "format": source.fmt}  # as given: names the file
    return result
