"""What a published open-vocabulary number is: every rule papers call "novel" or "zero-shot" recall, from one
evaluation, and which of them a published value matches (``sgg-eval audit --protocol openvocab``;
docs/openvocab.md).

The rules (``RULES``), each a reduction of the same accumulator, with and without graph constraint:

- ``both ends novel``: recall of the GT triplets whose subject and object are both novel classes, mean over the
  images holding one (OvSGTR's "Ovd Zero Shot Recall", and what VS3 prints as its "zR");
- ``either end novel``: the same with one novel end enough (the line OvSGTR's code has commented out);
- ``novel predicate``: recall of the triplets whose predicate is novel (OvSGTR's "Ovr Zero Shot Recall");
- ``zero-shot triplet``: Scene-Graph-Benchmark's zR, triplets never seen in training (needs a zero-shot set);
- ``mean over novel predicates``: per-predicate recall averaged over the novel predicates, a predicate absent from
  the GT counting 0 (PGSG's novel mR with its 30 predicates; the same with OvSGTR's 15, as VL-IRM's "mzR").

Values are on the images of the GT given: its split key (``split_GLIPunseen`` for VS3 and OvSGTR) is named in
every verdict; PGSG's own number also drops the first 5,000 test images, which the audit does not.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

import numpy as np

from sgg_eval.core.defaults import RECALL_KS
from sgg_eval.metrics.reduce import Accumulator

RULES = {
    "novel_obj": ("both ends novel", "OvSGTR's 'Ovd Zero Shot Recall'; VS3's 'zR'"),
    "either_obj": ("either end novel", "OvSGTR's commented-out rule; no published evaluator"),
    "novel_rel": ("novel predicate", "OvSGTR's 'Ovr Zero Shot Recall'"),
    "zero_shot": ("zero-shot triplet", "Scene-Graph-Benchmark's zR (triplets unseen in training)"),
}
NAMES = ("zR", "R_novel_obj", "R_novel_rel", "R_novel", "mR_novel", "mzR")
_PUBLISHED = re.compile(r"^\s*(ng-)?([A-Za-z_]+)@(\d+)\s*=\s*(\d+(?:\.(\d*))?)\s*$")


@dataclass(frozen=True)
class NovelVariant:
    rule: str
    who: str
    k: int
    constraint: str  # "GC" | "NG"
    value: float | None

    @property
    def label(self) -> str:
        return f"{self.rule} @{self.k} {self.constraint} ({self.who})"


def novel_variants(acc: Accumulator, novel_lists: dict[str, tuple[int, ...]], zeroshot: bool) -> list[NovelVariant]:
    """Every rule at K = 20, 50, 100 from an accumulator of an audit run (``OpenVocab.audit``: its subsets
    ``novel_obj``, ``either_obj``, ``novel_rel``); ``novel_lists``: the novel predicates (1-based) of each
    predicate split, by its name, for the means over novel predicates."""
    out = []
    for k in RECALL_KS:
        for constraint, family in (("GC", "gc"), ("NG", "ng")):
            for subset in ("novel_obj", "either_obj", "novel_rel"):
                sub = acc.subsets[subset]
                ok = sub.images and family in sub.families
                value = sub.recall[family][sub.k_index(k)] / sub.images if ok else None
                out.append(NovelVariant(*RULES[subset], k, constraint, value))
            if zeroshot and acc.zs_images and family in acc.families:
                value = acc.zs_recall[family][acc.k_index(k)] / acc.zs_images
                out.append(NovelVariant(*RULES["zero_shot"], k, constraint, value))
            for name, novel in novel_lists.items():
                per_c = acc.per_predicate_recall(family)[:, acc.k_index(k)] if family in acc.families else None
                value = float(np.mean(per_c[np.asarray(novel) - 1])) if per_c is not None and acc.images else None
                out.append(NovelVariant("mean over novel predicates", f"{name}'s {len(novel)}", k, constraint, value))
    return out


def match_novel(text: str, rows: list[NovelVariant], split_key: str) -> dict:
    """The rules within rounding of a published value ``"zR@50=12.3"`` (name one of ``NAMES``, percent; ``ng-``
    restricts to NG), and a verdict naming the rule, who reports it, and the test images (``split_key``)."""
    m = _PUBLISHED.match(text)
    if not m or m.group(2) not in NAMES or int(m.group(3)) not in RECALL_KS:
        raise ValueError(f"{text!r}: expected NAME@K=percent with NAME one of {', '.join(NAMES)}, K in {RECALL_KS}")
    ng, name, k, value = bool(m.group(1)), m.group(2), int(m.group(3)), float(m.group(4))
    tolerance = 0.5 * 10.0 ** -len(m.group(5) or "") + 1e-9
    candidates = [v for v in rows if v.k == k and v.value is not None and (not ng or v.constraint == "NG")]
    matches = [v for v in candidates if abs(100 * v.value - value) <= tolerance]
    where = f"on the test images of h5 key {split_key}"
    if matches:
        verdict = "matches: " + "; ".join(v.label for v in matches) + f", {where}"
        if name == "zR" and all(v.rule != RULES["zero_shot"][0] for v in matches):
            verdict += (
                f". This zR is not zero-shot recall: it is the recall of the triplets with {matches[0].rule} (VS3 and "
                "OvSGTR print novel-object recall as zR)"
            )
    elif candidates:
        closest = min(candidates, key=lambda v: abs(100 * v.value - value))
        verdict = f"no rule within rounding {where} (closest: {closest.label} = {100 * closest.value:.2f})"
    else:
        verdict = "no rule could be computed for this input"
    return {"published": text.strip(), "matches": [v.label for v in matches], "verdict": verdict}


def novel_markdown(rows: list[dict], title: str) -> str:
    """The rules as a Markdown table: one row per rule and constraint, one column per K, percent."""
    keyed: dict[tuple, dict[int, float | None]] = {}
    for v in rows:
        keyed.setdefault((v["rule"], v["who"], v["constraint"]), {})[v["k"]] = v["value"]
    lines = [title, "", "| rule | reported by | constraint | " + " | ".join(f"K={k}" for k in RECALL_KS) + " |"]
    lines.append("|---" * (3 + len(RECALL_KS)) + "|")
    for (rule, who, constraint), values in keyed.items():
        cells = ["-" if values.get(k) is None else f"{100 * values[k]:.2f}" for k in RECALL_KS]
        lines.append(f"| {rule} | {who} | {constraint} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def as_dicts(rows: list[NovelVariant]) -> list[dict]:
    return [asdict(v) for v in rows]
