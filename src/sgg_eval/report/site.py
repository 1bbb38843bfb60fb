"""The results page: a leaderboard as static files (``index.html`` plus one page per entry), offline.

One sortable table per board (dataset × task, and × protocol for panoptic SGG), with a metric chooser that
fills the last column with any metric the documents hold; each row links to its entry's page
(``report.model_page``: the metrics grid, charts, compare view and image browser, drawn by
``assets/model_page.js`` from the board's ``data/<board>.js``; the settings and input fingerprints). A
panoptic board keeps the numbers its protocol's source reports apart from those sgg-eval computes beyond it:
such a column is marked †, the chooser lists them in a group of their own, and an entry's page marks their
rows of its grid.
The CSS and the index's few lines of JavaScript are inline, the model pages' script and data are files of the
folder (no CDN, no library), so the pages work from ``file://`` with no network.
Pure rendering: the caller gathers the numbers (``pipeline.site_pages``).
"""

from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass, field
from importlib import resources

from sgg_eval.io.atomic import write_text
from sgg_eval.report.confusion import in_words, top_confusions
from sgg_eval.report.model_page import entry_page
from sgg_eval.report.tables import UNSCALED, cell_text


@dataclass(frozen=True)
class SiteRow:
    """One entry on one board: its label, every metric (fractions; None when undefined), per-predicate values
    (metric -> predicate -> fraction), settings and input fingerprints (name -> text)."""

    entry: str
    label: str
    metrics: dict[str, float | None]
    per_predicate: dict[str, dict[str, float]]
    settings: dict[str, str]
    inputs: dict[str, str]
    beyond: dict[str, float | None] = field(default_factory=dict)  # numbers beyond the board's protocol
    beyond_per_predicate: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Board:
    """One table: ``key`` names its entry pages (``entries/<key>--<entry>.html``); ``columns`` are shown,
    ``chosen`` is the chooser's first pick."""

    key: str
    title: str
    simulated: bool
    columns: list[str]
    rows: list[SiteRow] = field(default_factory=list)
    chosen: str = ""
    beyond_label: str = ""  # what the rows' ``beyond`` numbers are ("" where there are none)
    # what its model pages draw beside the rows' numbers (``pipeline.site_data.board_data``): predicates,
    # their training order and groups, each entry's confusion matrix, the image browser's graphs
    data: dict = field(default_factory=dict)


STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 12px}
h1{font-size:22px}h2{font-size:17px;margin-top:32px}table{border-collapse:collapse;margin:8px 0}
th,td{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}th:first-child,td:first-child{text-align:left}
th{cursor:pointer;background:#f4f4f4;user-select:none}
th.sorted::after{content:" \\25BE"}th.asc::after{content:" \\25B4"}
.sim{color:#b22222;font-weight:600}.note{color:#555}select{margin-left:6px}
.bar{display:inline-block;height:11px;background:#4a78b5;vertical-align:middle}
td.bars{text-align:left;width:60%}
"""

PAGE_STYLE = """
nav{margin:6px 0 12px}table.grid th{cursor:default;text-align:left}table.grid td{min-width:54px}
table.grid td .d{display:block;font-size:11px}.up{color:#1a7f37}.down{color:#c62828}
.chart{overflow-x:auto;margin:8px 0}.chart svg{font:10px system-ui,sans-serif}
.panels{display:flex;gap:16px;flex-wrap:wrap}.panel{flex:1 1 480px}.panel h3{font-size:14px;margin:6px 0}
.controls{display:flex;gap:12px;flex-wrap:wrap;align-items:center;margin:6px 0}
ul.triplets{list-style:none;padding:0;margin:4px 0;columns:2}ul.triplets li{font-size:12px}
.hit{color:#1a7f37}.miss{color:#c62828}.dim{color:#888}.compare{background:#f4f7fb;padding:6px 10px}
"""

SCRIPT = """
function cell(row, i){var v=row.cells[i].getAttribute('data-v');return v===''?null:parseFloat(v);}
function sortBy(th){
  var table=th.closest('table'), i=th.cellIndex, body=table.tBodies[0];
  var asc=th.classList.contains('sorted')&&!th.classList.contains('asc');
  table.querySelectorAll('th').forEach(function(h){h.classList.remove('sorted','asc');});
  th.classList.add('sorted'); if(asc){th.classList.add('asc');}
  var rows=Array.prototype.slice.call(body.rows);
  rows.sort(function(a,b){
    if(i===0){var x=a.cells[0].textContent,y=b.cells[0].textContent;return asc?x.localeCompare(y):y.localeCompare(x);}
    var x=cell(a,i),y=cell(b,i);if(x===null)return 1;if(y===null)return -1;return asc?x-y:y-x;});
  rows.forEach(function(r){body.appendChild(r);});
}
function choose(select){
  var table=document.getElementById(select.getAttribute('data-table')), name=select.value;
  var beyond=select.options[select.selectedIndex].hasAttribute('data-beyond');
  var last=table.tHead.rows[0].cells.length-1; table.tHead.rows[0].cells[last].textContent=name+(beyond?' \u2020':'');
  Array.prototype.forEach.call(table.tBodies[0].rows,function(r){
    var v=JSON.parse(r.getAttribute('data-metrics'))[name], c=r.cells[last];
    c.setAttribute('data-v', v===null||v===undefined?'':v);
    c.textContent=v===null||v===undefined?'-':(select.getAttribute('data-unscaled').split(',').indexOf(name)>=0?v.toFixed(2):(100*v).toFixed(2));
  });
}
document.addEventListener('DOMContentLoaded',function(){
  document.querySelectorAll('th').forEach(function(th){th.addEventListener('click',function(){sortBy(th);});});
  document.querySelectorAll('select.metric').forEach(function(s){s.addEventListener('change',function(){choose(s);});choose(s);});
});
"""


def _page(title: str, body: str, script: bool = False) -> str:
    js = f"<script>{SCRIPT}</script>" if script else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style>{js}</head><body>\n{body}\n</body></html>\n"
    )


def entry_page_name(board: Board, row: SiteRow) -> str:
    return f"entries/{board.key}--{row.entry}.html"


def _beyond(board: Board) -> set[str]:
    """The metrics of ``board`` beyond its protocol (in some row's ``beyond`` and no row's ``metrics``)."""
    own = {k for r in board.rows for k in r.metrics}
    return {k for r in board.rows for k in r.beyond} - own


def _board_html(board: Board, n: int) -> str:
    beyond = _beyond(board)
    every = sorted({k for r in board.rows for k in r.metrics} | beyond)
    chosen = board.chosen if board.chosen in every else next((m for m in every if m not in board.columns), "")

    def options(names: list[str], mark: str) -> str:
        return "".join(
            f'<option value="{html.escape(m)}"{mark}{" selected" if m == chosen else ""}>{html.escape(m)}</option>'
            for m in names
        )

    own = [m for m in every if m not in beyond]
    chooser = options(own, "")
    if beyond:
        chooser = (
            f'<optgroup label="the protocol\'s">{chooser}</optgroup>'
            f'<optgroup label="{html.escape(board.beyond_label)}">{options(sorted(beyond), " data-beyond")}</optgroup>'
        )
    names = ["Method", *(f"{c} \u2020" if c in beyond else c for c in board.columns), "chosen"]
    header = "".join(f"<th>{html.escape(c)}</th>" for c in names)
    body = []
    for row in board.rows:
        merged = {**row.beyond, **row.metrics}
        values = {c: merged.get(c) for c in board.columns}
        cells = "".join(f'<td data-v="{"" if v is None else v}">{cell_text(c, v)}</td>' for c, v in values.items())
        data = html.escape(json.dumps(merged, sort_keys=True))
        link = f'<a href="{entry_page_name(board, row)}">{html.escape(row.label)}</a>'
        body.append(f'<tr data-metrics="{data}"><td data-v="">{link}</td>{cells}<td data-v=""></td></tr>')
    sim = ' <span class="sim">SIMULATED data</span>' if board.simulated else ""
    note = f'<p class="note">\u2020 {html.escape(board.beyond_label)}</p>\n' if beyond else ""
    return (
        f'<h2 id="b{n}">{html.escape(board.title)}{sim}</h2>\n{note}'
        f'<label>metric for the last column<select class="metric" data-table="t{n}" '
        f'data-unscaled="{",".join(sorted(UNSCALED))}">{chooser}</select></label>\n'
        f'<table id="t{n}"><thead><tr>{header}</tr></thead><tbody>\n' + "\n".join(body) + "\n</tbody></table>"
    )


def entry_parts(board: Board, row: SiteRow) -> dict:
    """The arguments of ``report.model_page.entry_body`` for ``row`` of ``board`` (the site's and the benchmarking
    service's pages): its numbers, the board's columns and the confusions in words."""
    confusion = board.data.get("entries", {}).get(row.entry, {}).get("confusion")
    words = []
    if confusion is not None:
        matrix = {"predicates": board.data["predicates"], "counts": confusion}
        words = [in_words(gt, top, share) + f" ({rows} rows)" for gt, top, share, rows in top_confusions(matrix)]
    return dict(
        label=row.label,
        entry=row.entry,
        board_title=board.title,
        simulated=board.simulated,
        metrics={**row.beyond, **row.metrics},
        beyond=set(row.beyond) - set(row.metrics),
        beyond_label=board.beyond_label,
        columns=board.columns,
        settings=row.settings,
        inputs=row.inputs,
        confusions=words,
    )


def _entry_html(board: Board, row: SiteRow) -> str:
    title = f"{row.label}: {board.title}"
    return entry_page(title=title, board_key=board.key, style=STYLE + PAGE_STYLE, **entry_parts(board, row))


def board_script(board: Board) -> str:
    """``data/<board>.js``: the board's data for its model pages (a script, not JSON: ``file://`` pages may not
    fetch), every number as the documents hold it."""
    data = dict(board.data)
    entries = data.pop("entries", {})
    data["title"], data["columns"], data["unscaled"] = board.title, board.columns, sorted(UNSCALED)
    data["entries"] = {
        row.entry: {
            "label": row.label,
            "page": os.path.basename(entry_page_name(board, row)),
            "metrics": {**row.beyond, **row.metrics},
            "per_predicate": {**row.beyond_per_predicate, **row.per_predicate},
            "confusion": entries.get(row.entry, {}).get("confusion"),
        }
        for row in board.rows
    }
    data.setdefault("predicates", sorted({p for r in board.rows for v in r.per_predicate.values() for p in v}))
    data.setdefault("order", list(range(len(data["predicates"]))))
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return f"window.SGG_BOARD={text};\n"


def write_site(boards: list[Board], folder: str | os.PathLike, title: str = "sgg-eval results") -> list[str]:
    """``folder/index.html`` and every entry page; returns the files written."""
    intro = (
        f"<h1>{html.escape(title)}</h1><p class='note'>Values in percent (PRk: a mean rank, lower is better). "
        "Click a column to sort; the chooser fills the last column with any metric; a method opens its page "
        "(every metric as a grid, per-predicate values by training frequency with head, body and tail, the "
        "predicate confusion matrix, an image browser, and a comparison with any other method).</p>"
    )
    contents = "".join(f'<li><a href="#b{n}">{html.escape(b.title)}</a></li>' for n, b in enumerate(boards))
    body = intro + f"<ul>{contents}</ul>\n" + "\n".join(_board_html(b, n) for n, b in enumerate(boards))
    index = _page(title, body, script=True)
    written = [os.path.join(folder, "index.html")]
    write_text(written[0], index)
    script = os.path.join(folder, "assets", "model_page.js")
    write_text(script, resources.files("sgg_eval.report").joinpath("assets/model_page.js").read_text("utf-8"))
    written.append(script)
    for board in boards:
        data = os.path.join(folder, "data", f"{board.key}.js")
        write_text(data, board_script(board))
        written.append(data)
        for row in board.rows:
            path = os.path.join(folder, entry_page_name(board, row))
            write_text(path, _entry_html(board, row))
            written.append(path)
    return written
