"""conf/ (Hydra) is the single source: params.yaml must be exactly its composition, and switches work."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from sgg_eval.core.errors import InputError
from sgg_eval.data.gqa import GQA
from sgg_eval.data.gqa200 import GQA200
from sgg_eval.data.vg150 import VG150
from sgg_eval.pipeline.catalogue import resolve
from sgg_eval.pipeline.config import compose_yaml, dataset
from sgg_eval.pipeline.entries import parse_entry
from sgg_eval.pipeline.params_check import _check_dataset, _sections, check_params

ROOT = Path(__file__).resolve().parents[1]


def _compose(overrides=()):
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def _resolved(overrides=(), conf=ROOT / "conf"):
    """params.yaml's knobs for ``overrides`` plus what they name in ``conf`` (what every stage reads)."""
    return resolve(OmegaConf.to_container(_compose(overrides), resolve=True), conf)


def test_params_yaml_has_not_drifted_from_conf():
    cfg = OmegaConf.to_container(_compose(), resolve=True)
    on_disk = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert on_disk == cfg, "params.yaml drifted from conf/: run `make params` (or `sgg-eval params`)"
    # and byte-for-byte what `sgg-eval params` (and DVC's Hydra mode) writes
    assert (ROOT / "params.yaml").read_text() == compose_yaml(ROOT / "conf")


def test_dataset_switch_to_real_vg150():
    cfg = _resolved(["dataset=vg150"])
    spec = dataset(cfg)
    assert isinstance(spec, VG150) and spec.files.h5.endswith("VG-SGG-with-attri.h5")
    assert spec.zeroshot_seen == ("train",)
    assert cfg["paths"]["splits"] == "data/vg150/splits"


@pytest.mark.parametrize(
    "name, kind, seen",
    [("gqa200", GQA200, ("train",)), ("gqa", GQA, ("train", "val")), ("gqa_nlr", GQA, ("train", "val"))],
)
def test_dataset_switch_to_gqa(name, kind, seen):
    cfg = _resolved([f"dataset={name}"])
    spec = dataset(cfg)
    assert isinstance(spec, kind) and spec.name == name and spec.zeroshot_seen == seen
    assert getattr(spec, "exclude_left_right", False) == name.endswith("nlr")
    assert cfg["paths"]["splits"] == f"data/{name}/splits"


@pytest.mark.parametrize(
    "name, option, value", [("vg150", "num_val_im", 7), ("vg150", "box_scale", 512), ("gqa200", "num_val_im", 9)]
)
def test_a_dataset_option_reaches_its_reader_and_is_checked(name, option, value):
    cfg = _resolved([f"dataset={name}", f"dataset.{option}={value}"])
    _check_dataset(cfg)  # (check_params would stop at the simulated models: they are not for real data)
    assert getattr(dataset(cfg), option) == value
    cfg["dataset"][option] = -1
    with pytest.raises(InputError) as err:
        _check_dataset(cfg)
    assert err.value.field == f"dataset.{option}"


def test_an_option_of_another_dataset_kind_is_refused():
    cfg = _resolved(["dataset=gqa200"])
    cfg["dataset"]["box_scale"] = 1024  # VG150's
    with pytest.raises(InputError) as err:
        _sections(cfg)
    assert err.value.field == "dataset" and "unknown setting 'box_scale'" in err.value.message


def test_simulated_dataset_parameters_reach_the_simulator():
    cfg = _resolved(["dataset.sim.scale=tiny", "dataset.sim.seed=7"])
    spec = dataset(cfg).params
    assert spec.scale == "tiny" and spec.seed == 7
    world = yaml.safe_load((ROOT / "conf/simulation/default.yaml").read_text())["world"]
    assert world and all(getattr(spec, key) == value for key, value in world.items())


def test_evaluation_entries_resolve_to_models():
    cfg = _resolved()
    models, pko = cfg["models"], cfg["pko"]
    for entry in cfg["evaluation"]["entries"]:
        assert entry in models or entry == "pko_only" or (entry.endswith("_pko") and entry[:-4] in pko["apply_to"]), (
            entry
        )
    for name in (*pko["apply_to"], pko["pko_only_from"], pko["blind_model"]):
        assert name in models
    for name, model in models.items():
        assert model["name"] == name and model["source"] in ("simulated", "file")


