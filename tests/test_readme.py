"""The README, run as written (issue 27; tests/readme_runner.py says how): its quick start's state (the shared
`make repro`, tests/reproduced.py), the commands that read it or add to it without rerunning the pipeline, the
command-line and example sections, and the check that every README command is run by a test or excused. The
commands that rerun the pipeline (experiments, the queue, another dataset) are in tests/test_readme_*.py, each
module on its own copy, so that pytest-xdist runs them side by side."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request

import pytest
import readme_standins
from readme_runner import EXCUSED, RUN_OTHERWISE, commands_run, readme_commands, sh, stages_run
from reproduced import copy_of, fresh_clone, shell_env

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out


@pytest.fixture(scope="module")
def project(reproduced_base, tmp_path_factory):
    """The quick start's `make repro` in a fresh clone, the reproduced state committed, as a user would."""
    return copy_of(reproduced_base, tmp_path_factory.mktemp("readme") / "project")


def test_make_repro_runs_the_pipeline(reproduced_base):
    assert {"load_split", "evaluate", "tables", "figures", "track"} <= stages_run(reproduced_base.make_repro)


def test_a_second_repro_runs_nothing(project):
    out = sh(".venv/bin/dvc repro", project)
    assert "Running stage" not in out and "up to date" in out, out


def test_mlflow_ui_serves_the_runs(project):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        ["bash", "-c", "make ui"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**shell_env(), "UI_PORT": str(port)},
        start_new_session=True,
    )
    try:
        deadline, page = time.time() + 120, None
        while time.time() < deadline and page is None and proc.poll() is None:
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read().decode()
            except OSError:
                time.sleep(1)
        assert page and "MLflow" in page, proc.poll()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        first = proc.communicate(timeout=60)[0].splitlines()[0]
    assert first.startswith("MLflow UI, the runs of this project: http://127.0.0.1:"), first


def test_make_deps_finds_nothing_missing(project):
    sh("make deps", project)


def test_make_lint_passes_on_the_project(project):
    sh("make lint", project)


def test_audit_example(project):
    out = sh(
        "sgg-eval audit data/vg150_sim/predictions/simulated/sim_motifs_baseline/predcls.h5 "
        "--gt data/vg150_sim/splits/test.h5 --task predcls "
        '--published "R@50=64.0" --published "R@50=74.7" --published "mR@100=14.85"',
        project,
        active=True,
    )
    assert "| metric | constraint | aggregation | protocol | images | K=20 | K=50 | K=100 |" in out
    assert len(re.findall(r"^- `(R@50=64\.0|R@50=74\.7|mR@100=14\.85)`: ", out, re.M)) == 3, out


def test_text_graphs_examples_and_table(project):
    """The text scene graphs section: its generated example under three protocols, the audit flagging the pair, and
    the pipeline's table of the simulated text model beside the ranked ones (the quick start's repro)."""
    assert "GENERATED" in sh("make text-graphs-example", project)
    out = sh(
        ".venv/bin/sgg-eval evaluate data/examples/text_graphs/r1sgg/answers --text-graphs --gt "
        "data/examples/text_graphs/r1sgg/rows.jsonl --protocol r1sgg -o data/examples/text_r1sgg.json",
        project,
    )
    r1 = json.loads((project / "data/examples/text_r1sgg.json").read_text())
    assert r1["counts"]["failures"] == 12 and f"ngR_loop={100 * r1['metrics']['ngR_loop']:.2f}" in out
    sh(
        ".venv/bin/sgg-eval evaluate data/examples/text_graphs/asmv2/answers.jsonl --text-graphs --gt "
        "data/examples/text_graphs/asmv2/psg_eval.jsonl --protocol asmv2 -o data/examples/text_asmv2.json",
        project,
    )
    out = sh(
        ".venv/bin/sgg-eval evaluate data/examples/text_graphs/sgvlm.jsonl --text-graphs --protocol sgvlm -o "
        "data/examples/text_sgvlm.json",
        project,
    )
    assert "SGG_Score_strict=" in out and "30 invalid" in out
    out = sh(".venv/bin/sgg-eval audit data/examples/text_asmv2.json --compare data/examples/text_r1sgg.json", project)
    assert "text_asmv2.json (ngR_asmv2) vs text_r1sgg.json (ngR_loop) are not comparable" in out
    table = (project / "reports/tables/text_graphs_table.md").read_text()
    assert "MLLM (text) (SIMULATED)" in table and "*Ranked models, SGDet*" in table and "no K" in table


