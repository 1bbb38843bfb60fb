"""Fit each SIMULATED VG150 debiasing method, per backbone and task (`conf/simulation/default.yaml`, `fitted`), to Li
et al.'s Tables 2-3 (`published/li2022_tables.csv`), and print the fit.

The procedure (docs/decisions.md, "Simulated VG150 models"):

- the world is the pipeline's default after `make repro`: `data/vg150_sim` (scale `default`, seed 0) with its test
  and validation splits and training statistics; the backbones stay as they are (their baselines are the reference
  every method's direction is read against);
- one model's knobs are its method's strengths (`reweight_alpha`; `tde_alpha` and `tde_prior_alpha`; `dlfe_alpha`;
  `rtpb_alpha`; `nice_alpha`), its `ranking_noise` and, but for TDE (the baseline's model at inference), its
  `discrimination`, over the file's `methods` defaults;
- one evaluation is the pipeline's own: write the model's test predictions with `simulate.models` and score them
  with `sgg_eval.evaluate_file` (protocol reference, wIMR τ = 0.5 as in the paper), reading the 12 published columns;
- the loss is `report.agreement.fit_loss`: the weighted mean of squared log ratios ours/published, R@50 weighted 10
  and mR@50 5 (the columns whose method order the acceptance keeps), plus 10 × the mean squared excess of |log ratio|
  over log 1.2 (the ±20% band the caption counts); `--band` and `--band-weight` narrow that band and weigh it more
  (the last refit: 0.15 and 40, so that cells just outside the caption's band count);
- scipy's Nelder-Mead minimises it from the file's current values; the knobs are clamped to [0, 10]
  (`discrimination` to [0, 1]) before the evaluation, so the simplex may wander out;
- the PKO-only row is scored the pipeline's way too: `conf/pko/default.yaml`'s PKO-only on the model it names in
  `pko_only_from` (`sim_motifs_pko_source`), whose one knob is its `ranking_noise` on the background column, fitted
  against the paper's PKO-only row (three more models: `sim_motifs/<task>/pko_source`); its σ was set by a scan
  (`--noise`), at the value nearest the middle of the window the paper's order leaves PKO-only's mR@50;
- `--order` adds the paper's method order on R@50 and mR@50 (`order_loss`): the other rows of the model's table
  (its backbone's baseline and PKO rows, the task's PKO-only row, and the other methods) are read from the pipeline's
  `reports/tables/published_vs_reproduced.csv`, and the models of one backbone and task are fitted one after
  another, each against the values the ones before it reached (`--order-weight`: the term's weight, 20 by default).

It prints, per model, each column ours/published, then how many of the cells are within ±20% and each metric family's
mean |relative difference|. `--write` replaces the `fitted:` block of the YAML (rounded to 3 decimals, the values
the print used), and nothing else. About 2-4 minutes a model on one core:

    .venv/bin/python scripts/fit_vg150_simulation.py --jobs 2               # fit all 33, print
    .venv/bin/python scripts/fit_vg150_simulation.py --only sim_motifs/predcls/tde --write
    .venv/bin/python scripts/fit_vg150_simulation.py --evals 0              # print the current fit only
    .venv/bin/python scripts/fit_vg150_simulation.py --order --jobs 2       # with the paper's method order
    .venv/bin/python scripts/fit_vg150_simulation.py --order --band 0.15 --band-weight 40 --jobs 2 --write
    .venv/bin/python scripts/fit_vg150_simulation.py --only sim_motifs/sgdet/pko_source --noise 4 4.5 5   # a scan
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import numpy as np

from sgg_eval.api.files import evaluate_file
from sgg_eval.boxes.pko import pko_predictions
from sgg_eval.boxes.sources import open_predictions
from sgg_eval.core.tasks import TASKS
from sgg_eval.data.stats import read_stats
from sgg_eval.io.jsonio import load_yaml
from sgg_eval.pipeline.model_stages import pko_params
from sgg_eval.report.agreement import AGREEMENT_BAND as WITHIN
from sgg_eval.report.agreement import BAND_WEIGHT, against_order, agreement, fit_loss
from sgg_eval.report.published import ORDERED, order_tables, published_rows
from sgg_eval.report.tables import PAPER_COLUMNS
from sgg_eval.simulate.models import Backbone, simulate_models
from sgg_eval.simulate.params import PKO_SOURCE, SIMULATED_METHODS, MethodParams, method_settings

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf/simulation/default.yaml"
WEIGHTS = {"R@50": 10.0, "mR@50": 5.0}  # every other column 1
# each method's strengths; every model also has its ranking_noise, and a method that trains its own features (all
# but TDE, which reuses the baseline's model) its discrimination
STRENGTH = {"reweight": ("reweight_alpha",), "tde": ("tde_alpha", "tde_prior_alpha"), "dlfe": ("dlfe_alpha",)}
STRENGTH |= {"rtpb_cb": ("rtpb_alpha",), "nice": ("nice_alpha",), PKO_SOURCE: ()}
TRAINED = ("reweight", "dlfe", "rtpb_cb", "nice")
# a knob's range (every other [0, 10]) and the first simplex's step along it (every other 0.3)
UPPER, STEP = {"discrimination": 1.0}, {"ranking_noise": 0.5, "discrimination": 0.1}


def knob_names(method: str) -> tuple[str, ...]:
    """The settings the fit moves for ``method``: its strengths, ``ranking_noise`` and, for a method that trains its
    own features (``TRAINED``), ``discrimination``."""
    return (*STRENGTH[method], "ranking_noise", *(("discrimination",) if method in TRAINED else ()))


# the order term's weight and its margin (in log: 1%); its columns are report.published.ORDERED
ORDER_WEIGHT, ORDER_MARGIN = 20.0, 0.01
TABLE = "reports/tables/published_vs_reproduced.csv"
# the band the loss's second term counts cells outside of and its weight (fit_loss's defaults: ±20%, 10), and the
# order term's weight: --band, --band-weight and --order-weight set them for one run (a narrower band keeps a margin
# inside the one the caption counts; a heavier order term keeps neighbours 1-3% apart the paper's way round)
FIT = {"band": WITHIN, "band_weight": BAND_WEIGHT, "order_weight": ORDER_WEIGHT}


def _paper_labels() -> dict[tuple[str, str], tuple[str, str]]:
    """``(sim_backbone, sim_method) -> (backbone, method)`` as the paper names them: what each simulated VG150 model's
    file in ``conf/model`` declares (the labels the pipeline's tables print and match the published rows on)."""
    models = (load_yaml(path) for path in sorted((ROOT / "conf/model").glob("*.yaml")))
    return {(m["sim_backbone"], m["sim_method"]): (m["backbone"], m["method"]) for m in models if "sim_backbone" in m}


LABELS = _paper_labels()
# the debiasing models and PKO-only's source, backbone by backbone, task by task, in SIMULATED_METHODS' order
MODELS = [(b, t, m) for b in sorted({b for b, _ in LABELS}) for t in TASKS for m in SIMULATED_METHODS]
MODELS = [model for model in MODELS if (model[0], model[2]) in LABELS and model[2] != "baseline"]


def paper_row(backbone: str, method: str) -> tuple[str, str]:
    """The (backbone, method) of the published row a model is fitted to: PKO-only's source gives the PKO-only row
    (no backbone), every other model its own row (``LABELS``)."""
    return ("-", "PKO-only") if method == PKO_SOURCE else LABELS[backbone, method]


def knobs(method: str, x) -> dict:
    """A model's settings from the simplex's point (:func:`knob_names`), each clamped to its range (``UPPER``, else
    [0, 10]), 3 decimals."""
    names = knob_names(method)
    return {k: min(max(round(float(a), 3), 0.0), UPPER.get(k, 10.0)) for k, a in zip(names, x, strict=True)}


def loss(cells: dict[str, tuple[float, float]]) -> float:
    """``report.agreement.fit_loss`` with R@50 weighted 10 and mR@50 5, and ``FIT``'s band."""
    return fit_loss(cells, WEIGHTS, FIT["band"], FIT["band_weight"])


def _compared(mine: dict[str, tuple[float, float]], others: dict[str, dict[str, tuple[float, float]]]):
    """``(mine[c], row[c])`` for every other row and column ``c`` of ``ORDERED`` both have: the pairs whose order
    :func:`order_loss` and :func:`wrong_pairs` read, each cell ``(published, ours)``."""
    for row in others.values():
        for c in ORDERED:
            if c in mine and c in row:
                yield mine[c], row[c]


def order_loss(mine: dict[str, tuple[float, float]], others: dict[str, dict[str, tuple[float, float]]]) -> float:
    """The paper's method order on ``ORDERED``, for one model's cells ``mine`` (``{column: (published, ours)}``)
    against the other rows of its table (``{row: {column: (published, ours)}}``):

        w · Σ_{o, c} max(0, s · log(ours_o / ours_m) + δ)²,  s = sign(published_m − published_o)

    over the other rows o and the columns c of ``ORDERED`` where both have a value and the paper's differ (s ≠ 0),
    δ = ``ORDER_MARGIN``, w = ``FIT["order_weight"]`` (``ORDER_WEIGHT`` unless ``--order-weight``): zero when every
    pair keeps the paper's order by more than δ, growing with how far one is the wrong way round (ours floored at
    1e-3, as in ``fit_loss``)."""
    total = 0.0
    for (pm, om), (po, oo) in _compared(mine, others):
        if pm != po:
            sign = 1.0 if pm > po else -1.0
            total += max(0.0, sign * math.log(max(oo, 1e-3) / max(om, 1e-3)) + ORDER_MARGIN) ** 2
    return FIT["order_weight"] * total


def wrong_pairs(mine: dict[str, tuple[float, float]], others: dict[str, dict[str, tuple[float, float]]]) -> int:
    """How many (other row, column of ``ORDERED``) pairs are the other way round from the paper's."""
    return sum(against_order(m, o) for m, o in _compared(mine, others))


def reproduced_table(path: Path) -> dict[tuple[str, str], dict[str, dict[str, tuple[float, float]]]]:
    """``{(task, backbone): {method: {column: (published, ours)}}}`` in percent, from the pipeline's comparison
    table (``TABLE``, fractions), for the rows ``order_loss`` compares a model with: ``report.published.order_tables``,
    which puts a row without a backbone (PKO-only) in each of its task's tables."""
    with open(path, newline="", encoding="utf-8") as fh:
        cells = [
            ((r["Task"], r["Backbone"], r["Method"], r["Metric"]), 100 * float(r["published"]), 100 * float(ours))
            for r in csv.DictReader(fh)
            if r["Metric"] in ORDERED and (ours := r["reproduced"])
        ]
    return order_tables(cells)


class Fit:
    """The pipeline's default world (``data``: ``data/vg150_sim`` after ``make repro``) and the scoring of one model
    on its test split, written into ``folder``."""

    def __init__(self, data: Path, folder: Path):
        self.conf = load_yaml(CONF)
        self.data, self.folder = data, folder
        self.stats = read_stats(data / "stats/stats.h5")
        self.published = {(r["task"], r["backbone"], r["method"]): r for r in published_rows()}
        self.pko = pko_params({"pko": load_yaml(ROOT / "conf/pko/default.yaml")})  # λ, ε as the pipeline reads them

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
        if method == PKO_SOURCE:  # its row is PKO-only on its output, as the pipeline's pko_only stage makes it
            only = out.with_name(f"{out.stem}_pko_only.h5")
            source = open_predictions(str(out), gt=str(splits / "test.h5"))
            pko_predictions(source, task, self.stats, only, self.pko, only=True)
            out = only
        doc = evaluate_file(out, task, gt=splits / "test.h5", stats=self.data / "stats/stats.h5", tau=0.5)
        row = self.published[(task, *paper_row(backbone, method))]
        return {c: (float(row[c]), 100 * doc["metrics"][c]) for c in PAPER_COLUMNS if row.get(c)}


def scan_noise(fit: Fit, model: tuple[str, str, str], values: list[float]) -> list[tuple[float, dict]]:
    """The model's cells at each ``ranking_noise`` in ``values``, its other settings as in the file: how PKO-only's
    source was set (``--noise``; docs/decisions.md), where the minimiser would stop at the edge of the window the
    paper's order leaves it."""
    start = fit.current(*model)
    return [(value, fit.columns(*model, start | {"ranking_noise": value})) for value in values]


def fit_model(fit: Fit, model: tuple[str, str, str], evals: int, others: dict | None = None) -> tuple[dict, dict]:
    """The fitted override of one model (its knobs) and its cells; with ``others`` (the other rows of its table, as
    :func:`order_loss` takes them), the paper's method order is part of the loss."""
    from scipy.optimize import minimize

    backbone, task, method = model
    start = fit.current(*model)
    x0 = np.array([start[k] for k in knob_names(method)], dtype=float)

    def objective(cells: dict) -> float:
        return loss(cells) + (order_loss(cells, others) if others else 0.0)

    if evals:
        step = np.array([STEP.get(k, 0.3) for k in knob_names(method)])  # the first simplex
        simplex = np.vstack([x0, x0 + np.diag(step)])
        res = minimize(
            lambda x: objective(fit.columns(*model, start | knobs(method, x))),
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
            for method in [m for m in SIMULATED_METHODS if m in current[backbone][task]]:
                flow = ", ".join(f"{k}: {v}" for k, v in current[backbone][task][method].items())
                lines.append(f"      {method}: {{{flow}}}\n")
    new, n = re.subn(r"^fitted:.*\n(?:  .*\n)*", lambda _: "".join(lines), text, flags=re.M)
    if n != 1:
        sys.exit(f"{CONF}: no single `fitted:` block to replace")
    CONF.write_text(new)


def _fit_group(job: tuple[list, int, str, dict | None, dict]) -> list[tuple[tuple[str, str, str], dict, dict]]:
    """The fits of a group of models one after another (a worker process of ``--jobs``), their predictions in a
    folder of their own. With ``rows`` (one table of :func:`reproduced_table`), each model's order term reads the
    other rows, the models fitted before it in the group at the values they reached."""
    models, evals, data, rows, settings = job
    FIT.update(settings)  # the run's FIT, into this worker process's copy
    done = []
    with tempfile.TemporaryDirectory() as tmp:
        fit = Fit(Path(data), Path(tmp))
        for model in models:
            label = paper_row(model[0], model[2])[1]
            others = None if rows is None else {m: cells for m, cells in rows.items() if m != label}
            best, cells = fit_model(fit, model, evals, others)
            wrong = "" if others is None else f", {wrong_pairs(cells, others)} pairs against the paper's order"
            print(f"{'/'.join(model)}: {best} loss {loss(cells):.4f}{wrong}", flush=True)
            if rows is not None:
                rows[label] = {c: cells[c] for c in ORDERED if c in cells}
            done.append((model, best, cells))
    return done


def main() -> None:
    from concurrent.futures import ProcessPoolExecutor

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", default=[], help="models to fit, as backbone/task/method (default: all 33)")
    ap.add_argument("--evals", type=int, default=40, help="evaluations per model (0: print the current fit)")
    ap.add_argument("--data", default="data/vg150_sim", help="the default world, as `make repro` writes it")
    ap.add_argument("--jobs", type=int, default=1, help="models fitted at once, one process each")
    ap.add_argument("--write", action="store_true", help="write the fitted values into conf/simulation/default.yaml")
    ap.add_argument("--order", action="store_true", help=f"keep the paper's method order on R@50 and mR@50 ({TABLE})")
    band, band_weight, order_weight = FIT["band"], FIT["band_weight"], FIT["order_weight"]
    ap.add_argument("--band", type=float, default=band, help=f"the loss's band, relative (default {band:g})")
    ap.add_argument(
        "--band-weight", type=float, default=band_weight, help=f"the band term's weight (default {band_weight:g})"
    )
    ap.add_argument(
        "--order-weight", type=float, default=order_weight, help=f"--order's term's weight (default {order_weight:g})"
    )
    ap.add_argument(
        "--noise", type=float, nargs="+", help="print the models' cells at each of these ranking_noise values, no fit"
    )
    args = ap.parse_args()
    FIT.update(band=args.band, band_weight=args.band_weight, order_weight=args.order_weight)
    models = [tuple(m.split("/")) for m in args.only] or MODELS
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        sys.exit(f"unknown model {'/'.join(unknown[0])}: give backbone/task/method, e.g. sim_motifs/predcls/tde")
    if not (Path(args.data) / "stats/stats.h5").is_file():
        sys.exit(f"{args.data}: no simulated VG150 world there; run `make repro` first (or give --data)")
    if args.order and not Path(TABLE).is_file():
        sys.exit(f"{TABLE}: no comparison table here; run `make repro` first")
    if args.noise:
        with tempfile.TemporaryDirectory() as tmp:
            fit = Fit(Path(args.data), Path(tmp))
            for model in models:
                for value, cells in scan_noise(fit, model, args.noise):
                    line = "  ".join(f"{c} {o:.2f}/{p:g}" for c, (p, o) in cells.items())
                    print(f"{'/'.join(model)} ranking_noise {value:g}: loss {loss(cells):.4f}  {line}", flush=True)
        return
    tables = reproduced_table(Path(TABLE)) if args.order else None
    groups: dict = {}  # with --order, a backbone and task's models in one job; else one job per model
    for m in models:
        groups.setdefault((m[0], m[1]) if args.order else m, []).append(m)
    # a group's table: its task, and its backbone as the paper names it
    jobs = [(ms, args.evals, args.data, tables and tables[ms[0][1], LABELS[ms[0][0], "baseline"][0]], FIT)
            for ms in groups.values()]  # fmt: skip
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        done = {model: (best, cells) for group in pool.map(_fit_group, jobs) for model, best, cells in group}
    report({model: done[model][1] for model in models})
    if args.write:
        write_fitted({model: done[model][0] for model in models})


if __name__ == "__main__":
    main()
