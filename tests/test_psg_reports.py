"""The panoptic half of the configuration (its schema, one line per mistake) and of the reports: the SGBench
paper's tables with the protocol and τ in every caption, protocols side by side, PRk a rank (not ×100, lower
is best), and the published values beside ours."""

from __future__ import annotations

import numpy as np
import pytest
from test_config import _resolved

from sgg_eval.core.errors import InputError
from sgg_eval.metrics.names import metric_name
from sgg_eval.pipeline.params_check import check_params
from sgg_eval.report.agreement import against_order, agreement
from sgg_eval.report.psg_tables import (
    TABLE1,
    TABLE3,
    our_name,
    psg_tables,
    published_psg,
    published_vs_ours,
)


def test_the_default_configuration_names_the_eight_simulated_psg_models():
    params = _resolved()
    check_params(params)
    entries = params["evaluation"]["psg_entries"]
    assert len(entries) == 8 and all(params["models"][e]["benchmark"] == "psg" for e in entries)
    assert params["paths"]["psg_psg"] == "data/psg_sim/psg" and params["psg_dataset"]["kind"] == "simulated"
    assert _resolved(["psg_dataset=psg"])["psg_dataset"]["raw"] == "data/raw/psg"


@pytest.mark.parametrize(
    "overrides, field",
    [
        (["psg_dataset.sim.scale=huge"], "psg_dataset.sim.scale"),
        (["psg_dataset.kind=coco"], "psg_dataset.kind"),
        (["evaluation.psg_protocols=[sgbench,sgbench]"], "evaluation.psg_protocols"),
        (["evaluation.psg_protocols=[reference]"], "evaluation.psg_protocols[0]"),
        (["evaluation.psg_entries=[sim_motifs_baseline]"], "evaluation.psg_entries[0]"),
        (["evaluation.psg_entries=[nope]"], "evaluation.psg_entries[0]"),
        (["psg_dataset=psg"], "evaluation.psg_entries"),  # simulated models on the real dataset
        (["+psg_dataset.stray=1"], "psg_dataset"),
    ],
)
def test_a_bad_panoptic_setting_is_refused_naming_its_key(overrides, field):
    with pytest.raises(InputError) as err:
        check_params(_resolved(overrides))
    assert err.value.field == field


def test_a_vg_entry_naming_a_psg_model_is_refused():
    with pytest.raises(InputError) as err:
        check_params(_resolved(["evaluation.entries=[sim_psg_imp]"]))
    assert err.value.field == "evaluation.entries[0]"


def test_the_papers_column_names_map_to_ours():
    assert our_name("R@x10") == metric_name("R", 10, relative=True)
    assert our_name("mNgR@50") == metric_name("mR", 50, ng=True)
    assert our_name("mR@inf") == metric_name("mR", "inf")
    assert (our_name("PRank"), our_name("InstR")) == ("PRk", "InstR")
    published = published_psg()
    assert [r["method"] for r in published][-1] == "HiLo" and len(published) == 8
    assert {our_name(c) for c in published[0] if c != "method"} >= set(TABLE1) | set(TABLE3)


def _doc(method: str, values: dict, protocols=("sgbench",)) -> dict:
    return {
        "entry": {"method": method, "simulated": True},
        "protocols": {p: {"metrics": {k: v * (1 + i) for k, v in values.items()}} for i, p in enumerate(protocols)},
    }


def test_tables_name_protocol_and_tau_and_put_protocols_side_by_side():
    results = {
        "a": _doc("IMP", {metric_name("R", 50): 0.2, "PRk": 1.5}, ("sgbench", "openpsg")),
        "b": _doc("HiLo", {metric_name("R", 50): 0.4, "PRk": 0.5}, ("sgbench", "openpsg")),
    }
    tables = psg_tables(results, ["sgbench", "openpsg"], "psg_sim", True, 0.5)
    for table in tables:
        assert "protocol sgbench / openpsg" in table.caption and "tau = 0.5" in table.caption
        assert "SIMULATED" in table.caption
    t3 = {t.name: t for t in tables}["psg_table3_pairs_predicates"]
    assert "PRk (sgbench)" in t3.columns and "PRk (openpsg)" in t3.columns
    md = t3.markdown()
    # PRk is a rank: shown as is, and the lowest is the best
    assert "**0.50**" in md and "1.50" in md and "**1.00**" in md and "150.00" not in md
    t1 = {t.name: t for t in tables}["psg_table1_recall"]
    assert "**40.00**" in t1.markdown() and "**80.00**" in t1.markdown()  # R@50, each protocol its own best


