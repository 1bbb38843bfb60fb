"""S2G's scene graphs: an image's graph from its SGDet prediction, and both graphs encoded for the retrieval model.

**Image graph** (``preprocessing.py``'s ``generate_detect_sg``, Scene-Graph-Benchmark.pytorch at 6f75881): object
scores below ``S2G_OBJECT_THRESHOLD`` (0.1) are set to 0 and those objects dropped; each predicted pair, in the
file's order, takes the predicate with the highest probability *over every column, background included*, and
writes it into a pair matrix when that predicate is not background or its triplet score ``s_s · s_o · p`` is
above 0 (a later pair of the same two objects overwrites an earlier one; a background written last erases the
pair). The graph is the kept objects, in order, and the matrix's non-background cells among them, row by row
(subject, then object). Probabilities are float32 as the reference writes them (logits are softmaxed first).

**Encoding** (``generate_txt_img_sg``): entities become ids of their class name, relations ``[subject's class id,
object's class id, predicate id]`` (class ids, not indices: the model embeds classes). Image predicates are
named through the caption file's ``idx_to_meta_predicate``; caption graphs merge their captions. Upstream numbers
each vocabulary by ``list(set(names))``, an order Python's string hashing changes from one process to the next;
sgg-eval numbers them in sorted order from 1 (0 unused), which changes nothing but which embedding row a name
gets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sgg_eval.core.defaults import S2G_OBJECT_THRESHOLD
from sgg_eval.data.types import PredImage


@dataclass(frozen=True)
class EncodedGraph:
    """``entities [E]`` class ids; ``relations [R, 3]`` (subject class id, object class id, predicate id)."""

    entities: np.ndarray
    relations: np.ndarray

    def usable(self) -> bool:
        """At least two entities and one relation: what the reference's test loop keeps."""
        return len(self.entities) >= 2 and len(self.relations) >= 1


def _probabilities(scores: np.ndarray, logits: bool) -> np.ndarray:
    scores = np.asarray(scores, dtype=np.float32)
    if not logits:
        return scores
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (shifted / shifted.sum(axis=1, keepdims=True)).astype(np.float32)


def image_graph(
    pred: PredImage, *, logits: bool = False, threshold: float = S2G_OBJECT_THRESHOLD
) -> tuple[np.ndarray, np.ndarray]:
    """``(labels [E], relations [R, 3])`` of one SGDet prediction (module docstring): the kept objects' class ids,
    and ``(subject, object, predicate)`` rows by index into them."""
    scores = np.asarray(pred.obj_scores, dtype=np.float32).copy()
    scores[scores < np.float32(threshold)] = 0.0
    kept = scores >= np.float32(threshold)
    n = len(scores)
    pairs = np.asarray(pred.pairs, dtype=np.int64).reshape(-1, 2)
    matrix = np.zeros((n, n), dtype=np.int64)
    if len(pairs):
        probs = _probabilities(pred.rel_scores, logits)
        label = probs.argmax(axis=1)
        best = probs[np.arange(len(probs)), label]
        triplet = scores[pairs[:, 0]] * scores[pairs[:, 1]] * best
        written = np.flatnonzero((label > 0) | (triplet > 0))
        keys = pairs[written, 0] * n + pairs[written, 1]
        last = len(keys) - 1 - np.unique(keys[::-1], return_index=True)[1]  # the last write of each cell
        matrix.reshape(-1)[keys[last]] = label[written[last]]
    inner = matrix[kept][:, kept]
    subject, obj = np.nonzero(inner)
    relations = np.column_stack([subject, obj, inner[subject, obj]]).astype(np.int64).reshape(-1, 3)
    return np.asarray(pred.labels, dtype=np.int64)[kept], relations


def vocabulary(names) -> dict[str, int]:
    """Sorted names numbered from 1."""
    return {name: i + 1 for i, name in enumerate(sorted(set(names)))}


def encode(entities, relations, object_ids: dict[str, int], predicate_ids: dict[str, int]) -> EncodedGraph:
    """A graph of entity names and ``(subject index, object index, predicate name)`` relations, as ids."""
    ids = np.array([object_ids[e] for e in entities], dtype=np.int64)
    rows = [(ids[s], ids[o], predicate_ids[p]) for s, o, p in relations]
    return EncodedGraph(ids, np.array(rows, dtype=np.int64).reshape(-1, 3))


def incidence(graph: EncodedGraph) -> np.ndarray:
    """``G [E, R]`` float32, the matrix the model's attention is built from, by ``preprocessing.py``'s rule
    ``es in rs``: 1 where entity ``e``'s class id is one of relation ``r``'s three ids. The rule compares the
    class id with the predicate id too, two numberings of different vocabularies, so an entity also joins a
    relation whose predicate happens to carry its number. The reference's numbering changes with the process's
    string hashing, so there the coincidences fall at random; with sgg-eval's sorted numbering they are fixed."""
    return (graph.entities[:, None, None] == graph.relations[None, :, :]).any(axis=2).astype(np.float32)
