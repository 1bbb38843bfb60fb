"""The pipeline end to end on a copy of the project (tiny simulated data, MLflow in a temporary store):
`dvc repro` produces every table, figure and run; a rerun is a no-op; changing tau reruns only what depends on
tau; a Hydra sweep composed from the real configs logs nested runs that match the JSON files."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from reproduced import copy_of, ran_stages, stage_name

from sgg_eval.data.stats import read_stats
from sgg_eval.metrics.document import every_metric
from sgg_eval.metrics.names import mlflow_key
from sgg_eval.pipeline.paths import LOCK_FILES, PIPELINE_FILES

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out

ROOT = Path(__file__).resolve().parents[1]
TABLES = ("table1_blind_replacement", "table2_predcls", "table3_sgcls_sgdet", "full_metrics")
FIGURES = ("fig2_score_heatmaps", "fig3_composable_pairs", "fig4_mr_vs_imr", "fig5_predicate_weights", "tau_sweep",
           "confusion_matrix")  # fmt: skip


def run(args, cwd, env=None):
    # stages run stages/python, which honours SGG_EVAL_PYTHON: this interpreter, whichever way pytest was started
    # (dvc itself, and DVC's queue workers, are found on PATH)
    env = {
        **os.environ,
        **(env or {}),
        "SGG_EVAL_PYTHON": sys.executable,
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
    }
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def copy_project(dst: Path) -> Path:
    for item in (*PIPELINE_FILES, "conf", "stages", "src"):  # the pipelines without their locks
        src = ROOT / item
        (dst / item).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst / item)
    run([sys.executable, "-m", "dvc", "init", "--no-scm", "-q"], dst)
    shutil.copy(ROOT / ".dvcignore", dst / ".dvcignore")  # Python caches are no stage's input
    shutil.copytree(ROOT / ".dvc" / "plots", dst / ".dvc" / "plots")  # the plots page's templates
    return dst


def params_with(project: Path, *overrides: str) -> None:
    run([sys.executable, "-m", "sgg_eval.cli", "params", *overrides], project)


def mlflow_runs(uri: str) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("sgg-eval")
    return client.search_runs([exp.experiment_id], max_results=5000) if exp else []


@pytest.fixture(scope="module")
def project(reproduced_base, tmp_path_factory):
    """A copy of the quick start's reproduced project (tests/reproduced.py: tiny simulated data in conf/, MLflow
    in its mlflow.db): (folder, tracking URI, the overrides that recompose its params.yaml, `make repro`'s output)."""
    p = copy_of(reproduced_base, tmp_path_factory.mktemp("pipeline") / "project")
    return p, f"sqlite:///{p / 'mlflow.db'}", [], reproduced_base.make_repro


def test_repro_produces_tables_figures_and_runs(project):
    p, uri, _, first = project
    ran = ran_stages(first)
    for stage in (
        "check_params",
        "load_split",
        "train_stats",
        "simulate",
        "apply_pko@",
        "pko_only",
        "blind_replace",
        "evaluate@",
        "tables",
        "score_figures",
        "figures",
        "psg_data",
        "psg_stats",
        "psg_simulate",
        "psg_evaluate@",
        "psg_reduce",
        "psg_tables",
        "psg_figures",
        "site",
        "track",
    ):
        assert any(s.startswith(stage) for s in ran), stage
    psg_table = (p / "reports/psg/tables/psg_table1_recall.md").read_text()
    methods = ("IMP", "Neural-Motifs", "GPS-Net", "VCTree", "PSGTR", "PSGFormer", "Pair-Net", "HiLo")
    assert "SIMULATED" in psg_table and "protocol sgbench" in psg_table and all(f"| {m} " in psg_table for m in methods)
    site = (p / "reports/site/index.html").read_text()
    assert site.count("<table") == 4 and all(m in site for m in methods)  # PredCls, SGCls, SGDet, PSG
    for t in TABLES:
        for ext in ("md", "tex", "csv"):
            assert (p / f"reports/tables/{t}.{ext}").stat().st_size > 0
    assert "SIMULATED" in (p / "reports/tables/table2_predcls.md").read_text()
    # the misuse detectors stay silent on the simulated benchmark's clean outputs (every entry and task)
    docs = sorted((p / "data/vg150_sim/results/metrics").rglob("*.json"))
    assert len(docs) > 30 and not [
        (d, n) for d in docs for n in json.loads(d.read_text())["notes"] if n.startswith("WARNING")
    ]
    published = re.sub(r" +", " ", (p / "reports/tables/published_vs_reproduced.md").read_text())
    assert "SIMULATED vs published" in published and "| predcls | Motifs | NICE | R@50 |" in published
    assert "wIMR tau = 0.5" in (p / "reports/tables/table2_predcls.md").read_text()
    assert r"\textbf{" in (p / "reports/tables/table2_predcls.tex").read_text()
    for f in FIGURES:
        for ext in ("png", "svg"):
            assert (p / f"reports/figures/{f}.{ext}").stat().st_size > 1000
    params = yaml.safe_load((p / "params.yaml").read_text())
    n = len(params["evaluation"]["entries"]) * len(params["evaluation"]["tasks"])
    runs = mlflow_runs(uri)
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    psg = [r for r in children if r.data.tags["sgg_eval.task"] == "panoptic"]
    text = [r for r in children if r.data.tags["sgg_eval.task"] == "text"]
    video = [r for r in children if r.data.tags.get("sgg_eval.product") == "video"]
    m = len(params["evaluation"]["psg_entries"]) * len(params["evaluation"]["psg_protocols"])
    t = len(params["evaluation"]["text_entries"])
    v = (
        len(params["evaluation"]["video_entries"])
        * len(params["evaluation"]["video_protocols"])
        * len(params["evaluation"]["tasks"])
    )
    # a parent run per dataset (VG150, PSG, AG): their tables never mix; a text-graph model is a run of VG150's
    assert len(children) - len(psg) - len(text) - len(video) == n and len(psg) == m and len(text) == t > 0
    assert len(video) == v > 0 and len(runs) == n + m + t + v + 3
    assert {r.info.run_name.split("/")[0] for r in video} == {params["video_dataset"]["name"]}
    assert {r.info.run_name.split("/")[0] for r in psg} == {params["psg_dataset"]["name"]}
    # that a second repro runs nothing (so logs no run) is the README's check: tests/test_readme.py


def test_logged_metrics_match_the_json_files(project):
    p, uri, _, _ = project
    for r in mlflow_runs(uri):
        if "mlflow.parentRunId" not in r.data.tags:
            continue
        entry, task = r.data.tags["sgg_eval.model"], r.data.tags["sgg_eval.task"]
        if r.data.tags.get("sgg_eval.product") == "video":  # AG: one run per entry, protocol and task
            doc = json.loads((p / f"data/ag_sim/results/{entry}.json").read_text())
            result = doc["protocols"][r.data.tags["sgg_eval.protocol"]][task]["results"]
            expected = {mlflow_key(f"{task}/{c}", k): v for c, res in result.items()
                        for part in (res["metrics"], res["beyond_protocol"]["metrics"])
                        for k, v in part.items() if v is not None}  # fmt: skip
            assert expected == r.data.metrics and any(k.startswith(f"{task}/semi/") for k in expected)
            continue
        if task == "panoptic":  # PSG: one run per entry and protocol
            psg = json.loads((p / f"data/psg_sim/results/metrics/{entry}.json").read_text())
            result = psg["protocols"][r.data.tags["sgg_eval.protocol"]]
            expected = every_metric(result)  # the protocol's numbers and those beyond it, a tag naming the latter
            assert {mlflow_key(task, k): v for k, v in expected.items() if v is not None} == r.data.metrics
            assert r.data.tags["sgg_eval.beyond_protocol"] == ",".join(sorted(result["beyond_protocol"]["metrics"]))
            continue
        if task == "text":  # a text-graph model: its protocol's numbers
            doc = json.loads((p / f"data/vg150_sim/results/text/{entry}.json").read_text())
            assert {mlflow_key(task, k): v for k, v in doc["metrics"].items() if v is not None} == r.data.metrics
            assert r.data.params["protocol"] == doc["protocol"] and r.data.metrics
            continue
        doc = json.loads((p / f"data/vg150_sim/results/metrics/{entry}/{task}.json").read_text())
        assert doc["metrics"]["F1@50"] is not None and (doc["metrics"]["det_mAP@50"] is not None) == (task == "sgdet")
        for name, value in doc["metrics"].items():
            if value is not None:
                assert r.data.metrics[f"{task}/{name.replace('@', '_at_')}"] == pytest.approx(value, abs=0)
        assert r.data.params["task"] == task and r.data.params["model"] == entry
        family = {"Baseline": "baseline", "PKO": "pko", "PKO-only": "prior_only"}.get(
            r.data.params["method"], "debiasing"
        )
        assert r.data.tags["sgg_eval.method_family"] == family and "mlflow.source.git.commit" in r.data.tags
    from mlflow.tracking import MlflowClient

    parent = next(r for r in mlflow_runs(uri) if r.data.tags.get("sgg_eval.kind") == "pipeline")
    client = MlflowClient(uri)
    logged = {a.path for a in client.list_artifacts(parent.info.run_id)}
    folders = [os.path.dirname(lock) for lock in LOCK_FILES if os.path.dirname(lock)]
    assert {"dvc.lock", "params.yaml", *folders} <= logged and len(folders) == len(LOCK_FILES) - 1
    # every lock: the other pipeline files' hashes too, each in a folder of its own (same file name)
    for folder in folders:
        assert {a.path for a in client.list_artifacts(parent.info.run_id, folder)} == {f"{folder}/dvc.lock"}


def test_sweep_composed_from_real_configs_logs_nested_runs(project, tmp_path):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from sgg_eval.pipeline.sweep import SweepReport, collect, run_job

    p, _, overrides, _ = project
    uri = f"sqlite:///{tmp_path / 'sweep.db'}"
    sweep_dir = tmp_path / "sweep"
    with initialize_config_dir(str(p / "conf"), version_base="1.3"):
        base = compose(config_name="sweep", overrides=[*overrides, f"tracking.uri={uri}"])
        jobs = [
            compose(
                config_name="sweep",
                overrides=[*overrides, f"tracking.uri={uri}", f"metrics.tau={t}", "metrics.imr_k=20"],
            )
            for t in (0.0, 0.5)
        ]
    cwd = os.getcwd()
    os.chdir(p)  # results paths in the config are relative to the project
    try:
        report = SweepReport()
        report._start(base, str(sweep_dir), "sweep test")
        for i, cfg in enumerate(jobs):
            job_dir = sweep_dir / str(i)
            job_dir.mkdir(parents=True)
            run_job(OmegaConf.to_container(cfg, resolve=True), str(job_dir), str(sweep_dir))
        report._end(base, str(sweep_dir))
    finally:
        os.chdir(cwd)
    assert (sweep_dir / "tau_sweep_wIMR_at_20.md").exists() and (sweep_dir / "tau_sweep_wIMR_at_20.png").exists()
    runs = mlflow_runs(uri)
    parents = [r for r in runs if r.data.tags.get("sgg_eval.kind") == "sweep"]
    jobs_logged = [r for r in runs if r.data.tags.get("sgg_eval.kind") == "sweep_job"]
    assert len(parents) == 1 and len(jobs_logged) == 2
    assert all(r.data.tags["mlflow.parentRunId"] == parents[0].info.run_id for r in jobs_logged)
    rows = collect(str(sweep_dir))
    for r in jobs_logged:
        tau = float(r.data.params["tau"])
        for row in rows:
            if row["tau"] != tau:
                continue
            logged = r.data.metrics[f"{row['task']}/{row['entry']}/wIMR_at_20"]
            assert logged == row["wIMR@20"]
            if row["task"].startswith("panoptic-"):  # a PSG entry under one protocol
                psg = json.loads((p / f"data/psg_sim/results/metrics/{row['entry']}.json").read_text())
                metrics = every_metric(psg["protocols"][row["task"].removeprefix("panoptic-")])
            else:
                doc = json.loads((p / f"data/vg150_sim/results/metrics/{row['entry']}/{row['task']}.json").read_text())
                metrics = doc["metrics"]
            expected = metrics["IMR@20"] if tau == 0 else metrics["wIMR@20"]  # evaluated at tau 0.5
            assert logged == expected


@pytest.mark.parametrize("key, value", [("metrics.tau", 2), ("dataset.sim.scale", "huge"), ("metrics.imr_k", 0)])
def test_invalid_params_stop_repro_before_any_output_is_touched(project, key, value):
    """What `dvc exp run -S key=value` does: params.yaml holds the bad value; check_params must stop the
    pipeline before DVC deletes the outputs of the stages that read it."""
    p, _, overrides, _ = project
    params_file = p / "params.yaml"
    good = params_file.read_text()
    # check_params's own outputs (the checked marker and the section files) may go; nothing downstream may
    outputs = sorted(
        f
        for f in (p / "data").rglob("*")
        if f.is_file() and f.name != "params_checked.json" and f.relative_to(p / "data").parts[0] != "params"
    )
    before = {f: f.read_bytes() for f in outputs}
    params = yaml.safe_load(good)
    section, name = key.rsplit(".", 1)
    node = params
    for part in section.split("."):
        node = node[part]
    node[name] = value
    params_file.write_text(yaml.safe_dump(params, sort_keys=False))
    try:
        env = {**os.environ, "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])}
        proc = subprocess.run([sys.executable, "-m", "dvc", "repro"], cwd=p, capture_output=True, text=True, env=env)
        assert proc.returncode != 0
        out = proc.stdout + proc.stderr
        assert f"field '{key}'" in out and "Traceback" not in out
        assert ran_stages(out) == ["check_params"]
        assert {f: f.read_bytes() for f in outputs} == before
    finally:
        params_file.write_text(good)
        run([sys.executable, "-m", "dvc", "repro", "check_params"], p)


def test_sweep_multirun_with_the_basic_launcher(project, tmp_path):
    p, _, overrides, _ = project
    uri = f"sqlite:///{tmp_path / 'multirun.db'}"
    out = run(
        [
            sys.executable,
            "stages/sweep.py",
            "-m",
            *overrides,
            f"tracking.uri={uri}",
            "metrics.tau=0,1",
            "metrics.imr_k=20",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
        ],
        p,
    )
    assert "sweep: " in out
    runs = mlflow_runs(uri)
    parent = [r for r in runs if r.data.tags.get("sgg_eval.kind") == "sweep"]
    jobs = [r for r in runs if r.data.tags.get("sgg_eval.kind") == "sweep_job"]
    assert len(parent) == 1 and len(jobs) == 2
    assert {r.data.tags["mlflow.parentRunId"] for r in jobs} == {parent[0].info.run_id}
    assert (tmp_path / "sweep/tau_sweep_wIMR_at_20.csv").exists()
    assert "SIMULATED" in (tmp_path / "sweep/tau_sweep_wIMR_at_20.md").read_text()


def test_sweep_with_the_submitit_local_launcher(project, tmp_path):
    p, _, overrides, _ = project
    uri = f"sqlite:///{tmp_path / 'submitit.db'}"
    out = run(
        [
            sys.executable,
            "stages/sweep.py",
            "-m",
            "hydra/launcher=submitit_local",
            *overrides,
            f"tracking.uri={uri}",
            "metrics.tau=0,1",
            "metrics.imr_k=20",
            "hydra.launcher.timeout_min=10",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
        ],
        p,
    )
    assert "submitit" in out.lower() or (tmp_path / "sweep/.submitit").exists(), out
    jobs = [r for r in mlflow_runs(uri) if r.data.tags.get("sgg_eval.kind") == "sweep_job"]
    assert sorted(float(r.data.params["tau"]) for r in jobs) == [0.0, 1.0]
    assert (tmp_path / "sweep/tau_sweep_wIMR_at_20.csv").exists()


def test_editing_a_library_module_marks_the_stages_that_run_it(project):
    """Touching the ranking code makes every stage that runs it stale (code deps are the package folder,
    so every other stage too: a rerun, never a stale number)."""
    p, _, _, _ = project
    module = p / "src/sgg_eval/metrics/ranking/families.py"
    original = module.read_text()
    module.write_text(original + "\n# edited\n")
    try:
        status = run([sys.executable, "-m", "dvc", "status"], p)
    finally:
        module.write_text(original)
    stale = {stage_name(s).split("@")[0] for s in re.findall(r"^(\S+):\s*$", status, flags=re.M)}
    assert {"evaluate", "apply_pko", "blind_replace", "reduce"} <= stale, status


def test_tracking_disabled_still_completes_the_pipeline(reproduced_base, tmp_path):
    """Only the tracking section changes: check_params and track rerun, and track writes the output DVC expects.
    In a copy of its own: putting the module's project back would cost a second run of both stages."""
    p = copy_of(reproduced_base, tmp_path / "project")
    params_file = p / "params.yaml"
    params = yaml.safe_load(params_file.read_text())
    params["tracking"]["enabled"] = False
    params_file.write_text(yaml.safe_dump(params, sort_keys=False))
    out = run([sys.executable, "-m", "dvc", "repro"], p)
    assert set(ran_stages(out)) == {"check_params", "track"}, out
    assert "tracking disabled" in out
    doc = json.loads((p / "data/vg150_sim/results/mlflow_runs.json").read_text())
    assert doc == {"enabled": False, "logged": False, "runs": []}


def test_dvc_exp_show_lists_knobs_a_summary_and_code_as_folders(project):
    """`dvc exp show` lists the knobs and a summary: DVC metrics are one summary file (4 metrics per task), not
    every per-predicate value (19,346 columns once); params.yaml holds knobs, not the ~130 model and simulator
    settings (conf/ catalogue); code deps are two folders, not one column per module (251 columns before).
    DVC shows every dependency path as a column: the one-per-stage input fingerprints (what makes a new model
    file rerun only its stages) add ~60, and `--only-changed` drops them where they do not differ."""
    p, _, _, _ = project
    # experiments live in Git: make the copy a repository (data and stores stay out of it)
    (p / ".gitignore").write_text("/data/\n/reports/\n*.db\n")
    run([sys.executable, "-m", "dvc", "config", "core.no_scm", "false"], p)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "project"]):
        run(git + args, p)
    table = run([sys.executable, "-m", "dvc", "exp", "show", "--no-pager", "--md"], p).splitlines()
    header = [h.strip() for h in table[0].strip().strip("|").split("|")]
    per_stage = [h for h in header if h.startswith(("data/inputs/", "data/model_files/", "data/psg_inputs/"))]
    # the panoptic axis: psg_dataset (5), paths.psg_data, evaluation.psg_* (2) and its stages' 8 folders (the 8th
    # results/ranked, which psg_reduce reads since issue 65: τ no longer re-matches PSG), and reports/psg/figures,
    # the figure track logs and declares since issue 65
    panoptic = [h for h in header if "psg" in h and h not in per_stage]
    # 70 on the tiny default (61, metrics.openvocab.setting and .split since issue 47, evaluation.text_entries, the
    # text results folder the tables read and the text models' links since issue 48, metrics.longtail, site.images,
    # site.image_dir and the per-image graphs folder the site reads since 49; reports/figures, the box figures
    # track logs, since it declares them in issue 65)
    # the S2G axis (issue 50): its 7 knobs and the results folder the tables and track stages read
    s2g = [h for h in header if "s2g" in h and h not in per_stage]
    # the catalogue: one file per product since issue 65 (a new PSG model reruns no VG150 stage), one before
    catalogue = [h for h in header if h.startswith("data/params/catalogue")]
    assert sorted(catalogue) == [
        f"data/params/catalogue_{product}.json" for product in ("boxes", "panoptic", "text", "video")
    ], catalogue
    # the video axis (issue 68): video_dataset, paths.video_data, evaluation.video_*, data/ag_sim/*, its links
    video = [h for h in header if ("video" in h or "ag_sim" in h) and h not in per_stage and h not in catalogue]
    rest = len(header) - len(per_stage) - len(panoptic) - len(s2g) - len(catalogue) - len(video)
    assert rest <= 70, (len(header), header)
    assert len(panoptic) <= 17, panoptic
    assert len(video) <= 16, video
    assert len(s2g) <= 8, s2g
    # per-predicate values (once 19,346 columns like `per_predicate.mR@20.on`) are not DVC metrics
    assert "predcls.R@50" in header and not any(re.search(r"(^|[.:])per_predicate\.", h) for h in header), header
    assert "metrics.tau" in header and "pko.lam" in header and "src/sgg_eval" in header, header
    assert not [h for h in header if h.startswith(("models.", "simulation.", "src/sgg_eval/"))], header
    metrics = json.loads(run([sys.executable, "-m", "dvc", "metrics", "show", "--json"], p))
    (only,) = [m["data"] for m in metrics.values()]  # the workspace
    assert list(only) == ["data/vg150_sim/results/summary.json"], list(only)
    summary = only["data/vg150_sim/results/summary.json"]["data"]
    assert sum(len(v) for v in summary.values() if isinstance(v, dict)) == 12, summary


