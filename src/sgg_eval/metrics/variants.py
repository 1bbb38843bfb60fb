"""The variants of R@K and mR@K that published numbers mix, from one evaluation, and which of them a
published number is (``sgg-eval audit``; definitions and sources in ``docs/variants.md``).

Every variant is a reduction of the same accumulator (``reduce.Accumulator``), along four dimensions:

- constraint: graph-constrained ``GC`` (one predicate per pair; the reference) or ``NG`` (no constraint), and
  under Open Images V6 ``top-2`` (each pair's two best predicates, the OI evaluator's; ``OIVariant``);
- aggregation, for R@K: ``per-image`` mean of the image's recall (the reference) or ``pooled`` (hits over
  all GT rows of all images; ``micro`` is the OI evaluator's pooled recall, the OIv6 tables' R@K); for mR@K:
  ``per-image`` (per predicate, the mean over the images containing it of the image's recall of its rows; the
  reference), ``pooled`` (per predicate, its hits over its rows) or
  ``present-only`` (the per-image variant averaged over the predicates present in the evaluated GT only;
  the first two average over all C predicates, an absent one counting 0, as the reference does);
- protocol: images without any predicted pair ``skipped`` (the reference) or counted as all-miss (``strict``);
- images: ``all`` evaluated images (the reference) or the first N of the file.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from itertools import product

import numpy as np

from sgg_eval.core.defaults import RECALL_KS
from sgg_eval.metrics.reduce import Accumulator, weighted_mean

CONSTRAINTS = ("GC", "NG")
AGGREGATIONS = {"R": ("per-image", "pooled"), "mR": ("per-image", "pooled", "present-only")}
# The variants' two treatments of an image without a predicted pair (the reference's, and strict's as all-miss).
SKIPPED, AS_MISSES = "skipped", "strict"
PROTOCOLS = (SKIPPED, AS_MISSES)
FAMILY = {"GC": "gc", "NG": "ng"}


@dataclass(frozen=True)
class Variant:
    metric: str  # "R" | "mR"
    k: int
    constraint: str  # "GC" | "NG"
    aggregation: str  # see AGGREGATIONS
    protocol: str  # "skipped" | "strict"
    images: str  # "all" | "first N"
    value: float | None

    @property
    def reference(self) -> bool:
        return (self.constraint, self.aggregation, self.protocol, self.images) == ("GC", "per-image", "skipped", "all")

    @property
    def by_protocol(self) -> bool:
        """Every box variant is one the reference evaluator defines (R and mR, GC and NG)."""
        return True

    @property
    def label(self) -> str:
        return f"{self.metric}@{self.k} {self.constraint}, {self.aggregation}, {self.protocol}, {self.images} images"

    def as_dict(self) -> dict:
        return {**asdict(self), "reference": self.reference}


@dataclass(frozen=True)
class OIVariant(Variant):
    """A variant of an Open Images V6 audit: R@K's reference is the OI evaluator's (``top-2`` predicates per pair,
    ``micro``, images without a predicted pair counted as misses: ``strict``); mR@K's stays the VG-style one."""

    @property
    def reference(self) -> bool:
        if self.metric != "R":
            return super().reference
        return (self.constraint, self.aggregation, self.protocol, self.images) == ("top-2", "micro", "strict", "all")


# SGG-Benchmark's evaluator against Scene-Graph-Benchmark.pytorch's (``sgg-eval audit --protocol sgg-benchmark``):
# the IoU objects match by, and the test GT (every relation, or one predicate per pair drawn as its loader draws)
TOOLKIT_IOUS = {"sgb": "IoU +1 (Scene-Graph-Benchmark)", "sgg_benchmark": "IoU +1 in intersection (SGG-Benchmark)"}


@dataclass(frozen=True)
class ToolkitVariant(Variant):
    """A variant of an SGG-Benchmark audit: the box variants with the ``iou`` objects match by and the ``gt`` the
    test relations come from. Its reference is SGG-Benchmark's evaluator: its IoU, one predicate per pair (or the
    GT as the store holds it), images without a predicted pair counted as misses, GC, per image."""

    iou: str = ""
    gt: str = ""
    reference_gt: bool = False

    @property
    def reference(self) -> bool:
        own = self.iou == TOOLKIT_IOUS["sgg_benchmark"] and self.reference_gt
        return own and (self.constraint, self.aggregation, self.protocol, self.images) == (
            "GC", "per-image", AS_MISSES, "all")  # fmt: skip

    @property
    def label(self) -> str:
        return f"{super().label}, {self.iou}, GT {self.gt}"


