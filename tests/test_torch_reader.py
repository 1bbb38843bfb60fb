"""The torch reader's tables (``tensor_table``, ``boxlists``), its two paths (``bulk_pickle`` for usual files,
the careful unpickler for the rest) and the careful one's memo compaction: the geometry of every tensor is
honoured by both paths, bad geometry is refused, both paths and compaction read the same, and what stays in
memory once a file is read does not grow with its images beyond its tables' arrays."""

from __future__ import annotations

import gc
import os
import time
import tracemalloc

import numpy as np
import pytest
from conftest import random_case, small_vocab
from torch_writer import Strided, eval_results_object, save_legacy, save_zip

from sgg_eval.core import tuning
from sgg_eval.core.errors import InputError
from sgg_eval.formats import eval_results
from sgg_eval.formats.eval_results import EvalResults
from sgg_eval.formats.torch import unpickler
from sgg_eval.formats.torch.reader import load
from sgg_eval.io.processes import run_isolated, start_isolated

VOCAB = small_vocab(6, 5)
SAVES = {"zip": save_zip, "legacy": save_legacy}


@pytest.fixture(params=["bulk", "careful"])
def reader(request, monkeypatch):
    """Each test using it runs with the fast path on (usual files take it) and off (the careful reader)."""
    monkeypatch.setattr(unpickler, "BULK", request.param == "bulk")
    return request.param


def _expected(base: np.ndarray, offset: int, shape, stride) -> np.ndarray:
    """Element [i, j, ...] is base[offset + sum(index * stride)]: the definition, by loops."""
    out = np.empty(shape, dtype=base.dtype)
    for index in np.ndindex(*shape):
        out[index] = base[offset + sum(i * s for i, s in zip(index, stride))]
    return out


GEOMETRIES = {
    "transposed": (np.arange(12, dtype=np.float32), 0, (4, 3), (1, 4)),
    "offset_rows": (np.arange(20, dtype=np.int64), 5, (3, 5), (5, 1)),
    "every_other": (np.arange(10, dtype=np.float64), 1, (4,), (2,)),
    "broadcast_row": (np.arange(3, dtype=np.int32), 0, (4, 3), (0, 1)),
    "empty": (np.arange(3, dtype=np.float32), 0, (0, 3), (3, 1)),
    "scalar": (np.arange(7, dtype=np.int64), 6, (), ()),
    "three_d": (np.arange(24, dtype=np.float16), 0, (2, 3, 4), (1, 2, 6)),
}


@pytest.mark.parametrize("layout", SAVES)
def test_every_tensor_geometry_reads_as_defined(tmp_path, layout, reader):
    SAVES[layout]({name: Strided(*g) for name, g in GEOMETRIES.items()}, tmp_path / "t.pytorch")
    back = load(tmp_path / "t.pytorch")
    for name, (base, offset, shape, stride) in GEOMETRIES.items():
        got = back[name].numpy()
        assert got.shape == shape and got.dtype == base.dtype, name
        np.testing.assert_array_equal(got, _expected(base, offset, shape, stride), err_msg=name)
        assert back[name].shape == shape


def test_legacy_storage_views_read_into_their_root(tmp_path, reader):
    base = np.arange(30, dtype=np.float32)
    save_legacy(
        {"a": Strided(base, 2, (2, 3), (3, 1), view=(10, 8)), "b": Strided(base, 0, (4,), (1,), view=(0, 4))},
        tmp_path / "t.pytorch",
    )
    back = load(tmp_path / "t.pytorch")
    np.testing.assert_array_equal(back["a"].numpy(), _expected(base, 12, (2, 3), (3, 1)))
    np.testing.assert_array_equal(back["b"].numpy(), base[:4])


