"""Split and prediction stores: exact round trips, batch reading, determinism, self-description, errors."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from conftest import random_gt, random_pred, small_vocab

from sgg_eval.core.errors import InputError
from sgg_eval.data.store import PredictionStore, SplitStore, write_predictions, write_split
from sgg_eval.data.types import GTImage, PredictionMeta, SplitMeta
from sgg_eval.io.integrity import seal

VOCAB = small_vocab()


def _split_meta():
    return SplitMeta("test", VOCAB, "unit", True, "unit test", {"simulated": True})


def _assert_gt_equal(a: GTImage, b: GTImage):
    assert (a.image_id, a.width, a.height) == (b.image_id, b.width, b.height)
    for f in ("boxes", "labels", "rels"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


def test_split_round_trip_in_batches(tmp_path, rng):
    images = [random_gt(rng, VOCAB, i) for i in range(57)]
    images[3] = GTImage(3, 10, 10, np.zeros((0, 4)), [], np.zeros((0, 3)))  # empty image
    assert write_split(tmp_path / "s.h5", _split_meta(), iter(images)) == 57
    with SplitStore(tmp_path / "s.h5") as store:
        assert len(store) == 57
        assert store.meta.simulated and store.meta.split == "test" and store.vocab == VOCAB
        got = [im for batch in store.batches(batch_size=10) for im in batch]
        assert [len(b) for b in store.batches(batch_size=10)] == [10] * 5 + [7]
        for a, b in zip(images, got):
            _assert_gt_equal(a, b)
        _assert_gt_equal(store.image(56), images[56])


def test_a_loaded_split_reads_the_same_images_without_its_file(tmp_path, rng):
    """``load`` reads every column into memory and closes the file: the same images after (the file deleted),
    by any batch, as read-only views."""
    images = [random_gt(rng, VOCAB, i) for i in range(23)]
    images[5] = GTImage(5, 10, 10, np.zeros((0, 4)), [], np.zeros((0, 3)))
    write_split(tmp_path / "s.h5", _split_meta(), iter(images))
    store = SplitStore(tmp_path / "s.h5").load()
    assert store.h5 is None
    (tmp_path / "s.h5").unlink()
    for a, b in zip(images, [im for batch in store.batches(batch_size=4) for im in batch]):
        _assert_gt_equal(a, b)
    assert not store.image(7).boxes.flags.writeable
    store.close()  # closing a loaded store is harmless
    _assert_gt_equal(store.image(22), images[22])


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_prediction_round_trip(tmp_path, rng, dtype):
    images = [random_pred(rng, VOCAB, i) for i in range(23)]
    meta = PredictionMeta("sgdet", "logits", VOCAB, "m", True, "unit", {"backbone": "x"})
    write_predictions(tmp_path / "p.h5", meta, images, score_dtype=dtype)
    with PredictionStore(tmp_path / "p.h5") as store:
        assert (
            store.meta.task == "sgdet" and store.meta.score_kind == "logits" and store.meta.extra == {"backbone": "x"}
        )
        for a, b in zip(images, store):
            for f in ("boxes", "labels", "obj_scores", "pairs"):
                np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
            assert b.rel_scores.dtype == np.dtype(dtype)
            np.testing.assert_array_equal(a.rel_scores.astype(dtype), b.rel_scores)


def test_same_content_gives_identical_bytes(tmp_path, rng):
    images = [random_gt(rng, VOCAB, i) for i in range(30)]
    write_split(tmp_path / "a.h5", _split_meta(), images)
    write_split(tmp_path / "b.h5", _split_meta(), images)
    assert (tmp_path / "a.h5").read_bytes() == (tmp_path / "b.h5").read_bytes()


def test_invalid_image_is_refused_and_no_file_left(tmp_path, rng):
    good = random_gt(rng, VOCAB, 1)
    bad = GTImage(7, 10, 10, [[0, 0, 1, 1], [0, 0, 2, 2]], [1, 2], [[0, 5, 1]])  # object index 5 of 2
    with pytest.raises(InputError, match=r"image 7: field 'rels \(object index\)'"):
        write_split(tmp_path / "s.h5", _split_meta(), [good, bad])
    assert list(tmp_path.iterdir()) == []
    bad_label = GTImage(8, 10, 10, [[0, 0, 1, 1]], [VOCAB.num_objects + 1], np.zeros((0, 3)))
    with pytest.raises(InputError, match=r"image 8: field 'labels'"):
        write_split(tmp_path / "s.h5", _split_meta(), [bad_label])


def test_wrong_kind_missing_file_and_missing_dataset(tmp_path, rng):
    write_split(tmp_path / "s.h5", _split_meta(), [random_gt(rng, VOCAB, 0)])
    with pytest.raises(InputError, match="is a 'split' store, expected 'predictions'"):
        PredictionStore(tmp_path / "s.h5")
    with pytest.raises(InputError, match="nope.h5: file not found"):
        SplitStore(tmp_path / "nope.h5")
    with h5py.File(tmp_path / "s.h5", "a") as h5:
        del h5["relations/offsets"]
    seal(tmp_path / "s.h5")
    with pytest.raises(InputError, match="field 'relations/offsets'"):
        SplitStore(tmp_path / "s.h5")


def test_text_image_ids_round_trip_and_are_checked(tmp_path, rng):
    """GQA's ids are text ("2354786", "n161313"): a split of text ids stores and reads them as text; an id that is
    not up to 10 lowercase letters and digits, or ids mixing numbers and text, are refused; a store edited to hold
    a bad text id is refused when opened."""
    ids = ["2354786", "n161313", "12", "z" * 10]
    images = []
    for k, image_id in enumerate(ids):
        g = random_gt(rng, VOCAB, k)
        images.append(GTImage(image_id, g.width, g.height, g.boxes, g.labels, g.rels))
    write_split(tmp_path / "s.h5", _split_meta(), iter(images))
    with SplitStore(tmp_path / "s.h5") as store:
        assert store.image_ids.dtype.kind == "S"
        got = list(store)
    assert [g.image_id for g in got] == ids
    for a, b in zip(images, got):
        _assert_gt_equal(a, b)
    for bad in ("", "n 1", "é1", "N1", "x" * 11, True, 1.5):
        with pytest.raises(InputError, match="image_id"):
            write_split(tmp_path / "b.h5", _split_meta(), iter([GTImage(bad, 10, 10, np.zeros((0, 4)), [], [])]))
    with pytest.raises(ValueError, match="mix"):
        write_split(tmp_path / "m.h5", _split_meta(), iter([images[0], random_gt(rng, VOCAB, 9)]))
    for stored in (b"n1\x00x", b"a\x7fb", b"\x00\x00", b"AB"):
        with h5py.File(tmp_path / "s.h5", "r+") as h5:
            column = h5["images/image_id"][()]
            column[1] = stored
            del h5["images/image_id"]
            h5["images/image_id"] = column
        seal(tmp_path / "s.h5")
        with pytest.raises(InputError, match="image_id"):
            SplitStore(tmp_path / "s.h5")
        write_split(tmp_path / "s.h5", _split_meta(), iter(images))
