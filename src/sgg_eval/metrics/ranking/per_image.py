"""Per-image graphs (``sgg-eval evaluate --per-image FILE``): for every evaluated image, its GT triplets with their
first-hit ranks and its top-K predicted triplets with hit or miss, one JSON object per line.

One record per image that enters R@K (an image with GT relations and, under the reference protocol, a predicted
pair), in input order::

    {"image": id, "width": W, "height": H,
     "objects": [{"label": name, "box": [x1, y1, x2, y2]}, ...],            # GT objects
     "gt": [{"subject": i, "object": j, "predicate": name, "rank": r, "ng_rank": r}, ...],
     "predicted_objects": [{"label": name, "box": [...], "score": s}, ...],  # those the top K use
     "predicted": [{"subject": i, "object": j, "predicate": name, "score": s, "hits": [GT rows]}, ...]}

- ``rank`` is the row's first-match rank in the graph-constrained list (0-based; null: no match in the list),
  the same rank ``R@K`` reduces: ``R@K = mean over records of |{rows: rank < K}| / |rows|``, exactly.
  ``ng_rank`` likewise for ``ngR@K`` (null where the input has no scores).
- ``predicted`` is the first ``K`` of the graph-constrained list, in rank order (its position is its rank);
  ``hits`` are the GT rows whose first match it is: the rows R@K credits to it. A prediction that repeats an
  already-hit triplet has no hits (a duplicate earns nothing in R@K). ``score`` is ``s_s · s_o · max_c p_c``
  (the ranking's score; null for ranked-only input); subject and object index ``predicted_objects``.
"""

from __future__ import annotations

import json
from typing import TextIO

import numpy as np

from sgg_eval.arrays.segments import segment_offsets
from sgg_eval.data.types import Vocabulary
from sgg_eval.metrics.rank_records import BlockRanks
from sgg_eval.metrics.ranking.candidates import CandidateBlock
from sgg_eval.metrics.ranking.families import NO_MATCH


def _rank(value: int) -> int | None:
    return None if value == NO_MATCH else int(value)


def _box(box: np.ndarray) -> list[float]:
    return [round(float(v), 2) for v in box]


def image_records(
    gts: list, block: CandidateBlock, ranks: BlockRanks, vocab: Vocabulary, k: int, ids: frozenset | None = None
) -> list[dict]:
    """The records of a ranked block: ``gts`` its GT images, ``block`` their candidates, ``ranks`` their ranks;
    only the images whose id is in ``ids`` when given."""
    objects, predicates = vocab.object_classes, vocab.predicate_classes
    row_at, pair_at, obj_at = (segment_offsets(n) for n in (ranks.n_rows, block.n_pairs, block.n_obj))
    records = []
    for i, gt in enumerate(gts):
        if ids is not None and gt.image_id not in ids:
            continue
        rows = slice(row_at[i], row_at[i] + ranks.n_rows[i])
        gc = ranks.gc[rows]
        ng = ranks.ng[rows] if ranks.ng is not None else np.full(len(gc), NO_MATCH)
        top = block.gc_pairs[pair_at[i] : pair_at[i] + block.n_pairs[i]][:k] + pair_at[i]  # block-wide pair ids
        used, local = np.unique(block.pairs[top].reshape(-1), return_inverse=True)  # the objects the top K use
        local = local.reshape(-1, 2)
        scores = block.pair_best[top] if block.pair_best is not None and len(top) else None
        said = block.predicted.at(top) if len(top) else np.zeros(0, np.int64)
        first = {}
        for row, rank in enumerate(gc.tolist()):
            if rank < len(top):
                first.setdefault(rank, []).append(row)
        records.append(
            {
                "image": gt.image_id,
                "width": int(gt.width),
                "height": int(gt.height),
                "objects": [{"label": objects[c - 1], "box": _box(b)} for c, b in zip(gt.labels.tolist(), gt.boxes)],
                "gt": [
                    {"subject": s, "object": o, "predicate": predicates[p - 1], "rank": _rank(r), "ng_rank": _rank(n)}
                    for (s, o, p), r, n in zip(gt.rels.tolist(), gc.tolist(), ng.tolist())
                ],
                "predicted_objects": [
                    {
                        "label": objects[int(block.labels[obj_at[i] + j]) - 1],
                        "box": _box(block.boxes[obj_at[i] + j]),
                        "score": round(float(block.obj_scores[obj_at[i] + j]), 6),
                    }
                    for j in used.tolist()
                ],
                "predicted": [
                    {
                        "subject": int(s),
                        "object": int(o),
                        "predicate": predicates[int(p) - 1],
                        "score": None if scores is None else round(float(scores[q]), 6),
                        "hits": first.get(q, []),
                    }
                    for q, ((s, o), p) in enumerate(zip(local.tolist(), said.tolist()))
                ],
            }
        )
    return records


def write_records(out: TextIO, records: list[dict]) -> None:
    """``records`` as JSON lines (sorted keys, no spaces: the same run gives the same bytes)."""
    for record in records:
        out.write(json.dumps(record, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n")
