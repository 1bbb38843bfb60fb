"""A model's page on the results site (issue 49): what a debiasing paper's author reads of one model on one task.

- **Metrics as a grid**: families × K, the board's own columns' families first (a protocol's numbers before those
  sgg-eval computes beyond it, marked †), then recall, mean recall, the long-tail groups, IMR, the rest; metrics
  without a K apart. Static HTML: it reads without JavaScript.
- **Charts** (drawn by ``assets/model_page.js`` from the board's data file, ``data/<board>.js``): per-predicate
  values in training-frequency order with the head, body and tail shaded; the confusion heatmap (rows: GT
  predicate; columns: what the matched pair ranks first; each row's share); and, when another model is chosen in
  "compare with", the difference per predicate (gains and losses) and in every grid cell.
- **Image browser**: one test image's GT graph beside the model's top-K predicted graph (boxes on the picture
  when the site has it, on a blank canvas otherwise), filterable by predicate and by "hit by this model, missed
  by the compared one" (and the reverse).
- The largest confusions in words, the settings and the input files' fingerprints.

Everything is a file of the site folder: no CDN, no network; the page works from ``file://``.
"""

from __future__ import annotations

import html
import re

from sgg_eval.report.tables import cell_text

# after the board's own columns: the order families are listed in (the rest follow by name)
FAMILY_ORDER = (
    "R", "mR", "F1", "ngR", "ng-mR", "ng-F1",
    "R_head", "R_body", "R_tail", "mR_head", "mR_body", "mR_tail",
    "ngR_head", "ngR_body", "ngR_tail", "ng-mR_head", "ng-mR_body", "ng-mR_tail",
    "IMR", "wIMR", "ng-IMR", "ng-wIMR", "zR", "ng-zR", "A", "PR", "R_tr", "wR_tr",
)  # fmt: skip


def split_name(name: str) -> tuple[str, str | None]:
    """``R@50`` -> ``("R", "50")``; a metric without K -> ``(name, None)``."""
    family, at, k = name.rpartition("@")
    return (family, k) if at else (name, None)


def _k_key(k: str) -> tuple:
    """Numbers in order (5, 10, ..., 100), then relative ones (``1x``, ``2x``, ``10x``) in order, then the rest."""
    number = re.match(r"\d+", k)
    return (0 if number.group() == k else 1, float(number.group()), k) if number else (2, 0.0, k)


def metric_grid(metrics: dict[str, float | None], beyond: set[str], first: list[str]) -> str:
    """The grid's HTML: one row per family, one column per K; every cell carries its metric for the compare view.
    ``beyond``: metrics beyond the board's protocol (marked †); ``first``: the board's columns."""
    families: dict[str, dict[str, str]] = {}
    scalars = []
    for name in metrics:
        family, k = split_name(name)
        if k is None:
            scalars.append(name)
        else:
            families.setdefault(family, {})[k] = name
    leading = list(dict.fromkeys(split_name(c)[0] for c in first if split_name(c)[0] in families))
    known = [f for f in FAMILY_ORDER if f in families and f not in leading]
    ordered = leading + known + sorted(set(families) - set(leading) - set(known))
    ks = sorted({k for f in families.values() for k in f}, key=_k_key)

    def cell(name: str | None) -> str:
        if name is None:
            return "<td></td>"
        value = metrics[name]
        return (
            f'<td data-m="{html.escape(name)}" data-v="{"" if value is None else value}">{cell_text(name, value)}</td>'
        )

    def mark(names) -> str:
        return " \u2020" if names and all(n in beyond for n in names) else ""

    head = "".join(f"<th>@{html.escape(k)}</th>" for k in ks)
    rows = [
        f"<tr><th>{html.escape(f)}{mark(list(families[f].values()))}</th>"
        + "".join(cell(families[f].get(k)) for k in ks)
        + "</tr>"
        for f in ordered
    ]
    grid = f'<table class="grid"><thead><tr><th>family</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    if scalars:
        lines = "".join(f"<tr><th>{html.escape(n)}{mark([n])}</th>{cell(n)}</tr>" for n in sorted(scalars))
        grid += f'<table class="grid"><tbody>{lines}</tbody></table>'
    return grid


def _table(items: dict[str, str]) -> str:
    lines = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>" for k, v in items.items())
    return f"<table><tbody>{lines}</tbody></table>"


def entry_body(
    *,
    label: str,
    entry: str,
    board_title: str,
    simulated: bool,
    metrics: dict[str, float | None],
    beyond: set[str],
    beyond_label: str,
    columns: list[str],
    settings: dict[str, str],
    inputs: dict[str, str],
    confusions: list[str],
    back: tuple[str, str] = ("../index.html", "all results"),
    browser: bool = True,
) -> str:
    """The page's content (what ``assets/model_page.js`` fills in): ``back`` is the link above it (address, words);
    ``browser``: whether it has the image browser (the benchmarking service's pages do not: their ground truth
    is hidden)."""
    sim = ' <span class="sim">SIMULATED data: not results on a real dataset</span>' if simulated else ""
    note = f'<p class="note">\u2020 {html.escape(beyond_label)}</p>' if beyond else ""
    words = "".join(f"<li>{html.escape(line)}</li>" for line in confusions)
    images = '· <a href="#images">images</a> ' if browser else ""
    browse = '<h2 id="images">Images</h2>\n<div id="browser"></div>\n' if browser else ""
    return f"""<p><a href="{html.escape(back[0])}">&larr; {html.escape(back[1])}</a></p>
<h1>{html.escape(label)} <span class="note">({html.escape(entry)})</span></h1>
<p>{html.escape(board_title)}{sim}</p>
<p class="compare"><label>compare with <select id="compare"><option value="">(none)</option></select></label>
<span class="note" id="compare-note"></span></p>
<nav><a href="#metrics">metrics</a> · <a href="#per-predicate">per predicate</a> · <a href="#confusion">confusion</a>
{images}· <a href="#settings">settings</a></nav>
<h2 id="metrics">Metrics</h2>{note}
<p class="note">Percent (PRk: a mean rank, lower is better). With a model to compare, each cell shows the difference
(this model minus the other), green where this model is higher.</p>
{metric_grid(metrics, beyond, columns)}
<h2 id="per-predicate">Per predicate, by training frequency</h2>
<p class="note">Most frequent predicate in training on the left; head, body and tail shaded. With a model to
compare, its values are the black ticks, and the chart below gives the differences.</p>
<label>value <select id="pp-metric"></select></label>
<div id="pp-chart" class="chart"></div>
<div id="gains" class="chart"></div>
<h2 id="confusion">Predicate confusion</h2>
<p class="note">For GT relations whose subject and object are matched: the predicate the matched pair ranks first.
Each row is the GT predicate's share (training-frequency order); the diagonal is outlined.</p>
<div id="confusion-chart" class="chart"></div>
<ol class="confusions">{words}</ol>
{browse}<h2 id="settings">Settings</h2>
{_table(settings)}
<h2>Input files</h2>
{_table(inputs)}"""


def entry_page(*, title: str, board_key: str, style: str, **parts) -> str:
    """The HTML of one model's page (its charts are drawn from ``../data/<board_key>.js``); ``parts`` are
    :func:`entry_body`'s."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{style}</style>"
        f'<script src="../data/{html.escape(board_key)}.js"></script>'
        '<script src="../assets/model_page.js"></script>'
        f'</head><body data-entry="{html.escape(parts["entry"])}">\n{entry_body(**parts)}\n</body></html>\n'
    )
