"""`sgg-eval evaluate` end to end: every input format, the JSON shape, byte-identical reruns, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import random_case, small_vocab
from reference_metrics import reference_evaluate
from torch_writer import eval_results_object, save_legacy

from sgg_eval.cli import main
from sgg_eval.core import tuning
from sgg_eval.core.errors import InputError
from sgg_eval.data.stats import compute_stats, write_stats
from sgg_eval.data.store import write_predictions, write_split
from sgg_eval.data.types import GTImage, PredictionMeta, SplitMeta
from sgg_eval.data.vg150_facts import vg150_vocabulary

pytestmark = pytest.mark.integration  # the command line end to end: not in `make test-fast`

VOCAB = small_vocab(6, 5)


def _setup(tmp_path, task="predcls", n=60):
    rng = np.random.default_rng(21)
    cases = [random_case(rng, VOCAB, task, 100 + i) for i in range(n)]
    write_split(tmp_path / "test.h5", SplitMeta("test", VOCAB, "unit", True, "unit"), [g for g, _ in cases])
    write_predictions(
        tmp_path / "pred.h5", PredictionMeta(task, "probabilities", VOCAB, "m", True, "unit"), [p for _, p in cases]
    )
    stats = compute_stats([g for g, _ in cases[: n // 2]], VOCAB, [g for g, _ in cases])
    write_stats(tmp_path / "stats.h5", stats)
    return cases, stats


def test_store_evaluation_json_shape_and_determinism(tmp_path, capsys):
    cases, stats = _setup(tmp_path)
    args = [
        "evaluate",
        str(tmp_path / "pred.h5"),
        "--gt",
        str(tmp_path / "test.h5"),
        "--task",
        "predcls",
        "--stats",
        str(tmp_path / "stats.h5"),
    ]
    assert main(args + ["-o", str(tmp_path / "a.json")]) == 0
    assert main(args + ["-o", str(tmp_path / "b.json")]) == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    doc = json.loads((tmp_path / "a.json").read_text())
    assert set(doc) >= {"task", "protocol", "metrics", "per_predicate", "counts", "notes"}
    for key in (
        "R@20",
        "ngR@20",
        "mR@20",
        "ng-mR@20",
        "zR@20",
        "ng-zR@20",
        "A@20",
        "IMR@10",
        "wIMR@10",
        "R_tr@5",
        "wR_tr@5",
        "PR@20",
        "PRk",
        "InstR",
        "R@1x",
        "mR@1x",
    ):
        assert key in doc["metrics"], key
    assert set(doc["per_predicate"]["mR@20"]) == set(VOCAB.predicate_classes)
    assert doc["counts"]["images_input"] == len(cases) and "SIMULATED predictions" in doc["notes"]
    ref, _ = reference_evaluate(
        cases,
        VOCAB.num_predicates,
        "predcls",
        zeroshot=stats.zeroshot_triplets,
        triplet_counts=stats.triplet_counts,
        num_pairs=stats.num_pairs,
    )
    for name, value in ref.items():
        if value is not None:
            assert abs(doc["metrics"][name] - value) <= 1e-12, name
    assert "R@20=" in capsys.readouterr().out


def test_eval_results_via_cli_with_strict_protocol(tmp_path):
    cases, _ = _setup(tmp_path, task="sgcls")
    save_legacy(eval_results_object(cases), tmp_path / "eval_results.pytorch")
    assert (
        main(
            [
                "evaluate",
                str(tmp_path / "eval_results.pytorch"),
                "--task",
                "sgcls",
                "--protocol",
                "strict",
                "--stats",
                str(tmp_path / "stats.h5"),
                "-o",
                str(tmp_path / "m.json"),
            ]
        )
        == 0
    )
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["protocol"] == "strict" and doc["counts"]["images_skipped_no_pred"] == 0
    assert doc["input"]["format"] == "eval_results"
    # the file as given, not its basename: every task's file is called eval_results.pytorch (issue 27)
    assert doc["input"]["predictions"] == str(tmp_path / "eval_results.pytorch")


def test_prediction_store_without_gt_is_a_clear_error(tmp_path, capsys):
    _setup(tmp_path)
    assert main(["evaluate", str(tmp_path / "pred.h5"), "--task", "predcls", "-o", str(tmp_path / "m.json")]) == 2
    assert "--gt" in capsys.readouterr().err and not (tmp_path / "m.json").exists()


def test_bundled_vg150_zeroshot_list(tmp_path):
    from sgg_eval.boxes.evaluate import run_evaluation
    from sgg_eval.formats.zeroshot import load_zeroshot

    zs, source = load_zeroshot("vg150")
    assert zs.shape == (5971, 3) and "5971 triplets" in source
    assert zs[:, :2].min() >= 1 and zs[:, :2].max() <= 150 and zs[:, 2].min() >= 1 and zs[:, 2].max() <= 50
    cases, _ = _setup(tmp_path)  # a small test vocabulary: VG150's class ids do not fit it
    save_legacy(eval_results_object(cases), tmp_path / "e.pytorch")
    with pytest.raises(InputError, match="outside the vocabulary"):
        run_evaluation(str(tmp_path / "e.pytorch"), "predcls", zeroshot="vg150", stats=str(tmp_path / "stats.h5"))


def test_eval_results_with_gt_is_scored_on_the_split_after_checking_the_files_gt(tmp_path, capsys):
    cases, _ = _setup(tmp_path, task="sgdet")
    save_legacy(eval_results_object(cases), tmp_path / "er.pytorch")
    base = ["evaluate", str(tmp_path / "er.pytorch"), "--task", "sgdet", "--stats", str(tmp_path / "stats.h5")]
    assert main(base + ["-o", str(tmp_path / "own.json")]) == 0  # the file's own GT
    assert main(base + ["--gt", str(tmp_path / "test.h5"), "-o", str(tmp_path / "split.json")]) == 0
    own, split = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("own", "split"))
    assert own["metrics"] == split["metrics"]  # same GT, same numbers
    assert any("scored on the GT split" in n for n in split["notes"])

    # a file whose stored GT is not the split's (image #7 has other labels): refused, naming image and field
    g7, p7 = cases[7]
    other = GTImage(g7.image_id, g7.width, g7.height, g7.boxes, g7.labels % VOCAB.num_objects + 1, g7.rels)
    save_legacy(eval_results_object([*cases[:7], (other, p7), *cases[8:]]), tmp_path / "bad.pytorch")
    capsys.readouterr()
    assert (
        main(
            [
                "evaluate",
                str(tmp_path / "bad.pytorch"),
                "--task",
                "sgdet",
                "--gt",
                str(tmp_path / "test.h5"),
                "-o",
                str(tmp_path / "bad.json"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert f"image {g7.image_id} (#7)" in err and "'groundtruths'" in err and "labels" in err
    assert not (tmp_path / "bad.json").exists()


@pytest.mark.parametrize(
    "change, named",
    [
        (lambda g: (g.boxes + np.float32(0.5), g.rels), "bbox"),  # boxes off by half a pixel
        (
            lambda g: (g.boxes, np.column_stack([g.rels[:, :2], g.rels[:, 2] % VOCAB.num_predicates + 1])),
            "relation_tuple",
        ),  # other predicates
        (lambda g: (g.boxes + np.float32(0.005), g.rels[::-1]), None),  # rounding, rows reordered: the same GT
    ],
)
def test_the_files_gt_must_equal_the_splits(tmp_path, capsys, change, named):
    cases, _ = _setup(tmp_path, task="sgdet")
    i = next(i for i, (g, _) in enumerate(cases) if len(g.rels) > 1)
    g, p = cases[i]
    boxes, rels = change(g)
    other = GTImage(g.image_id, g.width, g.height, boxes, g.labels, rels)
    save_legacy(eval_results_object([*cases[:i], (other, p), *cases[i + 1 :]]), tmp_path / "er.pytorch")
    capsys.readouterr()
    code = main(
        [
            "evaluate",
            str(tmp_path / "er.pytorch"),
            "--task",
            "sgdet",
            "--gt",
            str(tmp_path / "test.h5"),
            "-o",
            str(tmp_path / "m.json"),
        ]
    )
    err = capsys.readouterr().err
    if named is None:
        assert code == 0, err
    else:
        assert code == 2 and f"image {g.image_id} (#{i})" in err and named in err, err
        assert not (tmp_path / "m.json").exists()


def test_sgdet_output_evaluated_as_predcls_is_named_as_such(tmp_path, capsys):
    cases, _ = _setup(tmp_path, task="sgdet")
    # detections outnumber the GT objects somewhere, so some pair indexes a box the GT does not have
    assert any(len(p.labels) > len(g.labels) and p.pairs.max() >= len(g.labels) for g, p in cases)
    save_legacy(eval_results_object(cases), tmp_path / "er.pytorch")
    assert (
        main(
            [
                "evaluate",
                str(tmp_path / "er.pytorch"),
                "--task",
                "predcls",
                "--gt",
                str(tmp_path / "test.h5"),
                "-o",
                str(tmp_path / "m.json"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "looks like an SGDet output" in err and "--task" in err and not (tmp_path / "m.json").exists()


def test_progress_lines_when_not_on_a_terminal(capsys):
    from sgg_eval.boxes.evaluate import _Progress

    report = _Progress()
    report.every_s = 0.0
    for done in (256, 512, 700):
        report(done)
    report.close()
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert [ln.split()[1] for ln in lines] == ["256", "512", "700"]
    assert all(ln.startswith("  evaluated ") and "/s)" in ln for ln in lines)
    quiet = _Progress()
    quiet(256)  # the default interval is seconds long
    assert not capsys.readouterr().err  # within the interval: nothing


def test_the_evaluate_stage_reports_progress_per_block(tmp_path, capsys, monkeypatch):
    from sgg_eval.boxes import evaluate as ev

    _setup(tmp_path, task="predcls", n=40)
    monkeypatch.setattr(tuning, "BLOCK_IMAGES", 16)
    monkeypatch.setattr(ev._Progress, "every_s", 0.0)
    ev.run_evaluation(str(tmp_path / "pred.h5"), "predcls", gt=str(tmp_path / "test.h5"), progress=True, jobs=2)
    counts = [ln.split()[1] for ln in capsys.readouterr().err.splitlines() if ln.startswith("  evaluated")]
    assert counts == ["16", "32", "40"]


def test_jobs_do_not_change_the_output(tmp_path):
    _setup(tmp_path, task="sgdet", n=300)  # more than one block of images
    base = [
        "evaluate",
        str(tmp_path / "pred.h5"),
        "--gt",
        str(tmp_path / "test.h5"),
        "--task",
        "sgdet",
        "--stats",
        str(tmp_path / "stats.h5"),
    ]
    for jobs in ("1", "2"):
        assert main(base + ["--jobs", jobs, "-o", str(tmp_path / f"j{jobs}.json")]) == 0
    assert (tmp_path / "j1.json").read_bytes() == (tmp_path / "j2.json").read_bytes()


def test_evaluating_a_torch_file_imports_nothing_heavy(tmp_path):
    """`sgg-eval evaluate FILE.pytorch` (no store, no statistics) starts without h5py, the plotting, tracking
    and config stacks: each costs start-up time on every run (issue 11: evaluate imports in <= 0.3 s)."""
    rng = np.random.default_rng(4)
    vg150 = vg150_vocabulary()  # a file of 50 predicates is read as VG150 without --gt or --stats
    save_legacy(eval_results_object([random_case(rng, vg150, "predcls", i) for i in range(5)]), tmp_path / "e.pytorch")
    args = [str(tmp_path / "e.pytorch"), "--task", "predcls", "-o", str(tmp_path / "o.json")]
    code = (
        f"import sys; from sgg_eval.cli import main; main(['evaluate', *{args!r}]); "
        "heavy = {'h5py', 'matplotlib', 'mlflow', 'hydra', 'pandas', 'scipy', 'omegaconf'} & set(sys.modules); "
        "print(sorted(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[-2] == "[]", out.stdout
    assert json.loads((tmp_path / "o.json").read_text())["task"] == "predcls"
