"""The README, run as written (issue 27). Every command in its `bash` blocks and every `sgg-eval ...` it quotes
in the text is run here exactly as printed, in a fresh copy of the project (its tracked files, a Git repo, the
simulated scale set to `tiny` in `conf/`), on stand-ins for the user's own files (tests/readme_standins.py),
and its result is checked; a command not run is in EXCUSED with the reason. A command added to the README
fails test_every_readme_command_is_run_or_excused until it is run or excused here."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
import readme_standins
from test_pipeline import ROOT, mlflow_runs

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out

README = (ROOT / "README.md").read_text()
VENV = Path(sys.prefix)
ACTIVE = {"PATH": f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "VIRTUAL_ENV": str(VENV)}
EXCUSED = {
    "make test": "this test runs inside it",
    "make test-full": "the slow cases of `make test` at full size (hours)",
    "make test-fast": "the unit tests of `make test`, which runs them all",
    "make bench": "minutes of timing; tests/test_bench.py runs the bench",
    "sgg-eval evaluate FILE --task T -o OUT": "the command the bench times, with placeholders; tests/test_bench.py",
    "make fuzz N=10000": "the fuzzer's long form; `make test` runs 300 of its cases (tests/test_fuzz.py)",
    "dvc remote add -d shared /mnt/team/sgg-eval-cache": "a team's mount; tests/test_dvc_team.py pushes to a local "
    "remote and pulls into a fresh clone",
    "dvc push": "as above",
    ".venv/bin/python stages/sweep.py -m hydra/launcher=submitit_local metrics.tau=0,0.5,1": (
        "submitit's local jobs outlive the test's time budget; the joblib launcher runs the same sweep in parallel"
    ),
    "sgg-eval params [overrides]": "syntax, not a command (the overrides are shown in the commands run here)",
    "sgg-eval COMMAND --help": "syntax; every command's --help: tests/test_cli.py",
    "sgg-eval evaluate": "a command's name in the text",
    "sgg-eval evaluate --psg": "a command's name in the text",
    "sgg-eval s2g": "a command's name in the text",
    "make install-s2g": "`make s2g-example` (run here) and `make test` install the extra through the same target",
    "sgg-eval s2g --train T --val V --test TEST --captions vg_capgraphs_anno.json -o s2g.json": (
        "placeholders for real files; `make s2g-example` runs the same command on generated ones"
    ),
    "sgg-eval params s2g.run=true": "the switch; tests/test_pipeline.py turns it on, checks stage, table and runs",
}


def readme_commands(text: str = README) -> list[str]:
    """Each command of the README's bash blocks (comments dropped, continued lines joined) and each inline
    `sgg-eval ...` and `make ...`, whitespace collapsed, in order, once."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            if line:
                found.append(line)
    found += re.findall(r"`((?:sgg-eval|make) [^`]+)`", text)
    return list(dict.fromkeys(re.sub(r"\s+", " ", c) for c in found))


RAN: set[str] = set()


def shell_env() -> dict:
    """The environment of a user's shell: without the variables `make test` passes to its children (a nested
    make would print "Entering directory" lines a user never sees)."""
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")}