def test_the_plots_page_compares_models_predicate_by_predicate(project):
    """`dvc plots show`: one chart per compared metric (not one per model file), a row per task, predicate and
    model in training-frequency order, legends naming the models, then the figures."""
    p = project[0]
    plots = json.loads(run([sys.executable, "-m", "dvc", "plots", "show", "--json"], p))["data"]
    charts = [name for name in plots if not name.endswith(".png")]
    assert len(charts) == 2 and all("of each predicate" in name for name in charts), list(plots)
    assert {f"reports/figures/{f}.png" for f in FIGURES} <= set(plots), list(plots)
    params = yaml.safe_load((p / "params.yaml").read_text())
    stats = read_stats(p / "data/vg150_sim/stats/stats.h5")
    frequent_first = sorted(
        stats.vocab.predicate_classes,
        key=lambda n: -int(stats.predicate_counts[stats.vocab.predicate_classes.index(n) + 1]),
    )
    for name, field in zip(charts, ("R@50", "IMR@20")):
        (chart,) = plots[name]
        rows = chart["content"]["data"]["values"]
        models = list(dict.fromkeys(r["model"] for r in rows))
        assert 1 <= len(models) <= 3 and not any("/" in m or m == "workspace" for m in models), models
        assert len(rows) == len(params["evaluation"]["tasks"]) * len(frequent_first) * len(models)
        assert list(dict.fromkeys(r["predicate"] for r in rows)) == frequent_first
        assert {r["field"] for r in rows} == {field}
        doc = json.loads((p / "data/vg150_sim/results/metrics/sim_motifs_baseline/predcls.json").read_text())
        row = next(r for r in rows if r["task"] == "PredCls" and r["model"] == "Motifs Baseline")
        metric = "mR@50" if field == "R@50" else field
        assert float(row[field]) == doc["per_predicate"][metric][row["predicate"]]


