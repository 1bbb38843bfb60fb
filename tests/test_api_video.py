"""sgg_eval.VideoEvaluator: the command's document for the same predictions, to the last bit, in any order and
batching of ``update`` and after ``merge``; torch tensors as they come out of a model; bad use refused."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from ag_fixture import release_with_splits

from sgg_eval import InputError, VideoEvaluator
from sgg_eval.cli import main
from sgg_eval.video.ag_example import predictions_for
from sgg_eval.video.ag_store import read_ag_store


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("ag_api")
    release_with_splits(root, 40, seed=8)
    store = root / "splits" / "test_filtersmall.h5"
    split, _, _ = read_ag_store(store)
    preds = predictions_for(split, "sgdet", seed=9)
    for video, arrays in preds.items():
        (root / "preds").mkdir(exist_ok=True)
        np.savez(root / "preds" / f"{video}.npz", **arrays)
    out = root / "command.json"
    assert main(["evaluate", str(root / "preds"), "--ag", str(store), "--task", "sgdet", "--constraint", "all",
                 "-o", str(out)]) == 0  # fmt: skip
    return store, preds, json.loads(out.read_text())


def _same(doc: dict, command: dict) -> None:
    assert json.loads(json.dumps(doc)) == command


def test_any_order_equals_the_command(setup, monkeypatch):
    store, preds, command = setup
    monkeypatch.setattr("sgg_eval.video.ag_evaluate.BATCH_FRAMES", 7)  # many small batches, out of order
    videos = list(preds)
    random.Random(1).shuffle(videos)
    ev = VideoEvaluator(store, "sgdet", constraint="all")
    for video in videos:
        ev.update(video.removesuffix(".mp4") if video.startswith("A") else video, preds[video])
    _same(ev.compute(), command)


def test_merge_equals_the_command(setup):
    store, preds, command = setup
    videos = list(preds)
    parts = [VideoEvaluator(store, "sgdet", constraint="all") for _ in range(3)]
    for i, video in enumerate(videos):
        parts[i % 3].update(video, preds[video])
    parts[2].merge(parts[0])
    parts[2].merge(parts[1])
    _same(parts[2].compute(), command)
    with pytest.raises(InputError, match="evaluated by both"):
        parts[2].merge(parts[1])


def test_torch_tensors_as_a_model_returns_them(setup):
    torch = pytest.importorskip("torch")
    store, preds, command = setup
    ev = VideoEvaluator(store, "sgdet", constraint="all")
    for video, arrays in preds.items():
        ev.update(video, {k: torch.from_numpy(v) for k, v in arrays.items()})
    _same(ev.compute(), command)


def test_bad_use_is_refused(setup):
    store, preds, _ = setup
    video = next(iter(preds))
    ev = VideoEvaluator(store, "sgdet")
    ev.update(video, preds[video])
    with pytest.raises(InputError, match="given twice"):
        ev.update(video, preds[video])
    with pytest.raises(InputError, match="no video of the split"):
        ev.update("nope.mp4", preds[video])
    with pytest.raises(InputError, match="have no prediction"):
        ev.compute()
    with pytest.raises(InputError, match="same split store and options"):
        ev.merge(VideoEvaluator(store, "sgdet", constraint="no"))
    bad = dict(preds[video], im_idx=preds[video]["im_idx"] + 0.5)
    with pytest.raises(InputError, match="not an integer"):
        VideoEvaluator(store, "sgdet").update(video, bad)


def test_oed_equals_its_command_and_leaves_the_short_videos_to_it(setup, tmp_path):
    """OED scores the release's object file: every video with a frame. Predictions for the split's videos STTran
    leaves out are read by oed and left aside by sttran; semi is not OED's."""
    store = setup[0].parent / "test.h5"
    split, _, _ = read_ag_store(store)
    preds = predictions_for(split, "sgdet", seed=2, attention="probabilities")
    for video, arrays in preds.items():
        np.savez(tmp_path / f"{video}.npz", **arrays)
    out = tmp_path / "oed.json"
    assert main(["evaluate", str(tmp_path), "--ag", str(store), "--protocol", "oed", "--task", "sgdet",
                 "--constraint", "all", "-o", str(out)]) == 0  # fmt: skip
    command = json.loads(out.read_text())
    assert command["protocol"] == "oed" and sorted(command["results"]) == ["no", "with"]
    assert command["attention"] == "probabilities" and command["semi_threshold"] is None
    ev = VideoEvaluator(store, "sgdet", protocol="oed", constraint="all")
    for video in reversed(list(preds)):
        ev.update(video, preds[video])
    _same(ev.compute(), command)
    sttran = VideoEvaluator(store, "predcls")
    assert sttran.split.num_frames < ev.split.num_frames
    for video, arrays in predictions_for(split, "predcls", seed=2).items():
        sttran.update(video, arrays)  # the short videos are left aside, not refused
    assert sttran.compute()["counts"]["videos_not_scored"] > 0 and command["counts"]["videos_not_scored"] == 0
    with pytest.raises(InputError, match="builds the constraints with, no"):
        VideoEvaluator(store, "sgdet", protocol="oed", constraint="semi")
    with pytest.raises(InputError, match="no semi constraint"):
        VideoEvaluator(store, "sgdet", protocol="oed", semi_threshold=0.5)
    with pytest.raises(InputError, match="release's object_bbox_and_relationship.pkl"):
        VideoEvaluator(setup[0], "sgdet", protocol="oed")
    with pytest.raises(InputError, match="not a video one"):
        VideoEvaluator(store, "sgdet", protocol="reference")
