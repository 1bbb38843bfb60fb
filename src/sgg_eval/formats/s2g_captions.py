"""S2G's caption-graph file (Scene-Graph-Benchmark.pytorch's ``vg_capgraphs_anno.json``, its ``capgraphs_file``):
the text scene graphs SceneGraphParser made of each image's COCO captions, and how VG's images and predicates
map to them. The keys S2G reads (``maskrcnn_benchmark/image_retrieval/preprocessing.py`` at 6f75881):

- ``vg_image_ids``, ``vg_coco_ids``, ``vg_valids``: one entry per VG image, in one order: its COCO id, and 1
  when it has captions (0 otherwise);
- ``idx_to_meta_predicate``: VG predicate id (``"1"``..``"C"``) -> the predicate name the image graphs use;
- ``cap_category``, ``cap_predicate``: the captions' object and predicate vocabularies (name -> count);
- ``vg_coco_id_to_capgraphs``: COCO id (text) -> a list of graphs, one per caption, each
  ``{"entities": [name, ...], "relations": [[subject index, object index, predicate name], ...]}``.

Everything is checked as it is read: a name outside the vocabularies, an index outside its graph's entities, a
predicate id the dataset does not have, lists of different lengths; each refusal names the field and the image.
"""

from __future__ import annotations

from dataclasses import dataclass

from sgg_eval.core.errors import InputError
from sgg_eval.io.jsonio import load_json

KEYS = ("vg_image_ids", "vg_coco_ids", "vg_valids", "idx_to_meta_predicate", "cap_category", "cap_predicate",
        "vg_coco_id_to_capgraphs")  # fmt: skip


@dataclass(frozen=True)
class CaptionGraph:
    """One image's caption graphs merged, as S2G merges them: entity names, and relations ``(subject entity,
    object entity, predicate name)`` by index into them."""

    entities: tuple[str, ...]
    relations: tuple[tuple[int, int, str], ...]


@dataclass(frozen=True)
class CaptionGraphs:
    """``coco_of``: VG image id -> COCO id, for the images with captions, in the file's order;
    ``meta_predicates``: VG predicate id -> the name image graphs use; ``objects``, ``predicates``: the captions'
    vocabularies; ``graphs``: COCO id -> its :class:`CaptionGraph`."""

    coco_of: dict[int, int]
    meta_predicates: dict[int, str]
    objects: tuple[str, ...]
    predicates: tuple[str, ...]
    graphs: dict[int, CaptionGraph]


def _int(value, where: dict) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{value!r:.40} is not an integer", **where)
    return value


def _names(doc: dict, key: str, path: str) -> tuple[str, ...]:
    node = doc[key]
    if not isinstance(node, dict) or not all(isinstance(k, str) and k for k in node):
        raise InputError("must map names to counts", path=path, field=key)
    return tuple(sorted(node))


def read_caption_graphs(path: str, num_predicates: int) -> CaptionGraphs:
    """The caption-graph file at ``path`` for a dataset of ``num_predicates`` predicates (VG150: 50)."""
    doc = load_json(path)
    if not isinstance(doc, dict):
        raise InputError("is not a caption-graph file (a JSON object)", path=path)
    missing = [k for k in KEYS if k not in doc]
    if missing:
        raise InputError(f"has no {missing[0]!r}: not an S2G caption-graph file (vg_capgraphs_anno.json)", path=path)
    ids, cocos, valids = (doc[k] for k in KEYS[:3])
    if not all(isinstance(v, list) for v in (ids, cocos, valids)) or not len(ids) == len(cocos) == len(valids):
        raise InputError("vg_image_ids, vg_coco_ids and vg_valids must be lists of one length", path=path)
    meta = doc["idx_to_meta_predicate"]
    wanted = {str(c) for c in range(1, num_predicates + 1)}
    if not isinstance(meta, dict) or set(meta) != wanted or not all(isinstance(v, str) and v for v in meta.values()):
        raise InputError(f"must map the predicate ids 1..{num_predicates} to names", path=path,
                         field="idx_to_meta_predicate")  # fmt: skip
    objects, predicates = _names(doc, "cap_category", path), _names(doc, "cap_predicate", path)
    known_objects, known_predicates = set(objects), set(predicates)
    coco_of = _coco_ids(ids, cocos, valids, path)
    raw = doc["vg_coco_id_to_capgraphs"]
    if not isinstance(raw, dict):
        raise InputError("must map COCO ids to caption graphs", path=path, field="vg_coco_id_to_capgraphs")
    graphs = {}
    for key, captions in raw.items():
        where = {"path": path, "image_id": key, "field": "vg_coco_id_to_capgraphs"}
        if not key.isdigit() or not isinstance(captions, list):
            raise InputError("a COCO id (digits) must map to a list of caption graphs", **where)
        graphs[int(key)] = _merged(captions, known_objects, known_predicates, where)
    return CaptionGraphs(coco_of, {int(k): v for k, v in meta.items()}, objects, predicates, graphs)


def _coco_ids(ids: list, cocos: list, valids: list, path: str) -> dict[int, int]:
    """VG image id -> COCO id, for the images ``vg_valids`` marks 1."""
    coco_of = {}
    for position, (image, coco, valid) in enumerate(zip(ids, cocos, valids)):
        where = {"path": path, "position": position, "field": "vg_image_ids/vg_coco_ids/vg_valids"}
        if _int(valid, where) not in (0, 1):
            raise InputError(f"vg_valids holds {valid}, not 0 or 1", **where)
        if valid:
            coco_of[_int(image, where)] = _int(coco, where)
    return coco_of


def _merged(captions: list, objects: set, predicates: set, where: dict) -> CaptionGraph:
    """An image's caption graphs, merged (entities concatenated, relations re-indexed into them)."""
    entities, relations = [], []
    for graph in captions:
        if not isinstance(graph, dict) or not isinstance(graph.get("entities"), list):
            raise InputError("a caption graph must have a list of entities", **where)
        names, rows = graph["entities"], graph.get("relations", [])
        if not all(isinstance(n, str) and n in objects for n in names):
            bad = next(n for n in names if not (isinstance(n, str) and n in objects))
            raise InputError(f"entity {bad!r:.40} is not in cap_category", **where)
        if not isinstance(rows, list):
            raise InputError("relations must be a list", **where)
        for row in rows:
            ok = isinstance(row, list) and len(row) == 3 and isinstance(row[2], str) and row[2] in predicates
            ok = ok and all(not isinstance(i, bool) and isinstance(i, int) and 0 <= i < len(names) for i in row[:2])
            if not ok:
                raise InputError(f"relation {row!r:.60} is not [subject, object, predicate of cap_predicate]", **where)
            relations.append((len(entities) + row[0], len(entities) + row[1], row[2]))
        entities += names
    return CaptionGraph(tuple(entities), tuple(relations))
