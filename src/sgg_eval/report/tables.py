"""The paper's tables as Markdown, LaTeX (booktabs; best bold, second underlined) and CSV.

Inputs are plain result documents (the metrics JSON of each evaluation entry × task) and the blind
replacement rows, so the module is independent of where files live. Values are shown ×100.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from importlib import resources

from sgg_eval.atomic import atomic_output

# Metrics that are not fractions (PRk is a mean 0-based rank): shown as they are, never ×100.
UNSCALED = frozenset({"PRk"})
PAPER_COLUMNS = ["R@20", "R@50", "R@100", "mR@20", "mR@50", "mR@100", "IMR@10", "IMR@20", "IMR@50",
                 "wIMR@10", "wIMR@20", "wIMR@50"]


@dataclass(frozen=True)
class Row:
    """One table row: labels plus values by column (fractions; None when undefined)."""

    labels: tuple[str, ...]
    values: dict[str, float | None]
    section: str = ""


def _fmt(value: float | None, scale: float = 100.0, digits: int = 2) -> str:
    return "-" if value is None else f"{scale * value:.{digits}f}"


def _ranks(rows: list[Row], column: str) -> dict[int, int]:
    """Row index -> 1 (best) or 2 (second) for ``column`` within the row's section; higher is better."""
    out: dict[int, int] = {}
    for section in dict.fromkeys(r.section for r in rows):
        idx = [i for i, r in enumerate(rows) if r.section == section and rows[i].values.get(column) is not None]
        distinct = sorted({round(rows[i].values[column], 12) for i in idx}, reverse=True)
        for i in idx:
            v = round(rows[i].values[column], 12)
            if distinct and v == distinct[0]:
                out[i] = 1
            elif len(distinct) > 1 and v == distinct[1]:
                out[i] = 2
    return out


@dataclass(frozen=True)
class Table:
    name: str
    caption: str
    label_headers: tuple[str, ...]
    columns: list[str]
    rows: list[Row]
    mark_best: bool = True
    scale: float = 100.0

    def _cells(self, i: int, row: Row, bold, under) -> list[str]:
        cells = []
        marks = self._marks
        for col in self.columns:
            text = _fmt(row.values.get(col), 1.0 if col in UNSCALED else self.scale)
            rank = marks.get((i, col)) if self.mark_best else None
            cells.append(bold(text) if rank == 1 else under(text) if rank == 2 else text)
        return cells

    @property
    def _marks(self) -> dict[tuple[int, str], int]:
        return {(i, col): rank for col in self.columns for i, rank in _ranks(self.rows, col).items()}

    def markdown(self) -> str:
        lines = [f"**{self.caption}**", ""]
        if self.mark_best:
            lines += ["Best per column in **bold**, second in _italics_.", ""]
        header = list(self.label_headers) + self.columns
        lines += ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        section = None
        for i, row in enumerate(self.rows):
            if row.section and row.section != section:
                section = row.section
                lines.append("| " + " | ".join([f"*{section}*"] + [""] * (len(header) - 1)) + " |")
            cells = self._cells(i, row, lambda t: f"**{t}**", lambda t: f"_{t}_")
            lines.append("| " + " | ".join(list(row.labels) + cells) + " |")
        return "\n".join(lines) + "\n"

    def latex(self) -> str:
        def esc(t: str) -> str:
            return t.replace("_", r"\_").replace("%", r"\%").replace("&", r"\&")

        n = len(self.label_headers) + len(self.columns)
        lines = [r"\begin{table}[t]", r"\centering", r"\small",
                 r"\begin{tabular}{" + "l" * len(self.label_headers) + "r" * len(self.columns) + "}", r"\toprule",
                 " & ".join(esc(h) for h in list(self.label_headers) + self.columns) + r" \\", r"\midrule"]
        section = None
        for i, row in enumerate(self.rows):
            if row.section and row.section != section:
                if section is not None:
                    lines.append(r"\midrule")
                section = row.section
                lines.append(rf"\multicolumn{{{n}}}{{l}}{{\textit{{{esc(section)}}}}} \\")
            cells = self._cells(i, row, lambda t: rf"\textbf{{{t}}}", lambda t: rf"\underline{{{t}}}")
            lines.append(" & ".join([esc(x) for x in row.labels] + cells) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{esc(self.caption)}}}",
                  rf"\label{{tab:{self.name}}}", r"\end{table}"]
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow((["section"] if any(r.section for r in self.rows) else []) + list(self.label_headers) + self.columns)
        for row in self.rows:
            vals = [("" if row.values.get(c) is None else repr(row.values[c])) for c in self.columns]
            w.writerow(([row.section] if any(r.section for r in self.rows) else []) + list(row.labels) + vals)
        return buf.getvalue()

    def write(self, folder: str | os.PathLike) -> list[str]:
        paths = []
        for ext, text in (("md", self.markdown()), ("tex", self.latex()), ("csv", self.csv())):
            path = os.path.join(folder, f"{self.name}.{ext}")
            with atomic_output(path) as tmp:
                tmp.write_text(text, encoding="utf-8")
            paths.append(path)
        return paths


