"""Every evaluation protocol sgg-eval computes, declared once: one :class:`Protocol` record each, in one registry
(:data:`REGISTRY`). A protocol is what a user chooses (``--protocol``), a paper cites and the documents name; its
record says what product it scores, which tool defines it (repository, commit, file) and the facts about it that
the layers ask (how its loader prepares the GT boxes, how its tool reads a GT PNG, its open-vocabulary settings).
``sgg-eval protocols`` lists the registry; ``core.defaults`` derives its protocol lists from it.

The products: ``boxes`` (box SGG: the metric family's ranking engine), ``panoptic`` (PSG: segment masks or boxes,
``panoptic/``), ``text`` (scene graphs written as text by multimodal LLMs, ``--text-graphs``) and ``video`` (video
scene graphs on Action Genome, ``video/``, ``--ag``); a text protocol that scores PSG answers says so in ``scores``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sgg_eval.core.tasks import SGDET, TASKS, task_spec

BOXES, PANOPTIC, TEXT, VIDEO = "boxes", "panoptic", "text", "video"
# The document a box protocol writes: the reference's family, Open Images V6's numbers first
# (metrics/oiv6_document.py), or SGG-Benchmark's (metrics/sgg_benchmark_document.py).
REFERENCE_DOCUMENT, OPEN_IMAGES_DOCUMENT, SGG_BENCHMARK_DOCUMENT = "reference", "open-images", "sgg-benchmark"
# How a panoptic protocol matches predicted instances to GT ones (panoptic/matching.py, panoptic/work.py): each
# prediction to its best GT (several may take one), one-to-one, or each predicted triplet on its own (no mapping).
EACH_TO_BEST, ONE_TO_ONE, PER_TRIPLET = "each to best", "one-to-one", "per triplet"
# Its mean recall: the mean over every predicate (absent: 0), null while a predicate never occurs in the evaluated GT,
# or the mean over images of each image's mean over its predicates.
MR_OVER_PREDICATES, MR_NULL_IF_UNSEEN, MR_PER_IMAGE = "over predicates", "null if unseen", "per image"
# Its PRk: none, every defined (image, predicate) cell pooled, or each image's cells averaged, then the images.
PRK_NONE, PRK_POOLED, PRK_PER_IMAGE = "none", "pooled", "per image"
PRODUCTS = (BOXES, PANOPTIC, TEXT, VIDEO)


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
    any mode converted to RGB); ``settings``: its open-vocabulary settings (the first its default).

    Box protocols: ``counts_unpredicted``, whether an image without a predicted pair counts as all-miss (else it
    is skipped, as the reference does); ``skips_first``, how many images at the head of the test split its loader
    leaves out; ``collects``, what the engine gathers beside the ranking (``oi_records``: the Open Images
    evaluator's records, for its own document); ``split_key``, the VG150 h5 key of its loader's split codes;
    ``printed_as``, what its tool prints the novel subsets' recall as; ``tasks_why``, why it scores only its ``tasks``;
    ``merges_gt``, whether its loader merges same-class GT boxes and caps them (OvSGTR's); ``reports_zero_shot``,
    whether its metrics hold zR@K; ``means_ks``, the K of its own mean recalls over the novel and the seen
    predicates, reported instead of the novel subsets' recall (PGSG's); ``document``, the document it writes;
    ``box_iou``, the IoU its matching computes (a key of ``metrics.iou.BOX_IOUS``: ``sgb``, Scene-Graph-Benchmark's
    +1 pixel; ``sgg_benchmark``, +1 in the intersection only); ``gt_clip_edge``, where its loader clips GT boxes
    past the border: to ``[0, W − edge] × [0, H − edge]`` (1: Scene-Graph-Benchmark's ``W − 1``; 0: ``W``).

    Panoptic protocols: ``matching`` (``EACH_TO_BEST``, ``ONE_TO_ONE``, ``PER_TRIPLET``), ``graph_constrained``
    (whether the graph constraint is applied to the predicted triplets, not taken as given), ``mean_recall``
    (``MR_*``) and ``prk`` (``PRK_*``); ``counts_unpredicted`` says whether a test image without a prediction counts
    as all-miss, as for boxes.

    Text protocols: ``gt``, whether the answers are scored on a GT file (``required``), carry their GT
    (``refused``) or either (``optional``); ``options``, the options only it takes (the command's names, ``-``
    as ``_``), with their defaults; ``runner`` and ``printer``, the functions that score the answers
    (``runner(answers, gt, **options) -> document``; ``gt`` left out where it is refused) and print the lines its
    tool prints, as ``module:function`` so this record imports none of them; ``in_pipeline``, whether the pipeline
    can score a text model with it (it reads the GT from a split store, as ``sets`` does)."""

    name: str
    product: str
    summary: str
    source: Source
    tasks: tuple[str, ...]
    scores: str = ""
    gt_clipped: bool | None = None
    png_reader: str | None = None
    settings: tuple[str, ...] = ()
    counts_unpredicted: bool = False
    skips_first: int = 0
    collects: tuple[str, ...] = ()
    split_key: str = "split"
    printed_as: str = ""
    merges_gt: bool = False
    reports_zero_shot: bool = False
    means_ks: tuple[int, ...] = ()
    tasks_why: str = ""
    document: str = REFERENCE_DOCUMENT
    matching: str = ""
    graph_constrained: bool = False
    mean_recall: str = ""
    prk: str = ""
    gt: str = "optional"
    in_pipeline: bool = False
    options: tuple[tuple[str, object], ...] = ()
    runner: str = ""
    printer: str = ""
    constraints: tuple[str, ...] = ()
    min_video_frames: int = 1
    relations_as_set: bool = False
    iou_plus_one: bool = False
    small_boxes: bool = False
    box_iou: str = "sgb"
    gt_clip_edge: int = 1

    def reads_small_boxes(self, task: str) -> bool:
        """Whether a video protocol scores ``task`` on its authors' small-box-filtered object file: STTran's does
        wherever the model predicts the labels (SGCls, SGDet; its test.py)."""
        return self.small_boxes and not task_spec(task).gt_labels

    @property
    def own(self) -> bool:
        """Defined by sgg-eval itself (no other tool's code to equal)."""
        return self.source.tool == SGG_EVAL