def toolkit_variants(rows: list[Variant], iou: str, gt: str, reference_gt: bool) -> list[ToolkitVariant]:
    """``rows`` (the box variants of one evaluation) as SGG-Benchmark audit variants of IoU ``iou`` (a key of
    ``TOOLKIT_IOUS``) on test GT ``gt``; ``reference_gt``: whether that GT is the one its loader gives."""
    return [ToolkitVariant(**asdict(row), iou=TOOLKIT_IOUS[iou], gt=gt, reference_gt=reference_gt) for row in rows]


def oiv6_variants(rows: list[Variant], values: list[tuple[str, dict]]) -> list[OIVariant]:
    """``rows`` (the box variants) under the OIv6 protocol's reference, with the OI evaluator's R@K, micro and per
    image, of each image set of ``values`` (``(images, metrics)`` as ``metrics.oiv6.oiv6_values`` gives them)."""
    out = [OIVariant(**asdict(row)) for row in rows]
    for images, metrics in values:
        for aggregation, name in (("micro", "R"), ("per-image", "R_per_image")):
            for k in RECALL_KS:
                out.append(OIVariant("R", k, "top-2", aggregation, "strict", images, metrics[f"{name}@{k}"]))
    return out


def _ratio(num: float, den: float) -> float | None:
    return None if den == 0 else float(num / den)


def recall(acc: Accumulator, constraint: str, k: int, aggregation: str, protocol: str) -> float | None:
    """R@K: ``Σ_i hits_i / M_i / n`` (per-image) or ``Σ_i hits_i / Σ_i M_i`` (pooled); strict adds the images
    without a predicted pair to n (and their rows to Σ M) as misses."""
    family, i = FAMILY[constraint], acc.k_index(k)
    if family not in acc.families:
        return None
    strict = protocol == AS_MISSES
    if aggregation == "per-image":
        return _ratio(acc.recall[family][i], acc.images + (acc.missed_images if strict else 0))
    rows = acc.rows_c[1:].sum() + (acc.missed_rows_c[1:].sum() if strict else 0)
    return _ratio(acc.pooled_hits[family][1:, i].sum(), rows)


def mean_recall(acc: Accumulator, constraint: str, k: int, aggregation: str, protocol: str) -> float | None:
    """mR@K: the mean over predicates c of ``mean_{i ∋ c} hits_{i,c} / M_{i,c}`` (per-image) or
    ``Σ_i hits_{i,c} / Σ_i M_{i,c}`` (pooled), over all C predicates (absent: 0), or of the per-image value
    over the predicates present in the evaluated GT only (present-only); strict counts the images without a
    predicted pair (and their rows) as misses."""
    family, i = FAMILY[constraint], acc.k_index(k)
    if family not in acc.families:
        return None
    strict = protocol == AS_MISSES
    if aggregation == "pooled":
        num = acc.pooled_hits[family][1:, i]
        den = acc.rows_c[1:] + (acc.missed_rows_c[1:] if strict else 0)
    else:
        num = acc.per_pred[family][1:, i]
        den = acc.pred_images[1:] + (acc.missed_pred_images[1:] if strict else 0)
    per_c = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    weights = (den > 0).astype(np.float64) if aggregation == "present-only" else np.ones_like(per_c)
    return None if weights.sum() == 0 else weighted_mean(per_c, weights)


def variants(acc: Accumulator, subset: Accumulator | None = None, subset_images: int = 0) -> list[Variant]:
    """Every variant of R@K and mR@K (K = 20/50/100) on all images, and on the first ``subset_images`` images
    when ``subset`` (their accumulator) is given."""
    sets = [("all", acc)] + ([(f"first {subset_images}", subset)] if subset is not None else [])
    out = []
    for images, a in sets:
        for metric, reduce in (("R", recall), ("mR", mean_recall)):
            for constraint, aggregation, protocol, k in product(
                CONSTRAINTS, AGGREGATIONS[metric], PROTOCOLS, RECALL_KS
            ):
                out.append(
                    Variant(
                        metric,
                        k,
                        constraint,
                        aggregation,
                        protocol,
                        images,
                        reduce(a, constraint, k, aggregation, protocol),
                    )
                )
    return out


