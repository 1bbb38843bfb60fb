"""``sgg-eval audit --psg``: every protocol x instance mode from one pass per mode, equal to the separate
evaluations, and published PSG numbers traced to the protocol that produced them."""

from __future__ import annotations

import pytest
from psg_fixture import write_psg_fixture
from test_bad_inputs import refused

from sgg_eval.cli import main
from sgg_eval.metrics.document import every_metric
from sgg_eval.panoptic.audit import run_psg_audit
from sgg_eval.panoptic.evaluate import run_psg_evaluation


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_psg_fixture(tmp_path_factory.mktemp("audit"), seed=4, test=24, other=3)


def test_every_variant_equals_its_own_evaluation(files):
    doc = run_psg_audit(str(files["zip"]), str(files["psg"]), str(files["root"]), jobs=2)
    assert len(doc["variants"]) == 3 * 2 * 4 * 3  # protocols x modes x metrics x K
    for mode in ("masks", "boxes"):
        for protocol in ("sgbench", "sgbench-paper", "openpsg"):
            want = every_metric(
                run_psg_evaluation(
                    str(files["zip"]), str(files["psg"]), str(files["root"]), protocol=protocol, boxes=mode == "boxes"
                )
            )
            got = {
                (v["metric"], v["constraint"], v["k"]): v["value"]
                for v in doc["variants"]
                if v["protocol"] == protocol and v["mode"] == mode
            }
            for k in (20, 50, 100):
                assert got[("R", "GC", k)] == want[f"R@{k}"] and got[("mR", "NG", k)] == want[f"ng-mR@{k}"]
    assert sum(v["reference"] for v in doc["variants"]) == 6  # R and mR at three K: openpsg on masks
    # ng variants are sgg-eval's under openpsg and sgbench (neither reports them), the paper's own under its protocol
    beyond = {(v["protocol"], v["constraint"]) for v in doc["variants"] if not v["by_protocol"]}
    assert beyond == {("openpsg", "NG"), ("sgbench", "NG")}


def test_a_published_number_is_traced_to_its_protocol(files, tmp_path, capsys):
    by_protocol = {
        p: run_psg_evaluation(str(files["zip"]), str(files["psg"]), str(files["root"]), protocol=p)
        for p in ("openpsg", "sgbench")
    }
    ours = f"R@20={100 * by_protocol['openpsg']['metrics']['R@20']:.2f}"
    theirs = f"mR@50={100 * by_protocol['sgbench']['metrics']['mR@50']:.2f}"
    md = tmp_path / "audit.md"
    assert (
        main(
            [
                "audit",
                str(files["zip"]),
                "--psg",
                str(files["psg"]),
                "--psg-root",
                str(files["root"]),
                "--published",
                ours,
                "--published",
                theirs,
                "--md",
                str(md),
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    lines = [ln for ln in captured.out.splitlines() if ln.startswith("- `")]
    assert lines[0].endswith("the reference variant") or "the reference variant (also" in lines[0]
    assert "WARNING" in lines[1] and "sgbench, masks" in lines[1]
    assert "other than the reference" in captured.err and md.read_text() == captured.out


def test_psg_audit_refuses_options_of_the_box_audit(files, tmp_path, capsys):
    refused(
        capsys,
        ["audit", str(files["zip"]), "--psg", str(files["psg"]), "--iou-threshold", "0.7"],
        tmp_path,
        must_name=("--psg",),
    )
    refused(
        capsys,
        ["audit", str(files["zip"]), "--psg", str(files["psg"]), "--subset", "10"],
        tmp_path,
        must_name=("--subset",),
    )
    refused(
        capsys,
        ["audit", str(files["zip"]), "--psg", str(files["psg"]), "--published", "R@30=1"],
        tmp_path,
        must_name=("R@30",),
    )