SGG_EVAL = "sgg-eval"
_SGB = "Scene-Graph-Benchmark.pytorch"
_SGB_AT = "KaihuaTang/Scene-Graph-Benchmark.pytorch @ 6f75881"
_SGB_EVAL = "maskrcnn_benchmark/data/datasets/evaluation/vg/sgg_eval.py"
_TEXT = ("text graphs",)
# ProVision's name reader and its random cut of an answer's relations (its script's defaults).
PROVISION_SBERT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
PROVISION_TOP_K = 50
# STTran's test.py: the semi constraint's threshold; the constraint its table prints first; what its model's
# attention output is (its evaluator applies the softmax).
STTRAN_SEMI_THRESHOLD, STTRAN_CONSTRAINT, STTRAN_ATTENTION = 0.9, "with", "logits"
STTRAN_CONSTRAINTS, STTRAN_ATTENTION_KINDS = ("with", "semi", "no"), ("logits", "probabilities")
STTRAN_ALL = "all"  # --constraint all: every constraint the protocol's tool builds, from one reading
STTRAN_MIN_VIDEO_FRAMES = 3  # STTran's loader keeps a video with more than 2 frames
# OED's engine.py builds the with and no evaluators only; its model's attention output is already probabilities.
OED_CONSTRAINTS, OED_ATTENTION = ("with", "no"), "probabilities"


def _run(module: str, function: str) -> str:
    return f"sgg_eval.text.{module}:{function}"


def _show(name: str) -> str:
    return f"sgg_eval.text.printed:show_{name}"


_SEGMENTS = (SGDET.name,)  # PSG's task: the model finds the segments
_OVSGTR_TASKS = (SGDET.name,)
_OVSGTR_WHY = (
    "OvSGTR evaluates every task in sgdet mode, over its own per-class NMS of the GT boxes; sgg-eval "
    "reproduces its SGDet only"
)

