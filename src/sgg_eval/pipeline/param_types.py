"""The value checks every parameter schema uses (``params_check``, ``psg_params``): a number in a range, one of
a set, a flag, a mapping of known keys. Each raises :class:`InputError` naming the dotted key."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from sgg_eval.core.errors import InputError


def check_number(
    value, key: str, lo: float, hi: float, *, integer: bool = False, lo_open: bool = False, hi_open: bool = False
) -> float:
    """``value`` if it is a finite number (an integer with ``integer``; never a bool) within the range ``lo``..``hi``,
    closed unless ``lo_open`` / ``hi_open``."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = ok and (isinstance(value, int) if integer else math.isfinite(value))
    if not ok:
        raise InputError(f"{value!r:.40} is not {'an integer' if integer else 'a finite number'}", field=key)
    if (value <= lo if lo_open else value < lo) or (value >= hi if hi_open else value > hi):
        raise InputError(f"{value} is outside {'(' if lo_open else '['}{lo}, {hi}{')' if hi_open else ']'}", field=key)
    return value


def check_choice(value, key: str, allowed) -> str:
    """``value`` if it is one of ``allowed`` (a string or an integer; never a bool)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value not in allowed:
        raise InputError(f"{value!r:.40} is not one of {', '.join(map(str, allowed))}", field=key)
    return value


def check_flag(value, key: str) -> bool:
    if not isinstance(value, bool):
        raise InputError("must be true or false", field=key)
    return value


def check_mapping(node, key: str, allowed: Iterable[str]) -> Mapping:
    """``node`` if it is a mapping whose keys are all among ``allowed``."""
    if not isinstance(node, Mapping):
        raise InputError("must be a mapping", field=key)
    stray = sorted(set(node) - set(allowed), key=str)
    if stray:
        raise InputError(f"unknown setting {stray[0]!r:.40}", field=key)
    return node
