"""``--protocol sgvlm`` (issue 48): SceneGraphVLM's TOON reading, its strict scores against a loop reference written
from the rules (exhaustive one-to-one matchings instead of scipy's assignment), and golden numbers its own evaluator
printed on the generated samples."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from sgvlm_fixture import toon, write_fixture

from sgg_eval.core.errors import InputError
from sgg_eval.metrics.iou import sgvlm_iou
from sgg_eval.metrics.names import SGVLM_VALUES
from sgg_eval.text.sgvlm.evaluate import run_sgvlm_evaluation, sample_texts
from sgg_eval.text.sgvlm.metrics import sample_scores
from sgg_eval.text.sgvlm.toon import read_toon

GOLDEN = Path(__file__).parent / "data" / "sgvlm_golden.json"
OBJS = [(1, "Man", [10, 10, 50, 90]), (2, "horse", [40, 30, 140, 100])]
RELS = [(1, "riding", 2)]


@pytest.mark.parametrize(
    "text, n_objects, n_relations",
    [
        (toon(OBJS, RELS), 2, 1),
        ("<think>let me see</think>\n" + toon(OBJS, RELS), 2, 1),
        ("<think>\n" + toon(OBJS, RELS) + "\n</think>", 2, 1),  # a header in the thinking: kept
        (f"<answer>```{toon(OBJS, RELS)}```</answer><answer></answer>", 2, 1),
        (toon(OBJS, RELS, inline=True), 2, 1),
        (toon(OBJS, RELS, headers=False), 0, 0),  # no header: the second row starts the relations
        (toon([], RELS) + "\n" + toon(OBJS, []), 0, 0),  # relations first: no object rows
        (toon(OBJS, RELS) + "\n²,on,1", 0, 0),  # a digit int() refuses: unreadable
        (toon([(1, "man", ["x", 1, 2, 3]), *OBJS[1:]], RELS), 1, 1),
        ('obj[1]{id,name,x1,y1,x2,y2}:\n1,"table, wooden",1,2,3,4', 1, 0),
        ("nothing here", 0, 0),
        # a relation header without its colon is no header: the first object row is taken for the relations' start
        ("obj[2]{id,name,x1,y1,x2,y2}:\n1,Man,10,10,50,90\n2,horse,4,3,14,10\nrel[1]{subj,pred,obj}\n1,on,2", 0, 0),
    ],
)
def test_toon_is_read_as_its_evaluator_reads_it(text, n_objects, n_relations):
    scene = read_toon(text)
    assert (len(scene.objects), len(scene.relations)) == (n_objects, n_relations)


def test_names_refined_and_boxes_sorted():
    scene = read_toon(toon([(1, "Dining_Table", [50, 60, 10, 20])], [(1, "In-Front-Of", 1)]))
    assert scene.objects == [(1, "dining table", [10.0, 20.0, 50.0, 60.0])]
    assert scene.relations == [(1, "in front of", 1)]


def _reference(gt, pred, thr=0.5):
    """Every one-to-one assignment tried: objects by largest total IoU (its pairs under ``thr`` then dropped),
    relations by most zero-cost pairs."""
    best, best_sum = [], -1.0
    g, p = len(gt.objects), len(pred.objects)
    if g and p:
        for cols in itertools.permutations(range(p), min(g, p)) if g <= p else ():
            total = sum(sgvlm_iou(gt.objects[i][2], pred.objects[c][2]) for i, c in enumerate(cols))
            if total > best_sum + 1e-12:
                best, best_sum = list(enumerate(cols)), total
        for rows in itertools.permutations(range(g), p) if g > p else ():
            total = sum(sgvlm_iou(gt.objects[r][2], pred.objects[j][2]) for j, r in enumerate(rows))
            if total > best_sum + 1e-12:
                best, best_sum = [(r, j) for j, r in enumerate(rows)], total
    kept = [(i, j) for i, j in best if sgvlm_iou(gt.objects[i][2], pred.objects[j][2]) >= thr]
    tp_obj = sum(gt.objects[i][1] == pred.objects[j][1] for i, j in kept)
    gt_of = {}
    for i, j in sorted(kept):
        gt_of[pred.objects[j][0]] = gt.objects[i][0]
    ok = [[gt_of.get(ps) == gs and gt_of.get(po) == go and gp == pp for ps, pp, po in pred.relations]
          for gs, gp, go in gt.relations]  # fmt: skip
    tp_rel = _max_matching(ok)

    def prf(tp, n_pred, n_gt):
        p_, r_ = (tp / n_pred if n_pred else 0.0), (tp / n_gt if n_gt else 0.0)
        return p_, r_, (2 * p_ * r_ / (p_ + r_) if p_ + r_ else 0.0)

    o, r = prf(tp_obj, p, g), prf(tp_rel, len(pred.relations), len(gt.relations))
    return (*o, *r, (o[2] + r[2]) / 2)


def _max_matching(ok) -> int:
    best = 0
    n_rows, n_cols = len(ok), len(ok[0]) if ok else 0
    for cols in itertools.permutations(range(max(n_cols, n_rows)), n_rows):
        best = max(best, sum(c < n_cols and ok[i][c] for i, c in enumerate(cols)))
    return best


@pytest.mark.parametrize("seed", [0, 3])
def test_against_the_loop_reference(tmp_path, seed):
    write_fixture(tmp_path / "s.jsonl", seed, n=48)
    doc = run_sgvlm_evaluation(tmp_path / "s.jsonl")
    rows = []
    for line in (tmp_path / "s.jsonl").read_text().splitlines():
        if not line.startswith("{"):
            continue
        gt, answer = sample_texts(json.loads(line))
        if gt and answer and read_toon(answer).objects:
            rows.append(_reference(read_toon(gt), read_toon(answer)))
            assert sample_scores(read_toon(gt), read_toon(answer)) == pytest.approx(rows[-1], abs=1e-12)
        else:
            rows.append((0.0,) * len(SGVLM_VALUES))
    for k, name in enumerate(SGVLM_VALUES):
        assert doc["metrics"][name] == pytest.approx(sum(r[k] for r in rows) / len(rows), abs=1e-12), name
    assert doc["counts"]["unreadable_lines"] == 1 and 0 < doc["counts"]["invalid_rate"] < 1


def test_golden_numbers_printed_by_sceneGraphVLM(tmp_path):
    """Numbers SceneGraphVLM's evaluator wrote on these samples (scripts/sgvlm_eval.py, --strict-only)."""
    golden = json.loads(GOLDEN.read_text())
    for seed, expected in golden["runs"].items():
        write_fixture(tmp_path / f"{seed}.jsonl", int(seed))
        doc = run_sgvlm_evaluation(tmp_path / f"{seed}.jsonl")
        for name in SGVLM_VALUES:
            assert doc["metrics"][name] == pytest.approx(expected[name], abs=1e-12), (seed, name)
        assert doc["counts"]["invalid_rate"] == pytest.approx(expected["invalid_rate_pct"] / 100, abs=1e-12)


