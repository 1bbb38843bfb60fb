"""A benchmark's leaderboards: *public* (every submission its owner published) and *approved* (the rows an admin
approved, the maintainers' own evaluations of published methods). A row is a submission that was scored and is
not hidden; its numbers are those of its newest score."""

from __future__ import annotations

import math
from dataclasses import dataclass

from sgg_eval.service.models import Benchmark, Submission

PUBLIC, APPROVED = "public", "approved"
BOARDS = (PUBLIC, APPROVED)


@dataclass(frozen=True)
class Row:
    submission: Submission
    metrics: dict
    version: str
    protocol: str

    @property
    def shown(self) -> list[str]:
        """The headline numbers as the page prints them (:func:`shown`)."""
        return [shown(v) for v in self.metrics.values()]


def shown(value) -> str:
    """A number as the pages print it: a recall-like fraction in %, 2 decimals (as SGG papers print them); a
    missing one as a dash. The exports keep the exact values."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return "–"
    return f"{100 * value:.2f}" if 0 <= value <= 1 else f"{value:.2f}"


def rows(benchmark: Benchmark, board: str, sort: str | None = None) -> list[Row]:
    """The board's rows, best first by ``sort`` (a headline metric; the first by default), ties by date."""
    chosen = Submission.objects.filter(benchmark=benchmark, status=Submission.DONE, hidden=False)
    chosen = chosen.filter(approved=True) if board == APPROVED else chosen.filter(public=True)
    out = []
    for s in chosen.select_related("owner").prefetch_related("scores"):
        score = max(s.scores.all(), key=lambda x: (x.created, x.pk), default=None)
        if score is not None:
            metrics = {name: score.metric(name) for name in benchmark.headline}
            out.append(Row(s, metrics, score.sgg_eval_version, score.protocol))
    key = sort if sort in benchmark.headline else (benchmark.headline[0] if benchmark.headline else None)

    def order(row: Row):
        value = row.metrics.get(key) if key else None
        good = isinstance(value, (int, float)) and math.isfinite(value)
        return (not good, -(value if good else 0.0), row.submission.created, row.submission.pk)

    return sorted(out, key=order)


def as_records(benchmark: Benchmark, board: str, table: list[Row], base_url: str) -> list[dict]:
    """The rows for the JSON and CSV exports."""
    return [
        {
            "rank": i,
            "id": r.submission.pk,
            "method": r.submission.method,
            "paper": r.submission.paper_url,
            "code": r.submission.code_url,
            "date": r.submission.created.date().isoformat(),
            "protocol": r.protocol,
            "sgg_eval_version": r.version,
            "sha256": r.submission.sha256,
            "url": f"{base_url}/s/{r.submission.pk}/",
            **r.metrics,
        }
        for i, r in enumerate(table, 1)
    ]
