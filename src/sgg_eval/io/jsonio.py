"""Reading a user's JSON file: one clear error for a missing file, bad UTF-8, bad syntax, hostile nesting,
numbers too long to be meant (a 5,000-digit integer takes Python seconds to convert, or refuses) and the
non-standard ``NaN``/``Infinity`` literals; and the strict-number check every reader applies to the arrays it
takes from JSON (``true`` and ``"1"`` are not numbers)."""

from __future__ import annotations

import json
import os
import re

from sgg_eval.core.errors import InputError

MAX_NUMBER_CHARS = 40  # digits (and sign, point, exponent) of one JSON number: float64 needs at most ~25


class _NumberTooLong(ValueError):
    pass


LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _number(kind):
    def parse(text: str):
        if len(text) > MAX_NUMBER_CHARS:
            raise _NumberTooLong(f"a number of {len(text)} characters ({text[:12]}...)")
        return kind(text)

    return parse


def _no_constant(name: str):
    raise _NumberTooLong(f"{name} is not a JSON number")


def load_json(path: str | os.PathLike):
    """The parsed document of ``path``, or :class:`InputError` naming the file and what is wrong."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError("file not found", path=path)
    if os.path.isdir(path):
        raise InputError("is a directory, expected a JSON file", path=path)
    with open(path, "rb") as fh:
        return parse_json(fh.read(), path)


def parse_json(data: bytes, path: str):
    """The document of the JSON text ``data`` (UTF-8), read as :func:`load_json` reads a file; ``path`` names
    where it came from in errors (a file, or a member of an archive)."""
    try:
        return json.loads(
            data.decode("utf-8"), parse_int=_number(int), parse_float=_number(float), parse_constant=_no_constant
        )
    except _NumberTooLong as exc:
        raise InputError(f"invalid JSON: {exc}", path=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc})", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=path) from None
    except RecursionError:
        raise InputError("JSON nested too deeply", path=path) from None


def is_number_tree(value) -> bool:
    """Whether ``value`` is a number (int or float, not bool) or a list nesting only numbers: what ``np.array``
    may turn into a numeric array without taking ``true`` for 1 or ``"2"`` for 2."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is list:
            stack.extend(item)
        elif kind is not int and kind is not float:
            return False
    return True


def is_pixel_count(value) -> bool:
    """Whether a JSON value is an image width or height: a whole, positive number of pixels below 2^24 (float32,
    the stores' boxes, holds whole pixels exactly up to there), written as an integer or a float, never a bool."""
    return type(value) in (int, float) and value == value and 0 < value < 2**24 and float(value).is_integer()


def json_array(value, shape: tuple, *, integer: bool, field: str, where: dict):
    """``value`` (a JSON list nesting) as an int64 (``integer``) or float64 array of ``shape`` (``None``: any
    length), or one InputError naming ``field`` and ``where`` (path, image): only numbers (not ``true``,
    ``"1"`` or ``null``), rows of equal length, finite values, whole numbers within ±2³¹ for integers. An empty
    list is the empty array of the shape."""
    import numpy as np

    if not is_number_tree(value):
        raise InputError("expected numbers (not true/false, strings or null)", field=field, **where)
    try:
        a = np.array(value, dtype=np.float64)
    except ValueError:  # rows of different lengths
        raise InputError("expected rows of equal length", field=field, **where) from None
    kind = np.int64 if integer else np.float64
    if a.shape[:1] == (0,) and shape[0] in (None, 0):  # [] (not [[]], nor [] where rows are required)
        return np.zeros((0, *[w or 0 for w in shape[1:]]), dtype=kind)
    if a.ndim != len(shape) or any(w is not None and g != w for g, w in zip(a.shape, shape)):
        raise InputError(
            f"shape {list(a.shape)}, expected {['n' if w is None else w for w in shape]}", field=field, **where
        )
    if not np.isfinite(a).all():
        raise InputError("non-finite number", field=field, **where)
    if integer and (not np.all(a == np.round(a)) or np.abs(a).max() > 2**31):
        raise InputError("expected integers", field=field, **where)
    return a.astype(kind)


