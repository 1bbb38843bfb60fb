"""``--protocol asmv2`` (issue 48): ASMv2's tag walk (against the regular expression it uses, on random text), box
frames, names, its pooled recall against a loop reference written from the rules, and golden numbers its own
``eval_psg.py`` printed (spaCy and torchvision stood in for, scripts/asmv2_eval.py)."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from asmv2_fixture import write_fixture

from sgg_eval.core.errors import InputError
from sgg_eval.metrics.names import ASMV2_VALUES
from sgg_eval.text.asmv2.answers import parse_answer, tag_pairs
from sgg_eval.text.asmv2.evaluate import run_asmv2_evaluation
from sgg_eval.text.asmv2.metrics import answer_box, asmv2_synonyms, candidates, word_lemmas
from sgg_eval.text.asmv2.questions import read_asmv2_questions

GOLDEN = Path(__file__).parent / "data" / "asmv2_golden.json"


def test_tag_pairs_are_what_its_pattern_finds():
    rnd = random.Random(7)
    for _ in range(3000):
        text = "".join(rnd.choice("<>ab\n/ ") for _ in range(rnd.randrange(0, 30)))
        assert tag_pairs(text) == re.findall(r"<.*?>.*?<.*?>", text), repr(text)


def test_a_line_of_many_tags_is_read_in_linear_time():
    assert tag_pairs("<" * 200_000) == []  # the pattern's own search takes minutes on it


def test_the_answer_is_parsed_as_asmv2_parses_it():
    text = ("<ref>the man</ref><box>[[1, 2, 3, 4], [5, 6, 7, 8]]</box><ref>horse</ref><box>[[9, 9, 20, 20]]</box>"
            "<pred>riding</pred><box>[[1, 2, 3, 4]]</box><box>[[9, 9, 20, 20], [0, 0, 1, 1]]</box>"
            "<pred>on</pred><box>[[5, 6, 7, 8]]</box>")  # fmt: skip
    tuples, correct = parse_answer(text)
    assert not correct  # "on" has one box list
    assert [(t.subject_names, t.subject_box, t.object_names, t.object_box, t.predicate) for t in tuples] == [
        (["the man"], [1, 2, 3, 4], ["horse"], [9, 9, 20, 20], "riding"),
        (["the man"], [1, 2, 3, 4], [], [0, 0, 1, 1], "riding"),  # a single subject box repeated; no ref: Unknown
    ]


def test_names_and_boxes():
    synonyms = asmv2_synonyms()
    assert candidates(["the man"], word_lemmas, synonyms) == ["the", "person"]
    assert candidates(["Table"], word_lemmas, synonyms) == ["dining table"]
    assert candidates([], word_lemmas, synonyms) == ["Unknown"]
    # landscape 640 x 480: x x 640/999, y x 640/999 - 80; portrait: the same on x
    assert answer_box([[999, 999, 999, 999]], 640, 480).tolist() == [640.0, 560.0, 640.0, 560.0]
    assert answer_box([999, 0, 999, 0], 480, 640).tolist() == [560.0, 0.0, 560.0, 0.0]
    assert answer_box([[1, 2], [3, 4]], 500, 500) is not None and answer_box([1, 2, 3], 500, 500) is None
    assert answer_box([[1, 2, 3, 4], [5, 6, 7, 8]], 500, 500) is None and answer_box("abcd", 500, 500) is None


def _iou(a, b) -> np.float32:
    f = np.float32
    area_a, area_b = f(a[2] - a[0]) * f(a[3] - a[1]), f(b[2] - b[0]) * f(b[3] - b[1])
    w = max(f(0), f(min(a[2], b[2]) - max(a[0], b[0])))
    h = max(f(0), f(min(a[3], b[3]) - max(a[1], b[1])))
    return f(w * h) / (area_a + area_b - f(w * h))


def _reference(questions, answers_file) -> dict:
    """PROTOCOLS.md §2 in loops: every answered question's GT tuples, hit by any parsed tuple."""
    synonyms, hits, by_pred, formats, counts = asmv2_synonyms(), [], {}, [], []
    for line in Path(answers_file).read_text().splitlines():
        try:
            answer = json.loads(line)
        except ValueError:
            continue
        q = questions[answer["question_id"]]
        text = answer.get("text")
        tuples, ok = parse_answer(text) if isinstance(text, str) else ([], False)
        scored = []
        for t in tuples:
            sb, ob = answer_box(t.subject_box, q.width, q.height), answer_box(t.object_box, q.width, q.height)
            if sb is None or ob is None:
                continue
            for s in candidates(t.subject_names, word_lemmas, synonyms):
                for o in candidates(t.object_names, word_lemmas, synonyms):
                    scored.append((s, sb, o, ob, t.predicate))
        formats.append(ok)
        counts.append(len(scored))
        for g in range(len(q.predicates)):
            hit = any(
                s == q.subjects[g] and o == q.objects[g] and p == q.predicates[g]
                and _iou(sb, q.subject_boxes[g]) >= 0.5 and _iou(ob, q.object_boxes[g]) >= 0.5
                for s, sb, o, ob, p in scored
            )  # fmt: skip
            hits.append(hit)
            by_pred.setdefault(q.predicates[g], []).append(hit)
    means = [sum(v) / len(v) for v in by_pred.values()]
    return {
        "ngR_asmv2": sum(hits) / len(hits),
        "ng-mR_asmv2": sum(means) / len(means),
        "correct_format_ratio": sum(formats) / len(formats),
        "num_pred_tuples": sum(counts) / len(counts),
    }


