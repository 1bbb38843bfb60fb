"""No parameter outside DVC's view: every key of params.yaml that a stage reads is declared by that stage (in its
`params`, interpolated in its definition, or through a file of data/params/ that check_params writes from the
key's section), and changing any leaf of params.yaml is reported by `dvc status` for every stage that reads it.

What a stage reads is recorded, not guessed: the shared `make repro` on tiny simulated data runs with
SGG_EVAL_PARAMS_TRACE set (tests/reproduced.py; src/sgg_eval/pipeline/param_reads.py), which notes every value
each stage takes from params.yaml."""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from reproduced import copy_of, ran_stages, stage_name
from test_pipeline import params_with, run

from sgg_eval.pipeline.catalogue import resolve
from sgg_eval.pipeline.catalogue_files import SECTIONS, carriers_of
from sgg_eval.pipeline.param_reads import CARRIERS
from sgg_eval.pipeline.paths import PIPELINE_FILES

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out

ROOT = Path(__file__).resolve().parents[1]
# keys read by DVC itself from dvc.yaml's text: ${paths.data}, ${dataset.raw}, a matrix over ${pko.apply_to}
INTERPOLATED = re.compile(r"\$\{([a-z_]+(?:\.[a-z_]+)+)\}")


@pytest.fixture(scope="module")
def traced(reproduced_base, tmp_path_factory):
    """A copy of the reproduced tiny project and what each stage read while `make repro` ran it with
    SGG_EVAL_PARAMS_TRACE set (tests/reproduced.py): (project, {stage: keys it read})."""
    p = copy_of(reproduced_base, tmp_path_factory.mktemp("params_tracked") / "project")
    reads: dict[str, set[str]] = defaultdict(set)
    for file in reproduced_base.trace.glob("*.json"):
        doc = json.loads(file.read_text())
        reads[stage_name(doc["stage"])] |= set(doc["reads"])
    assert "check_params" in reads and any(s.startswith("evaluate@") for s in reads), sorted(reads)
    return p, dict(reads)


def leaves(doc, prefix=""):
    """Every dotted key of params.yaml whose value is not a mapping (a list is one value, as `-S` sets it)."""
    for key, value in doc.items():
        if isinstance(value, dict):
            yield from leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}"


def under(key: str, prefix: str) -> bool:
    return key == prefix or key.startswith(prefix + ".")


def pipeline_file(p: Path, stage: str) -> Path:
    """The dvc.yaml of ``p`` that defines ``stage`` (a name without ``@``)."""
    (found,) = [p / f for f in PIPELINE_FILES if stage in yaml.safe_load((p / f).read_text())["stages"]]
    return found


def stage_defs(p: Path) -> dict[str, dict]:
    """Each stage's name (a matrix stage's `name@...` instances share it) -> its definition, from every dvc.yaml
    of the pipeline."""
    defs: dict[str, dict] = {}
    for f in PIPELINE_FILES:
        stages = yaml.safe_load((p / f).read_text())["stages"]
        assert not set(stages) & set(defs), f"{f} repeats a stage name"
        defs.update(stages)
    return defs


def declared(p: Path, stage: str, knobs: set[str]) -> set[str]:
    """The params.yaml keys that a change of reruns ``stage``: its params, the keys interpolated in its
    definition, and the sections carried by the data/params/ files it depends on."""
    definition = stage_defs(p)[stage.split("@")[0]]
    keys = {k for k in definition.get("params", []) if isinstance(k, str)}
    text = yaml.safe_dump(definition)
    keys |= {k for k in INTERPOLATED.findall(text) if k.split(".")[0] in knobs}
    keys |= {section for path, section in CARRIERS.items() if path in definition.get("deps", [])}
    return keys


def test_every_key_a_stage_reads_is_declared_by_it(traced):
    p, reads = traced
    knobs = set(yaml.safe_load((p / "params.yaml").read_text()))
    missing = {}
    for stage, keys in reads.items():
        mine = declared(p, stage, knobs)
        lost = sorted(k for k in keys if k.split(".")[0] in knobs and not any(under(k, d) for d in mine))
        if lost:
            missing[stage] = lost
    assert not missing, f"stages read params.yaml keys DVC does not rerun them for: {missing}"


def test_the_carried_files_hold_their_section(traced):
    """check_params writes each section whole into its carrier file, so a change of any of its keys reruns
    the stages that depend on the file."""
    p, _ = traced
    params = yaml.safe_load((p / "params.yaml").read_text())
    lock = yaml.safe_load((p / "dvc.lock").read_text())["stages"]["check_params"]
    outs = {o["path"] for o in lock["outs"]}
    for path, section in CARRIERS.items():
        assert path in outs, f"{path} is not an out of check_params"
        assert section in lock["params"]["params.yaml"], f"check_params does not declare {section}"
        carried = json.loads((p / path).read_text())
        assert {k: carried[k] for k in params[section]} == params[section], path


