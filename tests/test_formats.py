"""Torch files (zip and legacy) read without torch and safely; eval_results and SGBench JSON evaluation."""

from __future__ import annotations

import json
import os
import pickle
import struct
import zipfile
from importlib import resources

import numpy as np
import pytest
from conftest import random_case, small_vocab
from reference_metrics import reference_evaluate
from torch_writer import eval_results_object, save_legacy, save_zip

from sgg_eval.boxes.sources import open_predictions
from sgg_eval.core import tuning
from sgg_eval.core.errors import InputError
from sgg_eval.data.store import write_split
from sgg_eval.data.types import GTImage, SplitMeta
from sgg_eval.formats.eval_results import read_eval_results
from sgg_eval.formats.sgbench_json import read_sgbench_json
from sgg_eval.formats.torch.reader import load
from sgg_eval.metrics.engine import evaluate
from sgg_eval.metrics.options import EvalOptions

VOCAB = small_vocab(6, 5)


@pytest.mark.parametrize("save", [save_zip, save_legacy])
def test_tensor_round_trip(tmp_path, save):
    arrays = {
        "f": np.arange(12, dtype=np.float32).reshape(3, 4),
        "i": np.array([[1, 2, 3]], dtype=np.int64),
        "h": np.array([0.5, 1.5], dtype=np.float16),
        "empty": np.zeros((0, 3), dtype=np.int64),
    }
    save(arrays, tmp_path / "t.pytorch")
    back = load(tmp_path / "t.pytorch")
    for k, a in arrays.items():
        got = back[k].numpy()
        assert got.dtype == a.dtype and got.shape == a.shape
        np.testing.assert_array_equal(got, a)


def test_real_legacy_zeroshot_file_matches_its_raw_bytes():
    """The reference's own zeroshot_triplet.pytorch (PyTorch 1.4, legacy). The expected values come from the
    file's trailing storage bytes read with struct, independently of the unpickler."""
    path = resources.files("sgg_eval.data").joinpath("resources/zeroshot_triplet.pytorch")
    raw = path.read_bytes()
    tail = raw[-5971 * 3 * 8 :]
    (count,) = struct.unpack("<q", raw[-5971 * 3 * 8 - 8 : -5971 * 3 * 8])
    assert count == 5971 * 3
    expected = np.frombuffer(tail, dtype="<i8").reshape(5971, 3)
    got = load(str(path)).numpy()
    np.testing.assert_array_equal(got, expected)
    assert got.min() >= 1 and got[:, :2].max() <= 150 and got[:, 2].max() <= 50


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("kind", ["zip", "legacy"])
def test_pickle_with_foreign_global_is_refused_without_executing(tmp_path, kind):
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"groundtruths": [_Evil(marker)]}, protocol=2)
    path = tmp_path / "evil.pytorch"
    if kind == "zip":
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("archive/data.pkl", payload)
    else:
        with open(path, "wb") as fh:
            for plain in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}):
                pickle.dump(plain, fh, protocol=2)
            fh.write(payload)
    with pytest.raises(InputError, match=r"refused to load: .*(posix|os)\.system"):
        load(path)
    assert not marker.exists()


def test_evil_global_in_legacy_header_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pytorch"
    path.write_bytes(pickle.dumps(_Evil(marker), protocol=2))
    with pytest.raises(InputError, match="refused to load"):
        load(path)
    assert not marker.exists()


def _cases(task, seed=5, n=60):
    rng = np.random.default_rng(seed)
    return [random_case(rng, VOCAB, task, i) for i in range(n)]


@pytest.mark.parametrize("save", [save_zip, save_legacy])
@pytest.mark.parametrize("task", ["predcls", "sgdet"])
def test_eval_results_file_evaluates_like_the_reference(tmp_path, save, task):
    cases = _cases(task)
    save(eval_results_object(cases), tmp_path / "eval_results.pytorch")
    vocab, n, pairs = read_eval_results(tmp_path / "eval_results.pytorch", VOCAB)
    assert n == len(cases)
    ours = evaluate(pairs, vocab, EvalOptions(task=task, order="stored"))
    ref, evaluated = reference_evaluate(cases, VOCAB.num_predicates, task, order="stored")
    assert ours["counts"]["images_evaluated"] == evaluated
    for name, value in ref.items():
        if name.startswith(("zR", "ng-zR", "wR_tr", "wIMR", "ng-wIMR")):
            continue
        assert (ours["metrics"][name] is None) == (value is None), name
        if value is not None:
            assert abs(ours["metrics"][name] - value) <= 1e-12, name