REGISTRY: tuple[Protocol, ...] = (
    Protocol("reference", BOXES, "Scene-Graph-Benchmark.pytorch's evaluator: images without a predicted pair skipped",
             Source(_SGB, _SGB_AT, _SGB_EVAL), TASKS, gt_clipped=True),
    Protocol("strict", BOXES, "the reference, with an image without a predicted pair counted as all-miss",
             Source(SGG_EVAL, "docs/definitions.md §2", "metrics/engine.py"), TASKS, gt_clipped=True,
             counts_unpredicted=True),
    Protocol("oiv6", BOXES, "Open Images V6 as BGNN and PySGG score it: micro R@K, mR@50, wmAP_rel/phr, score_wtd",
             Source("PySGG", "SHTUPLUS/PySGG @ a63942a", "pysgg/data/datasets/evaluation/oi/oi_evaluation.py"),
             TASKS, gt_clipped=True, collects=("oi_records",), document=OPEN_IMAGES_DOCUMENT),
    Protocol("ovsgtr", BOXES, "OvSGTR's open-vocabulary recall: novel objects and relations, GT merged and cut",
             Source("OvSGTR", "gpt4vision/OvSGTR @ 91afa5b", "datasets/sgg_eval.py"), _OVSGTR_TASKS,
             gt_clipped=False, settings=("ovd+r", "ovd", "ovr"), tasks_why=_OVSGTR_WHY, merges_gt=True,
             reports_zero_shot=True, split_key="split_GLIPunseen", printed_as='OvSGTR prints it as "zR"'),
    Protocol("vs3", BOXES, "VS3's open-vocabulary recall of triplets with both ends novel",
             Source("VS3", "zyong812/VS3_CVPR23 @ 2561388", _SGB_EVAL), TASKS, gt_clipped=True, settings=("ovd",),
             printed_as='VS3 prints it as "zR"'),
    Protocol("pgsg", BOXES, "PGSG's (Pix2Grp's) mean recall over its novel and seen predicates, K to 300",
             Source("Pix2Grp", "SHTUPLUS/Pix2Grp_CVPR2024 @ cff7420", "lavis/tasks/evaluation/sgg_vg_eval.py"),
             TASKS, gt_clipped=False, settings=("ovr",), skips_first=5000,
             means_ks=(20, 50, 100, 200, 300)),
    Protocol("sgg-benchmark", BOXES, "SGG-Benchmark's (REACT's) evaluator: +1 in the IoU's intersection only, F1",
             Source("SGG-Benchmark", "Maelic/SGG-Benchmark @ a664201",
                    "sgg_benchmark/data/datasets/evaluation/sgg_metrics.py"), TASKS, gt_clipped=True, gt_clip_edge=0,
             counts_unpredicted=True, box_iou="sgg_benchmark", document=SGG_BENCHMARK_DOCUMENT),
    Protocol("sgbench", PANOPTIC, "what the sgbench 1.0.0 command computes (the SGBench paper's tool)",
             Source("sgbench", "PyPI sgbench 1.0.0", "sgbench/file.py"), _SEGMENTS, png_reader="pillow",
             counts_unpredicted=True, matching=EACH_TO_BEST, mean_recall=MR_NULL_IF_UNSEEN, prk=PRK_POOLED),
    Protocol("sgbench-paper", PANOPTIC, "the SGBench paper's algorithms: one prediction per GT, graph constraint",
             Source("SGBench paper", "arXiv 2404.09616 (Lorenz et al. 2024)", "Algorithms 2-6, Eq. 2"),
             _SEGMENTS, png_reader="pillow", counts_unpredicted=True, matching=ONE_TO_ONE, graph_constrained=True,
             mean_recall=MR_PER_IMAGE, prk=PRK_PER_IMAGE),
    Protocol("openpsg", PANOPTIC, "OpenPSG's evaluator: the numbers PSG papers publish",
             Source("OpenPSG", "Jingkang50/OpenPSG @ 34b2a89", "openpsg/evaluation/sgg_eval.py"), _SEGMENTS,
             png_reader="detectron2", matching=PER_TRIPLET, mean_recall=MR_OVER_PREDICATES, prk=PRK_NONE),
    Protocol("sets", TEXT, "sgg-eval's own: an answer scored as a set of triplets, one-to-one",
             Source(SGG_EVAL, "docs/text_graphs.md", "text/sets.py"), _TEXT, gt="required",
             runner=_run("sets_evaluate", "run_text_evaluation"), printer=_show("sets"),
             in_pipeline=True),
    Protocol("r1sgg", TEXT, "R1-SGG's recall loop and its Scene-Graph-Benchmark evaluator, with the tie range",
             Source("R1-SGG", "gpt4vision/R1-SGG @ e4de64d", "src/vg150_eval.py"), _TEXT, gt="required",
             options=(("wordnet", False),), runner=_run("r1sgg.evaluate", "run_r1sgg_evaluation"),
             printer=_show("r1sgg")),
    Protocol("sgvlm", TEXT, "SceneGraphVLM's strict scores, Hungarian-matched",
             Source("SceneGraphVLM", "markus0440/SceneGraphVLM @ a6197da",
                    "metrics/qwen-bench/eval/eval_sgg_metrics_with_qwen.py"), _TEXT, scores="psg", gt="refused",
             runner=_run("sgvlm.evaluate", "run_sgvlm_evaluation"), printer=_show("sgvlm")),
    Protocol("asmv2", TEXT, "ASMv2's open-ended PSG recall over the answered questions",
             Source("ASMv2", "OpenGVLab/all-seeing @ 5cb8cea", "all-seeing-v2/llava/eval/eval_psg.py"), _TEXT,
             scores="psg", gt="required", options=(("spacy", False),),
             runner=_run("asmv2.evaluate", "run_asmv2_evaluation"), printer=_show("asmv2")),
    Protocol("provision", TEXT, "ProVision's scene-graph recall, names read by SBERT",
             Source("ProVision", "JieyuZ2/ProVision @ 579ef22", "osprey/eval/psg/get_scene_graph_metric.py"),
             _TEXT, scores="psg", options=(("sbert", PROVISION_SBERT_MODEL), ("top_k", PROVISION_TOP_K), ("seed", 0)),
             runner=_run("provision.evaluate", "run_provision"), printer=_show("provision")),
    Protocol("sttran", VIDEO, "STTran's Action Genome recall (with / semi / no constraint), both mean recalls",
             Source("STTran", "yrcong/STTran @ 6b559e1", "lib/evaluation_recall.py"), TASKS,
             constraints=STTRAN_CONSTRAINTS, min_video_frames=STTRAN_MIN_VIDEO_FRAMES,
             iou_plus_one=True, small_boxes=True,
             options=(("constraint", STTRAN_CONSTRAINT), ("semi_threshold", STTRAN_SEMI_THRESHOLD),
                      ("attention", STTRAN_ATTENTION))),
    Protocol("oed", VIDEO, "OED's Action Genome recall: with / no constraint, IoU without the +1, one-frame videos",
             Source("OED", "guanw-pku/OED @ 4880df7", "models/evaluate_recall.py"), TASKS, gt_clipped=True,
             constraints=OED_CONSTRAINTS, min_video_frames=1, relations_as_set=True,
             options=(("constraint", OED_CONSTRAINTS[0]), ("attention", OED_ATTENTION))),
)  # fmt: skip
BY_NAME = {p.name: p for p in REGISTRY}


