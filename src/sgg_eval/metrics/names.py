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
- tables: the name itself.
"""

from __future__ import annotations

from sgg_eval.core.defaults import IMR_KS, OIV6_RECALL_KS, RECALL_KS, RELATIVE_KS, TRIPLET_KS

# The families with an NG variant, and the families written per K of each list.
NG_FAMILIES = ("R", "mR", "zR", "F1", "IMR", "wIMR")
BY_K = {RECALL_KS: ("R", "mR", "zR", "F1", "A", "PR"), IMR_KS: ("IMR", "wIMR"), TRIPLET_KS: ("R_tr", "wR_tr")}
RELATIVE_FAMILIES = ("R", "mR")
WITHOUT_K = ("PRk", "InstR")
DETECTOR = ("det_mAP@50", "det_mAP")
# Open Images V6 (``--protocol oiv6``, docs/oiv6.md): the OI evaluator's R@K (micro, as the tables print it) and
# ``R_per_image@K`` at its own K; the VG-style evaluator's per-image graph-constrained recall, renamed
# ``R_classic@K`` there so that it is never taken for the tables' R@K; the AP family, without K; and the
# per-predicate APs.
OIV6_RECALLS = ("R", "R_per_image")
OIV6_CLASSIC = "R_classic"
OIV6_AP = ("wmAP_rel", "wmAP_phr", "mAP_rel", "mAP_phr", "score_wtd", "score")
OIV6_PER_PREDICATE = ("AP_rel", "AP_phr")


def metric_name(family: str, k: int | str | None = None, *, ng: bool = False, relative: bool = False) -> str:
    """The name of ``family`` at ``k`` (an int, or ``"inf"``; ``relative``: ``k`` times the image's GT size),
    its NG variant if ``ng``."""
    if ng and family not in NG_FAMILIES:
        raise ValueError(f"{family} has no NG variant")
    base = ("ngR" if family == "R" else f"ng-{family}") if ng else family
    if k is None:
        return base
    return f"{base}@{k}x" if relative else f"{base}@{k}"


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
