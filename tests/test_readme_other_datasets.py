"""The README's Open Images V6 and open-vocabulary sections, run as written on generated files: each section's
commands, then its pipeline on its own copy of the reproduced quick start (OIv6 switches the dataset; the
open-vocabulary protocol reruns the SGDet side only)."""

from __future__ import annotations

import json
import re

import pytest
from readme_runner import README, sh, stages_run
from reproduced import copy_of

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out


def test_oiv6_examples_and_pipeline(reproduced_base, tmp_path):
    """The OIv6 section's commands verbatim on the generated files, then its model and pipeline (the dataset
    chooses protocol oiv6; the OIv6 table laid out as BGNN prints it)."""
    project = copy_of(reproduced_base, tmp_path / "project")
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


def test_openvocab_examples_and_pipeline(reproduced_base, tmp_path):
    """The open-vocabulary section: its one command on stand-in VG150 files with a split_GLIPunseen key, the
    generated example with the audit naming what a "zR" is, then the pipeline's open-vocabulary table."""
    from openvocab_fixture import write_predictions, write_vg150

    p = copy_of(reproduced_base, tmp_path / "project")
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
