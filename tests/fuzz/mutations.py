"""Mutations of valid files: byte-level (any file) and field-level (by what the file is).

Each mutation returns a short description and whether it *corrupts*: a corrupting mutation makes a file that
is not a valid input (a changed byte under a checksum, a bool or float where integers belong, a NaN score, an
out-of-range index, a wrong rank, an empty required list, a YAML alias), so a run that accepts it with other
numbers and no warning is the worst outcome. A non-corrupting mutation (another valid value of the right type,
bytes changed in a format that carries no checksum) may change the numbers: the format cannot tell.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import h5py
import numpy as np
from seeds import CASES_OF, VOCAB, _cases, sgbench_doc
from targeted import TARGETED as FOUND_LATER
from torch_writer import eval_results_object, save_legacy, save_zip

from sgg_eval.io.integrity import SEAL_BYTES, seal


def byte_mutation(rnd: random.Random, data: bytes, skip: int = 0) -> tuple[bytes, str]:
    """One random byte-level change at or after byte ``skip``."""
    original, data = data, bytearray(data)
    n = len(data)
    at = rnd.randrange(skip, n) if n > skip else 0
    kind = rnd.choice(["flip", "byte", "zero", "truncate", "insert", "delete", "duplicate", "ff"])
    if kind == "flip" and n:
        data[at] ^= 1 << rnd.randrange(8)
    elif kind == "byte" and n:
        data[at] = rnd.randrange(256)
    elif kind in ("zero", "ff") and n:
        length = rnd.choice([1, 2, 4, 8, 64, 512, 4096])
        data[at : at + length] = (b"\0" if kind == "zero" else b"\xff") * len(data[at : at + length])
    elif kind == "truncate":
        del data[at:]
    elif kind == "insert":
        data[at:at] = bytes(rnd.randrange(256) for _ in range(rnd.choice([1, 3, 16])))
    elif kind == "delete" and n:
        del data[at : at + rnd.choice([1, 2, 16, 100])]
    else:
        data[at:at] = data[at : at + rnd.choice([4, 32, 256])]
    if bytes(data) == original and n:  # e.g. zeros written over zeros: a mutation must change the file
        data[at] ^= 1
        kind = "flip"
    return bytes(data), f"{kind}@{at}"


# --------------------------------------------------------------------------- JSON and YAML documents

_BAD_LEAVES = [True, False, "1", "x", None, [], {}, [[1]], 1e308 * 10, -1, 10**40, 0.5]


def _leaves(doc, path=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _leaves(v, path + (i,))
    yield path, doc


def _set(doc, path, value):
    for key in path[:-1]:
        doc = doc[key]
    if value is _DELETE:
        del doc[path[-1]]
    else:
        doc[path[-1]] = value


_DELETE = object()


def _id_keyed(parent) -> bool:
    """A JSON object used as a collection keyed by ids (GQA's image ids and object ids: ``"2354786"``,
    ``"n161313"``): one entry fewer is another valid document, not a missing required key."""
    return isinstance(parent, dict) and len(parent) > 1 and all(re.fullmatch(r"n?\d+", k) for k in parent)


def json_mutation(rnd: random.Random, doc, real_numbers: tuple[str, ...] = ()) -> tuple[object, str, bool]:
    """A JSON document with one field changed: to a value of another type (corrupting), deleted or emptied
    (corrupting where it was a required entry, so counted as such), or to another number (not corrupting;
    under a top-level key of ``real_numbers``, where any number is valid, a number of the other JSON type
    (int/float) is not corrupting either; a key at any depth, for a document whose top level is a list)."""
    paths = [p for p, _ in _leaves(doc) if p]
    path = rnd.choice(paths)
    old = _get(doc, path)
    kind = rnd.choice(["type", "type", "delete", "empty", "number"])
    if kind == "number" and type(old) in (int, float):
        new = type(old)(old + rnd.choice([-1, 1, 2]))
        _set(doc, path, new)
        return doc, f"{path}: {old!r} -> {new!r}", False
    if kind == "delete":  # a key is required (corrupting); a list element may be one prediction fewer (valid)
        required = isinstance(path[-1], str) and not _id_keyed(_get(doc, path[:-1]))
        _set(doc, path, _DELETE)
        return doc, f"{path}: deleted", required
    if kind == "empty" and isinstance(old, (list, dict)) and old:  # e.g. an image with no triplets: valid
        _set(doc, path, type(old)())
        return doc, f"{path}: emptied", False
    new = rnd.choice([v for v in _BAD_LEAVES if type(v) is not type(old)])
    _set(doc, path, new)
    numbers = all(type(v) in (int, float) and abs(v) < 1e300 for v in (old, new))
    under_real = any(isinstance(key, str) and key in real_numbers for key in path)
    return doc, f"{path}: {type(old).__name__} -> {new!r:.20}", not (numbers and under_real)


def _get(doc, path):
    for key in path:
        doc = doc[key]
    return doc


_YAML_ATTACKS = [
    (
        "alias bomb",
        "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
        "e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n",
    ),
    ("anchor", "x: &anchor 1\ny: *anchor\n"),
    ("deep", "k: " + "[" * 5000 + "]" * 5000 + "\n"),
    ("tab", "\tkey: value\n"),
    ("unclosed", "key: [1, 2\n"),
    ("python tag", "k: !!python/object/apply:os.system ['true']\n"),
    ("binary", "k: !!binary AAAA\n"),
    ("huge int", "k: " + "9" * 5000 + "\n"),
]


def yaml_mutation(rnd: random.Random, text: str) -> tuple[str, str, bool]:
    """YAML text with an attack appended or one scalar changed to another type."""
    kind = rnd.random()
    if kind < 0.3:
        name, attack = rnd.choice(_YAML_ATTACKS)
        return text + "\n" + attack, name, True
    lines = text.splitlines()
    candidates = [i for i, line in enumerate(lines) if ":" in line and not line.lstrip().startswith("#")]
    if not candidates:
        return text + "\n: :\n", "colons", True
    i = rnd.choice(candidates)
    key, _, value = lines[i].partition(":")
    new = rnd.choice(["true", "'1'", "null", "[]", "{}", "-1", "1e999", "'x'", ".nan", "2", "0.25"])
    lines[i] = f"{key}: {new}" if value.strip() else lines[i] + " " + new
    # another value of the old one's type may be valid: a number for a number, a text for a text (a name, a
    # path); any other type is not
    old_type, new_type = _yaml_type(value.strip()), _yaml_type(new)
    corrupting = not (old_type == new_type and old_type in ("number", "text"))
    return "\n".join(lines) + "\n", f"line {i + 1}: {value.strip()!r:.20} -> {new}", corrupting


def _yaml_type(scalar: str) -> str:
    import yaml

    try:
        value = yaml.safe_load(scalar) if scalar else None
    except yaml.YAMLError:
        return "other"
    if isinstance(value, bool) or value is None:
        return "other"
    return "number" if isinstance(value, (int, float)) else "text" if isinstance(value, str) else "other"


# --------------------------------------------------------------------------- torch files (by their content)

GT_INT = ("labels", "relation_tuple")
PRED_INT = ("pred_labels", "rel_pair_idxs")
PRED_FLOAT = ("pred_scores", "pred_rel_scores")


def torch_field_mutation(rnd: random.Random, legacy: bool, path: Path, task: str = "sgdet") -> tuple[str, bool]:
    """The seed's eval_results written again with one field of one image made invalid."""
    cases = _cases(task=task)
    obj = eval_results_object(cases)
    which = rnd.choice(["groundtruths", "predictions"])
    i = rnd.randrange(len(cases))
    box = obj[which][i]
    names = ["bbox", *box.extra_fields]
    name = rnd.choice(names)
    value = box.bbox if name == "bbox" else box.extra_fields[name]
    kind = rnd.choice(["bool", "float", "0-d", "rank", "nan", "negative", "range", "object", "no images"])
    if kind == "no images":
        obj = {"groundtruths": [], "predictions": []}
    else:
        new = _bad_array(rnd, kind, value, name)
        if new is None:
            return torch_field_mutation(rnd, legacy, path, task)
        if name == "bbox":
            box.bbox = new
        else:
            box.extra_fields[name] = new
    (save_legacy if legacy else save_zip)(obj, path)
    # a box may lie partly outside the image (detectors' boxes do): a negative coordinate is a valid value
    return f"{which}[{i}].{name}: {kind}", not (kind == "negative" and name == "bbox")


