"""``sgg-eval audit PREDS --ag SPLITS``: a video-SGG model's predictions under every Action Genome protocol,
constraint and mean-recall rule the papers mix, and which of them a published number is.

The variants: ``R@K`` and ``mR@K`` (K = 10, 20, 50, 100) under ``sttran`` (with, semi, no) and ``oed`` (with,
no), the mean recall both ways (pooled over frames, TEMPURA's; per frame, DSG-DETR's). AG has no one reference:
its papers print the three constraints side by side, so a published value's verdict lists every variant within
half a unit of its last printed digit, and says when that is more than one. A protocol is audited on the store
its tool reads for the task (``SPLITS``: the folder ``sgg-eval split --ag-dir`` wrote, or one store) and only
when the predictions cover the videos it scores; otherwise a note says why not.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sgg_eval.core.defaults import VIDEO_PROTOCOLS
from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import STTRAN_ALL, STTRAN_ATTENTION
from sgg_eval.metrics.variants import parse_published
from sgg_eval.video.ag_evaluate import evaluate_ag, options_for
from sgg_eval.video.ag_protocol import store_for
from sgg_eval.video.sttran import K_VALUES

MEANS = (("R", ""), ("mR", "pooled"), ("mR", "per_frame"))
_RULE = {"pooled": "pooled (TEMPURA)", "per_frame": "per frame (DSG-DETR)"}


@dataclass(frozen=True)
class VideoVariant:
    metric: str  # "R" | "mR"
    rule: str  # "" (R@K) | "pooled" | "per_frame"
    k: int
    protocol: str
    constraint: str
    value: float

    @property
    def label(self) -> str:
        rule = f" {_RULE[self.rule]}" if self.rule else ""
        return f"{self.metric}@{self.k}{rule}, {self.protocol} {self.constraint}"


def run_video_audit(predictions: str, splits: str, task: str, attention: str | None = None,
                    published: tuple[str, ...] = ()) -> dict:  # fmt: skip
    """Every variant's value, and a verdict per published value (``"R@20=33.2"``, percent). ``attention``: what
    the file's ``attention_distribution`` holds, one kind for every protocol (default: logits, STTran's)."""
    for text in published:
        try:
            parse_published(text, K_VALUES)
        except ValueError as exc:
            raise InputError(str(exc), field="--published") from None
    rows, notes, counts = [], [], {}
    for protocol in VIDEO_PROTOCOLS:
        store = store_for(splits, protocol, task)
        try:
            options = options_for(protocol, task, STTRAN_ALL, None, attention or STTRAN_ATTENTION)
            doc = evaluate_ag(store, predictions, options)
        except InputError as exc:
            notes.append(f"{protocol} not audited: {exc}")
            continue
        counts[protocol] = doc["counts"]
        for constraint, result in doc["results"].items():
            for metric, rule in MEANS:
                for k in K_VALUES:
                    name = f"{metric}_{rule}@{k}" if rule else f"{metric}@{k}"
                    rows.append(VideoVariant(metric, rule, k, protocol, constraint, result["metrics"][name]))
    if not rows:
        raise InputError("no protocol could score these predictions: " + "; ".join(notes), path=predictions)
    return {"input": {"path": os.fspath(predictions), "splits": os.fspath(splits)}, "task": task,
            "counts": counts, "notes": notes, "variants": [v.__dict__ | {"label": v.label} for v in rows],
            "published": [match(text, rows) for text in published]}  # fmt: skip


def match(text: str, rows: list[VideoVariant]) -> dict:
    """The variants within half a unit of the published value's last printed digit."""
    metric, k, _, value, decimals = parse_published(text, K_VALUES)
    candidates = [v for v in rows if v.metric == metric and v.k == k]
    matches = [v for v in candidates if abs(100 * v.value - value) <= 0.5 * 10.0**-decimals + 1e-9]
    if len(matches) == 1:
        verdict = f"{matches[0].label}"
    elif matches:
        verdict = f"AMBIGUOUS, {len(matches)} variants within rounding: " + "; ".join(v.label for v in matches)
    else:
        closest = min(candidates, key=lambda v: abs(100 * v.value - value))
        verdict = f"no variant within rounding (closest: {closest.label} = {100 * closest.value:.{decimals + 1}f})"
    return {"published": text, "matches": [v.label for v in matches], "verdict": verdict}


def video_audit_markdown(doc: dict) -> str:
    """One row per (metric, protocol, constraint), one column per K; then the notes and the verdicts."""
    keyed: dict[tuple, dict[int, float]] = {}
    for v in doc["variants"]:
        keyed.setdefault((v["metric"], v["rule"], v["protocol"], v["constraint"]), {})[v["k"]] = v["value"]
    lines = [f"Action Genome variants of R@K and mR@K: {doc['input']['path']} ({doc['task']}); percent", "",
             "| metric | protocol | constraint | " + " | ".join(f"K={k}" for k in K_VALUES) + " |",
             "|---" * (3 + len(K_VALUES)) + "|"]  # fmt: skip
    for (metric, rule, protocol, constraint), values in keyed.items():
        name = f"{metric} {_RULE[rule]}" if rule else metric
        cells = " | ".join(f"{100 * values[k]:.2f}" for k in K_VALUES)
        lines.append(f"| {name} | {protocol} | {constraint} | {cells} |")
    text = "\n".join(lines) + "\n"
    text += "".join(f"\n- {note}" for note in doc["notes"]) + ("\n" if doc["notes"] else "")
    if doc["published"]:
        text += "\n" + "\n".join(f"- `{p['published']}`: {p['verdict']}" for p in doc["published"]) + "\n"
    return text
