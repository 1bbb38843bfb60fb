"""Open Images V6: the reader (PySGG's rules), PySGG's prediction files, and ``--protocol oiv6`` against the slow
loop reference (``oiv6_reference``) and against the values PySGG's own evaluator printed on the same generated
files (``data/oiv6_pysgg.json``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from oiv6_fixture import PREDICATES, annotations, write_eval_results, write_oiv6
from oiv6_reference import evaluate as reference_evaluate
from torch_writer import BoxList, save_zip

from sgg_eval.core.errors import InputError
from sgg_eval.data.oiv6 import OIV6, OIV6Files
from sgg_eval.data.types import GTImage, PredImage
from sgg_eval.formats.eval_results import EvalResults
from sgg_eval.metrics.names import oiv6_metric_names
from sgg_eval.metrics.oiv6 import KS, OICollector, oiv6_values

CLI = [sys.executable, "-m", "sgg_eval.cli"]
GOLDEN = json.loads((Path(__file__).parent / "data" / "oiv6_pysgg.json").read_text())


def run(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def oiv6(tmp_path_factory) -> Path:
    """The generated files (``make oiv6-example``'s), split, with both tasks' prediction files."""
    root = tmp_path_factory.mktemp("oiv6")
    ann = write_oiv6(root / "oiv6")
    for task in ("sgdet", "predcls"):
        write_eval_results(ann, root / "oiv6" / f"eval_results_{task}.pytorch", task)
    out = run("split", "--oiv6-dir", root / "oiv6", "-o", root / "splits")
    assert out.returncode == 0, out.stderr
    return root


def test_reader_keeps_pysgg_images_in_order_with_its_boxes(oiv6):
    raw = json.loads((oiv6 / "oiv6/annotations/vrd-test-anno.json").read_text())
    meta, count, images = OIV6("oiv6", OIV6Files.in_dir(str(oiv6 / "oiv6"))).open_split("test")
    images = list(images)
    kept = [e for e in raw if e["rel"] and e["bbox"]]
    assert count == len(images) == len(kept) < len(raw)  # images without a relation or a box dropped
    assert meta.vocab.num_objects == 601 and meta.vocab.predicate_classes == tuple(PREDICATES)
    clipped = duplicates = 0
    for position, (img, entry) in enumerate(zip(images, kept)):
        assert img.image_id == position and (img.width, img.height) == tuple(entry["img_size"])
        assert img.labels.tolist() == [v + 1 for v in entry["det_labels"]]
        assert img.rels.tolist() == [[s, o, p + 1] for s, o, p in entry["rel"]]  # duplicates kept, in order
        raw_boxes = np.array(entry["bbox"], dtype=np.float32)
        w, h = entry["img_size"]
        want = np.stack([np.clip(raw_boxes[:, j], 0, (w, h)[j % 2] - 1) for j in range(4)], axis=1)
        assert np.array_equal(img.boxes, want)
        clipped += int((raw_boxes != want).any())
        duplicates += len(entry["rel"]) - len({tuple(r) for r in entry["rel"]})
    assert clipped and duplicates  # the fixture has both cases


BAD = {
    "a class >= 601": (lambda e: e["det_labels"].__setitem__(0, 601), "class 601 outside [0, 600]", "det_labels"),
    "a predicate >= 30": (lambda e: e["rel"][0].__setitem__(2, 30), "predicate 30 outside [0, 29]", "rel"),
    "a relation to a missing box": (
        lambda e: e["rel"][0].__setitem__(1, len(e["bbox"])),
        "a relation to box",
        "rel",
    ),
    "labels and boxes differ": (lambda e: e["det_labels"].append(0), "labels for", "det_labels"),
    "a box with x2 < x1": (lambda e: e["bbox"][0].__setitem__(2, e["bbox"][0][0] - 5), "x2 < x1", "bbox"),
    "a size that is not whole pixels": (lambda e: e.__setitem__("img_size", [10.5, 20]), "whole pixels", "img_size"),
    "a box coordinate that is text": (lambda e: e["bbox"][0].__setitem__(0, "1"), "expected numbers", "bbox"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_annotations_refused_in_one_line(tmp_path, case):
    ann = write_oiv6(tmp_path / "oiv6", n_train=20, n_val=5, n_test=12)
    path = ann / "vrd-test-anno.json"
    entries = json.loads(path.read_text())
    mutate, says, field = BAD[case]
    mutate(entries[1])
    path.write_text(json.dumps(entries))
    out = run("split", "--oiv6-dir", tmp_path / "oiv6", "--splits", "test", "-o", tmp_path / "splits")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    line = out.stderr
    assert str(path) in line and says in line and f"field '{field}'" in line and entries[1]["img_fn"] in line
    assert not (tmp_path / "splits").exists() or not any((tmp_path / "splits").iterdir())


def test_categories_refused_when_not_names(tmp_path):
    ann = write_oiv6(tmp_path / "oiv6", n_train=5, n_val=5, n_test=5)
    (ann / "categories_dict.json").write_text(json.dumps({"rel": PREDICATES, "obj": ["a", "a"]}))
    out = run("split", "--oiv6-dir", tmp_path / "oiv6", "-o", tmp_path / "splits")
    assert out.returncode == 2 and "a name appears twice" in out.stderr and "'obj'" in out.stderr


def _random_image(rng, image_id: int, n_pred: int = 30):
    """A GT image and a prediction with the protocol's edge cases at random: duplicate rows, shared boxes, boxes at
    IoU exactly 0.5, tied scores, no pair, few labels (triplets repeat)."""
    n = int(rng.integers(1, 6))
    xy = rng.integers(0, 50, (n, 2)).astype(np.float32)
    wh = (2 * rng.integers(1, 20, (n, 2)) - 1).astype(np.float32)  # odd: w + 1 even, so halves are whole
    gt_boxes = np.hstack([xy, xy + wh])
    gt_labels = rng.integers(1, 4, n)
    m = int(rng.integers(0, 5))
    rels = np.column_stack([rng.integers(0, n, m), rng.integers(0, n, m), rng.integers(1, n_pred + 1, m)])
    if m and rng.random() < 0.3:
        rels = np.vstack([rels, rels[:1]])
    boxes = gt_boxes.copy()
    half = rng.random(n) < 0.3  # IoU exactly 0.5: half the height
    boxes[half, 3] = boxes[half, 1] + (wh[half, 1] + 1) / 2 - 1
    boxes[~half] += rng.integers(-2, 3, ((~half).sum(), 4)).astype(np.float32) * (rng.random() < 0.5)
    boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2])
    labels = np.where(rng.random(n) < 0.8, gt_labels, rng.integers(1, 4, n))
    obj = rng.choice(np.array([0.5, 1.0, 0.25, 0.8], dtype=np.float32), n)
    pairs = np.array([(s, o) for s in range(n) for o in range(n) if s != o or rng.random() < 0.2]).reshape(-1, 2)
    if rng.random() < 0.1:
        pairs = pairs[:0]
    probs = rng.dirichlet(np.full(n_pred + 1, 0.3), len(pairs))
    for s, o, p in rels:  # the GT predicate often among the pair's best two
        at = (pairs[:, 0] == s) & (pairs[:, 1] == o)
        probs[at, p] += rng.random() < 0.7
    probs = (probs / probs.sum(axis=1, keepdims=True)).astype(np.float32)
    if len(probs) and rng.random() < 0.4:
        probs = np.round(probs * 8) / 8  # ties within and across pairs
    gt = GTImage(image_id, 100, 100, gt_boxes, gt_labels, rels)
    return gt, PredImage(image_id, boxes, labels, obj, pairs, probs)


def _ours(images, n_pred: int = 30, block: int = 7):
    total = OICollector()
    for lo in range(0, len(images), block):  # several collectors merged, as --jobs merges them
        part = OICollector()
        part.add(images[lo : lo + block])
        total.merge(part.finish())
    return oiv6_values(total, n_pred)


@pytest.mark.parametrize("seed", range(6))
def test_random_images_match_the_loop_reference(seed):
    rng = np.random.default_rng(seed)
    n_pred = 30 if seed % 2 else 4  # few predicates: AP decided across images by ties
    images = [_random_image(rng, i, n_pred) for i in range(60)]
    metrics, per_c = _ours(images, n_pred)
    want = reference_evaluate(images, n_pred)
    for name in [f"R@{k}" for k in KS] + [f"R_per_image@{k}" for k in KS]:
        assert metrics[name] == pytest.approx(want[name], abs=1e-12), name
    for name in ("mAP_rel", "wmAP_rel", "mAP_phr", "wmAP_phr", "score", "score_wtd"):
        assert metrics[name] == pytest.approx(want[name], abs=1e-12), name
    for kind in ("rel", "phr"):
        assert np.allclose(per_c[f"AP_{kind}"], want[f"AP_{kind}"], rtol=0, atol=1e-12)
    assert metrics["wmAP_rel"] > 0 and metrics["R@50"] > 0  # the inputs exercise the matching


def test_iou_exactly_half_counts_for_recall_not_for_ap():
    gt_boxes = np.array([[0, 0, 9, 9], [20, 20, 29, 29]], dtype=np.float32)
    boxes = np.array([[0, 0, 9, 4], [20, 20, 29, 29]], dtype=np.float32)  # subject at IoU 0.5 exactly
    gt = GTImage(0, 40, 40, gt_boxes, [1, 2], [[0, 1, 1]])
    probs = np.array([[0.1, 0.8, 0.1]], dtype=np.float32)
    pred = PredImage(0, boxes, [1, 2], np.ones(2, np.float32), [[0, 1]], probs)
    metrics, per_c = _ours([(gt, pred)], 2)
    assert metrics["R@1"] == pytest.approx(1.0, abs=1e-11)
    assert per_c["AP_rel"][0] == 0.0 and metrics["wmAP_rel"] == 0.0  # overlap 0.5 is not > 0.5
    assert per_c["AP_phr"][0] == pytest.approx(1.0, abs=1e-11)  # the union boxes overlap more
    assert metrics["R@1"] == 1 / (1 + 1e-12)  # the reference's 1e-12 in the denominator, kept


def test_second_predicate_scores_and_floor_drops():
    gt = GTImage(0, 40, 40, np.array([[0, 0, 9, 9], [20, 20, 29, 29]], np.float32), [1, 2], [[0, 1, 2], [0, 1, 3]])
    probs = np.array([[0.1, 0.0, 0.5, 0.4 - 1e-6, 1e-6]], dtype=np.float32)
    pred = PredImage(0, gt.boxes, [1, 2], np.ones(2, np.float32), [[0, 1]], probs)
    metrics, _ = _ours([(gt, pred)], 4)
    assert metrics["R@1"] == pytest.approx(0.5) and metrics["R@5"] == pytest.approx(1.0)
    faint = PredImage(0, gt.boxes, [1, 2], np.full(2, 1e-3, np.float32), [[0, 1]], probs)  # 0.5e-6 <= 1e-5
    assert _ours([(gt, faint)], 4)[0]["R@100"] == 0.0


def test_pysgg_boxlist_files_are_read_and_other_classes_refused(tmp_path, monkeypatch):
    ann = write_oiv6(tmp_path / "oiv6", n_train=5, n_val=5, n_test=10)
    path = tmp_path / "eval_results.pytorch"
    n = write_eval_results(ann, path, "sgdet")
    vocab = OIV6("oiv6", OIV6Files.in_dir(str(tmp_path / "oiv6"))).open_split("test")[0].vocab
    monkeypatch.setitem(sys.modules, "torch", None)  # torch is never needed to read them: an import would raise
    loaded = EvalResults(path, vocab)
    assert len(loaded) == n and len(list(loaded.read(0, n))) == n
    other = tmp_path / "other.pytorch"
    save_zip({"groundtruths": [BoxList(np.zeros((1, 4), np.float32), (4, 4))], "predictions": []}, other,
             boxlist_module="evil.structures.bounding_box")  # fmt: skip
    out = run("evaluate", other, "--task", "sgdet")
    assert out.returncode == 2 and "refused to load" in out.stderr and "evil.structures" in out.stderr


def _doc(oiv6: Path, task: str, *extra) -> dict:
    out_path = oiv6 / f"{task}{'_'.join(extra)}.json"
    out = run(
        "evaluate", oiv6 / f"oiv6/eval_results_{task}.pytorch", "--gt", oiv6 / "splits/test.h5", "--task", task,
        "--protocol", "oiv6", "-o", out_path, *extra,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "R@50=" in out.stdout and "score_wtd=" in out.stdout and "micro" in out.stdout
    return json.loads(out_path.read_text())


@pytest.mark.parametrize("task", ["sgdet", "predcls"])
def test_equals_what_pysgg_printed_on_the_same_files(oiv6, task):
    doc = _doc(oiv6, task)
    golden = GOLDEN["tasks"][task]
    for name, want in golden["metrics"].items():
        assert doc["metrics"][name] == pytest.approx(want, abs=1e-12), name
    for kind in ("AP_rel", "AP_phr"):
        for predicate, want in golden[kind].items():
            assert doc["per_predicate"][kind][predicate] == pytest.approx(want, abs=1e-12), (kind, predicate)
    assert set(doc["metrics"]) == set(oiv6_metric_names())
    beyond = doc["beyond_protocol"]["metrics"]
    assert "R@50" not in beyond and "IMR@20" in beyond and "R_classic@50" in doc["metrics"]
    assert any("micro" in note for note in doc["notes"])


def test_jobs_do_not_change_the_document(oiv6):
    one, two = _doc(oiv6, "sgdet", "--jobs", "1"), _doc(oiv6, "sgdet", "--jobs", "2")
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)


def test_predictions_for_another_number_of_images_refused(oiv6, tmp_path):
    entries = json.loads((oiv6 / "oiv6/annotations/vrd-test-anno.json").read_text())
    ann = tmp_path / "oiv6/annotations"
    ann.mkdir(parents=True)
    for name in ("categories_dict.json", "vrd-train-anno.json", "vrd-val-anno.json"):
        (ann / name).write_text((oiv6 / "oiv6/annotations" / name).read_text())
    (ann / "vrd-test-anno.json").write_text(json.dumps(entries[:-12]))
    path = tmp_path / "short.pytorch"
    write_eval_results(ann, path, "sgdet")
    out = run("evaluate", path, "--gt", oiv6 / "splits/test.h5", "--task", "sgdet", "--protocol", "oiv6")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "not the same test set" in out.stderr and str(path) in out.stderr


def test_ranked_only_input_refused_under_oiv6(oiv6, tmp_path):
    sgbench = tmp_path / "ranked.json"
    sgbench.write_text(json.dumps({"images": []}))
    out = run("evaluate", sgbench, "--gt", oiv6 / "splits/test.h5", "--task", "sgdet", "--protocol", "oiv6")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1


def test_fixture_is_deterministic():
    assert annotations(3, 5) == annotations(3, 5)


def test_vocab_error_names_the_file(tmp_path):
    (tmp_path / "categories_dict.json").write_text("[]")
    with pytest.raises(InputError, match="expected a JSON object"):
        OIV6("oiv6", OIV6Files.in_dir(str(tmp_path))).open_split("test")


def test_audit_says_micro_or_per_image(oiv6):
    doc = _doc(oiv6, "sgdet")
    micro, per_image = (f"R@50={100 * doc['metrics'][n]:.2f}" for n in ("R@50", "R_per_image@50"))
    out = run(
        "audit", oiv6 / "oiv6/eval_results_sgdet.pytorch", "--gt", oiv6 / "splits/test.h5", "--task", "sgdet",
        "--protocol", "oiv6", "--published", micro, "--published", per_image, "-o", oiv6 / "audit.json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    verdicts = {p["published"]: p for p in json.loads((oiv6 / "audit.json").read_text())["published"]}
    assert verdicts[micro]["reference"] and "micro" not in verdicts[micro]["verdict"]
    assert not verdicts[per_image]["reference"] and "top-2, per-image" in verdicts[per_image]["verdict"]
    assert "PySGG's Open Images V6 evaluation reports in bold" in out.stdout


def test_num_val_im_is_refused_with_oiv6(oiv6, tmp_path):
    """OIv6 has its own val file: an option that would change nothing is refused, not ignored."""
    out = run("split", "--oiv6-dir", oiv6 / "oiv6", "--num-val-im", "10", "-o", tmp_path / "s")
    assert out.returncode == 2 and "its own val file" in out.stderr and not (tmp_path / "s").exists()


def test_the_generated_predictions_have_boxes_at_iou_exactly_half(oiv6):
    """The files PySGG's values were taken on hold the threshold's edge case: a box at IoU 0.5 with its GT."""
    from sgg_eval.data.store import SplitStore
    from sgg_eval.metrics.iou import sgb_iou_matrix

    with SplitStore(oiv6 / "splits/test.h5") as split:
        vocab = split.vocab
    at_half = 0
    for gt, pred in EvalResults(oiv6 / "oiv6/eval_results_sgdet.pytorch", vocab).pairs():
        at_half += int((sgb_iou_matrix(pred.boxes[: len(gt.boxes)], gt.boxes).diagonal() == 0.5).sum())
    assert at_half >= 5, at_half
