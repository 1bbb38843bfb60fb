"""S2G's retrieval model and training (issue 50) against Scene-Graph-Benchmark.pytorch's own ``modelv2.SGEncode``,
``solver.make_optimizer`` and ``WarmupMultiStepLR``, run by ``scripts/s2g_reference.py model`` in a Python of its
own on ``tests/s2g_fixture``'s weights and graphs (golden: ``tests/data/s2g_model_golden.npz``); and what the
training promises: the same seed gives the same numbers, and better graphs retrieve better."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import s2g_fixture

torch = pytest.importorskip("torch", reason="the S2G extra (pip install 'sgg-eval[s2g]'); make test installs it")

from sgg_eval.retrieval.graphs import EncodedGraph  # noqa: E402
from sgg_eval.retrieval.training import Pairs, TrainConfig, embed, lr_factor, new_model, step  # noqa: E402

GOLDEN = np.load(Path(__file__).parent / "data" / "s2g_model_golden.npz")
SIDES = {"img": "image", "txt": "text"}
TABLES = {"obj": "obj", "rel_head": "head", "rel_tail": "tail", "rel_pred": "pred"}


def our_name(theirs: str) -> str:
    """The reference's parameter names, as this model spells them."""
    if theirs.endswith("_embed.weight"):
        side, table = theirs.split("_", 1)
        return f"{SIDES[side]}.{TABLES[table.removesuffix('_embed.weight')]}.weight"
    return theirs.replace("apply_attention.glimpse_layers.", "glimpses.")


def loaded_model():
    model, optimizer, schedule = new_model(s2g_fixture.MODEL_SIZES, TrainConfig())
    state = {our_name(k): torch.from_numpy(v) for k, v in s2g_fixture.model_weights().items()}
    assert set(state) == set(model.state_dict())  # every parameter, no other
    model.load_state_dict(state)
    return model, optimizer, schedule


def graphs() -> Pairs:
    g = s2g_fixture.model_graphs()
    encoded = {side: [EncodedGraph(np.array(e), np.array(r).reshape(-1, 3)) for e, r in g[side]] for side in g}
    return Pairs(encoded["image"], encoded["text"])


def test_the_encodings_and_the_loss_equal_the_reference_model():
    model, *_ = loaded_model()
    image, text = embed(model, graphs(), torch.device("cpu"))
    np.testing.assert_allclose(image, GOLDEN["image"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(text, GOLDEN["text"], rtol=1e-5, atol=1e-5)
    assert np.abs(image).max() > 1.0  # not a degenerate case of zeros
    model.eval()  # the reference's loss was taken with dropout off
    from sgg_eval.retrieval.model import PackedGraphs, triplet_loss

    pairs = graphs()
    with torch.no_grad():
        im = model.encode(PackedGraphs(pairs.image, torch.device("cpu")), "image")
        tx = model.encode(PackedGraphs(pairs.text, torch.device("cpu")), "text")
        loss = float(triplet_loss(im[:4], tx[:4], im[4:], tx[4:]))
    assert loss == pytest.approx(float(GOLDEN["loss"]), rel=1e-5) and loss > 0


def test_three_steps_of_the_optimiser_and_schedule_equal_the_reference():
    """The per-parameter learning rate (0.01 x 32), weight decay (0 for biases), momentum, clipping and warm-up."""
    model, optimizer, schedule = loaded_model()
    model.eval()  # dropout off, as the reference's steps were taken
    losses = [step(model, optimizer, schedule, graphs(), torch.device("cpu")) for _ in range(s2g_fixture.MODEL_STEPS)]
    np.testing.assert_allclose(losses, GOLDEN["step_losses"], rtol=1e-6)
    image, text = embed(model, graphs(), torch.device("cpu"))
    np.testing.assert_allclose(image, GOLDEN["image_after"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(text, GOLDEN["text_after"], rtol=1e-5, atol=1e-5)
    assert not np.allclose(GOLDEN["image_after"], GOLDEN["image"], atol=1e-2)  # the steps moved the model


def test_the_schedule_is_the_reference_warmup_multistep():
    # WarmupMultiStepLR(milestones=(10000, 16000), gamma=0.1, warmup_factor=0.1, warmup_iters=500, "linear")
    assert lr_factor(0) == pytest.approx(0.1)
    assert lr_factor(250) == pytest.approx(0.1 * 0.5 + 0.5)
    assert lr_factor(500) == lr_factor(9999) == 1.0
    assert lr_factor(10000) == pytest.approx(0.1) and lr_factor(16000) == pytest.approx(0.01)
