"""Large JSON read with simdjson (pysimdjson): PSG's ``psg.json`` (~48,700 images) and SGBench submissions
(~34 million integers in ``triplets`` and ``ng_triplets``). The standard library would build ~1 GB of Python
lists in ~5 s; simdjson parses in ~1 s and hands each integer array over as one buffer.

The rules are those of :mod:`sgg_eval.io.jsonio`, applied to a lazily read document: UTF-8, standard JSON only
(no ``NaN``), nesting at most simdjson's depth, integers within 64 bits, and every array taken as numbers
holding numbers only (``true`` and ``"1"`` are not numbers) in rows of the expected width, checked from the
array's own minified text. An object that names a key twice is refused: which value counts would be a guess.
"""

from __future__ import annotations

import re

import numpy as np

from sgg_eval.core.errors import InputError

_NUMBER_CHARS = b"0123456789-+.eE"  # what a number's text is made of; the rest of an array's text is [],
_DELETED = _NUMBER_CHARS + b" \t\n\r"  # and whitespace: what ObjectMarks deletes
_INT_LIMIT = 2**31


def parse_document(data: bytes, path: str):
    """``(parser, document)`` of the JSON text ``data``; keep the parser alive while the document is read."""
    import simdjson

    parser = simdjson.Parser()
    try:
        return parser, parser.parse(data)
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=path) from None
    except (ValueError, RuntimeError) as exc:
        raise InputError(f"invalid JSON ({' '.join(str(exc).split())[:100]})", path=path) from None


def parse_items(data: bytes, key: str, path: str):
    """``(parser, skeleton, items)`` of a JSON object whose ``key`` is a long array of objects (psg.json's
    ``data``, a submission's ``images``): ``skeleton`` is the document with that array empty, and ``items``
    yields ``(position, object)`` one at a time, each parsed on its own. simdjson's tape takes 8 bytes per byte
    of input, 1.2 GB for a 156 MB submission; an item at a time, the memory stays that of the largest item.

    The items are found by one scan of the text's brackets outside strings (:func:`_array_items`); what lies
    between them must be commas and whitespace, and each item and the skeleton must be valid JSON."""
    spans = _array_items(data, key, path)
    if spans is None:  # no array found under the key (or far from it): the whole document, as it is
        parser, doc = parse_document(data, path)
        whole = doc.get(key) if is_object(doc) else None
        return parser, doc, ArrayItems(len(whole), whole.__getitem__) if is_array(whole) else ArrayItems(0, None)
    opening, closing, items = spans
    parser, skeleton = parse_document(data[: opening + 1] + data[closing:], path)
    return (
        parser,
        skeleton,
        ArrayItems(
            len(items),
            lambda k: parse_document(data[slice(*items[k])], path)[1],
            lambda k: ObjectMarks(data[slice(*items[k])]),
        ),
    )


class ArrayItems:
    """The items of one JSON array, each parsed when it is reached: ``len()``, ``at(position)`` (what a forked
    process converting a range of them calls), iteration yielding ``(position, object)`` in order, and
    ``marks(position)``, the item's :class:`ObjectMarks` (empty for a document read whole)."""

    def __init__(self, count: int, parse, marks=None):
        self._count, self._parse, self._marks = count, parse, marks

    def marks(self, position: int) -> ObjectMarks:
        """The marks of the item at ``position``'s own text, for :func:`number_rows`."""
        return self._marks(position) if self._marks is not None else ObjectMarks(None)

    def __len__(self) -> int:
        return self._count

    def __iter__(self):
        for position in range(self._count):
            yield position, self._parse(position)

    def at(self, position: int):
        """The item at ``position``, parsed now."""
        return self._parse(position)


_BLOCK = 16 << 20  # bytes scanned at once: bounds the scan's own memory
_SPACE = re.compile(rb"[ \t\n\r]*")


