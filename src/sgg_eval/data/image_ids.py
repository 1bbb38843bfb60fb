"""Image ids: integers (VG150, PSG) or, where a dataset's ids are text (GQA: ``"2354786"``, ``"n161313"``), up to
10 lowercase letters and digits. Stores keep them as the files give them (``data/ragged_h5.py``), and
:func:`image_order_key` orders them as the COCO API orders image ids.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.core.errors import InputError

MAX_ID_CHARS = 10  # a text image id (GQA: "2354786", "n161313"): lowercase letters and digits
_ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def check_image_id(image_id, where: dict) -> None:
    """An image id is an integer (VG150, PSG) or, where the dataset's ids are text (GQA), up to 10 lowercase
    letters and digits: stores keep it as the files give it, and :func:`image_order_key` orders it exactly."""
    if isinstance(image_id, (int, np.integer)) and not isinstance(image_id, bool):
        return
    if not (isinstance(image_id, str) and 0 < len(image_id) <= MAX_ID_CHARS and set(image_id) <= set(_ID_ALPHABET)):
        raise InputError(
            f"image id {image_id!r:.40} is neither an integer nor text of at most {MAX_ID_CHARS} lowercase letters "
            "and digits",
            field="image_id",
            **{k: v for k, v in where.items() if k != "image_id"},
        )


def image_order_key(image_id: int | str) -> float:
    """A float64 that orders image ids as the COCO API orders them (sorted ids: numbers, or text as text) and is
    unique: the id itself, or a text id read as a base-37 fraction of 10 digits (0 = end, then the alphabet),
    exact because 37**10 < 2**53. The detector mAP breaks score ties by it."""
    if not isinstance(image_id, str):
        return float(image_id)
    padded = [_ID_ALPHABET.index(c) + 1 for c in image_id] + [0] * (MAX_ID_CHARS - len(image_id))
    return float(sum(d * 37**k for k, d in enumerate(reversed(padded))))


def image_id_value(stored) -> int | str:
    """An id as a store's ``images/image_id`` column holds it (int64 or ASCII bytes) as the value it names."""
    return stored.decode("ascii") if isinstance(stored, bytes) else int(stored)
