"""``sgg_eval.evaluate_file``: ``sgg-eval evaluate`` as a function, for scripts and notebooks. It returns the
document the command writes with ``-o`` (the same dict, ``json.dump`` of it is the same file), and raises
:class:`InputError` with the line the command prints."""

from __future__ import annotations

import os

from sgg_eval.core.defaults import IOU_THRESHOLD, LONGTAIL_RULE, PROTOCOL, PSG_PROTOCOL, PSG_PROTOCOLS, TAU
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
) -> dict:
    """Evaluate the predictions in ``path`` as ``sgg-eval evaluate`` does with the same options (``--gt``,
    ``--psg``, ``--psg-root``, ``--boxes``, ``--protocol``, ``--stats``, ``--zeroshot``, ``--tau``,
    ``--iou-threshold``, ``--setting``, ``--split-file``, ``--longtail``, ``--jobs``). Box tasks take ``task``
    (predcls, sgcls, sgdet); panoptic SGG takes ``psg`` (``psg.json``) and ``psg_root`` (the folder its PNGs are
    relative to) and is evaluated as sgdet. ``jobs`` processes rank blocks in parallel, with the same numbers.
    ``text_graphs=True`` reads ``path`` as scene graphs written as text (``--text-graphs``), scored on ``gt`` under a
    text protocol with its own options (``--wordnet``, ``--spacy``, ``--sbert``, ``--top-k``, ``--seed``)."""
    fs = _fspath
    if text_graphs:
        if task is not None or psg is not None or stats is not None or zeroshot is not None or setting or split_file:
            raise InputError("text_graphs takes gt, protocol and the text protocols' options only", field="text_graphs")
        from sgg_eval.text.evaluate import evaluate_text_graphs

        return evaluate_text_graphs(
            path, fs(gt), protocol, wordnet=wordnet, spacy=spacy, sbert=sbert, top_k=top_k, seed=seed
        )
    if wordnet or spacy or sbert is not None or top_k is not None or seed is not None:
        raise InputError("wordnet, spacy, sbert, top_k and seed are options of text_graphs", field="text_graphs")
    if psg is not None:
        if task not in (None, SGDET.name):
            raise InputError("panoptic SGG is evaluated as sgdet (predicted masks or boxes)", field="task")
        if gt is not None or zeroshot is not None or setting or split_file:
            raise InputError("psg takes no gt, zeroshot, setting or split_file", field="psg")
        from sgg_eval.panoptic.evaluate import run_psg_evaluation

        return run_psg_evaluation(
            fs(path),
            fs(psg),
            fs(psg_root),
            protocol=protocol or PSG_PROTOCOL,
            boxes=boxes,
            stats=fs(stats),
            tau=tau,
            jobs=jobs,
            iou_threshold=iou_threshold,
            longtail=longtail,
        )
    if task is None:
        raise InputError("task is required (predcls, sgcls or sgdet), unless psg is given", field="task")
    if protocol in PSG_PROTOCOLS or boxes or psg_root:
        raise InputError(f"protocol {protocol}, boxes and psg_root are for panoptic SGG: give psg", field="psg")
    from sgg_eval.boxes.evaluate import run_evaluation

    return run_evaluation(
        fs(path),
        task,
        gt=fs(gt),
        protocol=protocol or PROTOCOL,
        stats=fs(stats),
        zeroshot=zeroshot,
        tau=tau,
        iou_threshold=iou_threshold,
        jobs=jobs,
        setting=setting,
        split_file=fs(split_file),
        longtail=longtail,
    )


def _fspath(value):
    return None if value is None else os.fspath(value)
