"""Action Genome's tables as its papers print them: per protocol, the constraints side by side (STTran's Table 1:
with, semi, no), one section per task, R@10/20/50; the same for each mean recall (pooled over frames, TEMPURA's;
per frame, DSG-DETR's), and sgg-eval's own family (zR, IMR, wIMR at 50). Markdown, LaTeX and CSV
(``report.tables.Table``); inputs are the ``video_evaluate`` documents (entry info plus, per protocol and task,
what ``sgg-eval evaluate --ag --constraint all`` writes)."""

from __future__ import annotations

from sgg_eval.core.defaults import AG_TABLE_KS
from sgg_eval.core.protocols import protocol as protocol_record
from sgg_eval.metrics.names import metric_name
from sgg_eval.report.tables import Row, Table
from sgg_eval.video.ag_beyond import wimr_at

KS = AG_TABLE_KS
OWN = ("zR", "IMR", "wIMR")
_MEANS = {"R": ("R", "R@K"), "mR_pooled": ("mR", "mR@K pooled over frames (TEMPURA's)"),
          "mR_per_frame": ("mR", "mR@K averaged per frame (DSG-DETR's)")}  # fmt: skip


def _column(constraint: str, metric: str) -> str:
    return f"{constraint} {metric}"


def ag_tables(results: dict[str, dict], protocols: list[str], tasks: list[str], labels: dict[str, str],
              simulated: bool, tau: float) -> list[Table]:  # fmt: skip
    """Per protocol: R@K, the two mean recalls and sgg-eval's own (wIMR at ``tau``), each a table with a section
    per task (``labels``: each task's)."""
    tag = " SIMULATED: generated files and simulated models." if simulated else ""
    tables = []
    for protocol in protocols:
        constraints = list(protocol_record(protocol).constraints)
        tool = protocol_record(protocol).source.tool
        for key, (family, what) in _MEANS.items():
            columns = [_column(c, metric_name(family, k)) for c in constraints for k in KS]
            rows = [Row((doc["method"],), {_column(c, metric_name(family, k)):
                                           doc["protocols"][protocol][task]["results"][c]["metrics"][f"{key}@{k}"]
                                           for c in constraints for k in KS}, labels[task])
                    for task in tasks for doc in results.values()]  # fmt: skip
            caption = f"Action Genome, {what}, {protocol} protocol ({tool}'s evaluator), constraints side by side.{tag}"
            tables.append(Table(f"ag_{protocol}_{key}", caption, ("Method",), columns, rows))
        columns = [_column(c, metric_name(f, 50)) for c in constraints for f in OWN]
        rows = [Row((doc["method"],), {_column(c, metric_name(f, 50)): _own(doc["protocols"][protocol][task], c, f, tau)
                                       for c in constraints for f in OWN}, labels[task])
                for task in tasks for doc in results.values()]  # fmt: skip
        caption = (f"Action Genome, sgg-eval's own (zR from the training split, IMR, wIMR at tau {tau:g}), {protocol} "
                   f"protocol; no AG codebase computes these.{tag}")  # fmt: skip
        tables.append(Table(f"ag_{protocol}_ours", caption, ("Method",), columns, rows))
    return tables


def _own(doc: dict, constraint: str, family: str, tau: float) -> float | None:
    """sgg-eval's own ``family@50`` of one constraint; wIMR at ``tau`` (the document's is at the default)."""
    beyond = doc["results"][constraint]["beyond_protocol"]
    if family == "wIMR":
        return wimr_at(beyond, 50, tau)
    return beyond["metrics"].get(metric_name(family, 50))
