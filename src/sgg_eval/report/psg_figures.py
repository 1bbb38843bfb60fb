"""The SGBench paper's Fig. 3 for panoptic SGG: pair recall PR@50 against predicate rank PRk, one point per
method (up and to the left is better: pairs found, and their predicate ranked first). PNG and SVG, written
as ``report.figures`` writes (no timestamps, fixed hash salt: the same numbers give the same files)."""

from __future__ import annotations

from sgg_eval.metrics.names import metric_name
from sgg_eval.report.figures import note_simulated, plt, save_figure


def pr_vs_prank(
    points: dict[str, tuple[float | None, float | None]], caption: str, folder: str, simulated: bool
) -> list[str]:
    """``points``: method -> (PR@50 as a fraction, PRk); methods with either undefined are left out."""
    fig, ax = plt.subplots(figsize=(6.5, 4.8))
    shown = {m: (pr, rank) for m, (pr, rank) in points.items() if pr is not None and rank is not None}
    span = max((r for _, r in shown.values()), default=1.0) or 1.0
    placed: list[tuple[float, float]] = []
    for method, (pr, rank) in sorted(shown.items(), key=lambda kv: (kv[1][1], kv[1][0])):
        ax.scatter(rank, 100 * pr, s=40, color="tab:blue", zorder=3)
        # a label near an earlier one goes below its point, so close methods stay readable
        crowded = any(abs(rank - r) < 0.2 * span and abs(100 * pr - y) < 3 for r, y in placed)
        offset = (5, -13) if crowded else (5, 4)
        ax.annotate(method, (rank, 100 * pr), xytext=offset, textcoords="offset points", fontsize=9)
        placed.append((rank, 100 * pr))
    ax.set_xlabel("PRk: mean rank of the GT predicate on its pair (0 is best; lower is better)")
    ax.set_ylabel(f"{metric_name('PR', 50)}: pair recall (%)")
    ax.set_title(f"Pair recall against predicate rank\n{caption}", fontsize=10)
    ax.grid(True, alpha=0.3)
    if shown:
        ranks = [r for _, r in shown.values()]
        ax.set_xlim(min(0.0, min(ranks)) - 0.1, max(ranks) * 1.2 + 0.2)
    note_simulated(fig, simulated)
    return save_figure(fig, folder, "psg_fig3_pr_vs_prank")