def _bad_array(rnd: random.Random, kind: str, value: np.ndarray, name: str) -> np.ndarray | None:
    value = np.asarray(value)
    integer = value.dtype.kind in "iu"
    if kind == "bool" and value.size:
        return (value != 0) if integer else (value > 0.5)
    if kind == "float" and integer and value.size:
        return value.astype(np.float32)
    if kind == "0-d":
        return np.array(value.ravel()[0] if value.size else 1, dtype=value.dtype)
    if kind == "rank":
        return value.reshape(-1) if value.ndim > 1 and value.size else value[None]
    if kind == "nan" and not integer and value.size and name != "pred_rel_labels":
        out = value.astype(np.float32).copy()
        out.flat[rnd.randrange(out.size)] = np.nan
        return out
    if kind == "negative" and value.size and name != "pred_rel_labels":
        out = value.copy()
        out.flat[rnd.randrange(out.size)] = -1 if integer else -0.5
        return out
    if kind == "range" and integer and value.size and name != "pred_rel_labels":
        out = value.copy()
        out.flat[rnd.randrange(out.size)] = 1000
        return out
    if kind == "object" and value.size:
        return value.astype(np.uint8)
    return None


# --------------------------------------------------------------------------- our HDF5 stores (resealed)

FREE_TEXT_ATTRS = ("source", "model", "dataset", "split")  # provenance: any text is a valid value