def sh(command: str, cwd: Path, active: bool = False, timeout: float = 1200, env: dict | None = None) -> str:
    """Run a README command verbatim in bash (``active``: as with `. .venv/bin/activate`); its output."""
    assert command in readme_commands(), f"not (or no longer) in the README: {command}"
    RAN.add(command)
    full_env = {**shell_env(), "SGG_EVAL_PYTHON": sys.executable, **(ACTIVE if active else {}), **(env or {})}
    # output into files, not pipes: a daemon a command leaves behind (`dvc queue start`'s) inherits them, and
    # reading a pipe would wait for the daemon to end, not for the command
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.run(["bash", "-c", command], cwd=cwd, stdout=out, stderr=err, env=full_env, timeout=timeout)
        stdout, stderr = (f.seek(0) or f.read().decode("utf-8", "replace") for f in (out, err))
    assert proc.returncode == 0, f"{command}\n{stdout[-3000:]}{stderr[-3000:]}"
    return stdout + stderr


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def fresh_clone(dst: Path, tiny: bool = True) -> Path:
    """The project's tracked (and new, not ignored) files as a fresh clone would have them, with this venv as
    its `.venv`, at the tiny simulated scale (``tiny``); committed. Its pyproject.toml and lock are dated
    before the venv's install stamp, so `make` does not reinstall into the shared venv."""
    files = git(ROOT, "ls-files", "--cached", "--others", "--exclude-standard", "-z").split("\0")
    for rel in filter(None, files):
        if (ROOT / rel).is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dst / rel)  # modes too: stages/python is run as a program
    for rel in ("pyproject.toml", "requirements.lock"):
        os.utime(dst / rel, (0, 0))
    assert sys.prefix != sys.base_prefix, "the README test runs in the project's venv"
    (dst / ".venv").symlink_to(VENV)
    if (ROOT / ".dvc/plots_offline.html").exists():  # else `make` builds it from npm (best effort)
        shutil.copy2(ROOT / ".dvc/plots_offline.html", dst / ".dvc/plots_offline.html")
    if tiny:
        for conf in (dst / "conf/dataset/vg150_sim.yaml", dst / "conf/psg_dataset/psg_sim.yaml"):
            conf.write_text(conf.read_text().replace("scale: default", "scale: tiny"))
    git(dst, "init", "-q")
    git(dst, "add", "-A")
    git(dst, "commit", "-q", "-m", "fresh clone")
    return dst


def stages_run(out: str) -> set[str]:
    return {s.split("@")[0] for s in re.findall(r"Running stage '([\w@.-]+)'", out)}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The quick start's `make repro` in a fresh clone, then the reproduced state committed, as a user would."""
    p = fresh_clone(tmp_path_factory.mktemp("readme"))
    out = sh("make repro", p)
    assert {"load_split", "evaluate", "tables", "figures", "track"} <= stages_run(out), out[-2000:]
    git(p, "add", "-A")
    git(p, "commit", "-q", "-m", "reproduced")
    return p


def test_a_second_repro_runs_nothing(project):
    out = sh(".venv/bin/dvc repro", project)
    assert "Running stage" not in out and "up to date" in out, out


def test_tau_experiment_reruns_only_what_reads_tau_then_back(project):
    out = sh(".venv/bin/dvc exp run -S metrics.tau=0", project)
    # as README: check_params, reduce, psg_reduce and what follows; no ranking and no PSG matching
    reran = {"check_params", "reduce", "tables", "figures", "psg_reduce", "psg_tables", "psg_figures", "site"}
    assert stages_run(out) == reran | {"track"}, out[-2000:]
    summary = json.loads((project / "data/vg150_sim/results/summary.json").read_text())
    assert summary["predcls"]["wIMR@20"] == summary["predcls"]["IMR@20"]  # tau = 0: wIMR is IMR
    shown = sh(".venv/bin/dvc exp show --only-changed", project)
    assert "metrics.tau" in shown and "wIMR@20" in shown, shown
    # what it shows a user in a 120-column terminal without a pager: every changed summary metric, and tau
    narrow = subprocess.run(
        [str(VENV / "bin/dvc"), "exp", "show", "--only-changed", "--no-pager"],
        cwd=project,
        capture_output=True,
        text=True,
        env={**shell_env(), "COLUMNS": "120"},
    ).stdout
    assert max(map(len, narrow.splitlines())) <= 120, narrow
    for column in ("predcls.wIMR@20", "sgcls.wIMR@20", "sgdet.wIMR@20", "metrics.tau"):
        assert column in narrow, narrow
    assert re.search(r"metrics\.tau\s+0\.5\s+0\b", sh(".venv/bin/dvc params diff", project))
    sh("make plots", project)
    assert "per_predicate" in (project / "reports/plots/index.html").read_text()
    sh("git checkout -- params.yaml dvc.lock && .venv/bin/dvc checkout", project)
    assert git(project, "status", "--porcelain", "params.yaml", "dvc.lock") == ""
    summary = json.loads((project / "data/vg150_sim/results/summary.json").read_text())
    assert summary["predcls"]["wIMR@20"] != summary["predcls"]["IMR@20"]  # the outputs are back at tau 0.5