def test_one_model_experiment_evaluates_that_model_its_pko_row_and_pko_only():
    cfg = _resolved(["experiment=one_model", "evaluation.model=sim_vctree_tde"])
    assert cfg["evaluation"]["entries"] == ["sim_vctree_tde", "sim_vctree_tde_pko", "pko_only"]
    assert cfg["pko"]["apply_to"] == ["sim_vctree_tde"]
    assert cfg["pko"]["pko_only_from"] == cfg["pko"]["blind_model"] == "sim_vctree_tde"
    assert cfg["figures"]["debiased_model"] == "sim_vctree_tde_pko"
    # only the models the knobs name are read (and the PSG and AG ones evaluation.psg_entries and video_entries name)
    others = cfg["evaluation"]["psg_entries"] + cfg["evaluation"]["video_entries"]
    assert [name for name in cfg["models"] if name not in others] == ["sim_vctree_tde"]
    check_params(cfg)  # a valid configuration


def test_params_yaml_holds_knobs_and_names_what_conf_defines():
    knobs = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert not {"models", "tasks", "simulation"} & set(knobs) and set(knobs["dataset"]["sim"]) == {"seed", "scale"}
    cfg = _resolved()
    for name, model in cfg["models"].items():
        assert model == yaml.safe_load((ROOT / "conf/model" / f"{name}.yaml").read_text())
    assert cfg["tasks"]["sgcls"]["label"] == "SGCls"
    assert cfg["paths"]["splits"] == f"{knobs['paths']['data']}/splits"


def test_a_model_is_one_file_in_conf_model(tmp_path):
    import shutil

    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "conf", conf)
    (conf / "model/real.yaml").write_text(
        "name: real\nbackbone: Motifs\nmethod: Baseline\nsource: file\n"
        "files: {predcls: p.pytorch, sgcls: c.pytorch, sgdet: d.pytorch}\n"
    )
    cfg = _resolved(["experiment=one_model", "evaluation.model=real", "dataset=vg150"], conf)
    others = cfg["evaluation"]["psg_entries"] + cfg["evaluation"]["video_entries"]
    vg_models = {k: v for k, v in cfg["models"].items() if k not in others}
    assert vg_models == {"real": yaml.safe_load((conf / "model/real.yaml").read_text())}
    check_params(cfg)
    with pytest.raises(InputError) as err:
        check_params(_resolved(["experiment=one_model", "evaluation.model=nope"], conf))
    assert err.value.field == "evaluation.model" and "conf/model/nope.yaml" in str(err.value)
    (conf / "model/broken.yaml").write_text("- a list\n")
    with pytest.raises(InputError) as err:
        _resolved(["experiment=one_model", "evaluation.model=broken"], conf)
    assert str(conf / "model/broken.yaml") in str(err.value)


def test_an_entry_name_is_read_by_one_rule():
    models = {"m", "x_pko"}
    assert parse_entry("m", models, "m") == ("model", "m")
    assert parse_entry("m_pko", models, "m") == ("pko", "m")
    assert parse_entry("x_pko", models, "m") == ("model", "x_pko")  # a model's own name wins
    assert parse_entry("x_pko_pko", models, "m") == ("pko", "x_pko")
    assert parse_entry("pko_only", models, "x_pko") == ("pko_only", "x_pko")
    with pytest.raises(KeyError):
        parse_entry("y_pko", models, "m")


@pytest.mark.parametrize(
    "key, value, says",
    [
        ("psg_simulation.seed", True, "is not an integer"),  # a bool is not a number
        ("psg_simulation.seed", -1, "is outside [0, 4294967295]"),
        ("psg_simulation.world.height", 8, "is outside [32, 4096]"),
        ("psg_simulation.world.class_zipf", float("inf"), "is not a finite number"),
        ("psg_simulation.detectors.two_stage.overlapping", 1, "must be true or false"),
        ("psg_simulation.detectors.two_stage.stray", 1, "unknown setting 'stray'"),
        ("psg_simulation.methods.imp.pair_recall", 1.5, "is outside [0.0, 1.0]"),
        ("psg_simulation.methods.hilo.ng_pair_weight", -0.1, "is outside [0.0, 100.0]"),
        ("pko.eps", 0.0, "is outside (0.0, 1000000.0]"),
        ("stats.drop_non_overlapping", 1, "must be true or false"),
        ("simulation.world.stray", 1, "unknown setting 'stray'"),
        ("simulation.backbones.sim_motifs.detection_score_floor", 1.0, "is outside [0.0, 1.0)"),
        ("simulation.backbones.sim_vctree.detection_score_floor", -0.1, "is outside [0.0, 1.0)"),
    ],
)
def test_both_schemas_refuse_a_bad_value_the_same_way(key, value, says):
    """The VG150 and the panoptic halves of the schema share their value checks (``param_types``)."""
    cfg = _resolved()
    *path, last = key.split(".")
    node = cfg
    for part in path:
        node = node[part]
    node[last] = value
    field = key.rsplit(".", 1)[0] if "stray" in key else key  # an unknown key is named by its mapping
    with pytest.raises(InputError) as err:
        check_params(cfg)
    assert err.value.field == field and says in err.value.message, (err.value.field, err.value.message)