def store_field_mutation(rnd: random.Random, path: Path) -> tuple[str, bool]:
    """One dataset or attribute of a sealed store made invalid, then sealed again (as a tool writing hostile
    content with a valid checksum would): the content checks behind the seal are what is tested."""
    with h5py.File(path, "r+") as h5:
        datasets = []
        h5.visititems(lambda name, obj: datasets.append(name) if isinstance(obj, h5py.Dataset) else None)
        if rnd.random() < 0.2:
            key = rnd.choice(list(h5.attrs))
            old = h5.attrs[key]
            new = rnd.choice([-1, True, "x", "{", 1.5, np.array([1, 2])])
            h5.attrs[key] = new
            what = f"attr {key} -> {new!r:.20}"
            # a provenance text is any text
            corrupting = not (isinstance(new, str) and isinstance(old, (str, bytes)) and key in FREE_TEXT_ATTRS)
        else:
            name = rnd.choice(datasets)
            data = h5[name][()]
            kind = rnd.choice(["bool", "float", "0-d", "rank", "nan", "negative", "range", "drop", "empty"])
            if kind == "drop":
                new = None
            elif kind == "empty" and np.size(data):
                new = data[:0]
            else:
                new = None if kind == "empty" else _bad_array(rnd, kind, data, name)
                if new is None:
                    new, kind = np.asarray(data).astype(bool), "bool"
            del h5[name]
            if new is not None:
                h5.create_dataset(name, data=new)
            what = f"{name}: {kind}"
            corrupting = not (kind == "negative" and name.endswith("boxes"))  # see torch_field_mutation
    seal(path)  # after the file is closed: libhdf5 writes its last metadata then
    return what, corrupting


def corrupt_store_bytes(rnd: random.Random, data: bytes) -> tuple[bytes, str]:
    """A byte-level change in a sealed store (after the seal, or of the seal itself)."""
    return byte_mutation(rnd, data, skip=0 if rnd.random() < 0.1 else SEAL_BYTES)


