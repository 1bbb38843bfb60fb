"""The open-vocabulary protocols (docs/openvocab.md): equal to OvSGTR's, VS3's and PGSG's own evaluators on generated
VG150 files (values those codebases printed, tests/data/openvocab_golden.json), equal to the loop reference
(tests/openvocab_reference.py) on random inputs with the rules' edge cases, the splits as data, bad input refused."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import random_case, short_head, small_vocab
from openvocab_fixture import write_predictions, write_vg150
from openvocab_reference import ovsgtr_gt, reference_openvocab

from sgg_eval.boxes.evaluate import run_evaluation
from sgg_eval.boxes.sources import open_predictions
from sgg_eval.boxes.splits import build_splits, open_dataset
from sgg_eval.core.errors import InputError
from sgg_eval.data.openvocab import read_split_file, shipped_split, shipped_splits
from sgg_eval.data.stats import compute_stats
from sgg_eval.data.store import SplitStore
from sgg_eval.data.types import GTImage
from sgg_eval.data.vg150_facts import vg150_vocabulary
from sgg_eval.metrics.document import every_metric
from sgg_eval.metrics.engine import evaluate, with_tau
from sgg_eval.metrics.openvocab import OpenVocab, Prepared, merge_plan, prepare_gt
from sgg_eval.metrics.options import EvalOptions

GOLDEN = json.loads((Path(__file__).parent / "data" / "openvocab_golden.json").read_text())
VOCAB = small_vocab(6, 5)
ZEROSHOT = str(Path(__file__).parents[1] / "src/sgg_eval/data/resources/zeroshot_triplet.pytorch")


def _split(vg: Path, out: Path, **conf) -> str:
    dataset = open_dataset({"kind": "vg150", "name": "vg150", "raw": str(vg), **conf})
    build_splits(dataset, {"test": str(out)})
    return str(out)


def _close(ours: dict, theirs: dict) -> None:
    for name, expected in theirs["metrics"].items():
        got = every_metric(ours)[name]
        assert (got is None) == (expected is None), name
        if expected is not None:
            assert abs(got - expected) <= 1e-12, (name, got, expected)
    for key, expected in theirs["counts"].items():
        assert ours["counts"][key] == expected, key


@pytest.fixture(scope="module")
def glip_world(tmp_path_factory):
    root = tmp_path_factory.mktemp("openvocab")
    vg = write_vg150(root / "vg150")
    write_predictions(vg, root / "eval_results.pytorch")
    return root, vg


@pytest.mark.parametrize("protocol", ["ovsgtr", "vs3"])
def test_equals_the_codebases_own_evaluators(glip_world, protocol):
    """Every value OvSGTR's and VS3's evaluators printed on the same generated files, and their image counts (OvSGTR:
    the boxes it merged and the image it cut to 100 boxes; VS3: the boxes it clipped)."""
    root, vg = glip_world
    gt = _split(vg, root / "unclipped.h5", split_key="split_GLIPunseen", clip_boxes=False)
    doc = run_evaluation(str(root / "eval_results.pytorch"), "sgdet", gt=gt, protocol=protocol, zeroshot=ZEROSHOT)
    _close(doc, GOLDEN[protocol])
    assert len(GOLDEN[protocol]["metrics"]) >= 18


@pytest.fixture(scope="module")
def pgsg_world(tmp_path_factory):
    """PGSG's fixture: 5,000 filler images first, predictions that match a GT box past the border only unclipped."""
    root = tmp_path_factory.mktemp("pgsg")
    vg = write_vg150(root / "vg150", filler=5000)
    write_predictions(vg, root / "eval_results.pytorch", split_key="split", borderline=True)
    return root, vg


def test_pgsg_equals_its_evaluator(pgsg_world):
    """PGSG's evaluator on the test images from the 5,001st on, its GT boxes unclipped as its loader reads them: R@K,
    mR@K (/ 50.001), novel and seen mR, K to 300."""
    root, vg = pgsg_world
    gt = _split(vg, root / "unclipped.h5", clip_boxes=False)
    doc = run_evaluation(str(root / "eval_results.pytorch"), "sgdet", gt=gt, protocol="pgsg")
    _close(doc, GOLDEN["pgsg"])
    assert doc["counts"]["gt_boxes_clipped"] == 0


