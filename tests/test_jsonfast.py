"""The simdjson readers of large JSON: an array of objects read an item at a time equals the whole document
(strings holding quotes, braces and backslashes included), anything that is not such an array is refused, and
number arrays are taken only when every value is a number in rows of the expected width."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sgg_eval.errors import InputError
from sgg_eval.jsonfast import number_rows, parse_document, parse_items

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
