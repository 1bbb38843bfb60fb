"""VG150's two JSON files as Scene-Graph-Benchmark.pytorch reads them, with the checks their content allows:
``VG-SGG-dicts-with-attri.json`` (class and predicate names by 1-based id) and ``image_data.json`` (each
image's id and size, the reference's four corrupted images dropped).
"""

from __future__ import annotations

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.data.types import Vocabulary
from sgg_eval.io.jsonio import load_json

CORRUPTED_IMAGE_IDS = frozenset({1592, 1722, 4616, 4617})


def load_vocab(dicts_path: str) -> Vocabulary:
    """Class and predicate names from ``VG-SGG-dicts-with-attri.json`` (``idx_to_label``, ``idx_to_predicate``).

    Names must be distinct (two classes of one name could not be told apart in a table), and the file's
    inverse tables ``label_to_idx`` / ``predicate_to_idx``, where present (the real file has both), must map
    every name back to its id: a name added or changed in one table only is refused."""
    d = load_json(dicts_path)
    if not isinstance(d, dict):
        raise InputError("expected a JSON object", path=dicts_path)
    names = []
    for key, inverse in (("idx_to_label", "label_to_idx"), ("idx_to_predicate", "predicate_to_idx")):
        if key not in d:
            raise InputError("missing key", path=dicts_path, field=key)
        if not isinstance(d[key], dict) or not all(str(k).isdigit() and isinstance(v, str) for k, v in d[key].items()):
            raise InputError('expected {"id": "name"} with integer ids', path=dicts_path, field=key)
        table = {int(k): v for k, v in d[key].items()}
        if sorted(table) != list(range(1, len(table) + 1)):
            raise InputError("ids are not 1..n", path=dicts_path, field=key)
        listed = tuple(table[i] for i in range(1, len(table) + 1))
        if len(set(listed)) != len(listed):
            twice = next(n for n in listed if listed.count(n) > 1)
            raise InputError(f"name {twice!r} is given to more than one id", path=dicts_path, field=key)
        if inverse in d and d[inverse] != {n: i for i, n in enumerate(listed, 1)}:
            raise InputError(
                f"{inverse} does not map the {len(listed)} names of {key} back to their ids",
                path=dicts_path,
                field=inverse,
            )
        names.append(listed)
    return Vocabulary(*names)


def load_image_sizes(image_data_path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(image_id, width, height)`` of the entries the reference keeps (corrupted ids dropped)."""
    entries = load_json(image_data_path)
    if not isinstance(entries, list):
        raise InputError("expected a list of image entries", path=image_data_path)
    for position, e in enumerate(entries):
        if not isinstance(e, dict):
            raise InputError("entry is not an object", path=image_data_path, position=position)
        for field in ("image_id", "width", "height"):
            value = e.get(field)
            if not isinstance(value, int) or isinstance(value, bool):
                raise InputError(
                    "missing or not an integer" if value is None else f"{value!r:.40} is not an integer",
                    path=image_data_path,
                    image_id=e.get("image_id") if field != "image_id" else None,
                    position=position,
                    field=field,
                )
    kept = [e for e in entries if e["image_id"] not in CORRUPTED_IMAGE_IDS]
    for position, e in enumerate(kept):
        if e["width"] <= 0 or e["height"] <= 0:
            raise InputError(
                f"image size {e['width']} x {e['height']} is not positive",
                path=image_data_path,
                image_id=e["image_id"],
                field="width" if e["width"] <= 0 else "height",
            )
    return (
        np.array([e["image_id"] for e in kept], dtype=np.int64),
        np.array([e["width"] for e in kept], dtype=np.int64),
        np.array([e["height"] for e in kept], dtype=np.int64),
    )