@pytest.mark.parametrize("seed", [0, 4])
def test_against_the_loop_reference(tmp_path, seed):
    write_fixture(tmp_path, seed)
    doc = run_asmv2_evaluation(tmp_path / "answers.jsonl", tmp_path / "psg_eval.jsonl")
    expected = _reference(read_asmv2_questions(tmp_path / "psg_eval.jsonl"), tmp_path / "answers.jsonl")
    got = {**doc["metrics"], **{k: doc["counts"][k] for k in ("correct_format_ratio", "num_pred_tuples")}}
    assert got == pytest.approx(expected, abs=1e-12)
    assert doc["counts"]["unreadable_lines"] == 1 and doc["counts"]["unreadable_answers"] == 1


def test_golden_numbers_printed_by_asmv2(tmp_path):
    """ASMv2's eval_psg.py on these fixtures, answers whose text is not text left out (it stops on them)."""
    golden = json.loads(GOLDEN.read_text())
    for seed, expected in golden["runs"].items():
        out = tmp_path / seed
        write_fixture(out, int(seed))
        lines = [ln for ln in (out / "answers.jsonl").read_text().splitlines() if ln.startswith('{"')]
        (out / "clean.jsonl").write_text("\n".join(ln for ln in lines if '"text": null' not in ln) + "\n")
        doc = run_asmv2_evaluation(out / "clean.jsonl", out / "psg_eval.jsonl")
        got = {**doc["metrics"], **{k: doc["counts"][k] for k in ("correct_format_ratio", "num_pred_tuples")}}
        assert got == pytest.approx(expected, abs=1e-12), seed


