"""The configuration edge: Hydra composition of ``conf/`` into ``params.yaml``, and plain-dict adapters.

Library code never sees a ``DictConfig``: stages read ``params.yaml`` (plain dicts) and turn the parts they
need into the library's dataclasses here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import yaml

from sgg_eval.boxes.splits import Dataset, open_dataset
from sgg_eval.core.errors import InputError, guarded
from sgg_eval.io.atomic import write_text
from sgg_eval.io.jsonio import MAX_YAML_BYTES, check_yaml, load_yaml, read_text
from sgg_eval.pipeline.catalogue import resolve
from sgg_eval.pipeline.param_reads import recorded


def compose_yaml(
    conf_dir: str | os.PathLike = "conf", overrides: Sequence[str] = (), config_name: str = "config"
) -> str:
    """Compose ``conf_dir`` with Hydra and return the resolved YAML text (what DVC's Hydra mode writes)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if not Path(conf_dir).is_dir():
        raise InputError("config folder not found", path=str(conf_dir))
    for file in sorted(Path(conf_dir).rglob("*.yaml")):  # every file checked before Hydra reads any of them
        check_yaml(read_text(file, "YAML file", MAX_YAML_BYTES), str(file))
    try:
        with initialize_config_dir(str(Path(conf_dir).resolve()), version_base="1.3"):
            cfg = compose(config_name=config_name, overrides=list(overrides))
        OmegaConf.resolve(cfg)
    except (HydraException, OmegaConfBaseException, yaml.YAMLError, ValueError) as exc:
        raise InputError(f"config: {' '.join(str(exc).split())[:300]}", path=str(conf_dir)) from None
    return OmegaConf.to_yaml(cfg)


def write_params(
    out: str | os.PathLike = "params.yaml", conf_dir: str | os.PathLike = "conf", overrides: Sequence[str] = ()
) -> str:
    """Regenerate ``params.yaml`` from ``conf/`` atomically; returns the text written.

    No header comment: the bytes equal what ``dvc exp run`` writes in Hydra mode, so the two never fight.
    """
    from sgg_eval.pipeline.params_check import check_params

    text = compose_yaml(conf_dir, overrides)
    check_params(resolve(yaml.safe_load(text), conf_dir))
    write_text(out, text)
    return text


def load_params(path: str | os.PathLike = "params.yaml", conf_dir: str | os.PathLike = "conf") -> dict:
    """``params.yaml`` as plain dicts, with the models, tasks and simulation settings it names read from
    ``conf_dir`` (:func:`sgg_eval.pipeline.catalogue.resolve`); the parameter test records what a stage reads of
    it (:mod:`sgg_eval.pipeline.param_reads`)."""
    if not os.path.exists(path):
        raise InputError("file not found (generate it with `sgg-eval params`)", path=str(path))
    params = load_yaml(path)
    if not isinstance(params, dict):
        raise InputError("must be a mapping of settings", path=str(path))
    return recorded(resolve(params, conf_dir))


def dataset(params: Mapping) -> Dataset:
    """The dataset of the (resolved) params (:data:`sgg_eval.boxes.splits.READERS`); a simulated one takes its seed and
    scale from ``dataset.sim`` and its shape from ``simulation.world``."""
    conf = dict(params["dataset"])
    if conf["kind"] == "simulated":
        conf["world"] = params["simulation"]["world"]
    return open_dataset(conf)


def run_stage(main: Callable[[], object]) -> None:
    """Run a stage body through the CLI's error path: a user error is one line and exit 2, a bug one line
    and exit 1 (traceback with ``SGG_EVAL_DEBUG=1``); outputs are atomic, so nothing is half-written."""
    code = guarded(main, f"stage {Path(sys.argv[0]).stem}")
    if code:
        raise SystemExit(code)