def test_the_model_pages_in_a_real_browser(project):
    """The tiny pipeline's site: a model page's charts, compare view and image browser work in headless Chromium
    with a clean console (tests/site_checks.py), from its own folder only; the browser's graphs are those of
    `evaluate --per-image` for the configured images."""
    from browser import Browser, browser_or_skip
    from site_checks import check_model_page, count, ready

    p = project[0]
    params = yaml.safe_load((p / "params.yaml").read_text())
    data = (p / "reports/site/data/vg150_sim-predcls.js").read_text()
    board = json.loads(data.removeprefix("window.SGG_BOARD=").rstrip().removesuffix(";"))
    assert 0 < len(board["images"]) <= params["site"]["images"]
    records = (p / "data/vg150_sim/results/per_image/sim_motifs_baseline/predcls.jsonl").read_text().splitlines()
    assert [json.loads(line)["image"] for line in records] == [img["image"] for img in board["images"]]
    # the panoptic confusion matrix as CSV (psg_tables): a row per GT predicate, its matched rows the JSON's
    csv_rows = (p / "reports/psg/tables/confusion/sim_psg_imp.sgbench.csv").read_text().splitlines()[1:]
    counts = json.loads((p / "data/psg_sim/results/metrics/sim_psg_imp.json").read_text())["protocols"]["sgbench"]
    matched = sorted(sum(row) for row in counts["confusion"]["counts"])
    assert sorted(int(line.split(",")[1]) for line in csv_rows) == matched and matched[-1] > 0
    browser_or_skip()
    with Browser() as browser:
        page = browser.open((p / "reports/site/entries/vg150_sim-predcls--sim_motifs_reweight.html").as_uri())
        check_model_page(page, "sim_motifs_baseline")
        # a panoptic page: its grid, per-predicate chart and confusion matrix (the protocol's matching)
        page = browser.open((p / "reports/site/entries/psg_sim-panoptic-sgbench--sim_psg_imp.html").as_uri())
        ready(page)
        c = len(page.eval("window.SGG_BOARD.predicates"))
        assert count(page, "#confusion-chart rect.cell") == c * c and count(page, "#pp-chart rect.pbar") > 0
        assert page.errors == []


