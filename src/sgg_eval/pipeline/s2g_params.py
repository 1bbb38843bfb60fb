"""The pipeline's ``s2g`` section (issue 50, docs/s2g.md): Sentence-to-Graph retrieval, off by default.

``s2g.run: true`` trains Tang et al.'s retrieval model on the SGDet graphs of every model of ``s2g.entries`` (and,
with ``s2g.bounds``, on the GT graphs and on random graphs: the table's perfect and chance rows) and ranks the
test block's captions. The stage runs on a simulated dataset, whose caption graphs are SIMULATED
(``simulate.captions``, knobs in conf/simulation/default.yaml, ``captions``); on real predictions, ``sgg-eval
s2g`` reads the upstream caption file. ``s2g.train_images`` (the first N training images) and ``s2g.epochs`` bound
the CPU time; ``s2g.lr`` is the base learning rate (× the batch of 32).
"""

from __future__ import annotations

from collections.abc import Mapping

from sgg_eval.core.errors import InputError
from sgg_eval.core.tasks import SGDET
from sgg_eval.pipeline.catalogue import lookup as _get
from sgg_eval.pipeline.param_types import check_flag, check_mapping, check_number
from sgg_eval.simulate.captions import CAPTION_KNOBS

S2G_KEYS = ("run", "entries", "bounds", "epochs", "train_images", "lr", "seed")
# each simulated caption knob's (low, high, integer)
CAPTION_RANGES = {"seed": (0, 2**32 - 1, True), "captioned": (0.0, 1.0, False), "per_image": (1, 20, True),
                  "extra_relations": (0.0, 20.0, False), "name_noise": (0.0, 1.0, False),
                  "predicate_noise": (0.0, 1.0, False), "lone_entity": (0.0, 1.0, False)}  # fmt: skip
assert set(CAPTION_RANGES) == set(CAPTION_KNOBS)


def check_s2g(params: Mapping) -> None:
    """``s2g`` (module docstring); the entries and captions only matter, and are checked, when it runs."""
    node = check_mapping(_get(params, "s2g"), "s2g", S2G_KEYS)
    missing = [k for k in S2G_KEYS if k not in node]
    if missing:
        raise InputError(f"missing setting {missing[0]!r}", field="s2g")
    check_flag(node["run"], "s2g.run")
    check_flag(node["bounds"], "s2g.bounds")
    check_number(node["epochs"], "s2g.epochs", 1, 1000, integer=True)
    check_number(node["seed"], "s2g.seed", 0, 2**32 - 1, integer=True)
    check_number(node["lr"], "s2g.lr", 0.0, 10.0, lo_open=True)
    if node["train_images"] is not None:
        check_number(node["train_images"], "s2g.train_images", 2, 10**7, integer=True)
    entries = node["entries"]
    if not isinstance(entries, list) or len(set(map(str, entries))) != len(entries):
        raise InputError("must be a list of models without repeats", field="s2g.entries")
    if not node["run"]:
        return
    if _get(params, "dataset.kind") != "simulated":
        raise InputError(
            f"the pipeline's S2G stage runs on a simulated dataset (its caption graphs are SIMULATED), and dataset "
            f"{_get(params, 'dataset.name')!r} is real: run `sgg-eval s2g` on the model's SGDet files and the upstream "
            "caption file (docs/s2g.md)",
            field="s2g.run",
        )
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise InputError(
            "S2G trains a retrieval model in PyTorch, not installed here: make install-s2g", field="s2g.run"
        )
    if SGDET.name not in _get(params, "evaluation.tasks"):
        raise InputError("S2G reads SGDet graphs: evaluation.tasks must include sgdet", field="s2g.run")
    if not entries and not node["bounds"]:
        raise InputError("no model to train on: list s2g.entries or set s2g.bounds", field="s2g.entries")
    models = _get(params, "models")
    for i, name in enumerate(entries):
        model = models.get(name) if isinstance(name, str) else None
        ok = isinstance(model, Mapping) and model.get("source") == "simulated" and "sim_backbone" in model
        if not ok:
            raise InputError(
                f"{name!r:.40} is not a simulated SGG model (conf/model/<name>.yaml with source: simulated)",
                field=f"s2g.entries[{i}]",
            )
    knobs = check_mapping(_get(params, "simulation.captions"), "simulation.captions", CAPTION_KNOBS)
    for knob, (lo, hi, integer) in CAPTION_RANGES.items():
        check_number(knobs.get(knob), f"simulation.captions.{knob}", lo, hi, integer=integer)
