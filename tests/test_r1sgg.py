"""``--protocol r1sgg`` (issue 48): R1-SGG's reading of answers (failures), its name rules, its loop and its
SggEvaluator against a loop reference written from the rules, its box AP against the COCO API (faster-coco-eval,
numbering GT annotations from 0 as R1-SGG does), and golden numbers printed by R1-SGG's own scripts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from r1sgg_fixture import write_fixture
from r1sgg_reference import loop_metrics, ranked_metrics

from sgg_eval.core.errors import InputError
from sgg_eval.text.r1sgg.answers import extract_answer, parse_answer, read_r1sgg_folder
from sgg_eval.text.r1sgg.box_ap import r1sgg_box_ap
from sgg_eval.text.r1sgg.evaluate import r1sgg_zeroshot, run_r1sgg_evaluation
from sgg_eval.text.r1sgg.names import R1Names, find_synonym
from sgg_eval.text.r1sgg.rows import read_r1sgg_rows

GOLDEN = Path(__file__).parent / "data" / "r1sgg_golden.json"
SIZE = (640, 480)


@pytest.mark.parametrize(
    "text, answer",
    [
        ('```json\n{"a": 1}\n```', '{"a": 1}'),
        ("<think>x</think><answer> [1] </answer> tail <answer>[2]</answer>", "[1]"),
        ("<answer>[3]", "[3]"),
        ("<answer><answer>[4]</answer>", "<answer>[4]"),
        ("plain", "plain"),
        ('{"json_key": 1}', '{" _key": 1}'),  # every "json" becomes a space, also inside the answer
    ],
)
def test_the_answer_is_cut_as_r1sgg_cuts_it(text, answer):
    assert extract_answer(text) == answer


def _item(objects, relationships, **extra):
    return {"image_id": "1", "response": json.dumps({"objects": objects, "relationships": relationships}), **extra}


OK_OBJ = [{"id": "Man.1", "bbox": [0, 0, 10, 10]}]


@pytest.mark.parametrize(
    "item, failed",
    [
        (_item(OK_OBJ, [{"subject": "man.1", "predicate": "On", "object": "man.1"}]), False),
        (_item("", {}), False),  # empty text and object walk as nothing
        (_item([{"id": "man.1", "bbox": [0, 0, 10, float("nan")]}], []), False),  # Python's JSON reads NaN
        (_item([{"id": "man.1", "bbox": [True, 0, 10, 10]}], []), False),  # a bool is an int
        (_item(OK_OBJ, [], box_scale=[0, 1000]), True),
        (_item(OK_OBJ, [], box_scale="ab"), True),
        (_item("x", []), True),
        (_item([{"id": 3, "bbox": [0, 0, 1, 1]}], []), True),
        (_item([{"id": "a.1", "bbox": [0, 0, 1]}], []), True),
        (_item([{"id": "a.1", "bbox": [0, 0, 1, "2"]}], []), True),
        (_item(OK_OBJ, [{"subject": "man.1", "predicate": 5, "object": "man.1"}]), True),
        (_item(OK_OBJ, [["man.1", "on", "man.1"]]), True),
        ({"image_id": "1", "response": '{"objects": []}'}, True),
        ({"image_id": "1", "response": "{not json"}, True),
        ({"image_id": "1", "response": "[" * 100000}, True),
        ({"image_id": "1"}, True),
    ],
)
def test_what_makes_a_failure(item, failed):
    assert (parse_answer("1", item, SIZE).failure is not None) == failed


def test_boxes_are_scaled_and_names_refined():
    parsed = parse_answer("1", _item(OK_OBJ, [{"subject": "MAN_1", "predicate": " Next-To ", "object": "x"}]), SIZE)
    assert parsed.boxes == [[0.0, 0.0, 6.4, 4.8]] and parsed.ids == ["man.1"]  # the 1000 grid by default
    assert parsed.relations == [("man 1", "next to", "x")]
    pixels = parse_answer("1", _item(OK_OBJ, [], box_scale=list(SIZE)), SIZE)
    assert pixels.boxes == [[0.0, 0.0, 10.0, 10.0]]


def _names(dataset, synsets=None):
    rows, vocab, _ = read_r1sgg_rows(_rows_file(dataset))
    return R1Names(dataset, vocab, synsets), vocab


def _rows_file(dataset, _cache={}):
    if dataset not in _cache:
        import tempfile

        out = Path(tempfile.mkdtemp())
        write_fixture(out, dataset, 0, n_images=12)
        _cache[dataset] = str(out / "rows.jsonl")
    return _cache[dataset]


def test_the_name_rules_vg150():
    names, vocab = _names("vg150")
    cls = {c: i for i, c in enumerate(vocab.object_classes, 1)}
    assert names.object_class("man.1") == cls["man"]
    assert names.object_class("catering truck.2") == cls["truck"]  # the table
    assert names.object_class("red wine bottle.1") == cls["bottle"]  # a phrase: its first word that is a class
    assert names.object_class("bicycle.1") == 0  # WordNet only: not tried
    assert names.counts["names_wordnet_not_tried"] == 1
    pred = {p: i for i, p in enumerate(vocab.predicate_classes, 1)}
    assert names.predicate("on top of") == pred["on"] and names.predicate("next to") == pred["near"]
    with_wordnet, _ = _names("vg150", lambda w: [["bike", "wheel"]] if w == "bicycle" else [])
    assert with_wordnet.object_class("bicycle.1") == cls["bike"]


def test_the_name_rules_psg_keep_its_quirk():
    names, vocab = _names("psg", lambda w: [["sky"]] if w == "heavens" else [])
    cls = {c: i for i, c in enumerate(vocab.object_classes, 1)}
    assert names.object_class("man.1") == cls["person"]  # the 44-entry table
    assert names.object_class("door stuff.1") == cls["door-stuff"]  # refined class names
    assert names.object_class("wall.1") == names.object_class("sky.1") == 0  # WordNet's targets are predicates
    assert names.object_class("heavens.1") == 0


def test_relations_passive_forms_and_repeated_ids():
    names, vocab = _names("vg150")
    pred = {p: i for i, p in enumerate(vocab.predicate_classes, 1)}
    objs = [{"id": "man.1", "bbox": [0, 0, 5, 5]}, {"id": "man.1", "bbox": [1, 1, 9, 9]},
            {"id": "hat.2", "bbox": [2, 2, 4, 4]}, {"id": "gizmo.3", "bbox": [0, 0, 1, 1]}]  # fmt: skip
    rels = [{"subject": "hat.2", "predicate": "worn by", "object": "man.1"},
            {"subject": "man.1", "predicate": "holding", "object": "gizmo.3"},
            {"subject": "man.1", "predicate": "levitating", "object": "man.1"}]  # fmt: skip
    mapped = names.map(parse_answer("1", _item(objs, rels), SIZE))
    assert len(mapped.labels) == 3  # gizmo dropped; the repeated id kept as an object
    assert (mapped.subjects.tolist(), mapped.objects.tolist(), mapped.predicates.tolist()) == (
        [0], [2], [pred["wearing"]]
    )  # swapped; the first "man.1"; the unknown end and the unknown predicate dropped  # fmt: skip
    assert names.counts["relations_dropped"] == 2


def test_find_synonym_tries_the_phrase_then_its_words():
    lemmas = {"big dog": [["hound"]], "big": [["large"]], "dog": [["canine", "dog"]]}
    assert find_synonym("big dog", ["dog", "hound"], lemmas.get) == "hound"
    assert find_synonym("big dog", ["dog", "large"], lambda w: lemmas.get(w, [])) == "large"
    assert find_synonym("big dog", ["dog"], lambda w: []) == "dog"
    assert find_synonym("cat", ["dog"], None) is None


def _evaluated(tmp_path, dataset: str, seed: int) -> tuple:
    """The fixture's document, and what the loop reference reads: its rows, vocabulary, mapped answers, zero-shot
    triplets."""
    write_fixture(tmp_path, dataset, seed)
    doc = run_r1sgg_evaluation(tmp_path / "answers", tmp_path / "rows.jsonl")
    rows, vocab, _ = read_r1sgg_rows(tmp_path / "rows.jsonl")
    parsed, _ = read_r1sgg_folder(tmp_path / "answers", {r.image_id: (r.width, r.height) for r in rows})
    names = R1Names(dataset, vocab)
    answers = {i: (names.map(a) if a.failure is None else None) for i, a in parsed.items()}
    zs = {tuple(t) for t in r1sgg_zeroshot(dataset, vocab)[0].tolist()}
    return doc, rows, vocab, answers, zs


@pytest.mark.parametrize("dataset, seed", [("vg150", 0), ("vg150", 5), ("psg", 0), ("psg", 6)])
def test_against_the_loop_reference(tmp_path, dataset, seed):
    doc, rows, vocab, answers, zs = _evaluated(tmp_path, dataset, seed)
    expected = loop_metrics(rows, answers) | ranked_metrics(rows, answers, vocab.num_predicates, zs)
    for name, value in expected.items():
        assert doc["metrics"][name] == pytest.approx(value, abs=1e-12, nan_ok=True), name
    assert expected["zR@50"] is not None  # images with zero-shot GT rows exist


@pytest.mark.parametrize("dataset, seed", [("vg150", 0), ("psg", 6)])
def test_ties_range_and_count_against_the_rule_with_ties_forced(tmp_path, dataset, seed):
    """R1-SGG's ng ranking sorts one-hot cells with numpy's unstable argsort: the document says how many GT-row hits
    the tie order decided and each ng number's range, whose ends are R1-SGG's rule run with the ties forced each
    way (the loop reference: hitting cells first, last). On these answers the range is not empty."""
    doc, rows, vocab, answers, zs = _evaluated(tmp_path, dataset, seed)
    ends = {ties: ranked_metrics(rows, answers, vocab.num_predicates, zs, ties) for ties in ("hits_last", "hits_first")}
    ties = doc["ties"]
    assert any(ties["hits_decided"].values())
    assert any(ties["range"][n][0] < ties["range"][n][1] for n in ties["range"] if ties["range"][n])
    for name, span in ties["range"].items():
        low, high = ends["hits_last"][name], ends["hits_first"][name]
        if span is None:
            assert low is None and high is None, name
            continue
        assert span[0] == pytest.approx(min(low, high), abs=1e-12), name
        assert span[1] == pytest.approx(max(low, high), abs=1e-12), name
        assert span[0] <= doc["metrics"][name] <= span[1], name  # numpy's own order lies inside
    # the hits decided at K: the forced orders' hit counts apart, from the loop reference's own scan
    for k in (20, 50, 100):
        counted = {t: _ng_hits(rows, answers, vocab.num_predicates, t, k) for t in ("hits_last", "hits_first")}
        assert ties["hits_decided"][str(k)] == counted["hits_first"] - counted["hits_last"]
    assert "tie order decided" in " ".join(doc["notes"])


def _ng_hits(rows, answers, num_predicates: int, ties: str, k: int) -> int:
    from r1sgg_reference import _candidates, _match

    total = 0
    for img in rows:
        answer = answers.get(img.image_id, False)
        if answer is False or answer is None or not len(answer.labels) or not len(answer.predicates):
            continue
        top = _candidates(answer, num_predicates, ties, img)[1][:k]
        total += sum(any(_match(img, g, answer, c) for c in top) for g in range(len(img.rels)))
    return total


@pytest.mark.filterwarnings("ignore:Found annotation id 0")  # the very quirk R1-SGG's numbers carry
def test_box_ap_is_the_coco_api_with_annotation_ids_from_zero(tmp_path):
    faster = pytest.importorskip("faster_coco_eval")
    write_fixture(tmp_path, "vg150", 3)
    rows, vocab, _ = read_r1sgg_rows(tmp_path / "rows.jsonl")
    parsed, _ = read_r1sgg_folder(tmp_path / "answers", {r.image_id: (r.width, r.height) for r in rows})
    names = R1Names("vg150", vocab)
    answers = {i: (names.map(a) if a.failure is None else None) for i, a in parsed.items()}
    num = {k: n for n, k in enumerate(sorted(r.image_id for r in rows), 1)}  # this COCO API takes numbers, in order
    anns = []  # numbered from 0 in file order, as R1-SGG's MyDataset.coco numbers them
    for r in rows:
        for b, c in zip(r.boxes.tolist(), r.labels.tolist()):
            w, h = b[2] - b[0], b[3] - b[1]
            anns.append({"id": len(anns), "image_id": num[r.image_id], "category_id": c, "iscrowd": 0,
                         "bbox": [b[0], b[1], w, h], "area": w * h})  # fmt: skip
    assert anns[0]["id"] == 0 and rows[0].image_id in answers  # the quirk is exercised
    gt = faster.COCO()
    gt.dataset = {"images": [{"id": num[r.image_id]} for r in rows], "annotations": anns,
                  "categories": [{"id": i, "name": n} for i, n in enumerate(vocab.object_classes, 1)]}  # fmt: skip
    gt.createIndex()
    dets = []
    for image_id, a in answers.items():
        if a is None or a.placeholder:
            continue
        f = a.boxes.astype(np.float32)
        for box, c in zip(np.column_stack([f[:, :2], f[:, 2:] - f[:, :2]]).tolist(), a.labels.tolist()):
            dets.append({"image_id": num[image_id], "category_id": c, "bbox": box, "score": 1.0})
    coco = faster.COCOeval_faster(gt, gt.loadRes(dets), "bbox")
    coco.params.imgIds = sorted(num[k] for k in answers)
    coco.evaluate()
    coco.accumulate()
    coco.summarize()
    ap, ap50 = r1sgg_box_ap(rows, answers, psg=False)
    assert (ap, ap50) == pytest.approx((coco.stats[0], coco.stats[1]), abs=1e-12)


def test_golden_numbers_printed_by_r1sgg(tmp_path):
    """Numbers R1-SGG's own scripts gave on these fixtures (scripts/r1sgg_eval.py, WordNet off)."""
    golden = json.loads(GOLDEN.read_text())
    for key, expected in golden["runs"].items():
        dataset, seed = key.split("-")
        out = tmp_path / key
        write_fixture(out, dataset, int(seed))
        doc = run_r1sgg_evaluation(out / "answers", out / "rows.jsonl")
        for name, value in expected["metrics"].items():
            assert doc["metrics"][name] == pytest.approx(value, abs=1e-12, nan_ok=True), (key, name)
        for name, value in expected["counts"].items():
            assert doc["counts"][name] == value, (key, name)