def test_eval_results_missing_field_is_named(tmp_path):
    obj = eval_results_object(_cases("predcls", n=3))
    del obj["predictions"][1].extra_fields["rel_pair_idxs"]
    save_zip(obj, tmp_path / "e.pytorch")
    _, _, pairs = read_eval_results(tmp_path / "e.pytorch", VOCAB)
    with pytest.raises(InputError, match=r"image 1: field 'rel_pair_idxs'"):
        list(pairs)


def _sgbench_doc(cases):
    images = []
    for gt, pred in cases:
        order = np.argsort(-pred.rel_scores[:, 1:].max(axis=1), kind="stable")
        trip = [[int(pred.pairs[j, 0]), int(pred.pairs[j, 1]), int(pred.rel_scores[j, 1:].argmax())] for j in order]
        if trip:
            trip.append(trip[0])  # a duplicate: dropped, first kept
        images.append(
            {
                "id": gt.image_id,
                "instances": [
                    {"bbox": [float(v) for v in b], "category": int(c) - 1} for b, c in zip(pred.boxes, pred.labels)
                ],
                "triplets": trip,
            }
        )
    return {"version": 1, "images": images}


def test_sgbench_json_rank_metrics_match_reference(tmp_path):
    cases = _cases("sgdet", seed=9)
    (tmp_path / "p.json").write_text(json.dumps(_sgbench_doc(cases)))
    preds, dropped = read_sgbench_json(tmp_path / "p.json", VOCAB)
    assert dropped == sum(1 for _, p in cases if len(p.pairs))
    pairs = [(gt, preds[gt.image_id]) for gt, _ in cases]
    ours = evaluate(iter(pairs), VOCAB, EvalOptions(task="sgdet", order="stored", score_kind="ranked"))
    ref, _ = reference_evaluate(pairs, VOCAB.num_predicates, "sgdet", order="stored")
    for name in ("R@20", "R@50", "mR@50", "PR@20", "InstR", "R@1x", "mR@2x", "IMR@10", "IMR@50"):
        assert abs(ours["metrics"][name] - ref[name]) <= 1e-12, name  # IMR needs only the GC order
    assert ours["metrics"]["ngR@20"] is None and ours["metrics"]["ng-IMR@20"] is None
    assert any("ranked triplets only" in n for n in ours["notes"])