def test_the_check_fails_for_an_undeclared_read(traced):
    """The check can fail: without `psg_dataset` among check_params' params (this issue's hole), psg_data's
    reads of psg_dataset.sim.* are carried by a file no declared key rewrites."""
    p, reads = traced
    pipeline = pipeline_file(p, "psg_data")
    text = pipeline.read_text()
    knobs = set(yaml.safe_load((p / "params.yaml").read_text()))
    psg_data = [s for s in reads if s == "psg_data"]
    assert psg_data and any(under(k, "psg_dataset.sim") for k in reads["psg_data"])
    broken = text.replace("      - data/params/psg_dataset.json\n", "", 1)
    assert broken != text
    pipeline.write_text(broken)
    try:
        mine = declared(p, "psg_data", knobs)
    finally:
        pipeline.write_text(text)
    assert not any(under("psg_dataset.sim.seed", d) for d in mine)


CATALOGUE = {"models", *(section for sections in SECTIONS.values() for section in sections)}


def uncarried(p: Path, reads: dict[str, set[str]]) -> dict[str, list[str]]:
    """Each stage -> the catalogue keys it read that no catalogue file it depends on carries."""
    models = resolve(yaml.safe_load((p / "params.yaml").read_text()), p / "conf")["models"]
    defs = stage_defs(p)
    missing = {}
    for stage, keys in reads.items():
        deps = set(defs[stage.split("@")[0]].get("deps", []))
        if "conf" in deps:
            continue  # check_params reads conf/ itself
        lost = sorted(k for k in keys if k.split(".")[0] in CATALOGUE and not carriers_of(k, models) & deps)
        if lost:
            missing[stage] = lost
    return missing


def test_every_catalogue_key_a_stage_reads_reaches_it_through_a_file(traced):
    """The models, task labels and simulators a stage read (not knobs: conf/ holds them) are carried by a
    catalogue file it depends on, one per product (pipeline/catalogue_files.py)."""
    p, reads = traced
    assert any(k.startswith("models.sim_psg_") for k in reads["psg_simulate"]), sorted(reads["psg_simulate"])
    assert not uncarried(p, reads)


def test_the_catalogue_check_fails_for_a_missing_product(traced):
    """It can fail: without the panoptic catalogue, psg_evaluate's reads of its model are carried by nothing."""
    p, reads = traced
    pipeline = pipeline_file(p, "psg_evaluate")
    text = pipeline.read_text()
    broken = re.sub(r"(?s)(  psg_evaluate:.*?)      - data/params/catalogue_panoptic.json\n", r"\1", text, count=1)
    assert broken != text
    pipeline.write_text(broken)
    try:
        lost = uncarried(p, reads)
    finally:
        pipeline.write_text(text)
    assert set(lost) == {s for s in reads if s.startswith("psg_evaluate@")}, lost


@pytest.mark.parametrize(
    ("model", "field", "mine", "theirs"),
    [
        ("sim_psg_imp", "method: IMP\n", "psg_evaluate@sim_psg_imp", ("evaluate@", "simulate", "apply_pko", "reduce")),
        ("sim_motifs_tde", "method: TDE\n", "evaluate@sim_motifs_tde", ("psg_",)),
    ],
)
def test_a_model_of_one_product_reruns_no_stage_of_another(traced, model, field, mine, theirs):
    """A PSG model's new method name reruns its PSG stages and no VG150 stage; a VG150 model's, no PSG stage
    (before, one catalogue file for both re-ranked every entry of the other benchmark)."""
    from dvc.repo import Repo

    p, _ = traced
    conf = p / "conf/model" / f"{model}.yaml"
    original = conf.read_text()
    assert field in original
    conf.write_text(original.replace(field, field.replace("\n", "-renamed\n")))
    try:
        run([sys.executable, "stages/check_params.py"], p)  # as the pipeline's first stage writes the catalogue
        with Repo(str(p)) as repo:
            named = {stage_name(s) for s in repo.status()}
    finally:
        conf.write_text(original)
        run([sys.executable, "stages/check_params.py"], p)
    assert mine in named, sorted(named)
    assert not [s for s in named if s.startswith(theirs)], sorted(named)


def changed_value(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, list):
        return value[:-1] if len(value) > 1 else [*value, "x"]
    return f"{value}_x"