def protocol(name: str) -> Protocol:
    """The protocol called ``name``; ``ValueError`` naming the choices when there is none."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"protocol must be one of {', '.join(BY_NAME)}, got {name!r}") from None


def register(record: Protocol) -> None:
    """Add ``record`` to the registry: a new protocol (CONTRIBUTING.md, "Adding a protocol"). Every layer that
    lists protocols asks :func:`registered` or :func:`names` when it runs, so the command's choices, the API and the
    params check find it."""
    global REGISTRY
    if record.name in BY_NAME:
        raise ValueError(f"a protocol called {record.name!r} is registered already")
    if record.product not in PRODUCTS:
        raise ValueError(f"product must be one of {', '.join(PRODUCTS)}, got {record.product!r}")
    REGISTRY = (*REGISTRY, record)
    BY_NAME[record.name] = record


def registered() -> tuple[Protocol, ...]:
    """Every protocol, built-in and registered, in the registry's order."""
    return REGISTRY


def resolve(ref: str):
    """The function a record names as ``module:function`` (its ``runner``, its ``printer``)."""
    from importlib import import_module

    module, _, function = ref.partition(":")
    return getattr(import_module(module), function)


def names(product: str) -> tuple[str, ...]:
    """The protocols of ``product``, in the registry's order (the first is its default)."""
    return tuple(p.name for p in REGISTRY if p.product == product)