def _array_items(data: bytes, key: str, path: str) -> tuple[int, int, list[tuple[int, int]]] | None:
    """``(offset of the array's [, offset of its ], [(start, end) of each item])`` for the array of objects
    under the top-level ``key``, or None when the top level has no such key. Only quotes and braces are
    scanned (a submission's text is mostly digits and brackets): an item is an object one brace level below
    the top-level object, and what separates the items (and them from the array's brackets) must be commas
    and whitespace. A quote counts unless an odd run of backslashes precedes it; braces inside strings do not."""
    quotes, braces, steps = _quotes_and_braces(data)
    level = np.cumsum(steps)
    if len(level) and (level.min() < 0 or level[-1] != 0):
        raise InputError("invalid JSON: its braces do not balance", path=path)
    opening = _key_array(data, quotes, braces, level, key)
    if opening is None:
        return None
    starts = braces[(steps == 1) & (level == 2) & (braces > opening)]
    ends = braces[(steps == -1) & (level == 1) & (braces > opening)] + 1
    n = min(len(starts), len(ends))
    starts, ends = starts[:n].tolist(), ends[:n].tolist()
    items, at, expect = [], opening + 1, b""
    for k in range(n):
        at = _SPACE.match(data, at).end()
        if data[at : at + 1] == b"]":
            break
        if expect and data[at : at + 1] != expect:
            raise InputError(f"expected a list of objects under '{key}', separated by commas", path=path, field=key)
        at = _SPACE.match(data, at + len(expect)).end()
        if at != starts[k]:
            raise InputError(f"expected a list of objects under '{key}'", path=path, field=key)
        items.append((starts[k], ends[k]))
        at, expect = ends[k], b","
    at = _SPACE.match(data, at).end()
    if data[at : at + 1] != b"]":
        raise InputError(f"expected a list of objects under '{key}', separated by commas", path=path, field=key)
    return opening, at, items