def name_list(value, *, path: str, field: str, at_least: int = 1) -> list[str]:
    """``value`` as a list of distinct non-empty names (class or predicate names of a dataset's files), at least
    ``at_least`` of them, or one InputError naming ``path`` and ``field``."""
    if not isinstance(value, list) or len(value) < at_least or not all(isinstance(v, str) and v for v in value):
        raise InputError("missing, or not a list of names", path=path, field=field)
    if len(set(value)) != len(value):
        raise InputError("a name appears twice", path=path, field=field)
    return value


MAX_YAML_BYTES = 1 << 20  # a configuration file; params.yaml is ~2 kB
MAX_YAML_DEPTH = 32


def _check_file(path: str, what: str, limit: int | None) -> None:
    """One InputError naming ``path`` unless it is a file of at most ``limit`` bytes."""
    if not os.path.isfile(path):
        raise InputError("file not found" if not os.path.exists(path) else f"not a file, expected {what}", path=path)
    if limit is not None and os.path.getsize(path) > limit:
        raise InputError(f"{os.path.getsize(path)} bytes: larger than any {what} ({limit} bytes at most)", path=path)


def read_bytes(path: str | os.PathLike, what: str, limit: int | None = None) -> bytes:
    """The bytes of ``path`` (at most ``limit``), or one InputError naming the file."""
    path = os.fspath(path)
    _check_file(path, what, limit)
    with open(path, "rb") as fh:
        return fh.read()


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSON Lines text, split on ``\n``, ``\r\n`` and ``\r`` only, as Python's ``open`` iterates
    them; never on U+2028 and the other breaks ``str.splitlines`` knows, which JSON allows inside a string."""
    return LINE_BREAK.split(text.removesuffix("\r\n").removesuffix("\n").removesuffix("\r")) if text else []


def read_text(path: str | os.PathLike, what: str = "text", limit: int | None = None) -> str:
    """UTF-8 text of ``path`` (at most ``limit`` bytes), or one InputError naming the file."""
    path = os.fspath(path)
    _check_file(path, what, limit)
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=path) from None


def check_yaml(text: str, path: str) -> None:
    """Refuse YAML that a plain reading could not bound: anchors and aliases (an alias bomb expands a few
    lines into gigabytes; no sgg-eval setting needs one), nesting deeper than ``MAX_YAML_DEPTH``, and any
    syntax error, named with its line."""
    import yaml

    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if _explicit_tag(event):
                raise InputError(
                    f"line {event.start_mark.line + 1}: explicit YAML tags ({event.tag}) are not accepted", path=path
                )
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                line = event.start_mark.line + 1
                raise InputError(
                    f"line {line}: YAML anchors and aliases are not accepted (write the value out)", path=path
                )
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    raise InputError(
                        f"line {event.start_mark.line + 1}: nested deeper than {MAX_YAML_DEPTH} levels", path=path
                    )
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {_yaml_problem(exc)}", path=path) from None


def _explicit_tag(event) -> bool:
    """A node written with a tag (``!!binary``, ``!!python/...``, ``!custom``): plain settings never need one."""
    tag, implicit = getattr(event, "tag", None), getattr(event, "implicit", True)
    return tag is not None and not (any(implicit) if isinstance(implicit, tuple) else implicit)


def load_yaml(path: str | os.PathLike):
    """The document of the YAML file ``path`` (safe types only), after :func:`check_yaml`."""
    import yaml

    path = os.fspath(path)
    text = read_text(path, "YAML file", MAX_YAML_BYTES)
    check_yaml(text, path)
    try:
        return yaml.load(text, Loader=yaml.SafeLoader)  # noqa: S506 - SafeLoader: plain data only
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {_yaml_problem(exc)}", path=path) from None
    except ValueError as exc:  # e.g. an integer of thousands of digits
        raise InputError(f"invalid YAML value: {' '.join(str(exc).split())[:120]}", path=path) from None


def _yaml_problem(exc) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return where + " ".join(str(getattr(exc, "problem", None) or exc).split())[:160]
