"""``sgg-eval evaluate SAMPLES.jsonl --text-graphs --protocol sgvlm``: text scene graphs scored exactly as
SceneGraphVLM's evaluator scores them in its strict mode (issue 48; ``markus0440/SceneGraphVLM`` at a6197da,
``metrics/qwen-bench/eval/eval_sgg_metrics_with_qwen.py --strict-only``).

The file is its predictions JSONL: one sample per line, the GT scene as TOON text in ``content`` and the answer in
``predict`` (else the ``conversations`` turns from ``gpt`` and ``predict``, else the first ``assistant`` message):
the GT travels with each answer, so ``--gt`` is not taken. A sample without both texts, or whose answer has no
object row, is **invalid**: every score 0, counted in ``invalid_rate`` (its "Failure_Rate_%" ÷ 100). Each number
is the macro mean over every sample (``text.sgvlm.metrics``). The optional LLM judge of names (its ``_Qwen`` keys)
needs a 4B-parameter model: not reproduced. A line that is not a JSON object is counted and left out
(SceneGraphVLM's evaluator stops there).
"""

from __future__ import annotations

import json
import os

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.io.jsonio import jsonl_lines, read_text
from sgg_eval.metrics.names import SGVLM_VALUES
from sgg_eval.metrics.result_facts import fact
from sgg_eval.text.sgvlm.metrics import sample_scores
from sgg_eval.text.sgvlm.toon import read_toon

MAX_SAMPLES_BYTES = 1 << 32


def run_sgvlm_evaluation(samples: str) -> dict:
    """The metrics document of SceneGraphVLM's predictions JSONL ``samples``."""
    path = os.fspath(samples)
    lines = jsonl_lines(read_text(path, "JSONL file of samples", MAX_SAMPLES_BYTES))
    rows, valid_n, unreadable = [], 0, 0
    for line in lines:
        line = line.strip()  # as its reader strips every line (Unicode whitespace: U+00A0, a vertical tab, ...)
        if not line:
            continue
        try:
            sample = json.loads(line)
        except (ValueError, RecursionError):
            sample = None
        if not isinstance(sample, dict):
            unreadable += 1
            continue
        gt, answer = sample_texts(sample)
        valid = bool(gt) and bool(answer) and bool(read_toon(answer).objects)
        rows.append(sample_scores(read_toon(gt), read_toon(answer)) if valid else (0.0,) * len(SGVLM_VALUES))
        valid_n += valid
    if not rows:
        raise InputError("no samples: expected one JSON object per line (content, predict)", path=path)
    scores = np.array(rows, dtype=np.float64)
    return {
        "task": "text graphs",
        "protocol": "sgvlm",
        "facts": [
            fact(
                SGVLM_VALUES,
                len(rows),
                len(rows),
                "every sample of the file",
                "one-to-one (objects and relations each a Hungarian assignment; a duplicate is a false positive)",
                "macro mean over samples",
                "an invalid answer scores 0",
                "none: every answered triplet",
            )
        ],
        "metrics": {name: float(np.mean(scores[:, i])) for i, name in enumerate(SGVLM_VALUES)},
        "counts": {
            "samples": len(rows),
            "samples_valid": valid_n,
            "invalid_rate": (len(rows) - valid_n) / len(rows),
            "unreadable_lines": unreadable,
        },  # fmt: skip
        "notes": [
            "protocol sgvlm: SceneGraphVLM's strict scores, each a macro mean over every sample (invalid ones 0); "
            "objects are matched by box alone before names are compared, relations through those matches, "
            "one-to-one: a duplicate is a false positive"
        ],
        "input": {"samples": path},
    }


def sample_texts(sample: dict) -> tuple:
    """The GT and answer texts of a sample, where SceneGraphVLM's ``extract_gt_pred_toon`` finds them."""
    gt, answer = sample.get("content"), sample.get("predict")
    if gt is None or answer is None:
        for turn in _dicts(sample.get("conversations")):
            if gt is None and turn.get("from") == "gpt":
                gt = turn.get("value")
            elif answer is None and turn.get("from") == "predict":
                answer = turn.get("value")
    if answer is None:
        answer = next((m.get("content") for m in _dicts(sample.get("messages")) if m.get("role") == "assistant"), None)
    return gt, answer


def _dicts(value) -> list:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