def test_an_infinite_box_counts_iou_zero():
    gt = read_toon(toon(OBJS, RELS))
    pred = read_toon(toon([(1, "man", [10, 10, "inf", 90]), OBJS[1]], RELS))
    assert sample_scores(gt, pred)[1] == 0.5  # the horse only


def test_the_command_line(tmp_path):
    write_fixture(tmp_path / "s.jsonl", 1, n=16)
    cli = [sys.executable, "-m", "sgg_eval.cli", "evaluate", str(tmp_path / "s.jsonl"), "--text-graphs"]
    ok = subprocess.run([*cli, "--protocol", "sgvlm"], capture_output=True, text=True)
    assert ok.returncode == 0 and "SGG_Score_strict=" in ok.stdout and ok.stderr == "", ok.stderr
    bad = subprocess.run([*cli, "--protocol", "sgvlm", "--gt", "x"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    (tmp_path / "none.jsonl").write_text("[1]\n")
    with pytest.raises(InputError, match="no samples"):
        run_sgvlm_evaluation(tmp_path / "none.jsonl")


@pytest.mark.parametrize("pad", ["\u00a0", "\x0b", "\u3000 ", "\t"])
def test_each_line_is_stripped_as_its_reader_strips_it(tmp_path, pad):
    """SceneGraphVLM reads ``line.strip()`` (Python's Unicode whitespace): a sample padded with U+00A0 or a vertical
    tab is read, not counted unreadable (SGG_Score_strict 1.0, where reading the line as written gave 0.5)."""
    sample = json.dumps({"content": toon(OBJS, RELS), "predict": toon(OBJS, RELS)})
    (tmp_path / "s.jsonl").write_text(pad + sample + "\n" + sample + pad + "\n" + pad + "\n", encoding="utf-8")
    doc = run_sgvlm_evaluation(tmp_path / "s.jsonl")
    assert doc["metrics"]["SGG_Score_strict"] == 1.0
    assert doc["counts"]["unreadable_lines"] == 0 and len(doc["facts"]) >= 1
