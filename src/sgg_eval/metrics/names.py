"""Every metric name sgg-eval writes, generated from (family, K, variant): the metrics JSON's keys, MLflow's
metric keys and the tables' headers. The keys are those of the first release, kept exactly, because users'
scripts read them.

The scheme:

- ``<family>@<K>``: ``R@50``, ``mR@50``, ``zR@50``, ``F1@50``, ``A@50``, ``PR@50``, ``IMR@20``, ``wIMR@20``,
  ``R_tr@5``, ``wR_tr@5``, with K from ``sgg_eval.core.defaults`` (each family's list);
- ``<family>@<k>x``: K relative to the image's number of GT triplets, ``K = round(k · M)`` (``R@2x``, ``mR@2x``);
- the no-graph-constraint variant (every predicate of a pair competes) is ``ng`` glued to ``R`` (``ngR@50``)
  and ``ng-`` before any other family (``ng-mR@50``, ``ng-zR@50``, ``ng-F1@50``, ``ng-IMR@20``,
  ``ng-wIMR@20``);
- ``<family>@inf``: every prediction ranked (panoptic SGG: ``R@inf``, ``mR@inf``);
- without K: ``PRk`` (mean predicate rank), ``InstR`` (instance recall, SGDet), and the detector's COCO box AP
  ``det_mAP@50`` and ``det_mAP`` (SGDet);
- MLflow: ``<task>/<name>`` with ``@`` spelled ``_at_`` (MLflow refuses ``@``): ``predcls/ng-mR_at_50``;
- tables: the name itself;
- open-vocabulary protocols (docs/openvocab.md): a family on a subset of the GT rows is the family's name, ``_``,
  the subset, then ``@K`` (``R_novel_obj@50``: novel-object recall; ``R_novel_rel@50``; ``ng-mR_novel_rel@50``);
  PGSG's ``mR_novel@K`` and ``mR_seen@K``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sgg_eval.core.defaults import IMR_KS, OIV6_RECALL_KS, RECALL_KS, RELATIVE_KS, TRIPLET_KS
from sgg_eval.core.protocols import protocol as protocol_record


@dataclass(frozen=True)
class Block:
    """Families written together at each K of ``ks`` (``None``: a family without K): at each K, ``families`` on
    the GC list, then (``ng``) their NG variants, then ``plain`` (families without an NG variant)."""

    ks: tuple
    families: tuple[str, ...]
    ng: bool = False
    plain: tuple[str, ...] = ()
    relative: bool = False


# Every family either product writes, in document order (docs/metrics.md defines each): the one table of the
# families, which the document (``metrics.document``), the names below and the tests read.
TABLE = (
    Block(RECALL_KS, ("R", "mR", "F1", "zR"), ng=True, plain=("A", "PR")),
    Block(IMR_KS, ("IMR", "wIMR"), ng=True),
    Block(TRIPLET_KS, ("R_tr", "wR_tr")),
    Block((None,), ("PRk", "InstR")),
    Block(("inf",), ("R", "mR")),
    Block(RELATIVE_KS, ("R", "mR"), relative=True),
)


# The families with an NG variant, the families written per K of each list, the relative ones and those without K:
# read off the table.
NG_FAMILIES = tuple(dict.fromkeys(f for b in TABLE if b.ng for f in b.families))
BY_K = {b.ks: b.families + b.plain for b in TABLE if not b.relative and None not in b.ks and "inf" not in b.ks}
RELATIVE_FAMILIES = tuple(f for b in TABLE if b.relative for f in b.families)
WITHOUT_K = tuple(f for b in TABLE if b.ks == (None,) for f in b.families)
DETECTOR = ("det_mAP@50", "det_mAP")
# Open Images V6 (``--protocol oiv6``, docs/oiv6.md): the OI evaluator's R@K (micro, as the tables print it) and
# ``R_per_image@K`` at its own K; the VG-style evaluator's per-image graph-constrained recall, renamed
# ``R_classic@K`` there so that it is never taken for the tables' R@K; the AP family, without K; and the
# per-predicate APs.
OIV6_RECALLS = ("R", "R_per_image")
OIV6_CLASSIC = "R_classic"
OIV6_AP = ("wmAP_rel", "wmAP_phr", "mAP_rel", "mAP_phr", "score_wtd", "score")
OIV6_PER_PREDICATE = ("AP_rel", "AP_phr")


# Open-vocabulary protocols (docs/openvocab.md): the GT-row subsets a protocol reports the recall of, PGSG's
# means over its novel and seen predicates, and sgg-eval's own families on each subset (beyond the protocol).
OV_SUBSETS = ("novel_obj", "novel_rel")
PGSG_MEANS = ("mR_novel", "mR_seen")
OV_OURS = (("R", True), ("mR", False), ("mR", True), ("zR", False), ("zR", True))  # (family, ng) at RECALL_KS
OV_OURS_IMR = ("IMR", "wIMR")  # at IMR_KS


# Text scene graphs scored as sets (``--text-graphs --protocol sets``, issue 48): recall, precision and F1 per image
# and pooled, and mR, graph-constrained (one predicate per answered pair) and not (``ng-``).
TEXT_SET_VALUES = ("R", "R_pooled", "P", "P_pooled", "F1", "F1_pooled", "mR")


# R1-SGG's own recall loop (``--protocol r1sgg``, ``text.r1sgg.loop``): any-match recall over every GT image, pooled
# and per image, and its two mean recalls (predicates present in the GT, each rounded to 4 decimals).
R1_LOOP_VALUES = ("ngR_loop", "ng-mR_loop", "ngR_loop_per_image", "ng-mR_loop_per_image")
# SceneGraphVLM's strict numbers (``--protocol sgvlm``, ``text.sgvlm.metrics``), under the keys its evaluator
# writes: macro means over every sample of object and relation precision, recall, F1, and their mean F1.
SGVLM_VALUES = ("Obj_P@50_strict", "Obj_Recall_strict", "Obj_F1_strict", "Rel_P@50_strict", "Rel_Recall_strict",
                "Rel_F1_strict", "SGG_Score_strict")  # fmt: skip
# ASMv2's open-ended PSG numbers (``--protocol asmv2``, ``text.asmv2.metrics``): any-match recall pooled over the
# answered questions' GT tuples, and its mean over the predicates present.
ASMV2_VALUES = ("ngR_asmv2", "ng-mR_asmv2")
# ProVision's scene-graph numbers (``--protocol provision``, ``text.provision.metrics``): any-match recall pooled
# over the GT triplets of the answers it reads, its mean over the predicates present, subject-only recall, box coverage.
PROVISION_VALUES = ("ngR_provision", "ng-mR_provision", "objR_provision", "coverage_provision")


def text_set_name(value: str, ng: bool = False) -> str:
    """``R_set``, ``P_set_pooled``, ``ng-mR_set``: a value of the sets protocol, NG with ``ng``."""
    family, _, pooled = value.partition("_")
    return f"{'ng-' if ng else ''}{family}_set{'_' + pooled if pooled else ''}"


def metric_name(family: str, k: int | str | None = None, *, ng: bool = False, relative: bool = False) -> str:
    """The name of ``family`` at ``k`` (an int, or ``"inf"``; ``relative``: ``k`` times the image's GT size),
    its NG variant if ``ng``."""
    if ng and family not in NG_FAMILIES:
        raise ValueError(f"{family} has no NG variant")
    base = ("ngR" if family == "R" else f"ng-{family}") if ng else family
    if k is None:
        return base
    return f"{base}@{k}x" if relative else f"{base}@{k}"


def subset_name(family: str, subset: str, k: int, *, ng: bool = False) -> str:
    """``family`` on the GT-row ``subset`` at ``k`` (``R_novel_obj@50``, ``ngR_novel_rel@20``)."""
    return f"{metric_name(family, ng=ng)}_{subset}@{k}"


def openvocab_subsets(setting: str) -> tuple[str, ...]:
    """The subsets an OvSGTR/VS3 setting reports: novel objects (``ovd``), novel predicates (``ovr``), both."""
    return tuple(s for s, on in zip(OV_SUBSETS, ("ovd" in setting, setting in ("ovr", "ovd+r"))) if on)


def openvocab_metric_names(protocol: str, setting: str, gt_pairs: bool = False) -> list[str]:
    """Every name of the ``metrics`` of an open-vocabulary document (``--protocol ovsgtr|vs3|pgsg``); ``gt_pairs``:
    the task's predictions are given the GT boxes (PredCls, SGCls: A@K is reported)."""
    if protocol_record(protocol).means_ks:
        return [metric_name(f, k) for f in ("R", "mR", *PGSG_MEANS) for k in protocol_record(protocol).means_ks]
    names = []
    for k in RECALL_KS:
        names += [
            metric_name("R", k),
            metric_name("R", k, ng=True),
            metric_name("mR", k),
            metric_name("mR", k, ng=True),
        ]
        names += [metric_name("zR", k)] if protocol_record(protocol).reports_zero_shot else []
        names += [metric_name("zR", k, ng=True)] + ([metric_name("A", k)] if gt_pairs else [])
        names += [subset_name("R", s, k) for s in openvocab_subsets(setting)]
    return names


def openvocab_table(protocol: str, setting: str) -> tuple[str, ...]:
    """The columns of an open-vocabulary table: R@K, the protocol's novel numbers and mR@K, at K = 50 and 100."""
    ks = (50, 100)
    if protocol_record(protocol).means_ks:
        novel = [metric_name(f, k) for f in PGSG_MEANS for k in ks]
    else:
        novel = [subset_name("R", s, k) for s in openvocab_subsets(setting) for k in ks]
    return tuple([metric_name("R", k) for k in ks] + novel + [metric_name("mR", k) for k in ks])


def mlflow_key(task: str, name: str) -> str:
    """``predcls/R_at_50``: the MLflow metric key of ``name`` for ``task`` (MLflow refuses ``@``)."""
    return f"{task}/{name.replace('@', '_at_')}"


# The columns of an OIv6 table, in BGNN's order (PySGG's MODELZOO.md): mR@50, R@50, wmAP_rel, wmAP_phr, score_wtd.
OIV6_TABLE = (metric_name("mR", 50), metric_name("R", 50), "wmAP_rel", "wmAP_phr", "score_wtd")


def oiv6_metric_names() -> list[str]:
    """Every name of the ``metrics`` of an Open Images V6 document (``--protocol oiv6``)."""
    names = [metric_name(family, k) for family in OIV6_RECALLS for k in OIV6_RECALL_KS] + list(OIV6_AP)
    names += [metric_name(OIV6_CLASSIC, k) for k in RECALL_KS] + [metric_name("mR", k) for k in RECALL_KS]
    return names + [metric_name("R", k, ng=True) for k in RECALL_KS]


def box_metric_names() -> list[str]:
    """Every name a box evaluation (PredCls, SGCls, SGDet) writes, null or not."""
    names = []
    for ks, families in BY_K.items():
        for family in families:
            for k in ks:
                names.append(metric_name(family, k))
                if family in NG_FAMILIES:
                    names.append(metric_name(family, k, ng=True))
    names += [metric_name(f, k, relative=True) for f in RELATIVE_FAMILIES for k in RELATIVE_KS]
    return names + list(WITHOUT_K) + list(DETECTOR)
