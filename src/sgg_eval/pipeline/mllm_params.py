"""The pipeline's text-graph models (issue 48): a model file with ``benchmark: text`` is a multimodal LLM whose answers
are scene graphs written as text, scored on the VG150 half's test split by the ``sets`` protocol (``text_evaluate``
stage) and shown beside the ranked models (``tables``). ``evaluation.text_entries`` lists them (may be empty).

A text model is ``source: file`` with ``files: {answers: <sgg-eval JSONL of answers>}`` (docs/text_graphs.md), or
``source: simulated`` with ``sim`` knobs (``simulate.mllm_answers``) on a simulated dataset.
"""

from __future__ import annotations

from collections.abc import Mapping

from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import TEXT as TEXT_PRODUCT
from sgg_eval.core.protocols import registered
from sgg_eval.pipeline.catalogue import lookup as _get
from sgg_eval.pipeline.param_types import check_choice, check_mapping, check_number

TEXT = "text"  # a model file's `benchmark` for text-graph models


def pipeline_text_protocols() -> tuple[str, ...]:
    """The text protocols the pipeline can run: those that read the GT from a split store (the others read their
    tools' own GT files, which the pipeline has not)."""
    return tuple(p.name for p in registered() if p.product == TEXT_PRODUCT and p.in_pipeline)


# the simulated answers' knobs: (low, high) of each share, and the seed
SIM_KNOBS = {"seed": (0, 2**32 - 1), "answered": (0.0, 1.0), "failures": (0.0, 1.0), "recall": (0.0, 1.0),
             "wrong": (0.0, 10.0), "duplicates": (0.0, 1.0), "jitter": (0.0, 1.0), "plural": (0.0, 1.0)}  # fmt: skip


def is_text_model(model: Mapping) -> bool:
    return isinstance(model, Mapping) and model.get("benchmark") == TEXT


def check_text(params: Mapping) -> None:
    """``evaluation.text_entries`` and the text models they name (module docstring)."""
    entries = _get(params, "evaluation.text_entries")
    if not isinstance(entries, list) or len(set(map(str, entries))) != len(entries):
        raise InputError("must be a list of text-graph models without repeats", field="evaluation.text_entries")
    models = _get(params, "models")
    for i, name in enumerate(entries):
        if not isinstance(name, str) or not is_text_model(models.get(name)):
            raise InputError(
                f"{name!r:.40} is not a text-graph model (conf/model/<name>.yaml with benchmark: text)",
                field=f"evaluation.text_entries[{i}]",
            )
        key = f"models.{name}"
        check_choice(_get(params, f"{key}.protocol"), f"{key}.protocol", pipeline_text_protocols())
        if check_choice(_get(params, f"{key}.source"), f"{key}.source", ("simulated", "file")) == "file":
            files = check_mapping(_get(params, f"{key}.files"), f"{key}.files", ["answers"])
            if not isinstance(files.get("answers"), str) or not files["answers"].strip():
                raise InputError("must name the JSONL file of the model's answers", field=f"{key}.files.answers")
            continue
        if _get(params, "dataset.kind") != "simulated":
            raise InputError(
                f"{name} is simulated, and dataset {_get(params, 'dataset.name')!r} is real: simulated answers "
                "scored on real ground truth would sit in the tables beside real ones",
                field="evaluation.text_entries",
            )
        sim = check_mapping(_get(params, f"{key}.sim"), f"{key}.sim", list(SIM_KNOBS))
        for knob, (lo, hi) in SIM_KNOBS.items():
            check_number(sim.get(knob), f"{key}.sim.{knob}", lo, hi, integer=knob == "seed")
