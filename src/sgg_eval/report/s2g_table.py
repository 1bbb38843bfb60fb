""" "S2G Recall@K per model" (issue 50): Sentence-to-Graph retrieval as Tang et al.'s table prints it, per gallery.

Each model's row holds ``R@K`` for every K of the reference's evaluator in its direction (an image's own caption
ranked among the gallery's captions, ``rank < K``: R@1 is 0 by construction), then ``R@20``, ``R@100`` and the
median rank in the other direction (a caption's own image among the gallery's images), which is how S2G is
described. The GT-graph and random-graph rows, when present, are the perfect and chance bounds of the same
training; the caption states the training (epochs, training images, learning rate) and the gallery's size.
"""

from __future__ import annotations

from sgg_eval.core.defaults import S2G_KS
from sgg_eval.metrics.names import metric_name
from sgg_eval.report.tables import Row, Table
from sgg_eval.retrieval.ranking import CAPTION_TO_IMAGE, IMAGE_TO_CAPTION

REVERSE_KS = (20, 100)
COLUMNS = [metric_name("R", k) for k in S2G_KS] + [f"c2i {metric_name('R', k)}" for k in REVERSE_KS]


def _gallery_rows(docs: dict[str, dict], size: str) -> list[Row]:
    rows = []
    for doc in docs.values():
        gallery = doc["galleries"].get(size)
        if gallery is None:
            continue
        forward, reverse = gallery[IMAGE_TO_CAPTION], gallery[CAPTION_TO_IMAGE]
        values = {metric_name("R", k): forward[metric_name("R", k)] for k in S2G_KS}
        values.update({f"c2i {metric_name('R', k)}": reverse[metric_name("R", k)] for k in REVERSE_KS})
        entry = doc["entry"]
        label = entry["backbone"] + (" (SIMULATED)" if entry["simulated"] and not entry.get("bound") else "")
        note = "collapsed" if doc.get("collapsed") else f"median rank {forward['median_rank']:g}"
        section = f"gallery of {gallery['images']:,} test images"
        rows.append(Row((label, entry["method"], note), values, section))
    return rows


def s2g_table(docs: dict[str, dict], dataset: str = "") -> Table | None:
    """The table of the module docstring, or None when no model was scored."""
    if not docs:
        return None
    sizes = sorted({size for doc in docs.values() for size in doc["galleries"]}, key=int)
    rows = [row for size in sizes for row in _gallery_rows(docs, size)]
    first = next(iter(docs.values()))
    t = first["training"]
    epochs = f"{t['epochs']} epoch" + ("" if t["epochs"] == 1 else "s")
    trained = (
        f"trained {epochs} on {first['images']['train']:,} images, base learning rate "
        f"{t['solver']['base_lr']:g} (x {t['solver']['batch']}), seed {t['seed']}"
    )
    simulated = any(doc["entry"]["simulated"] for doc in docs.values())
    on = f" on {dataset}" if dataset else ""
    caption = (
        f"S2G Recall@K per model{on}{' (SIMULATED captions and models)' if simulated else ''}: Sentence-to-Graph "
        "retrieval as Scene-Graph-Benchmark.pytorch computes it (Tang et al., CVPR 2020). R@K: the reference's "
        "evaluator, an image's own caption ranked among the gallery's captions, rank < K (R@1 is 0 by its "
        "definition); c2i: a caption's own image among the gallery's images, the direction S2G describes. The "
        f"retrieval model is the reference's, {trained}. The gallery is the test block's first images "
        "(docs/s2g.md); GT graphs and random graphs bound what the training can reach and chance."
    )
    return Table("s2g_table", caption, ("Model", "Method", "Note"), COLUMNS, rows, mark_best=False)