def stale_by_params(repo) -> set[str]:
    """The stages whose params DVC finds changed: what `dvc status` names when params.yaml changed and the stages
    did not (each stage's params dependencies' own `status()`, which `dvc status` calls too), without hashing
    every file and folder a stage depends on (1.5 to 3 s per `dvc status` on the tiny project)."""
    from dvc.dependency.param import ParamsDependency

    return {
        stage_name(stage.addressing)
        for stage in repo.index.stages
        if any(isinstance(dep, ParamsDependency) and dep.status() for dep in stage.deps)
    }


def parse_each_params_text_once(monkeypatch) -> None:
    """DVC's params dependencies each parse params.yaml again (ruamel, pure Python): for one changed leaf, 150 parses
    of the same text, 60% of the loop below (py-spy). A parse kept per path and text: every dependency still reads
    the file and sees the text on disk, and gets a copy of its own."""
    import copy

    import dvc.dependency.param as param

    parsed, load_path = {}, param.load_path

    def load_once(path, fs, **kwargs):
        with fs.open(path, "rb") as fh:
            key = (path, fh.read(), tuple(sorted(kwargs.items())))
        if key not in parsed:
            parsed[key] = load_path(path, fs, **kwargs)
        return copy.deepcopy(parsed[key])

    monkeypatch.setattr(param, "load_path", load_once)


def test_changing_any_leaf_is_seen_by_dvc_status(traced, monkeypatch):
    """As `dvc exp run -S key=value` would: params.yaml holds a new value of one leaf; `dvc status` must name a
    stage, and every stage that read the key is named or depends on the file check_params carries it in.

    A key interpolated into dvc.yaml changes the stages themselves (their paths, a matrix): for it the whole
    `dvc status` runs. For every other key the stages stay the ones loaded once, and their params dependencies
    are asked (:func:`stale_by_params`); the first keys are asked both ways, and the answers must agree."""
    from dvc.repo import Repo

    p, reads = traced
    parse_each_params_text_once(monkeypatch)
    params_file = p / "params.yaml"
    original = params_file.read_text()
    params = yaml.safe_load(original)
    defs = stage_defs(p)
    unread, unseen, cross_checked = [], {}, 0
    with Repo(str(p)) as loaded:
        for key in leaves(params):
            readers = {s for s, keys in reads.items() if key in keys and s != "check_params"}
            interpolated = {s for s, d in defs.items() if "${" + key + "}" in yaml.safe_dump(d)}
            if not readers and not interpolated:
                unread.append(key)
            doc = yaml.safe_load(original)
            node = doc
            *parents, last = key.split(".")
            for part in parents:
                node = node[part]
            node[last] = changed_value(node[last])
            params_file.write_text(yaml.safe_dump(doc, sort_keys=False))
            try:
                full = interpolated or cross_checked < 3
                if full:
                    with Repo(str(p)) as repo:
                        named = {stage_name(s) for s in repo.status()}
                if not interpolated:
                    fast = stale_by_params(loaded)
                    if full:
                        assert fast == named, (key, sorted(fast ^ named))
                        cross_checked += 1
                    named = fast
            finally:
                params_file.write_text(original)
            carried = {
                s
                for s in readers
                if any(
                    key.split(".")[0] == sec and path in defs[s.split("@")[0]].get("deps", [])
                    for path, sec in CARRIERS.items()
                )
            }
            if not named or not (readers - carried) <= named or (carried and "check_params" not in named):
                unseen[key] = {"named": sorted(named), "readers": sorted(readers)}
    assert cross_checked == 3
    assert not unseen, f"dvc status misses stages that read these keys: {unseen}"
    assert not unread, f"params.yaml keys no stage reads (remove them): {unread}"


def test_a_new_panoptic_seed_regenerates_the_panoptic_world(traced):
    """`dvc exp run -S psg_dataset.sim.seed=1`: psg_data reruns, and the PSG ground truth and tables change (DVC
    runs what the tables need; the figures, the site and MLflow would add 10 s and nothing this test checks)."""
    p, _ = traced
    gt = sorted((p / "data/psg_sim/psg").rglob("*.json"))
    tables = sorted((p / "reports/psg/tables").glob("*.csv"))
    assert gt and tables
    before = {f: f.read_bytes() for f in gt + tables}
    original = (p / "params.yaml").read_text()
    params_with(p, "psg_dataset.sim.seed=1")  # conf/ holds the tiny scale
    try:
        out = run([sys.executable, "-m", "dvc", "repro", "psg_pipeline/dvc.yaml:psg_tables"], p)
        assert {"psg_data", "psg_tables"} <= set(ran_stages(out)), out
        assert any(f.read_bytes() != before[f] for f in gt), "the PSG ground truth did not change"
        assert any(f.read_bytes() != before[f] for f in tables), "the PSG tables did not change"
    finally:
        (p / "params.yaml").write_text(original)