def test_pgsg_does_not_clip_and_refuses_a_clipped_gt(pgsg_world):
    """Pix2Grp's ``VGVRDEvalDataset`` scales ``boxes_1024`` by ``max(w, h) / 1024`` and never clamps them: on this
    fixture clipping them moves mR_novel@K (the loop reference both ways), and a GT that may have been clipped (a
    split made without --no-clip, the file's own groundtruths) is refused in one line."""
    root, vg = pgsg_world
    unclipped = _split(vg, root / "unclipped_b.h5", clip_boxes=False)
    with SplitStore(unclipped) as split:
        cases = list(zip(split.images(), (p for _, p in open_predictions(str(root / "eval_results.pytorch")).pairs())))
    vocab = vg150_vocabulary()
    novel = set(np.flatnonzero(shipped_split("pgsg").masks(vocab)[1]).tolist())
    both = {
        clip: reference_openvocab(cases, vocab.num_predicates, "pgsg", [], set(), novel, clip=clip, skip=5000)
        for clip in (False, True)
    }
    doc = every_metric(run_evaluation(str(root / "eval_results.pytorch"), "sgdet", gt=unclipped, protocol="pgsg"))
    for name, expected in both[False].items():
        assert abs(doc[name] - expected) <= 1e-12, name
    assert max(abs(both[True][k] - both[False][k]) for k in both[False] if "novel" in k) > 1e-3
    clipped = _split(vg, root / "clipped.h5")
    for gt in (clipped, None):
        with pytest.raises(InputError, match="--no-clip") as err:
            run_evaluation(str(root / "eval_results.pytorch"), "sgdet", gt=gt, protocol="pgsg")
        assert "may have been clipped" in str(err.value) or gt


def test_ovsgtr_refuses_clipped_gt_and_vs3_clips_unclipped(glip_world):
    root, vg = glip_world
    clipped = _split(vg, root / "clipped.h5", split_key="split_GLIPunseen")
    with pytest.raises(InputError, match="--no-clip"):
        run_evaluation(str(root / "eval_results.pytorch"), "sgdet", gt=clipped, protocol="ovsgtr")
    unclipped = _split(vg, root / "unclipped2.h5", split_key="split_GLIPunseen", clip_boxes=False)
    on_clipped = run_evaluation(str(root / "eval_results.pytorch"), "sgdet", gt=clipped, protocol="vs3")
    on_unclipped = run_evaluation(str(root / "eval_results.pytorch"), "sgdet", gt=unclipped, protocol="vs3")
    assert on_clipped["metrics"] == on_unclipped["metrics"]  # one split serves every protocol
    assert on_unclipped["counts"]["gt_boxes_clipped"] > 0
    reference = run_evaluation(str(root / "eval_results.pytorch"), "sgdet", gt=unclipped)
    assert reference["metrics"]["R@50"] == on_clipped["metrics"]["R@50"]  # the reference protocol clips too


