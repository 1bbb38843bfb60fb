"""What a metrics document's numbers were computed over (issue 48's audit): for each group of its metrics, the
**image set** (how many images counted, of how many, by which rule), the **constraint** (one predicate per pair,
none, one-to-one), the **pooling** (mean over images, pooled over GT rows, macro over samples), the **failure
rule** and **K**. The text-graph protocols write these facts into their documents (``facts``); for the box
protocols' documents they are read off the counts. :func:`differences` says where two groups part, so that a
table setting an MLLM's no-constraint recall on 1,000 images beside graph-constrained baselines on 2,186 says so.
"""

from __future__ import annotations

from sgg_eval.core.defaults import RECALL_KS
from sgg_eval.core.protocols import BY_NAME
from sgg_eval.metrics.names import metric_name

GRAPH = "graph constraint (one predicate per pair)"
NONE = "no graph constraint (every predicate counts)"
ANY = "none: any answered triplet may hit any GT row"
PER_IMAGE = "mean over images of each image's recall"
POOLED = "pooled over GT rows"
AXES = ("images", "constraint", "pooling", "failures", "k")


def fact(metrics, counted: int, of: int, rule: str, constraint: str, pooling: str, failures: str, k: str) -> dict:
    """One group of metrics and what it was computed over (module docstring)."""
    return {
        "metrics": list(metrics),
        "images": {"counted": int(counted), "of": int(of), "rule": rule},
        "constraint": constraint,
        "pooling": pooling,
        "failures": failures,
        "k": k,
    }


def facts_of(doc: dict) -> list[dict]:
    """The facts of a metrics document: its own, or (a box protocol's document) read off its counts."""
    if "facts" in doc:
        return doc["facts"]
    counts = doc.get("counts", {})
    if "images_evaluated" not in counts or "images_input" not in counts:
        raise ValueError("not an sgg-eval metrics document (no facts, no image counts)")
    strict = doc.get("protocol") in BY_NAME and BY_NAME[doc["protocol"]].counts_unpredicted
    rule = "images with GT relations" + (", those without a predicted pair as 0" if strict else ", those without a "
                                          "predicted pair skipped")  # fmt: skip
    failures = "ranked predictions: none"
    k = f"top K of the ranked list, K = {', '.join(map(str, RECALL_KS))}"
    counted, of = counts["images_evaluated"], counts["images_input"]
    return [
        fact([metric_name("R", k_) for k_ in RECALL_KS] + [metric_name("mR", k_) for k_ in RECALL_KS],
             counted, of, rule, GRAPH, PER_IMAGE, failures, k),
        fact([metric_name("R", k_, ng=True) for k_ in RECALL_KS] + [metric_name("mR", k_, ng=True) for k_ in RECALL_KS],
             counted, of, rule, NONE, PER_IMAGE, failures, k),
    ]  # fmt: skip


def differences(a: dict, b: dict) -> list[str]:
    """Where two facts part, one phrase per axis (empty: computed alike)."""
    out = []
    ia, ib = a["images"], b["images"]
    if (ia["counted"], ia["of"]) != (ib["counted"], ib["of"]) or ia["rule"] != ib["rule"]:
        out.append(f"images: {ia['counted']:,} of {ia['of']:,} ({ia['rule']}) vs {ib['counted']:,} of {ib['of']:,} "
                   f"({ib['rule']})")  # fmt: skip
    for axis in AXES[1:]:
        if a[axis] != b[axis]:
            out.append(f"{axis}: {a[axis]} vs {b[axis]}")
    return out


def facts_markdown(named_docs: list[tuple[str, dict]]) -> str:
    """Each document's facts as a table, then every headline pair that parts (the first group of each)."""
    lines = ["| result | metrics | images | constraint | pooling | failures | K |", "|---|---|---|---|---|---|---|"]
    for name, doc in named_docs:
        for f in facts_of(doc):
            shown = ", ".join(f["metrics"][:4]) + (", ..." if len(f["metrics"]) > 4 else "")
            images = f"{f['images']['counted']:,} of {f['images']['of']:,}: {f['images']['rule']}"
            lines.append(f"| {name} | {shown} | {images} | {f['constraint']} | {f['pooling']} | {f['failures']} | "
                         f"{f['k']} |")  # fmt: skip
    heads = [(name, facts_of(doc)[0]) for name, doc in named_docs]
    flags = []
    for i, (na, fa) in enumerate(heads):
        for nb, fb in heads[i + 1 :]:
            parts = differences(fa, fb)
            if parts:
                flags.append(f"- **{na} ({fa['metrics'][0]}) vs {nb} ({fb['metrics'][0]}) are not comparable**: "
                             + "; ".join(parts))  # fmt: skip
    if len(heads) > 1:
        lines += ["", *(flags or ["- every headline was computed alike: the numbers can be compared"])]
    return "\n".join(lines) + "\n"