def test_published_vs_ours_in_percent_with_prk_a_rank():
    doc = _doc("IMP", {metric_name("R", 50): 0.181, "PRk": 3.3, "InstR": 0.5})
    table = published_vs_ours({"x": doc}, "sgbench", "psg_sim", True)
    rows = {r.labels[1]: r.values for r in table.rows}
    assert rows[metric_name("R", 50)]["published"] == 18.1 and rows[metric_name("R", 50)]["ours"] == pytest.approx(18.1)
    assert rows["PRk"]["ours"] == 3.3 and rows["PRk"]["difference"] == pytest.approx(0)
    assert rows["InstR"]["relative (%)"] == pytest.approx(100 * (50 - 52.1) / 52.1)
    assert rows[metric_name("mR", 50)]["ours"] is None  # not evaluated: undefined, never 0
    assert "SIMULATED vs published" in table.caption and "protocol sgbench" in table.caption


def test_the_caption_counts_the_cells_within_20_percent_and_names_the_worst_metric():
    """IMP (R@50 18.1, PRk 3.3, InstR 52.1 published): R@50 at +19.9% and PRk at +20% agree, InstR at -25%
    does not; the worst metric mean is InstR's 25%. Undefined cells (ours None) are not counted."""
    doc = _doc("IMP", {metric_name("R", 50): 0.181 * 1.199, "PRk": 3.3 * 1.2, "InstR": 52.1 * 0.0075})
    caption = published_vs_ours({"x": doc}, "sgbench", "psg_sim", True).caption
    assert "Agreement: 2 of 3 cells within ±20% of the published value" in caption
    assert "largest mean |relative difference| of a metric is 25.0% (InstR)" in caption


def test_agreement_equals_a_loop_over_the_cells():
    rng = np.random.default_rng(0)
    cells = [(f"m{rng.integers(4)}", float(p), float(p * rng.uniform(0.6, 1.4))) for p in rng.uniform(1, 50, 60)]
    cells.append(("m0", 10.0, 12.0))  # exactly at the band: within
    within, means = agreement(cells)
    assert within == sum(1 for _, p, o in cells if abs(o - p) <= 0.2 * p + 1e-12)
    for metric in {m for m, _, _ in cells}:
        rel = [abs(o - p) / p for m, p, o in cells if m == metric]
        assert means[metric] == pytest.approx(sum(rel) / len(rel), rel=1e-15)


def test_two_rows_are_against_the_order_only_where_ours_reverses_the_papers():
    assert against_order((30.0, 25.0), (20.0, 26.0)) and against_order((20.0, 26.0), (30.0, 25.0))
    assert not against_order((30.0, 25.0), (20.0, 24.0))  # the paper's order kept
    assert not against_order((30.0, 25.0), (30.0, 26.0))  # the paper ties them: no order to keep
    assert not against_order((30.0, 25.0), (20.0, 25.0))  # ours ties them: not the other way round


def test_columns_beyond_a_protocol_are_read_from_their_section_and_named_in_the_caption():
    """A document keeps sgg-eval's numbers beyond its protocol apart (beyond_protocol); the tables show them
    and their caption says which columns are not the protocol's source's."""
    doc = {
        "entry": {"method": "IMP", "simulated": True},
        "protocols": {
            "openpsg": {
                "metrics": {metric_name("R", 50): 0.2},
                "beyond_protocol": {"metrics": {metric_name("IMR", 20): 0.1, "PRk": 1.5}},
            }
        },
    }
    tables = {t.name: t for t in psg_tables({"a": doc}, ["openpsg"], "psg_sim", True, 0.5)}
    ours = tables["psg_ours"]
    assert ours.rows[0].values[metric_name("IMR", 20)] == 0.1
    assert "are beyond protocol openpsg" in ours.caption and "OpenPSG's evaluator" in ours.caption
    t1 = tables["psg_table1_recall"]
    assert (
        "R@1x, R@10x are beyond protocol openpsg" in t1.caption and "R@50," not in t1.caption.split("beyond")[0][-40:]
    )
    t3 = tables["psg_table3_pairs_predicates"]
    assert t3.rows[0].values["PRk"] == 1.5 and "PRk" in t3.caption.split("are beyond")[0].split(".")[-1]
    paper = {t.name: t for t in psg_tables({"a": doc}, ["sgbench-paper"], "psg_sim", True, 0.5)}
    assert "beyond" not in paper["psg_table1_recall"].caption  # the paper defines R@k×
