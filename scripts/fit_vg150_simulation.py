"""Fit each SIMULATED VG150 debiasing method, per backbone and task (`conf/simulation/default.yaml`, `fitted`), to Li
et al.'s Tables 2-3 (`published/li2022_tables.csv`), and print the fit.

The procedure (docs/decisions.md, "Simulated VG150 models"):

- the world is the pipeline's default after `make repro`: `data/vg150_sim` (scale `default`, seed 0) with its test
  and validation splits and training statistics; the backbones stay as they are (their baselines are the reference
  every method's direction is read against);
- one model's knobs are its method's strengths (`reweight_alpha`; `tde_alpha` and `tde_prior_alpha`; `dlfe_alpha`;
  `rtpb_alpha`; `nice_alpha`) and its `ranking_noise`, over the file's `methods` defaults;
- one evaluation is the pipeline's own: write the model's test predictions with `simulate.models` and score them
  with `sgg_eval.evaluate_file` (protocol reference, wIMR τ = 0.5 as in the paper), reading the 12 published columns;
- the loss is `report.agreement.fit_loss`: the weighted mean of squared log ratios ours/published, R@50 weighted 10
  and mR@50 5 (the columns whose method order the acceptance keeps), plus 10 × the mean squared excess of |log ratio|
  over log 1.2 (the ±20% band the caption counts);
- scipy's Nelder-Mead minimises it from the file's current values; the knobs are clamped to [0, 10] before the
  evaluation, so the simplex may wander out.

It prints, per model, each column ours/published, then how many of the cells are within ±20% and each metric family's
mean |relative difference|. `--write` replaces the `fitted:` block of the YAML (rounded to 3 decimals, the values
the print used), and nothing else. About 2-4 minutes a model on one core:

    .venv/bin/python scripts/fit_vg150_simulation.py --jobs 2               # fit all 30, print
    .venv/bin/python scripts/fit_vg150_simulation.py --only sim_motifs/predcls/tde --write
    .venv/bin/python scripts/fit_vg150_simulation.py --evals 0              # print the current fit only
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import numpy as np

from sgg_eval.api.files import evaluate_file
from sgg_eval.core.tasks import TASKS
from sgg_eval.data.stats import read_stats
from sgg_eval.io.jsonio import load_yaml
from sgg_eval.report.agreement import AGREEMENT_BAND as WITHIN
from sgg_eval.report.agreement import agreement, fit_loss
from sgg_eval.report.published import published_rows
from sgg_eval.report.tables import PAPER_COLUMNS
from sgg_eval.simulate.models import Backbone, simulate_models
from sgg_eval.simulate.params import METHODS, MethodParams, method_settings

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf/simulation/default.yaml"
WEIGHTS = {"R@50": 10.0, "mR@50": 5.0}  # every other column 1
# each method's strengths; every model also has its ranking_noise
STRENGTH = {"reweight": ("reweight_alpha",), "tde": ("tde_alpha", "tde_prior_alpha"), "dlfe": ("dlfe_alpha",)}
STRENGTH |= {"rtpb_cb": ("rtpb_alpha",), "nice": ("nice_alpha",)}


def _paper_labels() -> dict[tuple[str, str], tuple[str, str]]:
    """``(sim_backbone, sim_method) -> (backbone, method)`` as the paper names them: what each simulated VG150 model's
    file in ``conf/model`` declares (the labels the pipeline's tables print and match the published rows on)."""
    models = (load_yaml(path) for path in sorted((ROOT / "conf/model").glob("*.yaml")))
    return {(m["sim_backbone"], m["sim_method"]): (m["backbone"], m["method"]) for m in models if "sim_backbone" in m}


LABELS = _paper_labels()
# the debiasing models, backbone by backbone, task by task, in METHODS' order
MODELS = [(b, t, m) for b in sorted({b for b, _ in LABELS}) for t in TASKS for m in METHODS if (b, m) in LABELS]
MODELS = [model for model in MODELS if model[2] != "baseline"]


def knobs(method: str, x) -> dict:
    """A model's settings from the simplex's point: its strengths and ranking noise, clamped to [0, 10], 3 decimals."""
    names = (*STRENGTH[method], "ranking_noise")
    return {k: min(max(round(float(a), 3), 0.0), 10.0) for k, a in zip(names, x, strict=True)}


def loss(cells: dict[str, tuple[float, float]]) -> float:
    """``report.agreement.fit_loss`` with R@50 weighted 10 and mR@50 5."""
    return fit_loss(cells, WEIGHTS)


class Fit:
    """The pipeline's default world (``data``: ``data/vg150_sim`` after ``make repro``) and the scoring of one model
    on its test split, written into ``folder``."""

    def __init__(self, data: Path, folder: Path):
        self.conf = load_yaml(CONF)
        self.data, self.folder = data, folder
        self.stats = read_stats(data / "stats/stats.h5")
        self.published = {(r["task"], r["backbone"], r["method"]): r for r in published_rows()}

    def current(self, backbone: str, task: str, method: str) -> dict:
        """The model's settings in the file now (defaults, then its fitted override)."""
        return asdict(method_settings(self.conf, backbone, task)[method])

    def columns(self, backbone: str, task: str, method: str, settings: dict) -> dict[str, tuple[float, float]]:
        """``{published column: (published, ours)}`` in percent for one model with ``settings``."""
        out = self.folder / f"{backbone}_{task}_{method}.h5"
        bb = Backbone(backbone, **self.conf["backbones"][backbone])
        splits = self.data / "splits"
        simulate_models(splits / "test.h5", self.stats, bb, task, {method: out}, seed=int(self.conf["seed"]),
                        score_kind=self.conf["score_kind"], score_dtype=self.conf["score_dtype"],
                        val_path=splits / "val.h5", methods={method: MethodParams(**settings)})  # fmt: skip
        doc = evaluate_file(out, task, gt=splits / "test.h5", stats=self.data / "stats/stats.h5", tau=0.5)
        row = self.published[(task, *LABELS[backbone, method])]
        return {c: (float(row[c]), 100 * doc["metrics"][c]) for c in PAPER_COLUMNS if row.get(c)}


def fit_model(fit: Fit, model: tuple[str, str, str], evals: int) -> tuple[dict, dict]:
    """The fitted override of one model (its knobs) and its cells."""
    from scipy.optimize import minimize

    backbone, task, method = model
    start = fit.current(*model)
    x0 = np.array([start[k] for k in (*STRENGTH[method], "ranking_noise")], dtype=float)
    if evals:
        step = np.array([0.3] * len(STRENGTH[method]) + [0.5])  # the first simplex
        simplex = np.vstack([x0, x0 + np.diag(step)])
        res = minimize(
            lambda x: loss(fit.columns(*model, start | knobs(method, x))),
            x0,
            method="Nelder-Mead",
            options={"maxfev": evals, "initial_simplex": simplex, "xatol": 1e-3, "fatol": 1e-5},
        )
        x0 = res.x
    best = knobs(method, x0)
    return best, fit.columns(*model, start | best)


def report(results: dict[tuple[str, str, str], dict]) -> None:
    """Per model its cells, then the summary over them (``report.agreement.agreement`` per metric family)."""
    for model, cells in results.items():
        line = "  ".join(f"{c} {o:.1f}/{p:g}" for c, (p, o) in cells.items())
        print(f"{'/'.join(model):26s} loss {loss(cells):.4f}  {line}")
    flat = [(c.partition("@")[0], p, o) for cells in results.values() for c, (p, o) in cells.items()]
    within, means = agreement(flat)
    print(f"within ±{WITHIN:.0%}: {within} of {len(flat)} cells")
    print("mean |relative difference|: " + ", ".join(f"{c} {100 * d:.1f}%" for c, d in means.items()))


def write_fitted(fitted: dict[tuple[str, str, str], dict]) -> None:
    """Replace the YAML's ``fitted:`` block (backbone, task, then one flow mapping per method), keeping every other
    line; models fitted before and not now keep their values."""
    text = CONF.read_text()
    current = load_yaml(CONF).get("fitted") or {}
    for (backbone, task, method), settings in fitted.items():
        current.setdefault(backbone, {}).setdefault(task, {})[method] = settings
    lines = ["fitted:\n"]
    for backbone in sorted(current):
        lines.append(f"  {backbone}:\n")
        for task in [t for t in TASKS if t in current[backbone]]:
            lines.append(f"    {task}:\n")
            for method in [m for m in METHODS if m in current[backbone][task]]:
                flow = ", ".join(f"{k}: {v}" for k, v in current[backbone][task][method].items())
                lines.append(f"      {method}: {{{flow}}}\n")
    new, n = re.subn(r"^fitted:.*\n(?:  .*\n)*", lambda _: "".join(lines), text, flags=re.M)
    if n != 1:
        sys.exit(f"{CONF}: no single `fitted:` block to replace")
    CONF.write_text(new)


def _fit_one(job: tuple[tuple[str, str, str], int, str]) -> tuple[tuple[str, str, str], dict, dict]:
    """One model's fit (a worker process of ``--jobs``), its predictions in a folder of its own."""
    model, evals, data = job
    with tempfile.TemporaryDirectory() as tmp:
        best, cells = fit_model(Fit(Path(data), Path(tmp)), model, evals)
    print(f"{'/'.join(model)}: {best} loss {loss(cells):.4f}", flush=True)
    return model, best, cells


def main() -> None:
    from concurrent.futures import ProcessPoolExecutor

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", default=[], help="models to fit, as backbone/task/method (default: all 30)")
    ap.add_argument("--evals", type=int, default=40, help="evaluations per model (0: print the current fit)")
    ap.add_argument("--data", default="data/vg150_sim", help="the default world, as `make repro` writes it")
    ap.add_argument("--jobs", type=int, default=1, help="models fitted at once, one process each")
    ap.add_argument("--write", action="store_true", help="write the fitted values into conf/simulation/default.yaml")
    args = ap.parse_args()
    models = [tuple(m.split("/")) for m in args.only] or MODELS
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        sys.exit(f"unknown model {'/'.join(unknown[0])}: give backbone/task/method, e.g. sim_motifs/predcls/tde")
    if not (Path(args.data) / "stats/stats.h5").is_file():
        sys.exit(f"{args.data}: no simulated VG150 world there; run `make repro` first (or give --data)")
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        jobs = [(m, args.evals, args.data) for m in models]
        done = {model: (best, cells) for model, best, cells in pool.map(_fit_one, jobs)}
    report({model: done[model][1] for model in models})
    if args.write:
        write_fitted({model: done[model][0] for model in models})


if __name__ == "__main__":
    main()
