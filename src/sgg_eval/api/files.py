"""``sgg_eval.evaluate_file``: ``sgg-eval evaluate`` as a function, for scripts and notebooks. It returns the
document the command writes with ``-o`` (the same dict, ``json.dump`` of it is the same file), and raises
:class:`InputError` with the line the command prints."""

from __future__ import annotations

import os

from sgg_eval.core.defaults import IOU_THRESHOLD, IR_ENCODER, LONGTAIL_RULE, PROTOCOL, PSG_PROTOCOL, PSG_PROTOCOLS, TAU
from sgg_eval.core.errors import InputError
from sgg_eval.core.tasks import SGDET


def evaluate_file(
    path: str | os.PathLike,
    task: str | None = None,
    *,
    gt: str | os.PathLike | None = None,
    psg: str | os.PathLike | None = None,
    psg_root: str | os.PathLike = "",
    boxes: bool = False,
    protocol: str | None = None,
    stats: str | os.PathLike | None = None,
    zeroshot: str | None = None,
    tau: float = TAU,
    iou_threshold: float = IOU_THRESHOLD,
    setting: str | None = None,
    split_file: str | os.PathLike | None = None,
    longtail: str = LONGTAIL_RULE,
    jobs: int = 1,
    text_graphs: bool = False,
    wordnet: bool = False,
    spacy: bool = False,
    sbert: str | None = None,
    top_k: int | None = None,
    seed: int | None = None,
    captions: str | os.PathLike | None = None,
    ir_encoder: str = IR_ENCODER,
) -> dict:
    """Evaluate the predictions in ``path`` as ``sgg-eval evaluate`` does with the same options (``--gt``,
    ``--psg``, ``--psg-root``, ``--boxes``, ``--protocol``, ``--stats``, ``--zeroshot``, ``--tau``,
    ``--iou-threshold``, ``--setting``, ``--split-file``, ``--longtail``, ``--jobs``). Box tasks take ``task``
    (predcls, sgcls, sgdet); panoptic SGG takes ``psg`` (``psg.json``) and ``psg_root`` (the folder its PNGs are
    relative to) and is evaluated as sgdet. ``jobs`` processes rank blocks in parallel, with the same numbers.
    ``text_graphs=True`` reads ``path`` as scene graphs written as text (``--text-graphs``), scored on ``gt`` under a
    text protocol with its own options (``--wordnet``, ``--spacy``, ``--sbert``, ``--top-k``, ``--seed``).
    ``captions`` and ``ir_encoder`` (``--captions``, ``--ir-encoder``) give a box evaluation under ``protocol=
    "sgg-benchmark"`` its InformativeRecall@K."""
    given = {"task": task, "gt": gt, "psg": psg, "psg_root": psg_root, "boxes": boxes, "protocol": protocol,
             "stats": stats, "zeroshot": zeroshot, "tau": tau, "iou_threshold": iou_threshold, "setting": setting,
             "split_file": split_file, "longtail": longtail, "jobs": jobs, "wordnet": wordnet, "spacy": spacy,
             "sbert": sbert, "top_k": top_k, "seed": seed}  # fmt: skip
    if (text_graphs or psg is not None) and (captions is not None or ir_encoder != IR_ENCODER):
        raise InputError("captions and ir_encoder are for box tasks (protocol sgg-benchmark)", field="captions")
    given.update(captions=captions, ir_encoder=ir_encoder)
    if text_graphs:
        return _text_graphs(path, given)
    from sgg_eval.text.evaluate import text_options

    if any(given[name] is not None and given[name] is not False for name in text_options()):
        raise InputError("wordnet, spacy, sbert, top_k and seed are options of text_graphs", field="text_graphs")
    return _panoptic(path, given) if psg is not None else _boxes(path, given)


def _text_graphs(path, o: dict) -> dict:
    if any(o[name] for name in ("task", "setting", "split_file")) or any(
        o[name] is not None for name in ("psg", "stats", "zeroshot")
    ):
        raise InputError("text_graphs takes gt, protocol and the text protocols' options only", field="text_graphs")
    from sgg_eval.text.evaluate import evaluate_text_graphs, text_options

    options = {name: o[name] for name in text_options()}
    return evaluate_text_graphs(path, _fspath(o["gt"]), o["protocol"], **options)


def _panoptic(path, o: dict) -> dict:
    if o["task"] not in (None, SGDET.name):
        raise InputError("panoptic SGG is evaluated as sgdet (predicted masks or boxes)", field="task")
    if o["gt"] is not None or o["zeroshot"] is not None or o["setting"] or o["split_file"]:
        raise InputError("psg takes no gt, zeroshot, setting or split_file", field="psg")
    from sgg_eval.panoptic.evaluate import run_psg_evaluation

    fs = _fspath
    return run_psg_evaluation(
        fs(path), fs(o["psg"]), fs(o["psg_root"]), protocol=o["protocol"] or PSG_PROTOCOL, boxes=o["boxes"],
        stats=fs(o["stats"]), tau=o["tau"], jobs=o["jobs"], iou_threshold=o["iou_threshold"], longtail=o["longtail"],
    )  # fmt: skip


def _boxes(path, o: dict) -> dict:
    if o["task"] is None:
        raise InputError("task is required (predcls, sgcls or sgdet), unless psg is given", field="task")
    if o["protocol"] in PSG_PROTOCOLS or o["boxes"] or o["psg_root"]:
        raise InputError(f"protocol {o['protocol']}, boxes and psg_root are for panoptic SGG: give psg", field="psg")
    from sgg_eval.boxes.evaluate import run_evaluation

    fs = _fspath
    return run_evaluation(
        fs(path), o["task"], gt=fs(o["gt"]), protocol=o["protocol"] or PROTOCOL, stats=fs(o["stats"]),
        zeroshot=o["zeroshot"], tau=o["tau"], iou_threshold=o["iou_threshold"], jobs=o["jobs"], setting=o["setting"],
        split_file=fs(o["split_file"]), longtail=o["longtail"], captions=fs(o["captions"]), ir_encoder=o["ir_encoder"],
    )  # fmt: skip


def _fspath(value):
    return None if value is None else os.fspath(value)