@pytest.mark.parametrize("protocol", ["reference", "strict", "oiv6", "vs3", "ovsgtr", "pgsg"])
def test_a_files_own_gt_past_the_border(glip_world, tmp_path, protocol):
    """An eval_results.pytorch whose stored GT keeps boxes past the border (nothing guarantees a file's own GT
    clipped): a protocol whose loader clips scores it clipped, equal to the same file with its GT clipped; OvSGTR and
    PGSG, whose loaders keep such boxes but cannot tell them from clipped ones, refuse it in one line."""
    root, vg = glip_world
    write_predictions(vg, tmp_path / "eval_results.pytorch", unclipped_gt=True)
    options = {"setting": "ovd"} if protocol == "vs3" else {}
    if protocol in ("ovsgtr", "pgsg"):
        with pytest.raises(InputError, match="may have been clipped.*--no-clip"):
            run_evaluation(str(tmp_path / "eval_results.pytorch"), "sgdet", protocol=protocol)
        return
    past = run_evaluation(str(tmp_path / "eval_results.pytorch"), "sgdet", protocol=protocol, **options)
    clipped = run_evaluation(str(root / "eval_results.pytorch"), "sgdet", protocol=protocol, **options)
    assert past["metrics"] == clipped["metrics"]
    assert past["counts"]["gt_boxes_clipped"] >= 13 and clipped["counts"]["gt_boxes_clipped"] == 0
    if protocol in ("reference", "oiv6"):  # the audits score it as the reference protocol (and PySGG) do
        from sgg_eval.boxes.audit import run_audit, run_openvocab_audit

        for audit, kw in ((run_audit, {"protocol": protocol}), (run_openvocab_audit, {})):
            rows = [audit(str(path / "eval_results.pytorch"), "sgdet", **kw)["variants"] for path in (tmp_path, root)]
            assert rows[0] == rows[1]


def _random_cases(seed: int, n: int = 60):
    rng = np.random.default_rng(seed)
    cases = [random_case(rng, VOCAB, "sgdet", i) for i in range(n)]
    for i, (gt, _) in enumerate(cases):
        if i % 7 == 3 and len(gt.boxes):  # a same-class near-duplicate: plain IoU 0.9 and just above / below
            b = gt.boxes[0].copy()
            b[2] = b[0] + (b[2] - b[0]) * (1 + (1 / 9, 0.1, 0.125)[i % 3])  # IoU 0.9, 0.909, 0.889
            gt.boxes = np.vstack([gt.boxes, b[None]]).astype(np.float32)
            gt.labels = np.append(gt.labels, gt.labels[0])
        if i % 9 == 5:
            gt.boxes[:, 2] += gt.width / 3  # past the border
    big = cases[4][0]
    extra = np.tile(big.boxes[:1], (105, 1)) + np.arange(105, dtype=np.float32)[:, None] * 3
    cases[4] = (
        GTImage(big.image_id, big.width, big.height, np.vstack([big.boxes, extra]),
                np.concatenate([big.labels, np.full(105, 1)]), big.rels),
        cases[4][1],
    )  # fmt: skip
    return cases


SETTINGS = [("ovsgtr", "ovd+r"), ("ovsgtr", "ovd"), ("ovsgtr", "ovr"), ("vs3", "ovd"), ("pgsg", "ovr")]


@pytest.mark.parametrize("protocol,setting", SETTINGS)
@pytest.mark.parametrize("seed", [3, 4])
def test_engine_matches_loop_reference(protocol, setting, seed):
    cases = _random_cases(seed)
    stats = compute_stats([g for g, _ in cases[:30]], VOCAB, [g for g, _ in cases])
    novel_objects, novel_predicates = (1, 3, 4), (2, 5)
    ov = OpenVocab(protocol, setting, novel_objects, novel_predicates, "test", "test")
    skip = 7 if protocol == "pgsg" else 0
    opts = EvalOptions(task="sgdet", protocol=protocol, order="stored", openvocab=ov, clip_gt=protocol == "vs3")
    with pytest.MonkeyPatch.context() as mp:
        short_head(mp, skip)
        doc = evaluate(
            iter(cases), VOCAB, opts, zeroshot=stats.zeroshot_triplets, zeroshot_source="test",
            num_pairs=stats.num_pairs, triplet_counts=stats.triplet_counts,
        )  # fmt: skip
    subsets = [s for s, _ in ov.subsets()]
    ref = reference_openvocab(
        cases, VOCAB.num_predicates, protocol, subsets, set(novel_objects), set(novel_predicates),
        clip=protocol == "vs3", zeroshot=stats.zeroshot_triplets, num_pairs=stats.num_pairs, skip=skip,
    )  # fmt: skip
    values = every_metric(doc)
    assert ref
    for name, expected in ref.items():
        assert (values[name] is None) == (expected is None), name
        if expected is not None:
            assert abs(values[name] - expected) <= 1e-12, (name, values[name], expected)