@pytest.mark.parametrize("layout", SAVES)
@pytest.mark.parametrize(
    "geometry",
    [
        (5, (4,), (1,)),
        (0, (3, 4), (4, 1)),
        (0, (2, 2), (9, 1)),
        (0, (2**40, 2**40), (2**40, 1)),
        (0, (2**62, 4), (1, 2**62)),
    ],
)
def test_a_tensor_past_its_storage_is_refused_when_read(tmp_path, layout, geometry, reader):
    SAVES[layout](
        {"ok": np.arange(3), "bad": Strided(np.arange(8, dtype=np.float32), *geometry)}, tmp_path / "t.pytorch"
    )
    back = load(tmp_path / "t.pytorch")
    np.testing.assert_array_equal(back["ok"].numpy(), np.arange(3))
    with pytest.raises(InputError, match="reads past the end of storage"):
        back["bad"].numpy()


def _cases(n: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    return [random_case(rng, VOCAB, "predcls", i) for i in range(n)]


def _all_arrays(path) -> list[np.ndarray]:
    loaded = EvalResults(path, VOCAB)
    return [
        a
        for gt, pred in loaded.pairs()
        for a in (gt.boxes, gt.labels, gt.rels, pred.boxes, pred.labels, pred.obj_scores, pred.pairs, pred.rel_scores)
    ]


@pytest.mark.parametrize("layout", SAVES)
def test_memo_compaction_changes_nothing_read(tmp_path, layout, monkeypatch):
    monkeypatch.setattr(unpickler, "BULK", False)  # compaction is the careful reader's
    SAVES[layout](eval_results_object(_cases(40)), tmp_path / "e.pytorch")
    monkeypatch.setattr(eval_results, "run_isolated", lambda func, *args: func(*args))  # parse here, to spy
    dropped = []
    compact = unpickler._RestrictedUnpickler._compact_memo

    def spy(self):
        compact(self)
        dropped.append(self.dropped)

    monkeypatch.setattr(unpickler._RestrictedUnpickler, "_compact_memo", spy)
    monkeypatch.setattr(tuning, "COMPACT_EVERY", 10**9)
    plain = _all_arrays(tmp_path / "e.pytorch")
    assert not dropped
    monkeypatch.setattr(tuning, "COMPACT_EVERY", 3)
    compacted = _all_arrays(tmp_path / "e.pytorch")
    assert len(dropped) > 50 and dropped[-1] > 1000  # it did forget objects, many times
    assert len(plain) == len(compacted) == 40 * 8
    for a, b in zip(plain, compacted):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("layout", SAVES)
def test_a_pickle_referring_back_to_a_forgotten_object_is_read_again(tmp_path, layout, monkeypatch):
    """The same array object twice: pickle writes the second as a reference to the first tensor (a memo
    get), which compaction has forgotten by then; the file is read again without compaction."""
    shared = np.arange(6, dtype=np.float32).reshape(2, 3)
    SAVES[layout](
        {"first": shared, "pad": [np.arange(i + 1) for i in range(20)], "again": shared}, tmp_path / "t.pytorch"
    )
    monkeypatch.setattr(tuning, "COMPACT_EVERY", 2)
    monkeypatch.setattr(unpickler, "BULK", False)
    back = load(tmp_path / "t.pytorch")
    assert back["again"] is back["first"]
    np.testing.assert_array_equal(back["again"].numpy(), shared)
    for i, t in enumerate(back["pad"]):
        np.testing.assert_array_equal(t.numpy(), np.arange(i + 1))


@pytest.mark.parametrize("layout", SAVES)
def test_memory_kept_after_reading_does_not_grow_with_the_images(tmp_path, layout, monkeypatch, reader):
    """Once parsed, a file costs its tables' arrays: a few hundred bytes per image (the object graph it
    replaced cost ~6 kB per image), measured as the traced memory still held after reading, with the parse
    in this process (as where fork is unavailable)."""
    monkeypatch.setattr(eval_results, "run_isolated", lambda func, *args: func(*args))
    held = {}
    for n in (100, 400):
        path = tmp_path / f"e{n}.pytorch"
        SAVES[layout](eval_results_object(_cases(n)), path)
        tracemalloc.start()
        loaded = EvalResults(path, VOCAB)
        gc.collect()  # empties CPython's free lists of tuples and floats (bounded caches, not the file's)
        held[n] = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert len(loaded) == n
        del loaded
    per_image = (held[400] - held[100]) / 300
    assert per_image < 1000, per_image


@pytest.mark.parametrize("layout", SAVES)
def test_a_parse_in_a_child_process_reads_the_same(tmp_path, layout, monkeypatch):
    SAVES[layout](eval_results_object(_cases(30)), tmp_path / "e.pytorch")
    isolated = _all_arrays(tmp_path / "e.pytorch")
    monkeypatch.setattr(eval_results, "run_isolated", lambda func, *args: func(*args))
    here = _all_arrays(tmp_path / "e.pytorch")
    assert len(isolated) == len(here) == 30 * 8
    for a, b in zip(isolated, here):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def _fails(kind: str):
    if kind == "input":
        raise InputError("bad field", path="f.pytorch", image_id=3, field="labels")
    raise ZeroDivisionError("a bug")


def test_run_isolated_returns_the_result_and_raises_the_error_of_the_child():
    parent = os.getpid()
    assert run_isolated(os.getpid) != parent
    assert run_isolated(np.arange, 4).tolist() == [0, 1, 2, 3]
    with pytest.raises(InputError) as err:
        run_isolated(_fails, "input")
    assert (err.value.path, err.value.image_id, err.value.field) == ("f.pytorch", 3, "labels")
    with pytest.raises(ZeroDivisionError, match="a bug"):
        run_isolated(_fails, "bug")


def test_a_started_child_works_while_this_process_does_and_is_stopped_when_not_wanted():
    """``start_isolated``: the result is taken after this process's own work; leaving the ``with`` block without
    it (this process failed first) stops the child at once instead of waiting for it, and leaves no child."""
    with start_isolated(np.arange, 3) as running:
        mine = os.getpid()
        assert running.result().tolist() == [0, 1, 2] and mine == os.getpid()
    started = time.monotonic()
    with pytest.raises(InputError):
        with start_isolated(time.sleep, 120) as running:
            child = running._pid
            raise InputError("the split failed first", path="split.h5")
    assert time.monotonic() - started < 60  # not the child's 120 s
    with pytest.raises(ChildProcessError):
        os.waitpid(child, os.WNOHANG)  # reaped already


@pytest.mark.parametrize("layout", SAVES)
@pytest.mark.parametrize("every", [2, 10**9])
def test_tensors_sharing_a_storage_read_its_bytes(tmp_path, layout, every, monkeypatch, reader):
    """Two tensors of one storage (its key pickled once, then referred back to), among others: each reads
    its own window of the shared bytes, with and without memo compaction."""
    base, token = np.arange(12, dtype=np.float32), object()
    SAVES[layout](
        {
            "pad": [np.arange(i + 2) for i in range(6)],
            "first": Strided(base, 0, (2, 3), (3, 1), share=token),
            "second": Strided(base, 6, (3, 2), (1, 3), share=token),
            "last": np.arange(3),
        },
        tmp_path / "t.pytorch",
    )
    monkeypatch.setattr(tuning, "COMPACT_EVERY", every)
    back = load(tmp_path / "t.pytorch")
    np.testing.assert_array_equal(back["first"].numpy(), _expected(base, 0, (2, 3), (3, 1)))
    np.testing.assert_array_equal(back["second"].numpy(), _expected(base, 6, (3, 2), (1, 3)))
    np.testing.assert_array_equal(back["last"].numpy(), np.arange(3))
    for i, t in enumerate(back["pad"]):
        np.testing.assert_array_equal(t.numpy(), np.arange(i + 2))


def _tables(path) -> tuple:
    """Everything the reader keeps of an eval_results file: its BoxList and tensor columns, by name."""
    table, gt_rows, pred_rows, gt_tensors, pred_tensors = eval_results._parse(str(path))
    t = table.tensors
    return (
        {name: getattr(table, name) for name in ("bbox", "mode", "width", "height", "fields")},
        {
            name: getattr(t, name)
            for name in ("t_code", "t_byte", "t_nbytes", "t_dims_at", "t_ndim_np", "t_dims_np", "t_bad")
        },
        table.columns,
        gt_rows,
        pred_rows,
        gt_tensors,
        pred_tensors,
    )


@pytest.mark.parametrize("layout", SAVES)
def test_the_fast_path_keeps_what_the_careful_reader_keeps(tmp_path, layout, monkeypatch):
    """A usual file (random images, empty ones, the xywh box mode, a shared storage) gives byte-identical tables
    by either path, and the fast path was indeed taken."""
    cases = _cases(25, seed=8)
    obj = eval_results_object(cases)
    obj["predictions"][3].mode = "xywh"
    path = tmp_path / "e.pytorch"
    SAVES[layout](obj, path)
    taken = []
    bulk = unpickler.bulk_unpickle
    monkeypatch.setattr(unpickler, "bulk_unpickle", lambda *a: taken.append(out := bulk(*a)) or out)
    fast = _tables(path)
    assert taken and taken[0] is not None
    monkeypatch.setattr(unpickler, "BULK", False)
    careful = _tables(path)
    for got, want in zip(fast, careful):
        if isinstance(got, dict):
            assert got.keys() == want.keys()
            for name in got:
                np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(want[name]), err_msg=name)
        else:
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("odd", ["mode", "size", "field", "view"])
def test_an_unusual_file_is_left_to_the_careful_reader(tmp_path, monkeypatch, odd):
    """What the fast path does not take (an unknown box mode, a float image size, a field that is not a
    tensor, a legacy storage view) it hands over whole: the careful reader's tables, and its messages."""
    obj = eval_results_object(_cases(6, seed=2))
    pred = obj["predictions"][4]
    if odd == "mode":
        pred.mode = "cxcywh"
    elif odd == "size":
        pred.size = (640.0, 480.0)
    elif odd == "field":
        pred.extra_fields["pred_scores"] = [0.5]
    else:
        pred.extra_fields["pred_labels"] = Strided(np.arange(40), 0, (len(pred.bbox),), (1,), view=(2, 30))
    path = tmp_path / "e.pytorch"
    (save_legacy if odd == "view" else save_zip)(obj, path)
    taken = []
    bulk = unpickler.bulk_unpickle
    monkeypatch.setattr(unpickler, "bulk_unpickle", lambda *a: taken.append(out := bulk(*a)) or out)
    fast = _tables(path)
    assert taken == [None]
    monkeypatch.setattr(unpickler, "BULK", False)
    careful = _tables(path)
    np.testing.assert_array_equal(fast[0]["fields"], careful[0]["fields"])
    assert fast[2] == careful[2]


@pytest.mark.parametrize("layout", SAVES)
def test_released_images_read_the_same_again(tmp_path, layout):
    """``release`` drops this process's pages of a block of images (never the data): the views it had, and a
    new read of the same images and of their neighbours, hold the same values."""
    SAVES[layout](eval_results_object(_cases(30)), tmp_path / "e.pytorch")
    loaded = EvalResults(tmp_path / "e.pytorch", VOCAB)
    before = [(gt.rels.copy(), pred.rel_scores.copy()) for gt, pred in loaded.pairs()]
    views = list(loaded.read(10, 20))
    for start, stop in ((10, 20), (0, 30), (29, 40), (5, 5)):
        loaded.release(start, stop)
    for (gt, pred), (rels, scores) in zip(views, before[10:20]):  # views taken before the release
        np.testing.assert_array_equal(pred.rel_scores, scores)
        np.testing.assert_array_equal(gt.rels, rels)
    for (gt, pred), (rels, scores) in zip(loaded.pairs(), before):
        np.testing.assert_array_equal(pred.rel_scores, scores)
        np.testing.assert_array_equal(gt.rels, rels)