def test_sweeps(project):
    sweeps = project / "reports/sweeps"
    before = set(sweeps.glob("*")) if sweeps.exists() else set()
    sh(".venv/bin/python stages/sweep.py -m metrics.tau=0,0.25,0.5,0.75,1 metrics.imr_k=10,20,50", project)
    sh(".venv/bin/python stages/sweep.py -m hydra/launcher=joblib metrics.tau=0,0.25,0.5,0.75,1", project)
    made = sorted(set(sweeps.glob("*")) - before)
    assert len(made) == 2 and all(any(d.glob("*.png")) and any(d.glob("*.md")) for d in made), made


def test_queued_pair_runs_two_at_a_time_and_both_reach_mlflow(project):
    assert ". .venv/bin/activate" in readme_commands()
    RAN.add(". .venv/bin/activate")  # `active=True`
    for line in (
        "dvc exp run --queue -S metrics.tau=0.25",
        "dvc exp run --queue -S metrics.protocol=strict",
        "dvc queue start -j 2",
    ):
        sh(line, project, active=True)
    deadline = time.time() + 900
    while time.time() < deadline:
        status = subprocess.run(
            [str(VENV / "bin/dvc"), "queue", "status"], cwd=project, capture_output=True, text=True
        ).stdout
        if not re.search(r"\b(Queued|Running)\b", status):
            break
        time.sleep(3)
    # dvc-task's worker may miss the shutdown its monitor sent while it was still running a task, and idle
    # on (seen with DVC 3.67: "shutting down due to empty queue" before its task ended): stop every worker
    subprocess.run(
        [str(VENV / "bin/dvc"), "queue", "stop"],
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=120,
    )
    assert status.count("Success") == 2, status
    shown = sh("dvc exp show --only-changed", project, active=True)
    assert "0.25" in shown and "strict" in shown, shown
    children = [
        r.data.params for r in mlflow_runs(f"sqlite:///{project / 'mlflow.db'}") if "mlflow.parentRunId" in r.data.tags
    ]
    assert any(c["tau"] == "0.25" for c in children) and any(c["protocol"] == "strict" for c in children)


def test_mlflow_ui_serves_the_runs(project):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    RAN.add("make ui")
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
    cmd = (
        "sgg-eval audit data/vg150_sim/predictions/simulated/sim_motifs_baseline/predcls.h5 "
        "--gt data/vg150_sim/splits/test.h5 --task predcls "
        '--published "R@50=64.0" --published "R@50=74.7" --published "mR@100=14.85"'
    )
    out = sh(cmd, project, active=True)
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
    assert "tiny SIMULATED S2G case" in out and "s2g: epoch 4/4" in out, out[-2000:]
    assert "the whole test block (" in out and "gallery of 1,000 not reported" in out
    doc = json.loads((project / "data/examples/s2g_baseline.json").read_text())
    assert doc["training"]["epochs"] == 4 and doc["training"]["solver"]["base_lr"] == 0.001
    assert doc["images"]["test_block"] > 100 and doc["collapsed"] is None


def test_psg_table_of_the_simulated_benchmark(project):
    out = sh("cat reports/psg/tables/psg_table3_pairs_predicates.md", project)
    assert "SIMULATED" in out and "protocol sgbench" in out and "| HiLo" in out and "| IMP" in out


def test_real_vg150_with_your_model(project, tmp_path):
    """Last on this copy: it switches the dataset. The README's `conf/model/motifs.yaml`, its files standing in."""
    yaml_block = re.search(r"```yaml\n(# conf/model/motifs.yaml\n.*?)```", README, re.S).group(1)
    readme_standins.real_vg150(project, yaml_block, tmp_path / "ckpt")
    sh(".venv/bin/sgg-eval params dataset=vg150 experiment=one_model evaluation.model=motifs", project)
    out = sh(".venv/bin/dvc repro", project)
    assert {"load_split", "evaluate", "tables", "track"} <= stages_run(out), out[-2000:]
    for entry in ("motifs", "motifs_pko", "pko_only"):
        for task in ("predcls", "sgcls", "sgdet"):
            doc = json.loads((project / f"data/vg150/results/metrics/{entry}/{task}.json").read_text())
            assert doc["entry"]["simulated"] is False and doc["counts"]["images_evaluated"] > 0


