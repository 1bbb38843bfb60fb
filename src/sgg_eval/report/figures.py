"""The paper's figures (PNG and SVG): score heatmaps (Fig. 2), composable pairs (Fig. 3), per-predicate
mR@50 vs IMR@20 (Fig. 4), per-predicate weights (Fig. 5) and wIMR against τ.

Pure plotting over arrays; the caller gathers the numbers. SVGs are written without timestamps and with a
fixed hash salt so the same numbers give the same files.
"""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sgg_eval.data.stats import frequency_order  # noqa: E402
from sgg_eval.io.atomic import atomic_output  # noqa: E402
from sgg_eval.metrics.names import metric_name  # noqa: E402
from sgg_eval.metrics.ranking.families import pair_key  # noqa: E402

plt.rcParams.update({"svg.hashsalt": "sgg-eval", "font.size": 10, "axes.titlesize": 11})
TICK = 9  # predicate-name tick labels: readable at 100% on a page


def save_figure(fig, folder: str, name: str) -> list[str]:
    paths = []
    for ext in ("png", "svg"):
        path = os.path.join(folder, f"{name}.{ext}")
        with atomic_output(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=150, bbox_inches="tight", metadata={"Date": None} if ext == "svg" else {})
        paths.append(path)
    plt.close(fig)
    return paths


def note_simulated(fig, simulated: bool) -> None:
    if simulated:
        fig.text(0.995, 0.005, "SIMULATED data", ha="right", va="bottom", fontsize=8, color="firebrick")


def mean_score_vectors(pairs, num_predicates: int, logits_of) -> tuple[np.ndarray, np.ndarray]:
    """Mean score vector ``[C, C]`` per GT predicate (rows) over predicate columns 1..C (PredCls: the
    prediction of the GT row's own index pair), and the number of GT rows behind each row."""
    total = np.zeros((num_predicates, num_predicates))
    count = np.zeros(num_predicates)
    for gt, pred in pairs:
        if len(gt.rels) == 0 or len(pred.pairs) == 0:
            continue
        key = pair_key(pred.pairs[:, 0], pred.pairs[:, 1])
        order = np.argsort(key)
        gt_key = pair_key(gt.rels[:, 0], gt.rels[:, 1])
        pos = np.clip(np.searchsorted(key[order], gt_key), 0, len(key) - 1)
        found = key[order][pos] == gt_key
        rows = order[pos[found]]
        scores = logits_of(pred.rel_scores[rows])[:, 1:]
        np.add.at(total, gt.rels[found, 2] - 1, scores)
        count += np.bincount(gt.rels[found, 2] - 1, minlength=num_predicates)
    return np.divide(total, count[:, None], out=np.zeros_like(total), where=count[:, None] > 0), count


def score_heatmaps(
    panels: list[tuple[str, str, np.ndarray]], names: list[str], folder: str, simulated: bool
) -> list[str]:
    """Fig. 2: one heatmap per panel ``(title, colour-bar label, matrix)``, rows = GT predicate, columns =
    predicted predicate score."""
    fig, axes = plt.subplots(1, len(panels), figsize=(11 * len(panels), 11.5), layout="constrained")
    for ax, (title, unit, m) in zip(np.atleast_1d(axes), panels):
        im = ax.imshow(m, cmap="viridis", aspect="auto")
        ax.set_title(title)
        ax.set_xticks(range(len(names)), names, rotation=90, fontsize=TICK)
        ax.set_yticks(range(len(names)), names, fontsize=TICK)
        ax.set_xlabel("predicate score (column)")
        ax.set_ylabel("ground-truth predicate")
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.01).set_label(unit)
    fig.suptitle("Mean score vector per ground-truth predicate (PredCls)")
    note_simulated(fig, simulated)
    return save_figure(fig, folder, "fig2_score_heatmaps")


def confusion_heatmaps(
    panels: list[tuple[str, dict]], order: list[int], task: str, folder: str, simulated: bool
) -> list[str]:
    """The predicate confusion matrix per panel ``(title, confusion section)`` (issue 49): rows = GT predicate, columns
    = the predicate its matched pair ranks first, each row as shares of its matched GT rows; both axes in ``order``
    (most frequent in training first), so a head-ward drift is a bright left band."""
    if not panels:  # the compared models' inputs have no per-predicate scores: the figure says so
        fig, ax = plt.subplots(figsize=(8, 2))
        ax.axis("off")
        ax.text(0.5, 0.5, "no confusion matrix: the compared models' inputs rank triplets only", ha="center")
        return save_figure(fig, folder, "confusion_matrix")
    fig, axes = plt.subplots(1, len(panels), figsize=(11 * len(panels), 11.5), layout="constrained")
    for ax, (title, confusion) in zip(np.atleast_1d(axes), panels):
        counts = np.asarray(confusion["counts"], dtype=np.float64)[np.ix_(order, order)]
        rows = counts.sum(axis=1, keepdims=True)
        shares = np.divide(counts, rows, out=np.zeros_like(counts), where=rows > 0)
        names = [confusion["predicates"][c] for c in order]
        im = ax.imshow(shares, cmap="magma", vmin=0, vmax=1, aspect="auto")
        ax.set_title(title)
        ax.set_xticks(range(len(names)), names, rotation=90, fontsize=TICK)
        ax.set_yticks(range(len(names)), names, fontsize=TICK)
        ax.set_xlabel("predicate the matched pair ranks first (most frequent in training first)")
        ax.set_ylabel("ground-truth predicate")
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.01).set_label("share of the GT predicate's matched rows")
    fig.suptitle(f"Predicate confusion matrix ({task})")
    note_simulated(fig, simulated)
    return save_figure(fig, folder, "confusion_matrix")