@pytest.mark.parametrize(
    "mutate,fragment",
    [
        (lambda d: d["images"][0]["triplets"].append([-1, 0, 0]), "field 'triplets'"),
        (lambda d: d["images"][0]["triplets"].append([0, 1, 99]), "predicate outside"),
        (
            lambda d: d["images"][0]["instances"].append({"bbox": [0, 0, float("nan"), 1], "category": 0}),
            "NaN is not a JSON number",
        ),
    ],
)
def test_sgbench_json_bad_input_is_refused(tmp_path, mutate, fragment):
    cases = [c for c in _cases("sgdet", seed=11, n=20) if len(c[1].boxes) >= 2][:3]
    doc = _sgbench_doc(cases)
    mutate(doc)
    (tmp_path / "p.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match=fragment):
        read_sgbench_json(tmp_path / "p.json", VOCAB)


def test_file_with_thousands_of_tensors_streams(tmp_path):
    """Regression: one mapping per tensor exhausted file descriptors on real eval_results files."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    n = max(150, soft // 9 + 20)  # 9 tensors per image: more than the descriptor limit in total
    cases = _cases("predcls", seed=13, n=n)
    save_zip(eval_results_object(cases), tmp_path / "big.pytorch")
    _, count, pairs = read_eval_results(tmp_path / "big.pytorch", VOCAB)
    assert count == n and sum(1 for _ in pairs) == n


@pytest.mark.parametrize("fmt", ["eval_zip", "eval_zip_gt", "eval_legacy", "store", "store_shuffled", "sgbench"])
def test_reading_by_position_gives_the_slices_of_the_stream(tmp_path, fmt, monkeypatch):
    """``--jobs`` workers read their own blocks with ``source.read(start, stop)``: for every format it must be
    exactly the matching slice of the whole stream (same images, same arrays, same order)."""
    from sgg_eval.boxes import sources
    from sgg_eval.data.store import write_predictions, write_split
    from sgg_eval.data.types import PredictionMeta, SplitMeta

    monkeypatch.setattr(tuning, "STORE_READ_BATCH", 4)  # ranges cross store batches
    cases = _cases("sgcls", seed=17, n=23)
    gt_path, path = str(tmp_path / "test.h5"), str(tmp_path / "pred")
    write_split(gt_path, SplitMeta("test", VOCAB, "unit", True, "unit"), [g for g, _ in cases])
    if fmt.startswith("eval"):
        (save_legacy if fmt == "eval_legacy" else save_zip)(eval_results_object(cases), path)
    elif fmt.startswith("store"):
        preds = [p for _, p in cases]
        if fmt == "store_shuffled":  # ids in another order than the split's: joined by id
            preds = preds[::-1]
        write_predictions(path, PredictionMeta("sgcls", "probabilities", VOCAB, "m", True, "unit"), preds)
    else:
        with open(path, "w") as fh:
            json.dump(_sgbench_doc(cases), fh)
    source = sources.open_predictions(path, gt=gt_path if fmt != "eval_zip" else None, vocab=VOCAB)
    whole = list(source.pairs())
    assert source.count == len(whole) == len(cases)
    for start, stop in ((0, 5), (5, 13), (13, 23), (21, 99), (7, 7)):
        part = list(source.read(start, stop))
        assert len(part) == len(whole[start:stop])
        for (g1, p1), (g2, p2) in zip(part, whole[start:stop]):
            assert g1.image_id == g2.image_id and p1.image_id == p2.image_id
            for a, b in ((g1.rels, g2.rels), (g1.boxes, g2.boxes), (p1.pairs, p2.pairs), (p1.labels, p2.labels)):
                np.testing.assert_array_equal(a, b)
            if p1.rel_scores is not None:
                np.testing.assert_array_equal(p1.rel_scores, p2.rel_scores)


def _split_and_file(tmp_path, n: int = 300):
    """An eval_results file and the split store of its GT (more images than one comparison batch)."""
    rng = np.random.default_rng(21)
    cases = [random_case(rng, VOCAB, "predcls", i) for i in range(n)]
    save_zip(eval_results_object(cases), tmp_path / "e.pytorch")
    gts = [gt for gt, _ in cases]
    return gts, lambda images: write_split(tmp_path / "s.h5", SplitMeta("test", VOCAB, "t", False, "t"), images)


@pytest.mark.parametrize("change", ["label", "rel_order"])
def test_the_split_comparison_beyond_the_first_batch(tmp_path, change):
    """The file's GT is compared with the split's a batch at a time (test_cli_evaluate covers each kind of
    difference): a difference in a later batch is named at its image; relations reordered there still pass."""
    gts, write = _split_and_file(tmp_path)
    bad = next(i for i in range(270, 300) if len(gts[i].rels) >= 2)  # in the second comparison batch
    g = gts[bad]
    labels, rels = g.labels.copy(), g.rels.copy()
    if change == "label":
        labels[0] = labels[0] % VOCAB.num_objects + 1
    else:
        rels = rels[::-1].copy()
    write(gts[:bad] + [GTImage(g.image_id, g.width, g.height, g.boxes, labels, rels)] + gts[bad + 1 :])
    source = open_predictions(str(tmp_path / "e.pytorch"), gt=str(tmp_path / "s.h5"))
    if change == "rel_order":
        assert sum(1 for _ in source.pairs()) == len(gts)
        return
    with pytest.raises(InputError, match="not the GT split") as err:
        for _ in source.pairs():
            pass
    assert (err.value.position, err.value.field) == (bad, "groundtruths")