def test_s2g_example(project):
    """The S2G section's tiny run: the generated case, the command's epochs and its gallery lines, the document."""
    out = sh("make s2g-example", project)
    assert "tiny SIMULATED S2G case" in out and "s2g: epoch 2/2" in out, out[-2000:]
    assert "the whole test block (" in out and "gallery of 1,000 not reported" in out
    doc = json.loads((project / "data/examples/s2g_baseline.json").read_text())
    assert doc["training"]["epochs"] == 2 and doc["training"]["solver"]["base_lr"] == 0.001
    assert doc["images"]["test_block"] > 100 and doc["collapsed"] is None


def test_action_genome_example(project):
    """The Action Genome section: the generated files, the split stores, STTran's recall both ways."""
    out = sh("make ag-example", project)
    assert "SIMULATED" in out
    out = sh(
        ".venv/bin/sgg-eval split --ag-dir data/examples/ag/AG --ag-small-boxes "
        "data/examples/ag/AG/object_bbox_and_relationship_filtersmall.pkl -o data/examples/ag/splits",
        project,
    )
    assert "test_filtersmall.h5:" in out and "one-frame videos" in out
    out = sh(
        ".venv/bin/sgg-eval evaluate data/examples/ag/preds_predcls --ag data/examples/ag/splits/test.h5 --task "
        "predcls --constraint with -o data/examples/ag/predcls_with.json",
        project,
    )
    assert "with constraint" in out and "R@20: " in out and "pooled (TEMPURA)" in out
    out = sh(
        ".venv/bin/sgg-eval evaluate data/examples/ag/preds_sgdet --ag data/examples/ag/splits/test_filtersmall.h5 "
        "--task sgdet --constraint all -o data/examples/ag/sgdet.json",
        project,
    )
    assert out.count("R@100: ") == 3 and "semi constraint" in out
    doc = json.loads((project / "data/examples/ag/sgdet.json").read_text())
    assert doc["constraint"] == "all" and doc["semi_threshold"] == 0.9
    assert 0 < doc["results"]["semi"]["metrics"]["R@50"] < doc["results"]["no"]["metrics"]["R@50"]


def test_psg_table_of_the_simulated_benchmark(project):
    out = sh("cat reports/psg/tables/psg_table3_pairs_predicates.md", project)
    assert "SIMULATED" in out and "protocol sgbench" in out and "| HiLo" in out and "| IMP" in out


def test_command_line_examples(tmp_path):
    p = fresh_clone(tmp_path, tiny=False)
    sh("sgg-eval split --simulated -o data/vg150_sim/splits", p, active=True)
    sh("sgg-eval stats data/vg150_sim/splits/train.h5 --test data/vg150_sim/splits/test.h5 -o stats.h5", p, active=True)
    readme_standins.command_line_files(p)
    sh("sgg-eval params dataset.sim.scale=tiny", p, active=True)
    assert "scale: tiny" in (p / "params.yaml").read_text()
    sh("sgg-eval params", p, active=True)
    assert "scale: default" in (p / "params.yaml").read_text()
    sh(
        "sgg-eval evaluate path/to/eval_results.pytorch --task predcls --zeroshot vg150 --stats stats.h5 "
        "-o metrics.json",
        p,
        active=True,
    )
    assert json.loads((p / "metrics.json").read_text())["metrics"]["zR@50"] is not None
    out = sh("sgg-eval evaluate preds.json --gt data/vg150/splits/test.h5 --task sgdet", p, active=True)
    assert "R@50" in out
    sh(
        "sgg-eval pko eval_results.pytorch --gt test.h5 --stats stats.h5 --task predcls -o motifs_pko.h5",
        p,
        active=True,
    )
    sh(
        "sgg-eval pko eval_results.pytorch --gt test.h5 --stats stats.h5 --task predcls --only -o pko_only.h5",
        p,
        active=True,
    )
    sh("sgg-eval evaluate motifs_pko.h5 --gt test.h5 --task predcls -o motifs_pko.json", p, active=True)
    (p / "preds.h5").write_bytes((p / "motifs_pko.h5").read_bytes())  # a prediction store of this split
    a = sh("sgg-eval evaluate preds.h5 --gt data/vg150/splits/test.h5 --task predcls --jobs 1", p, active=True)
    b = sh("sgg-eval evaluate motifs_pko.h5 --gt test.h5 --task predcls -o motifs_pko.json", p, active=True)
    assert a.splitlines()[-3:] == b.splitlines()[-3:]
    sh(
        "sgg-eval evaluate preds.h5 --gt data/vg150/splits/test.h5 --task predcls --per-image graphs.jsonl",
        p,
        active=True,
    )
    graphs = [json.loads(line) for line in (p / "graphs.jsonl").read_text().splitlines()]
    assert graphs and all(g["gt"] and len(g["predicted"]) <= 100 for g in graphs)
    out = sh(
        'sgg-eval audit preds.h5 --gt data/vg150/splits/test.h5 --task predcls --published "mR@100=12.3"',
        p,
        active=True,
    )
    assert "- `mR@100=12.3`: " in out
    out = sh("sgg-eval protocols", p, active=True)
    assert "17 protocols" in out and "KaihuaTang/Scene-Graph-Benchmark.pytorch @ " in out
    out = sh("sgg-eval blind-replace motifs_pko.h5 --gt test.h5 --stats stats.h5 --task predcls", p, active=True)
    assert "R@" in out
    sh("sgg-eval simulate --gt test.h5 --stats stats.h5 --task sgdet -o sim/", p, active=True)
    assert len(list((p / "sim").glob("*_sgdet.h5"))) >= 2