def test_refusals_are_one_line(tmp_path):
    write_fixture(tmp_path, "vg150", 0, n_images=12)
    rows = (tmp_path / "rows.jsonl").read_text().splitlines()
    (tmp_path / "short.jsonl").write_text("\n".join(rows[:3]) + "\n")
    with pytest.raises(InputError, match="another split"):
        run_r1sgg_evaluation(tmp_path / "answers", tmp_path / "short.jsonl")
    one = json.loads(rows[0])
    (tmp_path / "both.jsonl").write_text(json.dumps({**one, "objects": "[]", "relationships": "[]"}) + "\n")
    with pytest.raises(InputError, match="fit both"):
        read_r1sgg_rows(tmp_path / "both.jsonl")
    bad = {**one, "objects": json.dumps([{"id": "man.1", "bbox": [5, 0, 1, 1]}]), "relationships": "[]"}
    (tmp_path / "bad.jsonl").write_text(json.dumps(bad) + "\n")
    with pytest.raises(InputError, match="x2 < x1"):
        read_r1sgg_rows(tmp_path / "bad.jsonl")
    cli = [sys.executable, "-m", "sgg_eval.cli", "evaluate", str(tmp_path / "answers"), "--text-graphs"]
    for extra in (["--gt", str(tmp_path / "short.jsonl"), "--protocol", "r1sgg"], ["--gt", "x", "--wordnet"]):
        run = subprocess.run([*cli, *extra], capture_output=True, text=True)
        assert run.returncode == 2 and run.stderr.count("\n") == 1, (extra, run.stderr)
    ok = subprocess.run([*cli, "--gt", str(tmp_path / "rows.jsonl"), "--protocol", "r1sgg"], capture_output=True,
                        text=True)  # fmt: skip
    assert ok.returncode == 0 and "failures" in ok.stdout and ok.stderr == "", ok.stderr


