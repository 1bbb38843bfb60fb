"""The τ-sweep figure: 15 lines a reader can tell apart, and a legend that covers no data (issue 27)."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import to_hex

from sgg_eval.report import figures


def test_tau_sweep_lines_are_distinguishable_and_the_legend_is_outside(tmp_path, monkeypatch):
    drawn = {}
    monkeypatch.setattr(figures, "save_figure", lambda fig, folder, name: drawn.setdefault("fig", fig) and [])
    taus = np.linspace(0, 1, 11)
    methods = ["Baseline", "TDE", "DLFE", "NICE", "Reweight", "RTPB(CB)", "PKO"]
    curves = {f"{b} {m}": (taus, taus * 0.1 + i) for b in ("Motifs", "VCTree") for i, m in enumerate(methods)}
    curves["PKO-only"] = (taus, 1 - taus)
    figures.wimr_vs_tau(curves, 20, str(tmp_path), simulated=True)
    ax = drawn["fig"].axes[0]
    look = {
        line.get_label(): (to_hex(line.get_color()), line.get_linestyle(), line.get_marker()) for line in ax.get_lines()
    }
    assert len(look) == 15 and len(set(look.values())) == 15  # no two lines drawn alike
    for m in methods:  # a method keeps its colour across backbones; a backbone keeps its line style
        assert look[f"Motifs {m}"][0] == look[f"VCTree {m}"][0]
        assert look[f"Motifs {m}"][1] != look[f"VCTree {m}"][1]
    assert len({look[f"Motifs {m}"][0] for m in methods}) == len(methods)
    assert look["PKO-only"][0] == "#000000"
    drawn["fig"].canvas.draw()
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1  # right of the axes: it covers no line