def test_refusals_and_the_command_line(tmp_path):
    write_fixture(tmp_path, 1, n=12)
    (tmp_path / "few.jsonl").write_text("".join((tmp_path / "psg_eval.jsonl").read_text().splitlines(True)[:3]))
    with pytest.raises(InputError, match="another question file"):
        run_asmv2_evaluation(tmp_path / "answers.jsonl", tmp_path / "few.jsonl")
    bad = {"question_id": 0, "width": 5, "height": 5, "relation_tuples": [["a", [1, 2, 3], "b", [1, 2, 3, 4], "on"]]}
    (tmp_path / "bad.jsonl").write_text(json.dumps(bad))
    with pytest.raises(InputError, match="relation_tuples"):
        read_asmv2_questions(tmp_path / "bad.jsonl")
    cli = [sys.executable, "-m", "sgg_eval.cli", "evaluate", str(tmp_path / "answers.jsonl"), "--text-graphs"]
    ok = subprocess.run([*cli, "--gt", str(tmp_path / "psg_eval.jsonl"), "--protocol", "asmv2"], capture_output=True,
                        text=True)  # fmt: skip
    assert ok.returncode == 0 and all(n in ok.stdout for n in ASMV2_VALUES) and ok.stderr == "", ok.stderr
    bad = subprocess.run([*cli, "--gt", "x", "--spacy"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


# The four places where ASMv2's eval_psg.py and a reading by the rules parted (issue 64), each named.
SIDE = 999  # a square image on the 999 grid: answer boxes are pixels


def _tuples(n: int, predicate: str, at: int) -> list:
    """``n`` GT tuples person-``predicate``-dog, each pair of boxes apart from every other's."""
    return [["person", [at + 40 * k, 10, at + 40 * k + 30, 40], "dog", [at + 40 * k, 500, at + 40 * k + 30, 540],
             predicate] for k in range(n)]  # fmt: skip


def _said(t: list) -> str:
    return (f"<ref>person</ref><box>[{t[1]}]</box><ref>dog</ref><box>[{t[3]}]</box>"
            f"<pred>{t[4]}</pred><box>[{t[1]}]</box><box>[{t[3]}]</box>")  # fmt: skip


def _write(tmp_path, questions: list, answers: list) -> tuple:
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    (tmp_path / "a.jsonl").write_text("".join((a if isinstance(a, str) else json.dumps(a)) + "\n" for a in answers))
    return tmp_path / "a.jsonl", tmp_path / "q.jsonl"


def _question(qid, tuples: list) -> dict:
    return {"question_id": qid, "image": "x.jpg", "text": "", "width": SIDE, "height": SIDE, "relation_tuples": tuples}


def test_mean_recall_adds_left_to_right_as_asmv2_does(tmp_path):
    """Recalls 1, 1, 1, 0, 0, 1/3, 0, 1 in the order ASMv2 meets the predicates: its ``sum(list) / len`` gives
    0.5416666666666667 under Python < 3.12 (its LLaVA environment's 3.10), where a pairwise or compensated sum (numpy,
    Python 3.12's ``sum``) gives 0.5416666666666666."""
    recalls = [(1, 1), (1, 1), (1, 1), (0, 1), (0, 1), (1, 3), (0, 1), (1, 1)]
    gt, hit = [], []
    for p, (hits, n) in enumerate(recalls):
        rows = _tuples(n, f"p{p}", 100 * p)
        gt += rows
        hit += rows[:hits]
    answers, questions = _write(tmp_path, [_question(0, gt)], [{"question_id": 0, "text": "".join(map(_said, hit))}])
    doc = run_asmv2_evaluation(answers, questions)
    assert doc["metrics"]["ng-mR_asmv2"] == 0.5416666666666667
    assert float(np.mean([h / n for h, n in recalls])) == 0.5416666666666666  # the sum it replaced


def test_an_empty_object_as_a_box_list_is_well_formed_as_for_asmv2(tmp_path):
    """``<box>{}</box>``: ASMv2 takes len({}) = 0, repeats the one-box side zero times and zips nothing: the format
    is correct (1.00). A one-key object there stops ASMv2 (a dict times a number): counted incorrect and skipped."""
    text = "<pred>on</pred><box>{}</box><box>[[1, 2, 3, 4]]</box>"
    assert parse_answer(text) == ([], True)
    answers, questions = _write(tmp_path, [_question(0, _tuples(1, "on", 0))], [{"question_id": 0, "text": text}])
    assert run_asmv2_evaluation(answers, questions)["counts"]["correct_format_ratio"] == 1.0
    assert parse_answer('<pred>on</pred><box>{"a": 1}</box><box>[[1, 2, 3, 4]]</box>') == ([], False)
    assert parse_answer("<pred>on</pred><box>[[1, 2, 3, 4]]</box><box>{}</box>") == ([], True)


def test_question_ids_are_looked_up_as_asmv2_looks_them_up(tmp_path):
    """ASMv2 keys a dict by the question ids as JSON gives them: an answer id 0.0 or true finds question 0 or 1; with
    GT ids 5 and "5", the answer 5 is the int question's; an answer "0" for question 0 stops it (KeyError), and
    sgg-eval refuses it in one line as an answer to a question the GT lacks."""
    hit5 = _tuples(1, "on", 0)
    questions = [_question(0, _tuples(1, "on", 0)), _question(1, _tuples(1, "on", 0)), _question(5, hit5),
                 _question("5", _tuples(1, "beside", 300))]  # fmt: skip
    said = _said(hit5[0])
    answers = [{"question_id": 0.0, "text": said}, {"question_id": True, "text": ""}, {"question_id": 5, "text": said}]
    doc = run_asmv2_evaluation(*_write(tmp_path, questions, answers))
    assert doc["counts"]["questions_answered"] == 3 and doc["counts"]["unreadable_lines"] == 0
    assert doc["metrics"]["ngR_asmv2"] == 2 / 3  # questions 0 and 5 (the int one) hit, question 1 not
    with pytest.raises(InputError, match="questions the GT file does not have, e.g. '0'"):
        run_asmv2_evaluation(*_write(tmp_path, questions, [{"question_id": "0", "text": said}]))
    unreadable = ['{"question_id": [0], "text": ""}', '{"text": ""}', "not json", {"question_id": 0, "text": said}]
    doc = run_asmv2_evaluation(*_write(tmp_path, questions, unreadable))
    assert doc["counts"]["unreadable_lines"] == 3 and doc["counts"]["answers_scored"] == 1