def test_real_psg_with_your_model(project, tmp_path):
    """After the VG150 switch on this copy: it switches psg_dataset (and `sgg-eval params` recomposes conf/, so
    the VG150 side is the simulated default again). The README's `conf/model/my_psg.yaml`, its file standing in."""
    yaml_block = re.search(r"```yaml\n(# conf/model/my_psg.yaml\n.*?)```", README, re.S).group(1)
    readme_standins.real_psg(project, yaml_block, tmp_path / "elsewhere")
    sh(".venv/bin/sgg-eval params psg_dataset=psg 'evaluation.psg_entries=[my_psg]'", project)
    out = sh(".venv/bin/dvc repro", project)
    assert {"psg_data", "psg_stats", "psg_evaluate", "psg_tables", "track"} <= stages_run(out), out[-2000:]
    doc = json.loads((project / "data/psg/results/metrics/my_psg.json").read_text())
    assert doc["entry"]["simulated"] is False and doc["protocols"]["sgbench"]["counts"]["images_evaluated"] > 0
    assert "| MyPSG" in (project / "reports/psg/tables/psg_table1_recall.md").read_text()


def test_oiv6_examples_and_pipeline(project):
    """After the PSG switch on this copy: the OIv6 section's commands verbatim on the generated files, then its
    model and pipeline (the dataset chooses protocol oiv6; the OIv6 table laid out as BGNN prints it)."""
    assert "GENERATED" in sh("make oiv6-example", project)
    out = sh(".venv/bin/sgg-eval split --oiv6-dir data/examples/oiv6 -o data/examples/oiv6_splits", project)
    assert re.search(r"oiv6_splits/test.h5: \d+ images", out)
    out = sh(
        ".venv/bin/sgg-eval evaluate data/examples/oiv6/eval_results_sgdet.pytorch --gt "
        "data/examples/oiv6_splits/test.h5 --task sgdet --protocol oiv6 -o data/examples/oiv6_sgdet.json",
        project,
    )
    doc = json.loads((project / "data/examples/oiv6_sgdet.json").read_text())
    micro, per_image = (f"R@50={100 * doc['metrics'][n]:.2f}" for n in ("R@50", "R_per_image@50"))
    assert f"{micro} " in out and f"R_per_image@50={per_image[5:]}" in out
    out = sh(
        ".venv/bin/sgg-eval audit data/examples/oiv6/eval_results_sgdet.pytorch --gt "
        f'data/examples/oiv6_splits/test.h5 --task sgdet --protocol oiv6 --published "{micro}" '
        f'--published "{per_image}"',
        project,
    )  # the README's numbers are this file's: the command is the README's only if they are
    assert f"- `{micro}`: the reference variant" in out and f"- `{per_image}`: WARNING not the reference" in out
    yaml_block = re.search(r"```yaml\n(# conf/model/my_oiv6.yaml\n.*?)```", README, re.S).group(1)
    (project / "conf/model/my_oiv6.yaml").write_text(yaml_block)
    sh(
        ".venv/bin/sgg-eval params dataset=oiv6 dataset.raw=data/examples/oiv6 experiment=one_model "
        'evaluation.model=my_oiv6 "evaluation.tasks=[predcls,sgdet]"',
        project,
    )
    out = sh(".venv/bin/dvc repro", project)
    assert {"load_split", "train_stats", "apply_pko", "evaluate", "tables", "site", "track"} <= stages_run(out)
    table = (project / "reports/tables/oiv6_table.md").read_text()
    assert "| BGNN" in table and "score_wtd" in table and "R@50 micro" in table
    result = json.loads((project / "data/oiv6/results/metrics/my_oiv6/sgdet.json").read_text())
    assert result["protocol"] == "oiv6" and result["metrics"]["R@50"] == doc["metrics"]["R@50"]
    assert result["entry"]["simulated"] is False and "IMR@20" in result["beyond_protocol"]["metrics"]


