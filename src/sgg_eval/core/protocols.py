"""Every evaluation protocol sgg-eval computes, declared once: one :class:`Protocol` record each, in one registry
(:data:`REGISTRY`). A protocol is what a user chooses (``--protocol``), a paper cites and the documents name; its
record says what product it scores, which tool defines it (repository, commit, file) and the facts about it that
the layers ask (how its loader prepares the GT boxes, how its tool reads a GT PNG, its open-vocabulary settings).
``sgg-eval protocols`` lists the registry; ``core.defaults`` derives its protocol lists from it.

The products: ``boxes`` (box SGG: the metric family's ranking engine), ``panoptic`` (PSG: segment masks or boxes,
``panoptic/``) and ``text`` (scene graphs written as text by multimodal LLMs, ``--text-graphs``); a text protocol
that scores PSG answers says so in ``scores``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sgg_eval.core.tasks import SGDET, TASKS

BOXES, PANOPTIC, TEXT = "boxes", "panoptic", "text"
PRODUCTS = (BOXES, PANOPTIC, TEXT)


@dataclass(frozen=True)
class Source:
    """Where a protocol is defined: the ``tool``, ``where`` it was read (repository @ commit, a package's version,
    a paper), and the ``file`` that computes it there."""

    tool: str
    where: str
    file: str


@dataclass(frozen=True)
class Protocol:
    """One protocol (module docstring). ``tasks``: what it scores (box tasks, ``sgdet`` for PSG's segments, or
    ``text graphs``); ``scores``: the dataset a text protocol's answers are for, where it is fixed; ``gt_clipped``
    (boxes): whether its loader clips GT boxes to ``[0, W − 1] × [0, H − 1]``; ``png_reader`` (panoptic): how its
    tool decodes a GT PNG (``pillow``: the array as it is, RGB or RGBA; ``detectron2``: EXIF orientation applied,
    any mode converted to RGB); ``settings``: its open-vocabulary settings (the first its default)."""

    name: str
    product: str
    summary: str
    source: Source
    tasks: tuple[str, ...]
    scores: str = ""
    gt_clipped: bool | None = None
    png_reader: str | None = None
    settings: tuple[str, ...] = ()

    @property
    def own(self) -> bool:
        """Defined by sgg-eval itself (no other tool's code to equal)."""
        return self.source.tool == SGG_EVAL


SGG_EVAL = "sgg-eval"
_SGB = "Scene-Graph-Benchmark.pytorch"
_SGB_AT = "KaihuaTang/Scene-Graph-Benchmark.pytorch @ 6f75881"
_SGB_EVAL = "maskrcnn_benchmark/data/datasets/evaluation/vg/sgg_eval.py"
_TEXT = ("text graphs",)
_SEGMENTS = (SGDET.name,)  # PSG's task: the model finds the segments

REGISTRY: tuple[Protocol, ...] = (
    Protocol("reference", BOXES, "Scene-Graph-Benchmark.pytorch's evaluator: images without a predicted pair skipped",
             Source(_SGB, _SGB_AT, _SGB_EVAL), TASKS, gt_clipped=True),
    Protocol("strict", BOXES, "the reference, with an image without a predicted pair counted as all-miss",
             Source(SGG_EVAL, "docs/definitions.md §2", "metrics/engine.py"), TASKS, gt_clipped=True),
    Protocol("oiv6", BOXES, "Open Images V6 as BGNN and PySGG score it: micro R@K, mR@50, wmAP_rel/phr, score_wtd",
             Source("PySGG", "SHTUPLUS/PySGG @ a63942a", "pysgg/data/datasets/evaluation/oi/oi_evaluation.py"),
             TASKS, gt_clipped=True),
    Protocol("ovsgtr", BOXES, "OvSGTR's open-vocabulary recall: novel objects and relations, GT merged and cut",
             Source("OvSGTR", "gpt4vision/OvSGTR @ 91afa5b", "datasets/sgg_eval.py"), TASKS, gt_clipped=False,
             settings=("ovd+r", "ovd", "ovr")),
    Protocol("vs3", BOXES, "VS3's open-vocabulary recall of triplets with both ends novel",
             Source("VS3", "zyong812/VS3_CVPR23 @ 2561388", _SGB_EVAL), TASKS, gt_clipped=True, settings=("ovd",)),
    Protocol("pgsg", BOXES, "PGSG's (Pix2Grp's) mean recall over its novel and seen predicates, K to 300",
             Source("Pix2Grp", "SHTUPLUS/Pix2Grp_CVPR2024 @ cff7420", "lavis/tasks/evaluation/sgg_vg_eval.py"),
             TASKS, gt_clipped=False, settings=("ovr",)),
    Protocol("sgbench", PANOPTIC, "what the sgbench 1.0.0 command computes (the SGBench paper's tool)",
             Source("sgbench", "PyPI sgbench 1.0.0", "sgbench/file.py"), _SEGMENTS, png_reader="pillow"),
    Protocol("sgbench-paper", PANOPTIC, "the SGBench paper's algorithms: one prediction per GT, graph constraint",
             Source("SGBench paper", "arXiv 2404.09616 (Lorenz et al. 2024)", "Algorithms 2-6, Eq. 2"),
             _SEGMENTS, png_reader="pillow"),
    Protocol("openpsg", PANOPTIC, "OpenPSG's evaluator: the numbers PSG papers publish",
             Source("OpenPSG", "Jingkang50/OpenPSG @ 34b2a89", "openpsg/evaluation/sgg_eval.py"), _SEGMENTS,
             png_reader="detectron2"),
    Protocol("sets", TEXT, "sgg-eval's own: an answer scored as a set of triplets, one-to-one",
             Source(SGG_EVAL, "docs/text_graphs.md", "metrics/text_sets.py"), _TEXT),
    Protocol("r1sgg", TEXT, "R1-SGG's recall loop and its Scene-Graph-Benchmark evaluator, with the tie range",
             Source("R1-SGG", "gpt4vision/R1-SGG @ e4de64d", "src/vg150_eval.py"), _TEXT),
    Protocol("sgvlm", TEXT, "SceneGraphVLM's strict scores, Hungarian-matched",
             Source("SceneGraphVLM", "markus0440/SceneGraphVLM @ a6197da",
                    "metrics/qwen-bench/eval/eval_sgg_metrics_with_qwen.py"), _TEXT, scores="psg"),
    Protocol("asmv2", TEXT, "ASMv2's open-ended PSG recall over the answered questions",
             Source("ASMv2", "OpenGVLab/all-seeing @ 5cb8cea", "all-seeing-v2/llava/eval/eval_psg.py"), _TEXT,
             scores="psg"),
    Protocol("provision", TEXT, "ProVision's scene-graph recall, names read by SBERT",
             Source("ProVision", "JieyuZ2/ProVision @ 579ef22", "osprey/eval/psg/get_scene_graph_metric.py"),
             _TEXT, scores="psg"),
)  # fmt: skip
BY_NAME = {p.name: p for p in REGISTRY}


def protocol(name: str) -> Protocol:
    """The protocol called ``name``; ``ValueError`` naming the choices when there is none."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"protocol must be one of {', '.join(BY_NAME)}, got {name!r}") from None


def names(product: str) -> tuple[str, ...]:
    """The protocols of ``product``, in the registry's order (the first is its default)."""
    return tuple(p.name for p in REGISTRY if p.product == product)
