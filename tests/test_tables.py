"""Tables: one DataFrame per table, rendered to Markdown, LaTeX and CSV; best bold and second underlined
within each section, checked against a plain loop; values survive the CSV exactly."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from sgg_eval.report.tables import Row, Table


def _table(rng, n=12):
    rows = []
    for i in range(n):
        values = {c: (None if rng.random() < 0.15 else float(rng.integers(0, 5)) / 7) for c in ("a", "b")}
        rows.append(Row((f"m_{i}", "x&y"), values, "S1" if i < n // 2 else "S2"))
    return Table("t", "caption 5% of_it", ("Model", "Kind"), ["a", "b"], rows)


def _expected_marks(table):
    """(row, column) -> 1 or 2 from the values, by a loop over the words 'best' and 'second best'."""
    marks = {}
    for col in table.columns:
        for section in {r.section for r in table.rows}:
            vals = sorted(
                {r.values[col] for r in table.rows if r.section == section and r.values[col] is not None}, reverse=True
            )
            for i, r in enumerate(table.rows):
                if r.section == section and r.values[col] is not None:
                    if r.values[col] == vals[0]:
                        marks[i, col] = 1
                    elif len(vals) > 1 and r.values[col] == vals[1]:
                        marks[i, col] = 2
    return marks


def test_markdown_marks_best_and_second_per_section():
    for seed in range(20):
        table = _table(np.random.default_rng(seed))
        lines = [ln for ln in table.markdown().splitlines() if ln.startswith("| ") and "---" not in ln][1:]
        body = [ln for ln in lines if not ln.startswith("| *S")]
        assert len(body) == len(table.rows)
        expected = _expected_marks(table)
        for i, line in enumerate(body):
            cells = [c.strip() for c in line.strip("|").split("|")]
            for j, col in enumerate(table.columns):
                cell, mark = cells[2 + j], expected.get((i, col))
                value = table.rows[i].values[col]
                plain = "-" if value is None else f"{100 * value:.2f}"
                assert cell == {1: f"**{plain}**", 2: f"_{plain}_"}.get(mark, plain), (seed, i, col, cell)


def test_csv_holds_the_exact_values_and_latex_is_booktabs_and_escaped():
    table = _table(np.random.default_rng(1))
    back = pd.read_csv(io.StringIO(table.csv()), keep_default_na=True)
    for i, r in enumerate(table.rows):
        for col in table.columns:
            got = back.loc[i, col]
            assert np.isnan(got) if r.values[col] is None else got == r.values[col], (i, col)
    assert list(back["section"]) == [r.section for r in table.rows]
    tex = table.latex()
    for needle in (
        r"\toprule",
        r"\midrule",
        r"\bottomrule",
        r"\textbf{",
        r"\underline{",
        r"x\&y",
        r"m\_0",
        r"caption 5\% of\_it",
        r"\textit{S2}",
        r"\label{tab:t}",
    ):
        assert needle in tex, needle