def test_openvocab_examples_and_pipeline(tmp_path):
    """The open-vocabulary section: its one command on stand-in VG150 files with a split_GLIPunseen key, the
    generated example with the audit naming what a "zR" is, then the pipeline's open-vocabulary table."""
    from openvocab_fixture import write_predictions, write_vg150

    p = fresh_clone(tmp_path)
    write_predictions(write_vg150(p / "data/raw/vg150"), p / "eval_results.pytorch")  # the user's files
    out = sh(
        ".venv/bin/sgg-eval split --vg150-dir data/raw/vg150 --split-key split_GLIPunseen --no-clip --splits test "
        "-o data/vg150_glipunseen/splits",
        p,
    )
    assert "test.h5: 53 images (split codes from the h5 key split_GLIPunseen)" in out
    out = sh(
        ".venv/bin/sgg-eval evaluate eval_results.pytorch --gt data/vg150_glipunseen/splits/test.h5 --task sgdet "
        "--protocol ovsgtr --setting ovd+r --zeroshot vg150 -o ovsgtr.json",
        p,
    )
    doc = json.loads((p / "ovsgtr.json").read_text())
    assert (
        doc["counts"]["gt_boxes_merged"] > 0 and f"R_novel_rel@50={100 * doc['metrics']['R_novel_rel@50']:.2f}" in out
    )
    assert "GENERATED" in sh("make openvocab-example", p)
    sh(
        ".venv/bin/sgg-eval split --vg150-dir data/examples/openvocab/vg150 --split-key split_GLIPunseen --no-clip "
        "-o data/examples/openvocab_splits --splits test",
        p,
    )
    sh(
        ".venv/bin/sgg-eval evaluate data/examples/openvocab/eval_results_sgdet.pytorch --gt "
        "data/examples/openvocab_splits/test.h5 --task sgdet --protocol ovsgtr --zeroshot vg150 -o "
        "data/examples/openvocab_ovsgtr.json",
        p,
    )
    assert json.loads((p / "data/examples/openvocab_ovsgtr.json").read_text())["metrics"] == doc["metrics"]
    out = sh(
        ".venv/bin/sgg-eval audit data/examples/openvocab/eval_results_sgdet.pytorch --gt "
        "data/examples/openvocab_splits/test.h5 --task sgdet --protocol openvocab --zeroshot vg150 --published "
        '"zR@50=11.36"',
        p,
    )  # the README's number is this file's novel-object recall on clipped GT: the command is the README's only if
    assert "both ends novel @50 GC" in out and "not zero-shot recall" in out
    sh('.venv/bin/sgg-eval params metrics.protocol=ovsgtr "evaluation.tasks=[sgdet]" pko.blind_task=sgdet', p)
    out = sh(".venv/bin/dvc repro", p)
    assert {"evaluate", "tables"} <= stages_run(out), out[-2000:]
    table = (p / "reports/tables/openvocab_table.md").read_text()
    assert "R_novel_obj@50" in table and "R_novel_rel@100" in table and "SIMULATED" in table
    site = (p / "reports/site/index.html").read_text()  # the board shows the protocol's columns, ours apart
    assert "R_novel_rel@100" in site and "beyond protocol ovsgtr" in site


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
    assert "14 protocols" in out and "KaihuaTang/Scene-Graph-Benchmark.pytorch @ " in out
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


def test_every_readme_command_is_run_or_excused(request):
    """Last in this file: the commands run above, plus the excused ones, are every command of the README."""
    module = [i for i in request.session.items if i.module is request.module]
    if len(module) < len([n for n in globals() if n.startswith("test_")]):
        pytest.skip("needs every test of this file in the run")
    assert set(EXCUSED) <= set(readme_commands()), set(EXCUSED) - set(readme_commands())
    missing = [c for c in readme_commands() if c not in RAN and c not in EXCUSED]
    assert not missing, missing