def test_panoptic_examples(tmp_path):
    readme_standins.panoptic_files(tmp_path)
    out = sh(
        "sgg-eval evaluate submission.zip --psg psg.json --psg-root coco/ -o psg_metrics.json", tmp_path, active=True
    )
    assert "R@20" in out and "InstR" in out
    sh("sgg-eval evaluate triplets.json --psg psg.json -o psg_boxes.json", tmp_path, active=True)
    masks, boxes = (json.loads((tmp_path / f).read_text())["metrics"] for f in ("psg_metrics.json", "psg_boxes.json"))
    assert masks.keys() == boxes.keys() and masks != boxes
    sh("sgg-eval stats --psg psg.json -o psg_stats.h5", tmp_path, active=True)
    assert (tmp_path / "psg_stats.h5").stat().st_size > 0
    out = sh(
        'sgg-eval audit submission.zip --psg psg.json --psg-root coco/ --published "R@20=28.4"', tmp_path, active=True
    )
    assert "- `R@20=28.4`: " in out
    sh("sgg-eval evaluate submission/ --psg psg.json --psg-root coco/", tmp_path / "openpsg", active=True)
    sh("sgg-eval psg-pack preds.json masks/ -o submission.zip", tmp_path / "pack", active=True)
    assert (tmp_path / "pack/submission.zip").stat().st_size > 0


def test_gqa_examples(tmp_path):
    """The GQA section's commands on the generated files `make gqa-example` writes: both layouts split, the
    zero-shot set with val counted as seen, and GQA-nLR with fewer images (left/right-only images dropped)."""
    p = fresh_clone(tmp_path, tiny=False)
    assert "GENERATED" in sh("make gqa-example", p)
    out = sh(".venv/bin/sgg-eval split --gqa-dir data/examples/gqa --num-val-im 100 -o data/examples/gqa_splits", p)
    plain = int(re.search(r"gqa_splits/test.h5: (\d+) images", out).group(1))
    sh(
        ".venv/bin/sgg-eval stats data/examples/gqa_splits/train.h5 --test data/examples/gqa_splits/test.h5 "
        "--seen data/examples/gqa_splits/val.h5 -o data/examples/gqa_stats.h5",
        p,
    )
    assert (p / "data/examples/gqa_stats.h5").stat().st_size > 0
    out = sh(
        ".venv/bin/sgg-eval split --gqa-dir data/examples/gqa --num-val-im 100 --exclude-left-right "
        "-o data/examples/gqa_nlr_splits",
        p,
    )
    assert int(re.search(r"gqa_nlr_splits/test.h5: (\d+) images", out).group(1)) < plain
    out = sh(".venv/bin/sgg-eval split --gqa200-dir data/examples/gqa200 -o data/examples/gqa200_splits", p)
    val, test = (int(re.search(rf"gqa200_splits/{s}.h5: (\d+) images", out).group(1)) for s in ("val", "test"))
    assert val == min(5000, test) > 0  # val: the first 5,000 kept test images


def test_every_readme_command_is_run_or_excused():
    """The commands the README modules run (tests/readme_runner.py reads them from their source), plus those
    run otherwise and the excused ones, are every command of the README; and no excuse outlives its command."""
    stale = (set(EXCUSED) | set(RUN_OTHERWISE)) - set(readme_commands())
    assert not stale, stale
    run = commands_run()
    missing = [
        c
        for c in readme_commands()
        if c not in EXCUSED and c not in RUN_OTHERWISE and not any(r.fullmatch(c) for r in run)
    ]
    assert not missing, missing
    assert not [r.pattern for r in run if not any(r.fullmatch(c) for c in readme_commands())]