_PUBLISHED = re.compile(r"^\s*(ng-?)?(m?R)@(\d+)\s*=\s*(\d+(?:\.(\d*))?)\s*$")


def parse_published(text: str, ks: tuple[int, ...] = RECALL_KS) -> tuple[str, int, str | None, float, int]:
    """``"mR@100=12.3"`` → (metric, K, constraint or None, value in percent, decimals printed). ``ngR@K`` and
    ``ng-mR@K`` restrict the match to NG variants; ``R@K`` and ``mR@K`` consider both constraints (the point:
    an NG number published as R@K). ``ks``: the K the audited product reports."""
    m = _PUBLISHED.match(text)
    if not m or int(m.group(3)) not in ks:
        raise ValueError(f"{text!r}: expected R@K, mR@K, ngR@K or ng-mR@K = a percentage, K in {ks}")
    return m.group(2), int(m.group(3)), "NG" if m.group(1) else None, float(m.group(4)), len(m.group(5) or "")


def match_published(text: str, rows: list[Variant]) -> dict:
    """The variants within rounding of a published value (half a unit of its last printed digit), and a
    verdict that warns when the reference variant is not among them: the reference evaluator's own value of
    the published name (the ``reference`` variant for R@K and mR@K; the same but NG for ngR@K and ng-mR@K).
    ``rows``: box variants here, or PSG's (``psg_audit.PsgVariant``)."""
    metric, k, constraint, value, decimals = parse_published(text)
    tolerance = 0.5 * 10.0**-decimals + 1e-9
    candidates = [
        v
        for v in rows
        if v.metric == metric
        and v.k == k
        and v.value is not None
        and (constraint is None or v.constraint == constraint)
    ]
    matches = [v for v in candidates if abs(100 * v.value - value) <= tolerance]

    def is_reference(v) -> bool:  # the reference's own value of the name published (NG for ngR/ng-mR)
        # (a panoptic variant its protocol's source does not report is never the reference's value)
        named = (
            v.reference if constraint is None else v.constraint == constraint and replace(v, constraint="GC").reference
        )
        return named and v.by_protocol

    if any(is_reference(v) for v in matches):
        others = [v.label for v in matches if not is_reference(v)]
        verdict = "the reference variant" + (f" (also within rounding: {'; '.join(others)})" if others else "")
    elif matches:
        verdict = "WARNING not the reference variant: " + "; ".join(v.label for v in matches)
    elif candidates:
        closest = min(candidates, key=lambda v: abs(100 * v.value - value))
        verdict = f"no variant within rounding (closest: {closest.label} = {100 * closest.value:.{decimals + 1}f})"
    else:
        verdict = "no variant of this metric could be computed for this input"
    return {
        "published": text.strip(),
        "matches": [v.label for v in matches],
        "verdict": verdict,
        "reference": any(is_reference(v) for v in matches),
    }


def variants_markdown(rows: list[dict], title: str) -> str:
    """A Markdown table of variants as the audit JSON holds them (``Variant.as_dict``): one row per variant
    (without K), one column per K, values in percent."""
    extra = [c for c in ("iou", "gt") if rows and c in rows[0]]  # an SGG-Benchmark audit's two dimensions
    columns = ("constraint", "aggregation", "protocol", "images", *extra)
    keyed: dict[tuple, dict[int, float | None]] = {}
    for v in rows:
        key = (v["metric"], *(v[c] for c in columns), v["reference"])
        keyed.setdefault(key, {})[v["k"]] = v["value"]
    heads = [{"iou": "IoU", "gt": "test GT"}.get(c, c) for c in columns]
    lines = [
        title,
        "",
        "| metric | " + " | ".join(heads) + " | " + " | ".join(f"K={k}" for k in RECALL_KS) + " |",
        "|---" * (1 + len(columns) + len(RECALL_KS)) + "|",
    ]
    for (metric, *dims, ref), values in keyed.items():
        cells = ["-" if values.get(k) is None else f"{100 * values[k]:.2f}" for k in RECALL_KS]
        name = f"**{metric}** (reference)" if ref else metric
        lines.append(f"| {name} | " + " | ".join(dims) + " | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
