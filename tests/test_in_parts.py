"""``isolated.in_parts``: a loop split over forked processes gives the serial loop's results in order, and its
first input error exactly where the serial loop meets it, after every earlier result; and an SGBench
submission read by any number of processes equals the one read by one, in its images and in its errors."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from psg_fixture import write_psg_fixture

from sgg_eval.core.errors import InputError
from sgg_eval.io.processes import in_parts
from sgg_eval.panoptic import sgbench_submission
from sgg_eval.panoptic.psg_json import read_psg
from sgg_eval.panoptic.sgbench_submission import Submission


def _serial(compute, count):
    """The loop in_parts stands for: results until the first error, then the error."""
    out = []
    try:
        for k in range(count):
            out.append(compute(k))
    except InputError as exc:
        return out, str(exc)
    return out, None


def _parted(compute, count, jobs, least=1):
    out = []
    try:
        for value in in_parts(compute, count, jobs, least=least):
            out.append(value)
    except InputError as exc:
        return out, str(exc)
    return out, None


def _square_unless(bad: set):
    def compute(k):
        if k in bad:
            raise InputError(f"item {k} is bad")
        return np.arange(k) ** 2  # arrays travel back from the children

    return compute


@pytest.mark.parametrize("jobs", [1, 2, 3, 5])
@pytest.mark.parametrize("count", [0, 1, 4, 17])
@pytest.mark.parametrize("bad", [set(), {0}, {3}, {9, 12}, {16}, {2, 15}])
def test_results_and_first_error_equal_the_serial_loop(jobs, count, bad):
    compute = _square_unless(bad)
    want, parted = _serial(compute, count), _parted(compute, count, jobs)
    assert parted[1] == want[1]
    assert len(parted[0]) == len(want[0]) and all(np.array_equal(a, b) for a, b in zip(parted[0], want[0]))


def test_parts_smaller_than_least_run_here():
    pids = _parted(lambda k: __import__("os").getpid(), 100, 4, least=64)[0]
    assert set(pids) == {__import__("os").getpid()}
    assert len(set(_parted(lambda k: __import__("os").getpid(), 100, 4, least=25)[0])) == 4


@pytest.fixture(scope="module")
def fixture(tmp_path_factory):
    return write_psg_fixture(tmp_path_factory.mktemp("psg"), seed=5, test=30, other=30)


def _read(path, gt, jobs):
    try:
        sub = Submission(path, len(gt.object_classes), gt.num_predicates, boxes=True, jobs=jobs)
    except InputError as exc:
        return str(exc)
    return sub.images


@pytest.mark.parametrize(
    "edit",
    [
        None,
        lambda d: d["images"].append(dict(d["images"][3])),  # listed twice: found while the parts are joined
        lambda d: d["images"][20].__setitem__("triplets", [[0, 0]]),
        lambda d: (d["images"][5].__setitem__("id", d["images"][25]["id"]), d["images"][26].pop("triplets")),
        lambda d: (d["images"][26].__setitem__("id", d["images"][1]["id"]), d["images"][20].pop("triplets")),
    ],
    ids=["valid", "duplicate", "bad_row", "duplicate_before_error", "error_before_duplicate"],
)
def test_a_submission_read_in_parts_equals_one_read_whole(fixture, tmp_path, monkeypatch, edit):
    doc = json.loads(fixture["json"].read_text())
    if edit is not None:
        edit(doc)
    path = tmp_path / "sub.json"
    path.write_text(json.dumps(doc))
    gt = read_psg(fixture["psg"], boxes=True)
    whole = _read(path, gt, 1)
    monkeypatch.setattr(sgbench_submission, "in_parts", functools.partial(in_parts, least=1))
    for jobs in (2, 3):
        parted = _read(path, gt, jobs)
        if isinstance(whole, str):
            assert parted == whole
            continue
        assert list(parted) == list(whole)
        for key, image in whole.items():
            other = parted[key]
            for field in ("labels", "boxes", "triplets", "ng_triplets", "rows"):
                a, b = getattr(image, field), getattr(other, field)
                assert a.dtype == b.dtype and np.array_equal(a, b), (key, field)
            assert (image.position, image.duplicates, image.seg_filename) == (
                other.position,
                other.duplicates,
                other.seg_filename,
            )
    assert (edit is None) == (not isinstance(whole, str))
