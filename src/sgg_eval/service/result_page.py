"""A result's page is the results site's model page (``report.model_page``, drawn by ``assets/model_page.js``):
the metrics as a grid, per-predicate values in training-frequency order with head, body and tail, the confusion
matrix, and the comparison with any other result of the benchmark the viewer may see. Its rows and charts come
from the documents `sgg-eval evaluate` wrote, as the site's come from the pipeline's.

Left out: the site's image browser. It draws the test images' ground-truth graphs, and a benchmark's ground truth
stays on the server."""

from __future__ import annotations

import functools
import os

from django.db.models import Q

from sgg_eval.core.protocols import BY_NAME
from sgg_eval.metrics.document import BEYOND
from sgg_eval.report.site import Board, SiteRow, board_script, entry_parts
from sgg_eval.service.models import Benchmark, Score, Submission


def entry_key(submission: Submission) -> str:
    """The row's name on the page and in its data (``s<number>``)."""
    return f"s{submission.pk}"


def comparable(submission: Submission, user) -> list[tuple[Submission, Score]]:
    """``submission`` first, then every other scored result of its benchmark that ``user`` may see (public,
    approved or their own; none hidden), newest first, each with its newest score."""
    others = Submission.objects.filter(benchmark=submission.benchmark, status=Submission.DONE, hidden=False)
    seen = Q(public=True) | Q(approved=True)
    if user.is_authenticated:
        seen |= Q(owner=user)
    chosen = [submission, *others.filter(seen).exclude(pk=submission.pk).prefetch_related("scores")]
    out = []
    for s in chosen:
        score = max(s.scores.all(), key=lambda x: (x.created, x.pk), default=None)
        if score is not None:
            out.append((s, score))
    return out


def _row(benchmark: Benchmark, s: Submission, score: Score) -> SiteRow:
    doc = score.document
    settings = {
        "benchmark": benchmark.name,
        "task": benchmark.task,
        "protocol": score.protocol,
        "sgg-eval": score.sgg_eval_version,
        "scored": score.created.strftime("%Y-%m-%d %H:%M UTC"),
    }
    return SiteRow(
        entry_key(s),
        f"{s.method} (#{s.pk})",
        doc.get("metrics") or {},
        doc.get("per_predicate") or {},
        settings,
        {"file": s.filename, "sha256": s.sha256},
        (doc.get(BEYOND) or {}).get("metrics", {}),
        (doc.get(BEYOND) or {}).get("per_predicate", {}),
    )


@functools.lru_cache(maxsize=16)
def _stats(path: str, mtime: float):
    from sgg_eval.data.stats import read_stats

    return read_stats(path)


def board(benchmark: Benchmark, results: list[tuple[Submission, Score]]) -> Board:
    """The page's board: the results' rows, and the predicates in training order with their head/body/tail groups
    and each result's confusion matrix when the benchmark names its training statistics."""
    from sgg_eval.pipeline.site_data import board_data

    protocol = BY_NAME[benchmark.protocol]
    rows = [_row(benchmark, s, score) for s, score in results]
    data = {}
    if benchmark.stats and os.path.exists(benchmark.stats):
        stats = _stats(benchmark.stats, os.path.getmtime(benchmark.stats))
        docs = {entry_key(s): score.document for s, score in results}
        data = board_data(stats.vocab, stats.predicate_counts[1:], docs, {}, None, "")
    beyond = f"beyond protocol {protocol.name}: computed by sgg-eval, not reported by {protocol.source.tool}"
    return Board(
        key=benchmark.name,
        title=f"{benchmark.title} (protocol {protocol.name})",
        simulated=benchmark.simulated,
        columns=list(benchmark.headline),
        rows=rows,
        beyond_label=beyond if any(r.beyond for r in rows) else "",
        data=data,
    )


def page_body(page: Board, back: str) -> str:
    """The model page's content for the board's first row (the result the page is about)."""
    from sgg_eval.report.model_page import entry_body

    return entry_body(**entry_parts(page, page.rows[0]), back=(back, "the leaderboard"), browser=False)


def page_data(page: Board) -> str:
    """``window.SGG_BOARD=...``: what the page's script draws."""
    return board_script(page)