@pytest.mark.parametrize(
    "fitted, field, says",
    [
        ({"sim_nope": {}}, "simulation.fitted", "unknown setting 'sim_nope'"),
        ({"sim_motifs": {"predet": {}}}, "simulation.fitted.sim_motifs", "unknown setting 'predet'"),
        ({"sim_motifs": {"sgcls": {"pko": {}}}}, "simulation.fitted.sim_motifs.sgcls", "unknown setting 'pko'"),
        ({"sim_motifs": {"sgcls": {"tde": {"alpha": 1}}}}, "simulation.fitted.sim_motifs.sgcls.tde", "unknown setting"),
        (
            {"sim_vctree": {"sgdet": {"nice": {"ranking_noise": -0.5}}}},
            "simulation.fitted.sim_vctree.sgdet.nice.ranking_noise",
            "is outside [0.0, 10.0]",
        ),
        (
            {"sim_motifs": {"predcls": {"nice": {"discrimination": 1.5}}}},
            "simulation.fitted.sim_motifs.predcls.nice.discrimination",
            "is outside [0.0, 1.0]",
        ),
        (
            {"sim_vctree": {"sgdet": {"tde": {"tde_alpha": "x"}}}},
            "simulation.fitted.sim_vctree.sgdet.tde.tde_alpha",
            "is not a",
        ),
    ],
)
def test_a_fitted_setting_is_checked_as_the_defaults_are(fitted, field, says):
    """conf/simulation/default.yaml's ``fitted`` (issue 70): a known backbone, task and method, and each setting in
    the range its default is checked in."""
    cfg = _resolved()
    good = {"reweight": {"reweight_alpha": 1.2, "ranking_noise": 0.5, "discrimination": 0.2}}
    cfg["simulation"]["fitted"] = {"sim_motifs": {"predcls": good}}
    check_params(cfg)  # a good one passes
    cfg["simulation"]["fitted"] = fitted
    with pytest.raises(InputError) as err:
        check_params(cfg)
    assert err.value.field == field and says in err.value.message, (err.value.field, err.value.message)


def test_open_vocabulary_settings_are_checked():
    """metrics.openvocab: a setting of the protocol, a split mapping, OvSGTR on SGDet only, and only with an
    open-vocabulary protocol; a valid one passes."""
    check_params(_resolved(["metrics.protocol=vs3", "metrics.openvocab.setting=ovd"]))
    check_params(_resolved(["metrics.protocol=ovsgtr", "evaluation.tasks=[sgdet]", "pko.blind_task=sgdet"]))
    bad = {
        "metrics.openvocab": ["metrics.openvocab.setting=ovd"],
        "metrics.openvocab.setting": ["metrics.protocol=vs3", "metrics.openvocab.setting=ovr"],
        "metrics.openvocab.split": ["metrics.protocol=pgsg", "metrics.openvocab.split=[on]"],
        "evaluation.tasks": ["metrics.protocol=ovsgtr"],
        "pko.blind_task": ["evaluation.tasks=[sgdet]"],
    }
    for field, overrides in bad.items():
        with pytest.raises(InputError) as info:
            check_params(_resolved(overrides))
        assert f"field '{field}'" in str(info.value), (field, str(info.value))


def test_s2g_settings_are_checked():
    """s2g (issue 50): off by default, on with one switch; its values, its entries (simulated SGG models) and the
    simulated captions' knobs are checked when it runs; a real dataset is refused (its captions would be simulated)."""
    check_params(_resolved())
    check_params(_resolved(["s2g.run=true"]))
    bad = {
        "s2g.run": ["s2g.run=1"],
        "s2g.epochs": ["s2g.epochs=0"],
        "s2g.lr": ["s2g.lr=0"],
        "s2g.train_images": ["s2g.train_images=1"],
        "s2g.entries[0]": ["s2g.run=true", "s2g.entries=[sim_psg_imp]"],
        "s2g.entries": ["s2g.run=true", "s2g.entries=[]", "s2g.bounds=false"],
    }
    for field, overrides in bad.items():
        with pytest.raises(InputError) as info:
            check_params(_resolved(overrides))
        assert info.value.field == field, (field, info.value)
    cfg = _resolved(["s2g.run=true"])
    cfg["simulation"]["captions"]["name_noise"] = 2.0
    with pytest.raises(InputError) as info:
        check_params(cfg)
    assert info.value.field == "simulation.captions.name_noise"
    assert check_params(_resolved(["s2g.run=false", "s2g.entries=[nope]"])) is None  # off: not read
