"""sgg-eval: exact, fast, reproducible evaluation of scene graph generation.

The Python API (docs/api.md), the names of ``__all__``:

- :class:`Evaluator`: the box tasks' evaluation as a streaming accumulator, for a training loop;
- :class:`PsgEvaluator`: its sibling for panoptic SGG;
- :class:`VideoEvaluator`: Action Genome's video scene graphs as STTran scores them, video by video;
- :func:`evaluate_file`: ``sgg-eval evaluate`` as a function;
- :class:`SceneGraphMetric`: the Evaluator as a ``torchmetrics.Metric`` (the extra ``sgg-eval[torchmetrics]``);
- :class:`InputError`: what they raise on bad input, with the line the command prints.

They are imported on first use, so ``import sgg_eval`` (and the command's start) stays as light as it was and
needs neither torch nor torchmetrics.
"""

__version__ = "0.1.0"
__all__ = ["Evaluator", "InputError", "PsgEvaluator", "SceneGraphMetric", "VideoEvaluator", "evaluate_file"]

_LAZY = {
    "Evaluator": "sgg_eval.api.evaluator",
    "evaluate_file": "sgg_eval.api.files",
    "InputError": "sgg_eval.core.errors",
    "PsgEvaluator": "sgg_eval.api.psg_evaluator",
    "SceneGraphMetric": "sgg_eval.api.metric",
    "VideoEvaluator": "sgg_eval.api.video_evaluator",
}
_EXTRAS = {"SceneGraphMetric": ("torchmetrics", "pip install 'sgg-eval[torchmetrics]'")}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module
        from importlib.util import find_spec

        if name in _EXTRAS and find_spec(_EXTRAS[name][0]) is None:
            raise ImportError(f"sgg_eval.{name} needs {_EXTRAS[name][0]}: {_EXTRAS[name][1]}")
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'sgg_eval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