def test_merge_and_cut_equal_the_loop_reference():
    rng = np.random.default_rng(0)
    touched = Prepared()
    for i in range(40):
        gt, _ = random_case(rng, VOCAB, "sgdet", i)
        n = len(gt.boxes)
        if i % 4 == 0:  # many same-class boxes around one: some merge, some not, absorbed ones re-taking
            base = gt.boxes[:1]
            jitter = rng.uniform(-2, 2, (110 if i == 8 else 12, 4)).astype(np.float32)
            gt = GTImage(gt.image_id, gt.width, gt.height, np.vstack([gt.boxes, base + jitter]),
                         np.concatenate([gt.labels, np.full(len(jitter), gt.labels[0])]), gt.rels)  # fmt: skip
        ours, ref = prepare_gt(gt, "ovsgtr", False, touched), ovsgtr_gt(gt)
        assert np.array_equal(ours.boxes, ref.boxes) and np.array_equal(ours.labels, ref.labels), i
        assert np.array_equal(ours.rels, ref.rels), i
        assert len(ours.boxes) <= max(n, 100)
    assert touched.merged_boxes > 0 and touched.capped_images == 1


def test_a_zero_area_box_is_its_own_entity():
    boxes = np.array([[5, 5, 5, 9], [5, 5, 5, 9], [0, 0, 10, 10]], dtype=np.float32)
    keep, new_id = merge_plan(boxes, np.array([1, 1, 1]))
    assert keep.tolist() == [0, 1, 2] and new_id.tolist() == [0, 1, 2]  # IoU 0 even with itself: never merged


def test_jobs_give_the_same_document(glip_world):
    root, vg = glip_world
    gt = _split(vg, root / "unclipped3.h5", split_key="split_GLIPunseen", clip_boxes=False)
    one = run_evaluation(str(root / "eval_results.pytorch"), "sgdet", gt=gt, protocol="ovsgtr", jobs=1)
    two = run_evaluation(str(root / "eval_results.pytorch"), "sgdet", gt=gt, protocol="ovsgtr", jobs=2)
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)


def test_with_tau_updates_the_subsets_wimr():
    cases = _random_cases(5)
    stats = compute_stats([g for g, _ in cases[:30]], VOCAB, [g for g, _ in cases])
    ov = OpenVocab("ovsgtr", "ovd+r", (1, 3, 4), (2, 5), "test", "test")
    opts = EvalOptions(task="sgdet", protocol="ovsgtr", order="stored", openvocab=ov)
    full = evaluate(iter(cases), VOCAB, replace(opts, tau=0.2), num_pairs=stats.num_pairs)
    moved = with_tau(evaluate(iter(cases), VOCAB, opts, num_pairs=stats.num_pairs), VOCAB.predicate_classes,
                     stats.num_pairs, 0.2)  # fmt: skip
    assert every_metric(moved)["wIMR_novel_obj@20"] == every_metric(full)["wIMR_novel_obj@20"]
    assert every_metric(moved) == every_metric(full)


def test_shipped_splits_are_vg150s_and_disjoint():
    vocab = vg150_vocabulary()
    sizes = {"ovsgtr": (45, 15), "vs3": (45, 0), "pgsg": (0, 30)}
    for name, (n_obj, n_pred) in sizes.items():
        split = shipped_split(name)
        objects, predicates = split.masks(vocab)
        assert (objects.sum(), predicates.sum()) == (n_obj, n_pred)
        assert shipped_splits()[name]["source"]  # every list says where it was read
    assert shipped_split("ovsgtr").novel_objects == shipped_split("vs3").novel_objects
    assert {"on", "in", "of"} <= set(shipped_split("ovsgtr").novel_predicates)