def _quotes_and_braces(data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Offsets of the quotes that delimit strings, of the braces outside strings, and each brace's step (+1
    for {, −1 for }), scanned ``_BLOCK`` bytes at a time."""
    text = np.frombuffer(data, dtype=np.uint8)
    quotes, braces = [], []
    for start in range(0, len(text), _BLOCK):
        block = text[start : start + _BLOCK]
        q = np.flatnonzero(block == 34) + start
        maybe = q[(q > 0) & (text[np.maximum(q - 1, 0)] == 92)]  # after a backslash: escaped if the run is odd
        if len(maybe):
            q = q[~np.isin(q, [i for i in maybe.tolist() if _odd_backslashes(data, i)])]
        quotes.append(q)
        near = np.flatnonzero((block | 6) == 127)  # { (123) and } (125), and y and DEL, dropped next
        braces.append(near[(block[near] == 123) | (block[near] == 125)] + start)
    quotes, braces = np.concatenate(quotes), np.concatenate(braces)
    braces = braces[np.searchsorted(quotes, braces) % 2 == 0]  # an even number of quotes before: outside
    return quotes, braces, np.where(text[braces] == 123, 1, -1)


def _odd_backslashes(data: bytes, quote: int) -> bool:
    run = 0
    while quote - run - 1 >= 0 and data[quote - run - 1] == 92:
        run += 1
    return run % 2 == 1


def _key_array(data: bytes, quotes: np.ndarray, braces: np.ndarray, level: np.ndarray, key: str) -> int | None:
    """The offset of the ``[`` that opens the value of the top-level object's ``key`` (None if it has none)."""
    name = b'"' + key.encode() + b'"'
    at = data.find(name)
    while at >= 0:
        is_key_string = np.searchsorted(quotes, at) % 2 == 0 and at in quotes  # an opening quote, not inside
        before = np.searchsorted(braces, at)
        if is_key_string and before and level[before - 1] == 1:
            colon = _SPACE.match(data, at + len(name)).end()
            if data[colon : colon + 1] == b":":
                value = _SPACE.match(data, colon + 1).end()
                return value if data[value : value + 1] == b"[" else None
        at = data.find(name, at + 1)
    return None


def is_object(value) -> bool:
    import simdjson

    return isinstance(value, simdjson.Object)


def is_array(value) -> bool:
    import simdjson

    return isinstance(value, simdjson.Array)


def unique_keys(obj, field: str, where: dict) -> None:
    """Refuse an object naming a key twice."""
    keys = list(obj.keys())
    if len(set(keys)) != len(keys):
        raise InputError("an object names a key twice", field=field, **where)


def unique_keys_each(objects: list, field: str, where: dict, *, found: int = 0) -> None:
    """Refuse any of ``objects`` that names a key twice (simdjson reads the first of two, Python's json the
    last: which value counts would be a guess). ``found``: how many distinct keys the caller has already found
    in every object; one with exactly that many keys repeats none, and its keys are not listed (~0.6 µs)."""
    for obj in objects:
        if len(obj) != found:
            unique_keys(obj, field, where)


class ObjectMarks:
    """One JSON object's text with its number characters and whitespace deleted: brackets, commas, braces,
    colons and strings remain. The marks of a value of numbers are its brackets and commas, so one key's value
    is checked against :func:`_row_marks` here, ~3× faster than from simdjson's minified text of the value.

    Used only where the marks name the value for sure: text without a backslash (so every quote delimits a
    string, and a key appears as itself) in which ``"key":`` appears once; that occurrence is then the
    object's own key, since the object has it. Otherwise (None, an escape, a key twice, nested keys alike once
    their numbers are gone) :meth:`value_is` says it cannot tell."""

    def __init__(self, text: bytes | None):
        self._marks = None if text is None or b"\\" in text else text.translate(None, _DELETED)

    def value_is(self, key: str, expected: bytes) -> bool | None:
        """Whether the value of the object's ``key`` has the marks ``expected`` (balanced brackets: a prefix of
        the value's marks equal to it is all of them); None when these marks cannot tell."""
        if self._marks is None:
            return None
        name = b'"' + key.encode().translate(None, _DELETED) + b'":'
        at = self._marks.find(name)
        if at < 0 or self._marks.find(name, at + 1) >= 0:
            return None
        return self._marks.startswith(expected, at + len(name))


def number_rows(
    value, width: int | None, *, integer: bool, field: str, where: dict, marks: ObjectMarks | None = None
) -> np.ndarray:
    """``value`` (an array of ``width``-number rows, or of numbers when ``width`` is None) as an int64
    (``integer``) or float64 array; one InputError naming ``field`` and ``where`` otherwise. Integers must be
    whole JSON integers within ±2³¹; floats finite (JSON has no other). ``marks``: those of the object whose
    key ``field`` holds ``value``, which check its rows faster when they can."""
    shape = "a list of numbers" if width is None else f"a list of [{', '.join(['n'] * width)}] rows"
    if not is_array(value):
        raise InputError(f"expected {shape}", field=field, **where)
    try:
        flat = np.frombuffer(
            value.as_buffer(of_type="i" if integer else "d"), dtype=np.int64 if integer else np.float64
        )
    except (TypeError, ValueError, RuntimeError):
        raise InputError(f"expected {shape} of {'integers' if integer else 'numbers'}", field=field, **where) from None
    rows = len(value)
    expected = _row_marks(rows, width)
    known = None if marks is None else marks.value_is(field, expected)
    if not (known if known is not None else value.mini.translate(None, _NUMBER_CHARS) == expected):
        raise InputError(f"expected {shape}", field=field, **where)
    if integer and len(flat) and (flat.min() < -_INT_LIMIT or flat.max() > _INT_LIMIT):
        raise InputError("integer outside ±2³¹", field=field, **where)
    return flat.reshape(rows, width) if width is not None else flat


def box_rows(values: list, field: str, where: dict) -> np.ndarray:
    """``[N, 4]`` float64 from N separate JSON arrays (one ``[x1, y1, x2, y2]`` per instance), or one InputError:
    each must be an array of exactly 4 numbers (not ``true`` or ``"1"``)."""
    numbers: list = []
    for value in values:
        row = list(value) if is_array(value) else None
        if row is None or len(row) != 4 or not all(type(v) is float or type(v) is int for v in row):
            raise InputError("expected one [x1, y1, x2, y2] of numbers per instance", field=field, **where)
        numbers += row
    return np.array(numbers, dtype=np.float64).reshape(-1, 4)


def _row_marks(rows: int, width: int | None) -> bytes:
    """The brackets and commas of ``[[n, …], …]``, ``rows`` rows of ``width`` numbers (``[n, …]`` when ``width``
    is None): what a value of numbers only (as ``as_buffer`` checked) must leave once its numbers are gone."""
    if not rows:
        return b"[]"
    if width is None:
        return b"[" + b"," * (rows - 1) + b"]"
    row = b"[" + b"," * (width - 1) + b"]"
    return b"[" + (row + b",") * (rows - 1) + row + b"]"  # bytes * n: ~25× a join of n rows
