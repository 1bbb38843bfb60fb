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

from sgg_eval.core.defaults import IMR_KS, RECALL_KS, RELATIVE_KS, TRIPLET_KS

# The families with an NG variant, and the families written per K of each list.
NG_FAMILIES = ("R", "mR", "zR", "F1", "IMR", "wIMR")
BY_K = {RECALL_KS: ("R", "mR", "zR", "F1", "A", "PR"), IMR_KS: ("IMR", "wIMR"), TRIPLET_KS: ("R_tr", "wR_tr")}
RELATIVE_FAMILIES = ("R", "mR")
WITHOUT_K = ("PRk", "InstR")
DETECTOR = ("det_mAP@50", "det_mAP")


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
