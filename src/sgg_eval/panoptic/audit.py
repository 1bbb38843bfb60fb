"""``sgg-eval audit PRED --psg psg.json``: a panoptic submission under every protocol and instance mode, and
which of them a published PSG number is.

The variants are R@K, mR@K, ngR@K and ng-mR@K (K = 20, 50, 100) under the protocols ``openpsg``, ``sgbench``
and ``sgbench-paper`` (``panoptic.reduce``), on masks and, when the submission has boxes, on boxes.
Each mode is one pass over the images (``psg_evaluate.evaluate_protocols``). The reference variant is the
one behind the numbers PSG papers publish: ``openpsg`` on masks. A published value matches a variant within
half a unit of its last printed digit (``metrics.variants.match_published``). A variant its protocol's source
does not report (ngR under ``openpsg`` or ``sgbench``: ``panoptic.reduce.PROTOCOL_METRICS``) is
computed by sgg-eval under that protocol's matching, and is labelled and listed as such, apart.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from sgg_eval.core.defaults import PSG_PROTOCOLS as PROTOCOLS
from sgg_eval.core.defaults import RECALL_KS
from sgg_eval.core.errors import InputError
from sgg_eval.core.tasks import SGDET
from sgg_eval.metrics.document import every_metric
from sgg_eval.metrics.names import metric_name
from sgg_eval.metrics.variants import match_published, parse_published
from sgg_eval.panoptic.evaluate import evaluate_protocols
from sgg_eval.panoptic.openpsg_submit import is_openpsg_submit
from sgg_eval.panoptic.reduce import PROTOCOL_METRICS, SOURCES
from sgg_eval.panoptic.sgbench_submission import submission_mode

METRICS = (("R", "GC"), ("mR", "GC"), ("R", "NG"), ("mR", "NG"))
REFERENCE = ("openpsg", "masks")


@dataclass(frozen=True)
class PsgVariant:
    metric: str  # "R" | "mR"
    k: int
    constraint: str  # "GC" | "NG"
    protocol: str
    mode: str  # "masks" | "boxes"
    value: float | None

    @property
    def name(self) -> str:
        return metric_name(self.metric, self.k, ng=self.constraint == "NG")

    @property
    def by_protocol(self) -> bool:
        """The protocol's source reports this number (else sgg-eval computes it under its matching)."""
        return self.name in PROTOCOL_METRICS[self.protocol]

    @property
    def reference(self) -> bool:
        return (self.constraint, self.protocol, self.mode) == ("GC", *REFERENCE)

    @property
    def label(self) -> str:
        if not self.by_protocol:
            source = SOURCES[self.protocol]
            return f"{self.name} by sgg-eval under {self.protocol}'s matching (not {source}'s), {self.mode}"
        return f"{self.name} {self.protocol}, {self.mode}"

    def as_dict(self) -> dict:
        return {**asdict(self), "reference": self.reference, "by_protocol": self.by_protocol}


def run_psg_audit(
    predictions: str, psg: str, root: str = "", *, published: tuple[str, ...] = (), jobs: int = 1
) -> dict:
    """Every variant's value, and a verdict per published value (``"R@20=28.4"``, percent)."""
    for text in published:
        try:
            parse_published(text)
        except ValueError as exc:
            raise InputError(str(exc), field="--published") from None
    modes = ["masks"] if submission_mode(predictions) == "masks" else []
    if not (os.path.isdir(predictions) and is_openpsg_submit(predictions)):
        modes.append("boxes")
    rows, counts, notes = [], {}, []
    for mode in modes:
        try:
            docs = evaluate_protocols(predictions, psg, root, PROTOCOLS, boxes=mode == "boxes", jobs=jobs)
        except InputError as exc:
            if mode == "masks" or not rows:
                raise
            notes.append(f"boxes not audited: {exc.message}")
            continue
        counts[mode] = docs["openpsg"]["counts"]
        for protocol, doc in docs.items():
            for metric, constraint in METRICS:
                for k in RECALL_KS:
                    value = every_metric(doc)[metric_name(metric, k, ng=constraint == "NG")]
                    rows.append(PsgVariant(metric, k, constraint, protocol, mode, value))
    return {
        "input": {"path": os.fspath(predictions), "psg": os.fspath(psg)},
        "task": SGDET.name,
        "counts": counts,
        "notes": notes,
        "variants": [v.as_dict() for v in rows],
        "published": [match_published(text, rows) for text in published],
    }


def psg_audit_markdown(doc: dict) -> str:
    """The audit as Markdown: one row per (metric, protocol, mode), one column per K, the variants each
    protocol's source reports first, those sgg-eval computes beyond them in a table of their own; then the
    verdicts."""
    keyed: dict[tuple, dict[int, float | None]] = {}
    for v in doc["variants"]:
        key = (v["metric"], v["constraint"], v["protocol"], v["mode"], v["reference"], v["by_protocol"])
        keyed.setdefault(key, {})[v["k"]] = v["value"]
    head = ["| metric | protocol | instances | " + " | ".join(f"K={k}" for k in RECALL_KS) + " |"]
    head.append("|---" * (3 + len(RECALL_KS)) + "|")
    own, beyond = list(head), list(head)
    for (metric, constraint, protocol, mode, ref, by_protocol), values in keyed.items():
        name = f"{'ng' if constraint == 'NG' else ''}{'-' if constraint == 'NG' and metric == 'mR' else ''}{metric}"
        name = f"**{name}** (reference)" if ref else name
        cells = ["-" if values.get(k) is None else f"{100 * values[k]:.2f}" for k in RECALL_KS]
        (own if by_protocol else beyond).append(f"| {name} | {protocol} | {mode} | " + " | ".join(cells) + " |")
    lines = [
        f"Panoptic variants of R@K and mR@K: {doc['input']['path']} on {doc['input']['psg']}; percent, the "
        "reference (OpenPSG's evaluator on masks, the published numbers' protocol) in bold",
        "",
        *own,
    ]
    if len(beyond) > len(head):
        lines += [
            "",
            "Beyond the protocols: computed by sgg-eval under each protocol's matching; the protocol's source "
            "does not report these (a published value matching one came from some other code)",
            "",
            *beyond,
        ]
    text = "\n".join(lines) + "\n"
    text += "".join(f"\n- {note}" for note in doc["notes"]) + ("\n" if doc["notes"] else "")
    if doc["published"]:
        text += "\n" + "\n".join(f"- `{p['published']}`: {p['verdict']}" for p in doc["published"]) + "\n"
    return text
