"""τ re-matches nothing for PSG (issue 65): wIMR@K is the only number that depends on it, so the pipeline's
``psg_reduce`` moves a document evaluated at one τ to another with ``metrics.engine.with_tau``, and the result is
byte for byte the document of a full evaluation at that τ, under every protocol, in both modes, with a
predicate no evaluated image has."""

from __future__ import annotations

import json

import pytest
from psg_fixture import write_psg_fixture

from sgg_eval.cli import main
from sgg_eval.data.stats import read_stats
from sgg_eval.metrics.engine import with_tau
from sgg_eval.panoptic.evaluate import evaluate_protocols

PROTOCOLS = ("sgbench", "sgbench-paper", "openpsg")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    out = write_psg_fixture(tmp_path_factory.mktemp("psgtau"), seed=5, test=16, other=20, unused_predicates=1)
    out["stats"] = out["psg"].parent / "stats.h5"
    assert main(["stats", "--psg", str(out["psg"]), "-o", str(out["stats"])]) == 0
    return out


@pytest.mark.parametrize("mode", ["masks", "boxes"])
def test_with_tau_is_a_full_evaluation_at_that_tau(files, mode):
    submission, root = (files["zip"], str(files["root"])) if mode == "masks" else (files["json"], "")
    train = read_stats(str(files["stats"]))
    run = {tau: evaluate_protocols(str(submission), str(files["psg"]), root, PROTOCOLS, stats=str(files["stats"]),
                                   tau=tau) for tau in (0.5, 0.0, 0.25)}  # fmt: skip
    for protocol in PROTOCOLS:
        at_half = run[0.5][protocol]
        assert at_half["beyond_protocol"]["metrics"]["wIMR@20"] is not None
        for tau in (0.0, 0.25, 0.5):
            moved = with_tau(at_half, train.vocab.predicate_classes, train.num_pairs, tau)
            assert json.dumps(moved, sort_keys=True) == json.dumps(run[tau][protocol], sort_keys=True), (protocol, tau)
        assert (
            run[0.0][protocol]["beyond_protocol"]["metrics"]["wIMR@20"]
            != at_half["beyond_protocol"]["metrics"]["wIMR@20"]
        )  # the test can fail: τ moves wIMR