def test_s2g_stage_switched_on_writes_its_table_and_runs(project):
    """Issue 50: one switch (s2g.run) turns on S2G; it reruns check_params, s2g and what reads S2G (tables, track),
    and nothing upstream of them. The table holds the simulated model and both bounds; MLflow a run per model."""
    pytest.importorskip("torch", reason="the S2G extra; make test installs it")
    p, uri, overrides, _ = project
    # one epoch on 100 images: the stage, its table and runs are under test here, not what training learns
    # (tests/test_s2g_world.py)
    params_with(p, *overrides, "s2g.run=true", "s2g.epochs=1", "s2g.train_images=100")
    try:
        out = run([sys.executable, "-m", "dvc", "repro"], p)
        ran = set(ran_stages(out))
        assert {"check_params", "s2g", "tables", "track"} <= ran <= {"check_params", "s2g", "tables", "track", "site"}
        table = re.sub(r" +", " ", (p / "reports/tables/s2g_table.md").read_text())
        assert "S2G Recall@K per model on vg150_sim (SIMULATED captions and models)" in table
        for row in ("| Motifs (SIMULATED) | Baseline |", "| GT graphs | perfect SGDet |", "| random graphs | chance |"):
            assert row in table, table
        assert "trained 1 epoch on " in table and "base learning rate 0.001" in table
        names = {r.info.run_name for r in mlflow_runs(uri)}
        assert {f"vg150_sim/{e}/s2g" for e in ("sim_motifs_baseline", "gt_graphs", "random_graphs")} <= names
    finally:
        # up to the tables, which drop S2G's again; the site and MLflow are the next test's full run to redo
        params_with(p, *overrides)
        run([sys.executable, "-m", "dvc", "repro", "tables"], p)
    assert not (p / "reports/tables/s2g_table.md").exists()  # off again: no stale table


def test_one_task_only(project):
    p, _, overrides, _ = project
    params_with(p, *overrides, "evaluation.tasks=[predcls]", "pko.blind_task=predcls")
    try:
        out = run([sys.executable, "-m", "dvc", "repro"], p)
        assert "evaluate@sim_motifs_baseline" in ran_stages(out) and "evaluate sim_motifs_baseline predcls:" in out
        assert " sgcls:" not in out and " sgdet:" not in out  # the evaluate stages ran the one task
        summary = json.loads((p / "data/vg150_sim/results/summary.json").read_text())
        assert set(summary) == {"predcls"}
        assert "| Motifs | Baseline |" in re.sub(r" +", " ", (p / "reports/tables/table2_predcls.md").read_text())
    finally:
        params_with(p, *overrides)
