"""The paper's figures as two DVC stages, split by what they read so that τ reruns only the figure that shows it.

- ``score_figures`` (Figure 2, the score heatmaps; Figure 3, the composable pairs; the confusion matrices; Figure 4,
  mR against IMR; wIMR against τ): the predictions, the training statistics and the ranked documents ``evaluate``
  wrote, none of which depends on the configured τ (Figure 4's numbers do not depend on τ at all, and the curve
  computes wIMR at each τ it draws from the per-predicate IMR, as ``reduce`` does). It is the slow one.
- ``figures`` (Figure 5, the wIMR weights at ``metrics.tau``): the training statistics and the test split.

Both draw the paper's task, PredCls, or a run's first task if it has no PredCls (OvSGTR's protocol is SGDet only).
"""

from __future__ import annotations

import json

from sgg_eval.core.tasks import PREDCLS
from sgg_eval.data.stats import read_stats
from sgg_eval.metrics.document import merged
from sgg_eval.metrics.names import metric_name
from sgg_eval.pipeline.eval_stages import entry_record, is_simulated, model_label
from sgg_eval.pipeline.model_stages import open_model
from sgg_eval.pipeline.paths import gt_split, ranked_file, stats_file


def drawn_task(params: dict) -> tuple[str, str]:
    """The task the figures draw and what their titles add for it (nothing for PredCls, the paper's)."""
    tasks = list(params["evaluation"]["tasks"])
    task = PREDCLS.name if PREDCLS.name in tasks else tasks[0]
    return task, "" if task == PREDCLS.name else f", {task}"


def _any_simulated(params: dict) -> bool:
    """Whether any evaluated entry's numbers are SIMULATED: the figures' captions then say so."""
    return any(is_simulated(params, entry) for entry in params["evaluation"]["entries"])


def run_score_figures(params: dict, folder: str) -> list[str]:
    """Figures 2 and 3 and the confusion matrices of ``figures.biased_model`` and ``figures.debiased_model`` into
    ``folder`` (PNG and SVG), from what no τ changes."""
    from sgg_eval.data.stats import frequency_order
    from sgg_eval.report import figures as fg

    stats = read_stats(stats_file(params))
    names = list(stats.vocab.predicate_classes)
    simulated = _any_simulated(params)
    f = params["figures"]
    task, shown = drawn_task(params)
    written = fg.score_heatmaps(_score_panels(params, stats, task, shown), names, folder, simulated)
    compared = []
    for model in dict.fromkeys((f["biased_model"], f["debiased_model"])):
        if model in params["evaluation"]["entries"]:
            with open(ranked_file(params, model, task), encoding="utf-8") as fh:
                confusion = json.load(fh).get("confusion")
            if confusion is not None:
                compared.append((f"{model}{shown}", confusion))
    order = frequency_order(stats.predicate_counts[1:])
    written += fg.confusion_heatmaps(compared, order, params["tasks"][task]["label"], folder, simulated)
    written += fg.composable_pairs(names, stats.num_pairs[1:], folder, simulated)
    written += _ranking_figures(params, stats, task, shown, folder, simulated)
    return written


def _ranking_figures(params: dict, stats, task: str, shown: str, folder: str, simulated: bool) -> list[str]:
    """Figure 4 (mR@50 against IMR@20 per predicate of ``figures.per_predicate_model``) and wIMR@``metrics.imr_k``
    against τ of every entry, from the ranked documents of ``task``: neither depends on the configured τ."""
    import numpy as np

    from sgg_eval.report import figures as fg

    names = list(stats.vocab.predicate_classes)
    docs = {}
    for entry in params["evaluation"]["entries"]:
        with open(ranked_file(params, entry, task), encoding="utf-8") as fh:
            docs[entry] = merged({**json.load(fh), "entry": entry_record(params, entry)})
    model = params["figures"]["per_predicate_model"]
    mr50 = np.array([docs[model]["per_predicate"][metric_name("mR", 50)][n] for n in names])
    imr20 = np.array([docs[model]["per_predicate"][metric_name("IMR", 20)][n] for n in names])
    written = fg.mr_vs_imr(names, mr50, imr20, stats.predicate_counts[1:], model + shown, folder, simulated)

    k = int(params["metrics"]["imr_k"])
    taus = np.round(np.linspace(0, 1, 11), 2)
    curves = {
        model_label(doc["entry"]): (taus, wimr_curve(doc, stats.vocab.predicate_classes, stats.num_pairs, taus, k))
        for doc in docs.values()
    }
    return written + fg.wimr_vs_tau(curves, k, folder, simulated)


def _score_panels(params: dict, stats, task: str, shown: str) -> list[tuple]:
    """Figure 2's panels: the biased model's mean logits, the debiased model's mean logits and softmax."""
    import numpy as np

    from sgg_eval.boxes.pko import to_logits
    from sgg_eval.metrics.ranking.candidates import softmax
    from sgg_eval.report import figures as fg

    f, panels = params["figures"], []
    for title, model, transform in (
        ("biased logits", f["biased_model"], "logits"),
        ("debiased logits", f["debiased_model"], "logits"),
        ("debiased softmax", f["debiased_model"], "softmax"),
    ):
        unit = "mean softmax probability" if transform == "softmax" else "mean logit"
        source = open_model(params, model, task, stats)

        def logits_of(x, kind=source.score_kind, transform=transform):
            z = to_logits(x, kind, 1e-12)
            return softmax(z).astype(np.float64) if transform == "softmax" else z

        m, _ = fg.mean_score_vectors(source.pairs(), stats.vocab.num_predicates, logits_of)
        panels.append((f"{title} ({model}{shown})", unit, m))
    return panels


def run_figures(params: dict, folder: str) -> list[str]:
    """Figure 5, the wIMR weights at ``metrics.tau`` beside each predicate's counts, into ``folder`` (PNG and SVG)."""
    import numpy as np

    from sgg_eval.data.store import SplitStore
    from sgg_eval.metrics.reduce import wimr_weights
    from sgg_eval.report import figures as fg

    stats = read_stats(stats_file(params))
    names = list(stats.vocab.predicate_classes)
    simulated = _any_simulated(params)
    gt_counts = np.zeros(len(names))
    with SplitStore(gt_split(params)) as split:
        for gt in split:
            gt_counts += np.bincount(gt.rels[:, 2] - 1, minlength=len(names))
    tau = float(params["metrics"]["tau"])
    return fg.predicate_weights(
        names, gt_counts, stats.predicate_counts[1:], wimr_weights(stats.num_pairs, tau), tau, folder, simulated
    )


def wimr_curve(result: dict, predicates: tuple[str, ...], num_pairs, taus, k: int) -> list[float]:
    """wIMR@k for each τ from a metrics document (``engine.with_tau``: the evaluator's formula, exact)."""
    from sgg_eval.metrics.engine import with_tau

    return [with_tau(result, predicates, num_pairs, t)["metrics"][metric_name("wIMR", k)] for t in taus]
