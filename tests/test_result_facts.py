"""The audit of metrics documents (issue 48): what each number was computed over, and the flag on comparisons that
mix image sets, constraints, pooling, failure rules or K (``metrics.result_facts``, ``sgg-eval audit --compare``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from asmv2_fixture import write_fixture as write_asmv2

from sgg_eval.metrics.result_facts import differences, facts_markdown, facts_of
from sgg_eval.text.asmv2.evaluate import run_asmv2_evaluation

BOX_DOC = {"protocol": "reference", "task": "sgdet", "metrics": {"R@50": 0.3},
           "counts": {"images_evaluated": 2177, "images_input": 2186, "images_skipped_no_pred": 0}}  # fmt: skip


def test_a_box_document_is_read_off_its_counts():
    gc, ng = facts_of(BOX_DOC)
    assert gc["images"]["counted"] == 2177 and gc["images"]["of"] == 2186 and "graph constraint" in gc["constraint"]
    assert "no graph constraint" in ng["constraint"] and differences(gc, gc) == []
    with pytest.raises(ValueError, match="not an sgg-eval metrics document"):
        facts_of({"metrics": {}})


def test_an_answered_subset_without_constraint_is_flagged(tmp_path):
    write_asmv2(tmp_path, 0, n=20)
    doc = run_asmv2_evaluation(tmp_path / "answers.jsonl", tmp_path / "psg_eval.jsonl")
    facts = facts_of(doc)[0]
    assert facts["images"] == {"counted": 18, "of": 20, "rule": facts["images"]["rule"]}
    parts = differences(facts, facts_of(BOX_DOC)[0])
    assert [p.split(":")[0] for p in parts] == ["images", "constraint", "pooling", "failures", "k"]
    text = facts_markdown([("mllm.json", doc), ("baseline.json", BOX_DOC)])
    assert "are not comparable" in text and "18 of 20" in text and "2,177 of 2,186" in text
    assert "computed alike" in facts_markdown([("a.json", BOX_DOC), ("b.json", BOX_DOC)])


def test_the_command_line(tmp_path):
    write_asmv2(tmp_path, 1, n=12)
    doc = run_asmv2_evaluation(tmp_path / "answers.jsonl", tmp_path / "psg_eval.jsonl")
    (tmp_path / "mllm.json").write_text(json.dumps(doc))
    (tmp_path / "box.json").write_text(json.dumps(BOX_DOC))
    (tmp_path / "other.json").write_text(json.dumps({"metrics": {}, "counts": {}}))
    cli = [sys.executable, "-m", "sgg_eval.cli", "audit", str(tmp_path / "mllm.json")]
    ok = subprocess.run([*cli, "--compare", str(tmp_path / "box.json"), "-o", str(tmp_path / "a.json")],
                        capture_output=True, text=True)  # fmt: skip
    assert ok.returncode == 0 and "are not comparable" in ok.stdout and ok.stderr == "", ok.stderr
    assert len(json.loads((tmp_path / "a.json").read_text())["results"]) == 2
    for extra in (["--compare", str(tmp_path / "other.json")], ["--task", "sgdet"]):
        bad = subprocess.run([*cli, *extra], capture_output=True, text=True)
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1, (extra, bad.stderr)
