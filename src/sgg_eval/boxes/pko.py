"""PKO, Predicate Knowledge on Objects (docs/definitions.md §5; Li et al. 2022, §4, Eq. 2), PKO-only, and
blind replacement.

With training counts ``A^s[p, s]`` (subjects under predicate p) and ``A^o[p, o]``, and smoothing ε:

    Ã^s[p, s] = (A^s[p, s] + ε) / Σ_s' (A^s[p, s'] + ε)        (distribution of subjects under p)
    P^s(k | i) = Ã^s[k, i] / Σ_c Ã^s[c, i]                      (predicates given subject class i)
    b[i, j, k] = log P^s(k | i) + log P^o(k | j)
    z = ẑ + λ · b   on the predicate columns k = 1..C; the background column is unchanged by default.

Sign: the typeset Eq. 2 shows minus signs, but the paper's text and results (PKO helps predicates of
limited compositional diversity, e.g. *parked on* given *car*) need the prior to *raise* them; we add it.
Saved probabilities become logits by ``log(max(p, clip))``. PKO-only sets the predicate columns to ``λ · b``
and keeps the model's background column (so pairs are still ranked by the model's relatedness).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from sgg_eval.core.defaults import BLIND_K, EPS, LAM
from sgg_eval.core.errors import InputError
from sgg_eval.core.tasks import task_spec
from sgg_eval.data.store import write_predictions
from sgg_eval.data.types import PredictionMeta, PredImage, check_predcls_pairs
from sgg_eval.metrics.names import metric_name


@dataclass(frozen=True)
class PKOParams:
    """``lam`` (λ, the paper uses 1), ``eps`` (ε added to every count so zero counts stay finite) and
    ``prob_clip`` (floor before ``log p``). The background column is always kept: the paper defines the
    prior on predicates only."""

    lam: float = LAM
    eps: float = EPS
    prob_clip: float = 1e-12

    def __post_init__(self) -> None:
        if not np.isfinite(self.lam) or abs(self.lam) > 1e6:
            raise InputError(f"lambda = {self.lam} must be a finite number (|lambda| <= 1e6)", field="lam")
        if not (np.isfinite(self.eps) and 0 < self.eps <= 1e6):
            raise InputError(f"eps = {self.eps} must be in (0, 1e6]", field="eps")
        if not (np.isfinite(self.prob_clip) and 0 < self.prob_clip < 1):
            raise InputError(f"prob_clip = {self.prob_clip} must be in (0, 1)", field="prob_clip")


def pko_prior(subject_predicate: np.ndarray, object_predicate: np.ndarray, eps: float) -> np.ndarray:
    """``log P^s(k|i)`` and ``log P^o(k|j)`` combined lazily: returns ``[2, C_obj + 1, C_pred]`` with
    ``out[0, i, k-1] = log P^s(k | i)`` and ``out[1, j, k-1] = log P^o(k | j)``; ``b[i, j] = out[0, i] + out[1, j]``.

    Inputs are ``A^s``, ``A^o`` of shape ``[C_pred + 1, C_obj + 1]`` (row/column 0 background, ignored).
    """
    logs = []
    for counts in (subject_predicate, object_predicate):
        a = counts[1:, 1:].astype(np.float64) + eps  # [C_pred, C_obj]: background row/column dropped
        tilde = a / a.sum(axis=1, keepdims=True)  # Ã[p, s]: distribution of classes under p
        cond = tilde / tilde.sum(axis=0, keepdims=True)  # P(k | i): normalise over predicates
        log_cond = np.zeros((a.shape[1] + 1, a.shape[0]))  # row 0 (background class) stays 0, never used
        log_cond[1:] = np.log(cond).T
        logs.append(log_cond)  # [C_obj + 1, C_pred]
    return np.stack(logs)


def prior_bias(prior: np.ndarray, subj_labels: np.ndarray, obj_labels: np.ndarray) -> np.ndarray:
    """``b[pair, k - 1]`` for the pairs' subject and object classes."""
    return prior[0][subj_labels] + prior[1][obj_labels]


def to_logits(rel_scores: np.ndarray, score_kind: str, clip: float) -> np.ndarray:
    """Logits as float64: logits pass through, probabilities go through ``log`` (clipped)."""
    x = rel_scores.astype(np.float64)
    return x if score_kind == "logits" else np.log(np.maximum(x, clip))


def apply_pko_image(
    pred: PredImage, labels: np.ndarray, prior: np.ndarray, params: PKOParams, score_kind: str, *, only: bool = False
) -> PredImage:
    """One image: ``z = ẑ + λ b`` (or PKO-only ``z = λ b``) on predicate columns; only scores change.

    ``labels`` are the object classes the prior conditions on: the GT labels in PredCls, the model's own
    predicted labels in SGCls and SGDet.
    """
    z = to_logits(pred.rel_scores, score_kind, params.prob_clip)
    if len(pred.pairs):
        b = prior_bias(prior, labels[pred.pairs[:, 0]], labels[pred.pairs[:, 1]])
        z[:, 1:] = params.lam * b if only else z[:, 1:] + params.lam * b
    return replace(pred, rel_scores=z.astype(np.float32))


