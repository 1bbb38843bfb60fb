"""The simdjson readers of large JSON: an array of objects read an item at a time equals the whole document
(strings holding quotes, braces and backslashes included), anything that is not such an array is refused, and
number arrays are taken only when every value is a number in rows of the expected width."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sgg_eval.core.errors import InputError
from sgg_eval.io.jsonfast import ObjectMarks, number_rows, parse_document, parse_items

DOCS = [
    {"version": 1, "images": [{"id": "a", "x": [[1, 2, 3]]}, {"id": 'b"{[', "y": "}]\\"}, {"id": 3}]},
    {"images": [], "version": 2},
    {"a": {"images": [1]}, "images": [{"k": "\\\\", "v": {"w": [{}]}}], "z": [[[]]], "q": [{"a": 1}]},
    {"q": [{"a": 1}], "t": "images", "images": [{"y": "yy"}, {"z": '\\"}'}], "after": [{"b": 2}]},
]


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("doc", DOCS, ids=range(len(DOCS)))
def test_items_one_at_a_time_equal_the_whole_document(doc, indent):
    raw = json.dumps(doc, indent=indent).encode()
    _, skeleton, items = parse_items(raw, "images", "x.json")
    assert [json.loads(item.mini) for _, item in items] == doc["images"]
    assert json.loads(skeleton.mini) == {**doc, "images": []}


def test_items_are_found_whatever_whitespace_separates_them():
    """Items joined by one comma alone or with one space or newline are taken in a run, without a look at
    each gap; any other separator is checked on its own. Every mix gives the items themselves."""
    rng = np.random.default_rng(0)
    gaps = [",", ", ", ",\n", ",\t", " ,", ",  ", "\n,\n  ", "\r\n,"]
    for _ in range(50):
        images = [{"id": int(i), "s": "},{" * int(rng.integers(0, 2))} for i in range(int(rng.integers(0, 30)))]
        text = "".join((gaps[rng.integers(len(gaps))] if k else "") + json.dumps(x) for k, x in enumerate(images))
        raw = ('{"images": [' + text + '], "after": [{"b": 2}]}').encode()
        _, skeleton, items = parse_items(raw, "images", "x.json")
        assert [json.loads(item.mini) for _, item in items] == images
        assert json.loads(skeleton.mini) == {"images": [], "after": [{"b": 2}]}


def test_a_document_without_the_key_is_read_whole():
    _, doc, items = parse_items(b'{"other": [{"a": 1}]}', "images", "x.json")
    assert list(items) == [] and json.loads(doc.mini) == {"other": [{"a": 1}]}


BAD = [
    b'{"images": [{"a":1} {"b":2}]}',
    b'{"images": [{"a":1},, {"b":2}]}',
    b'{"images": [1, {"b":2}]}',
    b'{"images": [{"a":1}]',
    b'{"images": [{"a":1}]]}',
    b'{"images": [[1]]}',
    b'{"images": [{"a":1},]}',
    b'{"images": [{"a":1}}',
    b'{"images": [{"a":1}], "x": [{"b":1}, ]}',
    b'{"images": [{"a":1},,{"b":2}]}',
    b'{"images": [{"a":1},\n,{"b":2}]}',
    b'{"images": [{"a":1}, ,{"b":2}]}',
    b'{"images": [{"a":1},{"b":2},x{"c":3}]}',
    b'{"images": [{"a":\xff}]}',
    b'{"images": [{"a":NaN}]}',
    b'{"images": [{"a":1e999}]}',
]


@pytest.mark.parametrize("raw", BAD)
def test_anything_else_is_refused(raw):
    with pytest.raises(InputError):
        _, _, items = parse_items(raw, "images", "x.json")
        list(items)


ROWS = {b"[[1,2,3],[4,5,6]]": [[1, 2, 3], [4, 5, 6]], b"[[7,8,9]]": [[7, 8, 9]], b"[]": []}
NOT_ROWS = [
    b"[[1,2],[3,4,5,6]]",
    b"[[1,[2],3]]",
    b"[5,[[1,2],3,4,5]]",
    b"[[]]",
    b"[[1,2,3],[true,5,6]]",
    b'[[1,2,"3"]]',
    b"[[1,2,3.5]]",
    b"[[1,2,99999999999]]",
    b"{}",
    b"[[1,2,3],null]",
]


def test_number_rows_take_rows_of_integers_only():
    for text, want in ROWS.items():
        _, doc = parse_document(text, "x")
        assert number_rows(doc, 3, integer=True, field="f", where={}).tolist() == want
    for text in NOT_ROWS:
        _, doc = parse_document(text, "x")
        with pytest.raises(InputError):
            number_rows(doc, 3, integer=True, field="f", where={})
    _, doc = parse_document(b"[1, 2.5, -3e2]", "x")
    assert np.array_equal(number_rows(doc, None, integer=False, field="f", where={}), [1, 2.5, -300])


def _rows_either_way(text: bytes, key: str, width: int | None):
    """number_rows of ``key`` in the object ``text``, from its ObjectMarks and from simdjson's minified text:
    (outcome with marks, outcome without, whether the marks could tell); an outcome is the rows or "refused"."""
    _, obj = parse_document(text, "x")
    outcomes = []
    for marks in (ObjectMarks(text), None):
        try:
            outcomes.append(number_rows(obj[key], width, integer=True, field=key, where={}, marks=marks).tolist())
        except InputError:
            outcomes.append("refused")
    return outcomes[0], outcomes[1], ObjectMarks(text).value_is(key, b"[]") is not None


# a value of the right rows hidden elsewhere while the object's own value is ragged: marks that named the
# wrong value would take these
HIDDEN = [
    rb'{"triplet\u0073": [[1, 2], [3, 4, 5, 6]], "x": [{"triplets": [[1, 2, 3], [4, 5, 6]]}]}',
    rb'{"x": [{"triplets": [[1, 2, 3], [4, 5, 6]]}], "triplets": [[1, 2], [3, 4, 5, 6]]}',
    rb'{"tripl3ts": [[1, 2, 3], [4, 5, 6]], "triplets": [[1, 2], [3, 4, 5, 6]]}',
    rb'{"s": "a\\b", "x": [{"triplets": [[1, 2, 3], [4, 5, 6]]}], "triplet\u0073": [[1, 2], [3, 4, 5, 6]]}',
]


@pytest.mark.parametrize("text", HIDDEN, ids=range(len(HIDDEN)))
def test_object_marks_never_check_another_value(text):
    fast, slow, _ = _rows_either_way(text, "triplets", 3)
    assert fast == slow == "refused"


def test_object_marks_agree_with_the_minified_text():
    """Random objects holding a value under "triplets" (rows, or one of NOT_ROWS's shapes), other keys with
    strings of brackets, braces, colons and quotes, nested objects with the same key, any indentation: the
    marks take and refuse exactly what the minified text does, and they do decide most of them."""
    rng = np.random.default_rng(1)
    values = [json.loads(t) for t in (*ROWS, *NOT_ROWS[:4])]
    strings = ["a", '"triplets": [[1, 2, 3]]', "{[,]}:", "tri plets", "\\", "é[", ""]
    decided = 0
    for _ in range(400):
        obj = {"id": strings[rng.integers(len(strings))], "triplets": values[rng.integers(len(values))]}
        if rng.random() < 0.3:
            obj["x"] = [{"triplets": values[rng.integers(len(values))], "s": strings[rng.integers(len(strings))]}]
        if rng.random() < 0.2:
            obj["trip1ets"] = [[1, 2, 3]]
        keys = list(obj)
        rng.shuffle(keys)
        indent = [None, 0, 2][rng.integers(3)]
        text = json.dumps({k: obj[k] for k in keys}, indent=indent, ensure_ascii=bool(rng.integers(2))).encode()
        fast, slow, told = _rows_either_way(text, "triplets", 3)
        assert fast == slow, text
        decided += told
    assert decided > 150