def composable_pairs(names: list[str], num_pairs: np.ndarray, folder: str, simulated: bool) -> list[str]:
    """Fig. 3: composable (subject, object) class pairs per predicate, descending, log scale."""
    order = np.argsort(-num_pairs, kind="stable")
    fig, ax = plt.subplots(figsize=(14, 5))
    ax.bar(range(len(order)), num_pairs[order], color="steelblue")
    ax.set_yscale("log")
    ax.set_xticks(range(len(order)), [names[i] for i in order], rotation=90, fontsize=TICK)
    ax.set_ylabel("composable subject-object pairs (n_c)")
    ax.set_title("Compositional diversity per predicate (training split)")
    for i, v in enumerate(num_pairs[order]):
        if i >= len(order) - 6:
            ax.text(i, v, str(int(v)), ha="center", va="bottom", fontsize=8)
    note_simulated(fig, simulated)
    return save_figure(fig, folder, "fig3_composable_pairs")


def mr_vs_imr(
    names: list[str], mr50: np.ndarray, imr20: np.ndarray, freq: np.ndarray, model: str, folder: str, simulated: bool
) -> list[str]:
    """Fig. 4: per-predicate mR@50 and IMR@20 for one model, predicates by training frequency."""
    order = frequency_order(freq)
    x = np.arange(len(order))
    fig, ax = plt.subplots(figsize=(14, 5))
    ax.bar(x - 0.2, 100 * mr50[order], width=0.4, label="mR@50 (per predicate)", color="tab:orange")
    ax.bar(x + 0.2, 100 * imr20[order], width=0.4, label="IMR@20 (per predicate)", color="tab:blue")
    ax.set_xticks(x, [names[i] for i in order], rotation=90, fontsize=TICK)
    ax.set_ylabel("recall (%)")
    ax.set_ylim(0, 118)
    ax.set_title(f"Per-predicate mR@50 vs IMR@20, {model}, PredCls (predicates by training frequency)")
    ax.legend(loc="upper center", ncol=2, frameon=False)
    note_simulated(fig, simulated)
    return save_figure(fig, folder, "fig4_mr_vs_imr")


def predicate_weights(
    names: list[str],
    gt_counts: np.ndarray,
    train_counts: np.ndarray,
    weights: np.ndarray,
    tau: float,
    folder: str,
    simulated: bool,
) -> list[str]:
    """Fig. 5: weight of each predicate under R@K (its share of test GT rows), mR/IMR (uniform) and wIMR(τ)
    (``weights``, unnormalised), predicates ordered by training sample count as in Fig. 4."""
    order = frequency_order(train_counts)
    share = gt_counts / gt_counts.sum()
    uniform = np.full(len(names), 1 / len(names))
    w = weights / weights.sum()
    fig, ax = plt.subplots(figsize=(14, 5))
    x = np.arange(len(order))
    ax.plot(x, share[order], "o-", ms=3, label="R@K (share of GT samples)")
    ax.plot(x, uniform[order], "-", label="mR@K / IMR@K (uniform)")
    ax.plot(x, w[order], "s-", ms=3, label=f"wIMR@K (tau = {tau:g})")
    ax.set_yscale("log")
    ax.set_xticks(x, [names[i] for i in order], rotation=90, fontsize=TICK)
    ax.set_ylabel("weight of the predicate")
    ax.set_title("Per-predicate weight under each metric (predicates by training frequency)")
    ax.legend()
    note_simulated(fig, simulated)
    return save_figure(fig, folder, "fig5_predicate_weights")


def wimr_vs_tau(
    curves: dict[str, tuple[np.ndarray, np.ndarray]], k: int, folder: str, simulated: bool, name: str = "tau_sweep"
) -> list[str]:
    """wIMR@k against τ, one line per entry (τ = 0 is IMR, larger τ weighs diverse predicates more).

    A label "Backbone Method" gives the method a colour and the backbone a line style and marker, so two
    backbones of one method read as a pair and 15 lines stay distinguishable; a one-word label (PKO-only,
    or an entry name) is drawn in black or in a colour of its own. The legend stands outside the data."""
    fig, ax = plt.subplots(figsize=(8.5, 4.6))
    parts = {label: label.split(" ", 1) for label in curves}
    methods = list(dict.fromkeys(p[-1] for p in parts.values()))
    backbones = list(dict.fromkeys(p[0] for p in parts.values() if len(p) == 2))
    palette = plt.get_cmap("tab10" if len(methods) <= 10 else "tab20").colors
    styles, markers = ("-", "--", ":", "-."), ("o", "s", "^", "D")
    for label, (taus, values) in curves.items():
        part = parts[label]
        if len(part) == 2:
            b = backbones.index(part[0]) % len(styles)
            color, style, marker = palette[methods.index(part[1]) % len(palette)], styles[b], markers[b]
        elif backbones:  # a one-word entry beside backbone/method pairs (PKO-only): apart, in black
            color, style, marker = "black", "-", "x"
        else:
            color, style, marker = palette[methods.index(part[0]) % len(palette)], "-", "o"
        ax.plot(
            taus, 100 * np.asarray(values), linestyle=style, marker=marker, ms=3.5, lw=1.4, color=color, label=label
        )
    ax.set_xlabel("τ (0: IMR; 1: weights proportional to the composable pairs)")
    ax.set_ylabel(f"{metric_name('wIMR', k)} (%)")
    ax.set_title(f"{metric_name('wIMR', k)} against τ (PredCls)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    note_simulated(fig, simulated)
    return save_figure(fig, folder, name)