def _name_twice(path: Path, rnd: random.Random) -> str:
    d = json.loads(path.read_text())
    table = d[rnd.choice(["idx_to_label", "idx_to_predicate"])]
    ids = sorted(table, key=int)
    table[ids[-1]] = table[ids[0]]
    path.write_text(json.dumps(d))
    return f"name {table[ids[0]]!r} on ids {ids[0]} and {ids[-1]}"


def _extra_id(path: Path, rnd: random.Random) -> str:
    d = json.loads(path.read_text())
    key = rnd.choice(["idx_to_label", "idx_to_predicate"])
    d[key][str(len(d[key]) + 1)] = "extra"
    path.write_text(json.dumps(d))
    return f"{key}: id {len(d[key])} added"


def _box_beyond_scale(path: Path, rnd: random.Random) -> str:
    with h5py.File(path, "r+") as h5:
        boxes = h5["boxes_1024"]
        at = (rnd.randrange(boxes.shape[0]), rnd.randrange(4))
        boxes[at] = rnd.choice([1025, 1_000_000, -3])
        return f"boxes_1024{list(at)} = {int(boxes[at])}"


def _predcls_boxes_moved(path: Path, rnd: random.Random) -> str:
    cases = _cases(task="predcls")
    i = rnd.choice([i for i, (gt, pred) in enumerate(cases) if len(gt.rels) and len(pred.pairs)])  # evaluated
    cases[i][1].boxes = cases[i][1].boxes + np.float32(rnd.choice([2, 5, 40]))
    save_zip(eval_results_object(cases), path)
    return f"predictions[{i}].bbox moved off the GT boxes"


# Defects random mutation found once (each changed numbers without a word): made on purpose in a share of the
# cases of their targets, all corrupting (refused, or warned about).
TARGETED = {
    "vg150_dicts": (_name_twice, _extra_id),
    "vg150_h5": (_box_beyond_scale,),
    "eval_predcls": (_predcls_boxes_moved,),
}
for _name, _found in FOUND_LATER.items():  # issue 64's (targeted.py)
    TARGETED[_name] = TARGETED.get(_name, ()) + _found


def mutate(rnd: random.Random, target, folder: Path) -> tuple[str, bool]:
    """Apply one mutation to ``target``'s file in ``folder``; returns (description, corrupting)."""
    path = folder / target.path
    if target.name in TARGETED and rnd.random() < 0.3:
        made = rnd.choice(TARGETED[target.name])(path, rnd)
        what, bad = made if isinstance(made, tuple) else (made, True)
        return f"targeted {what}", bad
    if rnd.random() < 0.5 or target.kind in ("hdf5_foreign", "binary"):
        data, what = (corrupt_store_bytes if target.kind == "store" else byte_mutation)(rnd, path.read_bytes())
        path.write_bytes(data)
        return f"bytes {what}", target.checksummed
    if target.kind == "json":
        doc, what, bad = json_mutation(rnd, json.loads(path.read_text()), target.real_numbers)
        path.write_text(json.dumps(doc))
        return f"field {what}", bad
    if target.kind == "yaml":
        text, what, bad = yaml_mutation(rnd, path.read_text())
        path.write_text(text)
        return f"yaml {what}", bad
    if target.kind in ("torch_zip", "torch_legacy") and target.name != "zeroshot":
        what, bad = torch_field_mutation(rnd, target.kind == "torch_legacy", path, CASES_OF.get(target.name, "sgdet"))
        return f"field {what}", bad
    if target.name == "zeroshot":
        value = np.array([[1, 2, 1], [2, 3, 4]], dtype=np.int64)
        kind = rnd.choice(["bool", "float", "0-d", "rank", "negative", "range"])
        save_zip(_bad_array(rnd, kind, value, "zeroshot"), path)
        return f"field zeroshot: {kind}", True
    what, bad = store_field_mutation(rnd, path)
    return f"field {what}", bad


__all__ = ["mutate", "VOCAB", "sgbench_doc"]
