"""The text-graph models beside the ranked ones (issue 48): one table, two sections that say what their numbers are.

- **Text scene graphs (sets)**: each text model's recall of the GT rows as an unordered set, one-to-one, over every
  test image with relations (unanswered and unreadable answers scored empty), graph-constrained (one predicate per
  answered pair) and not, mR over all predicates, and the precision and F1 a set has;
- **Ranked models, SGDet**: each ranked entry's R@100, ngR@100 and mR@100 over the images it was evaluated on.

Both match at IoU >= 0.5 with the same +1-pixel IoU and take mR over every predicate, but a set has no K and counts
a repeated triplet once: the caption says so, and what ``sgg-eval audit --compare`` would flag.
"""

from __future__ import annotations

from sgg_eval.core.tasks import SGDET
from sgg_eval.metrics.names import metric_name, text_set_name
from sgg_eval.report.tables import Row, Table

COLUMNS = ["R", "ngR", "mR", "P", "F1"]
K = 100


def text_graphs_table(
    text_results: dict[str, dict], results: dict[tuple[str, str], dict], entries: list[str], dataset: str = ""
) -> Table:
    """The table of the module docstring; ``results`` are the ranked entries' metrics documents by (entry, task)."""
    rows = []
    for name, doc in text_results.items():
        m, c = doc["metrics"], doc["counts"]
        values = dict(zip(COLUMNS, (m[text_set_name("R")], m[text_set_name("R", True)], m[text_set_name("mR")],
                                    m[text_set_name("P")], m[text_set_name("F1")])))  # fmt: skip
        scope = f"sets, {c['images_evaluated']:,} of {c['images_input']:,} test images"
        sim = " (SIMULATED)" if doc["entry"]["simulated"] else ""
        rows.append(Row((doc["entry"]["backbone"] + sim, doc["entry"]["method"], scope), values, "Text scene graphs"))
    for entry in entries:
        doc = results.get((entry, SGDET.name))
        if doc is None:
            continue
        m, c = doc["metrics"], doc["counts"]
        values = {"R": m.get(metric_name("R", K)), "ngR": m.get(metric_name("R", K, ng=True)),
                  "mR": m.get(metric_name("mR", K)), "P": None, "F1": None}  # fmt: skip
        scope = f"ranked, K = {K}, {c['images_evaluated']:,} of {c['images_input']:,} test images"
        rows.append(Row((doc["entry"]["backbone"], doc["entry"]["method"], scope), values, "Ranked models, SGDet"))
    on = f" on {dataset}" if dataset else ""
    caption = (
        f"Multimodal LLMs' text scene graphs beside ranked SGDet models{on}. Text answers are scored by sgg-eval's "
        "sets protocol: each answer an unordered set of triplets matched one-to-one to the GT rows (a repeated "
        "triplet counts once), no K, every test image with relations (unanswered: empty); R one predicate per "
        f"answered pair, ngR every triplet, P and F1 per image. Ranked models: R@{K} and ngR@{K} of their ranked "
        f"lists, mR@{K}. Both: IoU >= 0.5 (+1 pixel), mR over every predicate, means over images. A ranked model's "
        "recall grows with K and an answer has none: compare within a section (sgg-eval audit --compare)."
    )
    return Table("text_graphs_table", caption, ("Backbone", "Method", "Scored as"), COLUMNS, rows, mark_best=False)