def method_rows(results: dict[tuple[str, str], dict], entries: list[str], task: str, section: str = "") -> list[Row]:
    """Rows backbone × method for ``task`` (PKO-only first, as in the paper), paper columns."""
    present = [e for e in entries if (e, task) in results]
    ordered = sorted(present, key=lambda e: (results[e, task]["entry"]["method"] != "PKO-only", present.index(e)))
    return [Row((results[e, task]["entry"]["backbone"], results[e, task]["entry"]["method"]),
                {c: results[e, task]["metrics"].get(c) for c in PAPER_COLUMNS}, section) for e in ordered]


def paper_tables(results: dict[tuple[str, str], dict], entries: list[str], blind: dict | None,
                 simulated: bool, tau: float) -> list[Table]:
    """Tables 1-3 of the paper and the full table with every metric. ``tau`` is the wIMR exponent the
    results were evaluated with (shown in the captions)."""
    tag = " SIMULATED data: not results on Visual Genome." if simulated else ""
    tables = [
        Table("table2_predcls", f"PredCls (wIMR tau = {tau:g}).{tag}", ("Backbone", "Method"), PAPER_COLUMNS,
              method_rows(results, entries, "predcls")),
        Table("table3_sgcls_sgdet", f"SGCls and SGDet (wIMR tau = {tau:g}).{tag}", ("Backbone", "Method"),
              PAPER_COLUMNS,
              method_rows(results, entries, "sgcls", "SGCls") + method_rows(results, entries, "sgdet", "SGDet")),
    ]
    if blind is not None:
        rows = [Row((str(r["N"]), r["predicate"], "" if r["num_type_pairs"] is None else str(r["num_type_pairs"])),
                    {"mR@100": r["mR@100"], "improvement": r["improvement"]}) for r in blind["rows"]]
        tables.insert(0, Table("table1_blind_replacement",
                               f"Blind replacement of the N predicates with the fewest composable pairs "
                               f"({blind['model']}, {blind['task']}).{tag}", ("N", "Predicate", "Pairs"),
                               ["mR@100", "improvement"], rows, mark_best=False))
    all_metrics = sorted({k for doc in results.values() for k in doc["metrics"]})
    full = [Row((e, t), dict(results[e, t]["metrics"])) for t in ("predcls", "sgcls", "sgdet") for e in entries
            if (e, t) in results]
    tables.append(Table("full_metrics", f"Every metric, every entry and task (percent; PRk is a mean rank, "
                        f"shown as is; wIMR tau = {tau:g}).{tag}", ("Entry", "Task"), all_metrics, full,
                        mark_best=False))
    return tables


def published_rows() -> list[dict]:
    """The paper's Tables 2-3 (percent), shipped with sgg-eval."""
    text = resources.files("sgg_eval.data").joinpath("resources/published/li2022_tables.csv").read_text("utf-8")
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    return list(csv.DictReader(lines))


def published_vs_reproduced(results: dict[tuple[str, str], dict], entries: list[str], simulated: bool,
                            tau: float) -> Table:
    """Ours beside the published values with the difference (ours - published) and the relative difference,
    matched on (task, backbone, method); rows the paper has but we did not evaluate are left out. On the
    simulated benchmark the caption says so: the comparison then shows how close the simulation is."""
    rows = []
    for pub in published_rows():
        for e in entries:
            doc = results.get((e, pub["task"]))
            if doc is None:
                continue
            info = doc["entry"]
            if (info["backbone"], info["method"]) != (pub["backbone"], pub["method"]):
                continue
            for col in PAPER_COLUMNS:
                ours = doc["metrics"].get(col)
                p = float(pub[col]) / 100
                diff = None if ours is None else ours - p
                rows.append(Row((pub["task"], pub["backbone"], pub["method"], col),
                                {"published": p, "reproduced": ours, "difference": diff,
                                 "relative": None if diff is None else diff / p}))
    what = "SIMULATED vs published" if simulated else "Published vs reproduced"
    base = [r for r in rows if r.labels[2] == "Baseline" and r.values["relative"] is not None]
    if base:
        w = max(base, key=lambda r: abs(r.values["relative"]))
        what += (f"; the baselines' largest relative difference is {100 * w.values['relative']:+.0f}% "
                 f"({' '.join(w.labels[:2])} {w.labels[3]})")
    caveat = (" The reproduced column is the SIMULATED benchmark, calibrated to resemble the paper: it shows how "
              "close the simulation is, not a result on Visual Genome.") if simulated else ""
    return Table("published_vs_reproduced", f"{what} (Li et al. 2022, VG150 test), percent; relative = "
                 f"difference / published; wIMR tau = {tau:g} here, 0.5 in the paper.{caveat}",
                 ("Task", "Backbone", "Method", "Metric"), ["published", "reproduced", "difference", "relative"],
                 rows, mark_best=False)
