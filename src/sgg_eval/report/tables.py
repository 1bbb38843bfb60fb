"""The paper's tables as Markdown, LaTeX (booktabs; best bold, second underlined) and CSV.

Inputs are plain result documents (the metrics JSON of each evaluation entry × task) and the blind
replacement rows, so the module is independent of where files live. Values are shown ×100.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sgg_eval.core.defaults import BLIND_K, IMR_KS, LONGTAIL_KS, RECALL_KS
from sgg_eval.core.tasks import PREDCLS, SGCLS, SGDET, TASKS
from sgg_eval.io.atomic import write_text
from sgg_eval.metrics.longtail import GROUPS
from sgg_eval.metrics.names import OIV6_TABLE, metric_name, subset_name
from sgg_eval.metrics.names import openvocab_table as openvocab_table_columns

# Metrics that are not fractions (PRk is a mean 0-based rank): shown as they are, never ×100; and lower is
# better, so the smallest is marked best. A column "PRk (openpsg)" (one per protocol) is PRk too.
UNSCALED = frozenset({"PRk"})


def _base(column: str) -> str:
    return column.split(" (", 1)[0]


def cell_text(column: str, value: float | None, scale: float = 100.0) -> str:
    """How a table shows ``value`` of ``column``: ×``scale`` (a rank such as PRk as it is), two decimals, '-'
    when undefined (None or NaN)."""
    if value is None or value != value:
        return "-"
    return f"{(1.0 if _base(column) in UNSCALED else scale) * value:.2f}"


# Tables 2 and 3 of the paper: R, mR, IMR and wIMR at each K of their lists.
PAPER_COLUMNS = [
    *(metric_name(f, k) for f in ("R", "mR") for k in RECALL_KS),
    *(metric_name(f, k) for f in ("IMR", "wIMR") for k in IMR_KS),
]


@dataclass(frozen=True)
class Row:
    """One table row: labels plus values by column (fractions; None when undefined)."""

    labels: tuple[str, ...]
    values: dict[str, float | None]
    section: str = ""


@dataclass(frozen=True)
class Table:
    """A table as one pandas DataFrame (:meth:`frame`), rendered to Markdown (tabulate's pipe format),
    LaTeX (pandas' Styler, booktabs rules; best per column bold, second underlined) and CSV."""

    name: str
    caption: str
    label_headers: tuple[str, ...]
    columns: list[str]
    rows: list[Row]
    mark_best: bool = True
    scale: float = 100.0

    @property
    def _sectioned(self) -> bool:
        return any(r.section for r in self.rows)

    def frame(self) -> pd.DataFrame:
        """One row per table row: ``section`` (if any), the label columns, then the values (fractions; NaN
        when undefined)."""
        records = [
            {
                **({"section": r.section} if self._sectioned else {}),
                **dict(zip(self.label_headers, r.labels)),
                **{c: (np.nan if r.values.get(c) is None else float(r.values[c])) for c in self.columns},
            }
            for r in self.rows
        ]
        header = (["section"] if self._sectioned else []) + list(self.label_headers) + self.columns
        return pd.DataFrame.from_records(records, columns=header)

    def _display(self, bold, under) -> pd.DataFrame:
        """The frame as strings: scaled, two decimals, '-' when undefined, best/second marked within each
        section; a section's first row is preceded by a row naming it."""
        df = self.frame()
        text = pd.DataFrame(index=df.index)
        for col in self.label_headers:
            text[col] = df[col].astype(str)
        groups = df["section"] if self._sectioned else pd.Series("", index=df.index)
        for col in self.columns:
            values = df[col]
            cells = values.map(lambda v, col=col: cell_text(col, v, self.scale))
            if self.mark_best:
                # ranks on values rounded to 12 digits, so float noise never splits a tie
                lower_better = _base(col) in UNSCALED
                rank = values.round(12).groupby(groups).rank(method="dense", ascending=lower_better)
                cells = cells.where(rank != 1, cells.map(bold)).where(rank != 2, cells.map(under))
            text[col] = cells
        if not self._sectioned:
            return text.reset_index(drop=True)
        parts = []
        for section, block in text.groupby(groups, sort=False):
            title = pd.DataFrame([[section] + [""] * (text.shape[1] - 1)], columns=text.columns)
            parts += [title, block]
        return pd.concat(parts, ignore_index=True)

    def markdown(self) -> str:
        display = self._display(lambda t: f"**{t}**", lambda t: f"_{t}_")
        if self._sectioned:
            first = display.columns[0]
            display[first] = [
                f"*{v}*" if all(x == "" for x in row[1:]) else v
                for v, row in zip(display[first], display.itertuples(index=False))
            ]
        legend = ["Best per column in **bold**, second in _italics_.", ""] if self.mark_best else []
        body = display.to_markdown(
            index=False,
            tablefmt="pipe",
            disable_numparse=True,
            colalign=["left"] * len(self.label_headers) + ["right"] * len(self.columns),
        )
        return "\n".join([f"**{self.caption}**", "", *legend, body]) + "\n"

    def latex(self) -> str:
        display = self._display(lambda t: rf"\textbf{{{t}}}", lambda t: rf"\underline{{{t}}}")
        if self._sectioned:
            first = display.columns[0]
            display[first] = [
                rf"\textit{{{v}}}" if all(x == "" for x in row[1:]) else v
                for v, row in zip(display[first], display.itertuples(index=False))
            ]
        for col in self.label_headers:  # labels are text: escape LaTeX's specials (values are ours)
            display[col] = display[col].map(_escape_latex_keep_markup)
        display.columns = [_escape_latex(c) for c in display.columns]
        return display.style.hide(axis="index").to_latex(
            column_format="l" * len(self.label_headers) + "r" * len(self.columns),
            hrules=True,
            position="t",
            position_float="centering",
            caption=_escape_latex(self.caption),
            label=f"tab:{self.name}",
            environment="table",
        )

    def csv(self) -> str:
        return self.frame().to_csv(index=False, lineterminator="\n", na_rep="")

    def write(self, folder: str | os.PathLike) -> list[str]:
        paths = []
        for ext, text in (("md", self.markdown()), ("tex", self.latex()), ("csv", self.csv())):
            path = os.path.join(folder, f"{self.name}.{ext}")
            write_text(path, text)
            paths.append(path)
        return paths


def _escape_latex(text: str) -> str:
    return (
        text.replace("\\", r"\textbackslash{}")
        .replace("_", r"\_")
        .replace("%", r"\%")
        .replace("&", r"\&")
        .replace("#", r"\#")
    )


def _escape_latex_keep_markup(text: str) -> str:
    """Escape a label unless it is the section title we wrapped in ``\\textit{}``."""
    return text if text.startswith(r"\textit{") else _escape_latex(text)


def method_rows(
    results: dict[tuple[str, str], dict],
    entries: list[str],
    task: str,
    section: str = "",
    columns: list[str] = PAPER_COLUMNS,
) -> list[Row]:
    """Rows backbone × method for ``task`` (PKO-only first, as in the paper), ``columns`` (the paper's)."""
    present = [e for e in entries if (e, task) in results]
    ordered = sorted(present, key=lambda e: (results[e, task]["entry"]["method"] != "PKO-only", present.index(e)))
    return [
        Row(
            (results[e, task]["entry"]["backbone"], results[e, task]["entry"]["method"]),
            {c: results[e, task]["metrics"].get(c) for c in columns},
            section,
        )
        for e in ordered
    ]


def oiv6_table(
    results: dict[tuple[str, str], dict],
    entries: list[str],
    simulated: bool,
    task_labels: dict[str, str],
    dataset: str = "",
) -> Table:
    """Open Images V6 as BGNN's and PySGG's tables print it: mR@50, R@50 (micro), wmAP_rel, wmAP_phr, score_wtd,
    one section per task (``--protocol oiv6``, docs/oiv6.md)."""
    on = f" on {dataset}" if dataset else ""
    tag = on + (". SIMULATED data." if simulated else ".")
    rows = [
        row
        for task in TASKS
        for row in method_rows(results, entries, task, task_labels.get(task, task), list(OIV6_TABLE))
    ]
    return Table(
        "oiv6_table",
        "Open Images V6 as PySGG evaluates it (BGNN's table): R@50 micro (all GT triplets of the split), mR@50 over "
        f"all predicates, wmAP at overlap > 0.5, score_wtd = 0.2 R@50 + 0.4 wmAP_rel + 0.4 wmAP_phr{tag}",
        ("Backbone", "Method"),
        list(OIV6_TABLE),
        rows,
    )


def openvocab_table(
    results: dict[tuple[str, str], dict],
    entries: list[str],
    simulated: bool,
    task_labels: dict[str, str],
    protocol: str,
    setting: str,
    dataset: str = "",
) -> Table:
    """An open-vocabulary protocol's numbers as its papers print them (``--protocol ovsgtr|vs3|pgsg``,
    docs/openvocab.md): R@K, the novel subsets' recall (PGSG: novel and seen mR) and mR@K, one section per task."""
    columns = list(openvocab_table_columns(protocol, setting))
    on = f" on {dataset}" if dataset else ""
    rows = [row for task in TASKS for row in method_rows(results, entries, task, task_labels.get(task, task), columns)]
    words = {
        "ovsgtr": "R_novel_obj is novel-object recall (subject and object both novel) and R_novel_rel novel-relation "
        "recall, both printed as 'zR' by OvSGTR; GT boxes merged and cut as its loader does",
        "vs3": "R_novel_obj is novel-object recall (subject and object both novel), printed as 'zR' by VS3",
        "pgsg": "mR_novel and mR_seen are PGSG's mean per-predicate recall over its 30 novel predicates and the 20 "
        "others; mR divided by C + 0.001; from the 5,001st test image on",
    }
    sim = " SIMULATED data." if simulated else ""
    return Table(
        "openvocab_table",
        f"Open-vocabulary SGG{on}, protocol {protocol} (setting {setting}): {words[protocol]}.{sim}",
        ("Backbone", "Method"),
        columns,
        rows,
    )


def longtail_table(results: dict, entries: list[str], tag: str, label) -> Table | None:
    """Mean recall on the head, body and tail predicates (``metrics.longtail``) as debiasing papers print it (BGNN,
    PySGG): mR@K beside its three groups at K = 50 and 100, one section per task; the caption names the rule and
    the groups' sizes. None when no result has the groups."""
    docs = [doc for doc in results.values() if "longtail" in doc]
    if not docs:
        return None
    groups = docs[0]["longtail"]
    columns = [name for k in LONGTAIL_KS for name in (metric_name("mR", k), *(subset_name("mR", g, k) for g in GROUPS))]
    rows = [row for task in TASKS for row in method_rows(results, entries, task, label(task), columns)]
    rule = "PySGG's VG150 parts" if groups["rule"] == "pysgg" else "training frequency, PySGG's group sizes scaled"
    sizes = ", ".join(f"{len(groups[g])} {g}" for g in GROUPS)
    return Table(
        "longtail_table",
        f"Mean recall on head, body and tail predicates ({rule}: {sizes}; graph-constrained){tag}",
        ("Backbone", "Method"),
        columns,
        rows,
    )


def paper_tables(
    results: dict[tuple[str, str], dict],
    entries: list[str],
    blind: dict | None,
    simulated: bool,
    tau: float,
    task_labels: dict[str, str],
    dataset: str = "",
) -> list[Table]:
    """Tables 1-3 of the paper and the full table with every metric. ``tau`` is the wIMR exponent the
    results were evaluated with (shown in the captions); ``task_labels`` names the tasks (``conf/task``);
    ``dataset`` (its conf name) is named in every caption."""

    def label(task: str) -> str:
        return task_labels.get(task, task)

    on = f" on {dataset}" if dataset else ""
    tag = on + (". SIMULATED data: not results on Visual Genome." if simulated else ".")
    tables = [
        Table(
            "table2_predcls",
            f"{label(PREDCLS.name)} (wIMR tau = {tau:g}){tag}",
            ("Backbone", "Method"),
            PAPER_COLUMNS,
            method_rows(results, entries, PREDCLS.name),
        ),
        Table(
            "table3_sgcls_sgdet",
            f"{label(SGCLS.name)} and {label(SGDET.name)} (wIMR tau = {tau:g}){tag}",
            ("Backbone", "Method"),
            PAPER_COLUMNS,
            [
                *method_rows(results, entries, SGCLS.name, label(SGCLS.name)),
                *method_rows(results, entries, SGDET.name, label(SGDET.name)),
            ],
        ),
    ]
    if blind is not None:
        blind_metric = metric_name("mR", BLIND_K)
        rows = [
            Row(
                (str(r["N"]), r["predicate"], "" if r["num_type_pairs"] is None else str(r["num_type_pairs"])),
                {blind_metric: r[blind_metric], "improvement": r["improvement"]},
            )
            for r in blind["rows"]
        ]
        tables.insert(
            0,
            Table(
                "table1_blind_replacement",
                f"Blind replacement of the N predicates with the fewest composable pairs "
                f"({blind['model']}, {blind['task']}){tag}",
                ("N", "Predicate", "Pairs"),
                [blind_metric, "improvement"],
                rows,
                mark_best=False,
            ),
        )
    longtail = longtail_table(results, entries, tag, label)
    if longtail is not None:
        tables.append(longtail)
    all_metrics = sorted({k for doc in results.values() for k in doc["metrics"]})
    full = [Row((e, t), dict(results[e, t]["metrics"])) for t in TASKS for e in entries if (e, t) in results]
    tables.append(
        Table(
            "full_metrics",
            f"Every metric, every entry and task (percent; PRk is a mean rank, shown as is; wIMR tau = {tau:g}){tag}",
            ("Entry", "Task"),
            all_metrics,
            full,
            mark_best=False,
        )
    )
    return tables
