"""The panoptic DVC stages after ``psg_evaluate``: ``psg_tables`` (the SGBench paper's Tables 1-3, ours, every
metric, published beside ours) and ``psg_figures`` (its Fig. 3), from the documents ``psg_reduce`` wrote
(``pipeline.psg_stages``), with each entry's predicate confusion matrix as CSV."""

from __future__ import annotations

from sgg_eval.pipeline.psg_stages import any_simulated, load_psg_results


def _setting(params: dict, results: dict[str, dict]) -> tuple[list[str], str, bool]:
    protocols = list(params["evaluation"]["psg_protocols"])
    return protocols, params["psg_dataset"]["name"], any_simulated(params, results)


def run_psg_tables(params: dict, folder: str) -> list[str]:
    """Write every PSG table into ``folder``; returns the files written."""
    from sgg_eval.report.psg_tables import psg_tables, published_vs_ours

    results = load_psg_results(params)
    protocols, dataset, simulated = _setting(params, results)
    tau = float(params["metrics"]["tau"])
    tables = psg_tables(results, protocols, dataset, simulated, tau, float(params["metrics"]["iou_threshold"]))
    tables.append(published_vs_ours(results, protocols[0], dataset, simulated))
    return [path for table in tables for path in table.write(folder)] + _confusions(params, results, folder)


def _confusions(params: dict, results: dict[str, dict], folder: str) -> list[str]:
    """Each entry's predicate confusion matrix under each protocol, ``confusion/<entry>.<protocol>.csv``, both
    axes in PSG's training-frequency order (``report.confusion.confusion_rows``)."""
    import os

    from sgg_eval.data.stats import frequency_order, read_stats
    from sgg_eval.pipeline.psg_stages import psg_stats_file
    from sgg_eval.report.confusion import confusion_rows
    from sgg_eval.report.per_predicate import write_rows_csv

    order = frequency_order(read_stats(psg_stats_file(params)).predicate_counts[1:])
    written = []
    for entry, doc in results.items():
        for protocol, section in doc["protocols"].items():
            path = os.path.join(folder, "confusion", f"{entry}.{protocol}.csv")
            write_rows_csv(path, confusion_rows(section["confusion"], order))
            written.append(path)
    return written


def run_psg_figures(params: dict, folder: str) -> list[str]:
    """Fig. 3 (PR@50 against PRk) under the first protocol of ``evaluation.psg_protocols``, from the ranked
    documents: neither number depends on τ, so ``metrics.tau`` does not redraw it."""
    from sgg_eval.metrics.document import every_metric
    from sgg_eval.metrics.names import metric_name
    from sgg_eval.report.psg_figures import pr_vs_prank

    results = load_psg_results(params, ranked=True)
    protocols, dataset, simulated = _setting(params, results)
    protocol = protocols[0]
    points = {
        doc["entry"]["method"]: (
            every_metric(doc["protocols"][protocol]).get(metric_name("PR", 50)),
            every_metric(doc["protocols"][protocol]).get("PRk"),
        )
        for doc in results.values()
    }
    return pr_vs_prank(points, f"{dataset}, protocol {protocol}", folder, simulated)


def psg_runs(params: dict, commit: str) -> tuple[dict, list]:
    """The PSG parent run's params and one MLflow child run per PSG entry × protocol: named
    ``<psg_dataset>/<entry>/<protocol>``, metrics ``panoptic/<name>`` (apart from VG150's task columns)."""
    from sgg_eval.core.defaults import IMR_KS, RECALL_KS
    from sgg_eval.metrics.document import BEYOND, every_metric
    from sgg_eval.pipeline.psg_stages import PANOPTIC, psg_metrics_file
    from sgg_eval.pipeline.tracking import ChildRun, metrics_of

    dataset = params["psg_dataset"]["name"]
    common = {
        "dataset": dataset,
        "protocols": list(params["evaluation"]["psg_protocols"]),
        "tau": params["metrics"]["tau"],
        "iou_threshold": params["metrics"]["iou_threshold"],
        "recall_ks": list(RECALL_KS),
        "imr_ks": list(IMR_KS),
        "git_commit": commit,
    }
    children = []
    for entry, doc in load_psg_results(params).items():
        for protocol, result in doc["protocols"].items():
            children.append(
                ChildRun(
                    name=f"{dataset}/{entry}/{protocol}",
                    params={
                        **{k: v for k, v in common.items() if k != "protocols"},
                        "protocol": protocol,
                        "model": entry,
                        "task": PANOPTIC,
                        "method": doc["entry"]["method"],
                        "simulated": doc["entry"]["simulated"],
                    },
                    # the protocol's numbers and those beyond it, under their usual keys; the tag names the latter
                    metrics=metrics_of(PANOPTIC, {**result, "metrics": every_metric(result)}),
                    artifacts=[psg_metrics_file(params, entry)],
                    tags={
                        "sgg_eval.task": PANOPTIC,
                        "sgg_eval.dataset": dataset,
                        "sgg_eval.protocol": protocol,
                        "sgg_eval.model": entry,
                        "sgg_eval.beyond_protocol": ",".join(sorted(result[BEYOND]["metrics"])),
                    },
                )
            )
    return common, children