def test_split_file_names_indices_and_bad_input(tmp_path):
    vocab = vg150_vocabulary()
    good = tmp_path / "mine.yaml"
    good.write_text("novel_objects: [dog, 78]\nnovel_predicates: ['on']\nbase_objects: [cat]\n")
    split = read_split_file(good, vocab)
    assert split.novel_objects == ("dog", vocab.object_classes[77]) and split.name == "mine"
    zero = tmp_path / "zero.json"
    zero.write_text(json.dumps({"novel_predicates": [0], "index_base": 0}))
    assert read_split_file(zero, vocab).novel_predicates == (vocab.predicate_classes[0],)
    bad = {
        "unknown.yaml": ("novel_objects: [dragon]\n", "dragon"),
        "overlap.yaml": ("novel_objects: [dog]\nbase_objects: [dog]\n", "both novel and base"),
        "empty.yaml": ("name: x\n", "nothing to score"),
        "twice.yaml": ("novel_predicates: ['on', 'on']\n", "twice"),
        "norway.yaml": ("novel_predicates: [on, in]\n", "quote the name"),
        "range.yaml": ("novel_objects: [151]\n", "outside 1..150"),
        "key.yaml": ("novel_object: [dog]\n", "unknown key"),
    }
    for name, (text, message) in bad.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(InputError, match=message) as info:
            read_split_file(tmp_path / name, vocab)
        assert name in str(info.value) and "\n" not in str(info.value)


def test_cli_one_line_exit_2(glip_world, tmp_path):
    root, vg = glip_world
    gt = _split(vg, root / "cli.h5", split_key="split_GLIPunseen", clip_boxes=False)
    (tmp_path / "split.yaml").write_text("novel_objects: [unicorn]\n")
    runs = {
        "--setting ovr": ["--protocol", "vs3", "--setting", "ovr"],
        "--setting with reference": ["--setting", "ovd"],
        "unknown class": ["--protocol", "ovsgtr", "--split-file", str(tmp_path / "split.yaml")],
    }
    for what, extra in runs.items():
        run = subprocess.run(
            [sys.executable, "-m", "sgg_eval.cli", "evaluate", str(root / "eval_results.pytorch"), "--gt", gt,
             "--task", "sgdet", *extra], capture_output=True, text=True,
        )  # fmt: skip
        assert run.returncode == 2, (what, run.stderr)
        assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, (what, run.stderr)
    ok = subprocess.run(
        [sys.executable, "-m", "sgg_eval.cli", "evaluate", str(root / "eval_results.pytorch"), "--gt", gt,
         "--task", "sgdet", "--protocol", "ovsgtr", "--setting", "ovd"], capture_output=True, text=True,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert "R_novel_obj@50" in ok.stdout and "R_novel_rel@50" not in ok.stdout and '"zR"' in ok.stdout


def test_audit_names_the_rule_and_the_test_images(glip_world):
    from sgg_eval.boxes.audit import audit_markdown, run_openvocab_audit

    root, vg = glip_world
    gt = _split(vg, root / "audit.h5", split_key="split_GLIPunseen", clip_boxes=False)
    vs3 = run_evaluation(str(root / "eval_results.pytorch"), "sgdet", gt=gt, protocol="vs3", zeroshot=ZEROSHOT)
    novel_obj = vs3["metrics"]["R_novel_obj@50"]
    doc = run_openvocab_audit(
        str(root / "eval_results.pytorch"), "sgdet", gt=gt, zeroshot=ZEROSHOT,
        published=(f"zR@50={100 * novel_obj:.2f}", "zR@20=99.9"),
    )  # fmt: skip
    first, second = doc["published"]
    assert "both ends novel" in first["verdict"] and "not zero-shot recall" in first["verdict"]
    assert "split_GLIPunseen" in first["verdict"] and not second["matches"]
    rule = {(v["rule"], v["k"], v["constraint"]): v["value"] for v in doc["variants"]}
    assert rule[("both ends novel", 50, "GC")] == novel_obj  # the same number the vs3 protocol reports
    assert rule[("novel predicate", 50, "GC")] is not None and ("zero-shot triplet", 50, "GC") in rule
    assert "| either end novel |" in audit_markdown(doc)
    with pytest.raises(InputError, match="NAME@K"):
        run_openvocab_audit(str(root / "eval_results.pytorch"), "sgdet", gt=gt, published=("zR=3",))