def pko_predictions(
    source,
    task: str,
    stats,
    out_path: str | os.PathLike,
    params: PKOParams,
    *,
    only: bool = False,
    model: str = "",
    score_dtype: str = "float32",
) -> int:
    """Stream a prediction source (store or eval_results) through PKO, or PKO-only, into a new store of
    logits; the input is never modified. The prior conditions on the GT labels in PredCls (as the evaluator
    does) and on the model's predicted labels in SGCls and SGDet."""
    if source.score_kind == "ranked":
        raise InputError("PKO needs per-predicate scores; this file only ranks triplets", path=source.path)
    if source.vocab != stats.vocab:
        raise InputError("class or predicate names differ from the statistics'", path=source.path)
    prior = pko_prior(stats.subject_predicate, stats.object_predicate, params.eps)
    method = "pko_only" if only else "pko"
    meta = PredictionMeta(
        task,
        "logits",
        source.vocab,
        model or f"{os.path.basename(source.path)}+{method}",
        source.simulated,
        f"{method} of {source.path}",
        {
            "simulated": source.simulated,
            "pko": {"lam": params.lam, "eps": params.eps, "only": only},
            "derived_from": os.path.basename(source.path),
        },
    )

    def images() -> Iterator[PredImage]:
        for gt, pred in source.pairs():
            if task_spec(task).gt_labels:
                check_predcls_pairs(gt, pred, source.path)
            labels = gt.labels if task_spec(task).gt_labels else pred.labels
            yield apply_pko_image(pred, labels, prior, params, source.score_kind, only=only)

    return write_predictions(out_path, meta, images(), score_dtype=score_dtype)


def tail_predicates(num_pairs: np.ndarray, n: int) -> list[int]:
    """The ``n`` predicate ids with the fewest composable pairs ``n_c`` (ties: lower id), excluding n_c = 0."""
    ids = np.arange(1, len(num_pairs))
    ids = ids[num_pairs[1:] > 0]
    return [int(i) for i in ids[np.argsort(num_pairs[ids], kind="stable")][:n]]


def blind_replace_image(
    pred: PredImage, labels: np.ndarray, triplet_counts: np.ndarray, chosen: list[int], num_pairs: np.ndarray
) -> tuple[PredImage, int]:
    """Replace the predicted predicate of every pair whose class pair was seen with a chosen predicate in
    training by that predicate (fewest n_c wins). The pair's best logit is swapped into the chosen column
    (nudged up by one ulp so a tie cannot leave a lower id the argmax), so its GC triplet score and rank stay
    as they were; only the predicate changes. Returns (image, number of pairs replaced)."""
    if not chosen or len(pred.pairs) == 0:
        return pred, 0
    z = pred.rel_scores.astype(np.float64).copy()
    s, o = labels[pred.pairs[:, 0]], labels[pred.pairs[:, 1]]
    order = sorted(chosen, key=lambda c: (num_pairs[c], c))  # the one with the smallest n_c first
    target = np.zeros(len(z), dtype=np.int64)
    for c in reversed(order):  # later (smaller n_c) assignments win
        target[triplet_counts[s, o, c] > 0] = c
    rows = np.flatnonzero(target)
    if len(rows):
        best = 1 + z[rows, 1:].argmax(axis=1)
        top, old = z[rows, best].copy(), z[rows, target[rows]].copy()
        z[rows, target[rows]] = top
        z[rows, best] = np.where(best == target[rows], top, old)
        # a tie at the top with a lower id would still win the argmax: lift the chosen column just above
        z[rows, target[rows]] = np.nextafter(top, np.inf)
    return replace(pred, rel_scores=z), int(len(rows))


def blind_replacement(source, stats, task: str, *, max_n: int = 6, k: int = BLIND_K) -> tuple[list[dict], list[str]]:
    """Paper Table 1: for N = 0..max_n, replace the predictions on pairs composable with the N predicates of
    fewest n_c (training) and report mR@k, its improvement over N = 0 and how many pairs were replaced.
    Returns the rows and the misuse warnings of the file itself (those of the N = 0 evaluation)."""
    from sgg_eval.metrics.engine import evaluate, require_evaluated  # local: pko needs no engine
    from sgg_eval.metrics.misuse import WARNING
    from sgg_eval.metrics.options import EvalOptions

    n_c = stats.num_pairs
    available = int((n_c[1:] > 0).sum())
    if not isinstance(max_n, (int, np.integer)) or not 0 <= max_n <= available:
        raise InputError(
            f"max_n = {max_n} must be in [0, {available}] (the predicates seen in training)", field="max_n"
        )
    rows, base, warnings = [], None, []
    for n in range(max_n + 1):
        chosen = tail_predicates(n_c, n)
        replaced = 0

        def replaced_pairs():
            nonlocal replaced
            for gt, pred in source.pairs():
                labels = gt.labels if task_spec(task).gt_labels else pred.labels
                logits = to_logits(pred.rel_scores, source.score_kind, 1e-12)
                new, count = blind_replace_image(
                    replace(pred, rel_scores=logits), labels, stats.triplet_counts, chosen, n_c
                )
                replaced += count
                yield gt, new

        res = evaluate(
            replaced_pairs(),
            source.vocab,
            EvalOptions(task=task, order=source.order, score_kind="logits"),
            source=source.path,
        )
        require_evaluated(res, source.path, None)
        value = res["metrics"][metric_name("mR", k)]
        base = value if n == 0 else base
        warnings = [note for note in res["notes"] if note.startswith(WARNING)] if n == 0 else warnings
        rows.append(
            {
                "N": n,
                "predicate": source.vocab.predicate_classes[chosen[-1] - 1] if chosen else "-",
                "num_type_pairs": int(n_c[chosen[-1]]) if chosen else None,
                metric_name("mR", k): value,
                "improvement": value - base,
                "pairs_replaced": replaced,
            }
        )
    return rows, warnings