def _gathered(rows, answers, psg: bool) -> dict:
    """R1-SGG's gathered file of mapped answers, as its sgg_gather_preds.py writes it (placeholders included)."""
    width = 57 if psg else 51
    out = {}
    for image_id, a in answers.items():
        if a is None or a.placeholder:
            graph = {"all_node_pairs": [[0, 0]], "all_relation": [[0.0] * width]}
            out[image_id] = {"boxes": [[0.0, 0.0, 0.0, 0.0]], "labels": [0], "scores": [0], "graph": graph}
            continue
        rels = [[int(p == c) for c in range(width)] for p in a.predicates.tolist()]
        pairs = np.column_stack([a.subjects, a.objects]).tolist()
        labels = (a.labels - psg).tolist()
        out[image_id] = {"boxes": a.boxes.tolist(), "labels": labels, "scores": [1.0] * len(labels),
                         "graph": {"all_node_pairs": pairs, "all_relation": rels}}  # fmt: skip
    return out


@pytest.mark.parametrize("dataset", ["vg150", "psg"])
def test_the_gathered_file_gives_the_folders_numbers(tmp_path, dataset):
    write_fixture(tmp_path, dataset, 2)
    rows, vocab, _ = read_r1sgg_rows(tmp_path / "rows.jsonl")
    parsed, _ = read_r1sgg_folder(tmp_path / "answers", {r.image_id: (r.width, r.height) for r in rows})
    names = R1Names(dataset, vocab)
    answers = {i: (names.map(a) if a.failure is None else None) for i, a in parsed.items()}
    (tmp_path / "gathered.json").write_text(json.dumps(_gathered(rows, answers, dataset == "psg")))
    folder = run_r1sgg_evaluation(tmp_path / "answers", tmp_path / "rows.jsonl")
    gathered = run_r1sgg_evaluation(tmp_path / "gathered.json", tmp_path / "rows.jsonl")
    assert gathered["metrics"] == folder["metrics"]
    counts = gathered["counts"]
    assert counts["failures"] is None and counts["placeholders"] == folder["counts"]["placeholders"]
    doc = json.loads((tmp_path / "gathered.json").read_text())
    key = next(k for k, v in doc.items() if len(v["graph"]["all_relation"]) and v["labels"] != [0])
    doc[key]["graph"]["all_relation"][0][0] = 1
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match="one-hot"):
        run_r1sgg_evaluation(tmp_path / "bad.json", tmp_path / "rows.jsonl")
