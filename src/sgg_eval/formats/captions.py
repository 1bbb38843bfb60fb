"""The caption-triplet file of SGG-Benchmark's InformativeRecall (its ``informative_sg.json``; docs/sgg_benchmark.md):
one JSON object keyed by ``str(image_id)``, each value a list of strings ``"subject predicate object"`` (the triplets
its authors parsed from the image's region captions). Read as it reads it: a value is looked up by the image id as
text; strings are taken as they are (free text: the encoder decides what matches).

Checked: an object at the top, lists of strings as values. Entries of images the GT split does not hold are never
read (the split decides what is evaluated).
"""

from __future__ import annotations

import os

from sgg_eval.core.errors import InputError
from sgg_eval.io.jsonio import load_json


def read_captions(path: str | os.PathLike) -> dict[str, tuple[str, ...]]:
    """``{str(image_id): (caption triplet, ...)}`` of the file at ``path``."""
    path = os.fspath(path)
    doc = load_json(path)
    if not isinstance(doc, dict):
        raise InputError(f"expected an object keyed by image id, got {type(doc).__name__}", path=path)
    out = {}
    for key, value in doc.items():
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            raise InputError("expected a list of caption triplets (strings)", path=path, image_id=key)
        out[key] = tuple(value)
    return out
