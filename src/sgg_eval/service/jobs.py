"""What a worker does with a submission (the queue's task, ``queue.score``, calls :func:`run_score`)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

import sgg_eval
from sgg_eval.service.leftovers import is_dead, own_folder, process_id, sweep_dead
from sgg_eval.service.models import Score, Submission
from sgg_eval.service.scoring import evaluate_in_child


def run_score(submission_id: int, retry: bool = False) -> None:
    """queued -> running -> done (a new :class:`Score`) | failed (the command's line in ``message``).

    The task first claims the submission: one update from ``queued`` to ``running``. A second delivery of the same
    task (a broker redelivers what a killed worker had taken) finds it claimed, or done, and does nothing, so a
    submission is scored once and has one score per scoring. A ``retry`` (the database went away mid-scoring; any
    worker may take it) goes on with the claim its first try made: the first try has ended, so nobody else scores it.
    """
    mine = Q(status=Submission.QUEUED)
    if retry:
        mine |= Q(status=Submission.RUNNING)
    claimed = Submission.objects.filter(mine, pk=submission_id).update(
        status=Submission.RUNNING, message="", claimed_by=process_id(), claimed_at=timezone.now()
    )
    submission = Submission.objects.select_related("benchmark").filter(pk=submission_id).first()
    if not claimed or submission is None:  # deleted while it waited, or another delivery has it
        return
    bench = submission.benchmark
    outcome = evaluate_in_child(
        Path(submission.file.path),
        list(bench.arguments),
        memory_mb=settings.EVAL_MEMORY_MB,
        timeout_s=settings.EVAL_TIMEOUT_S,
        shown_as=submission.filename,
        scratch=own_folder(settings.SCRATCH),
    )
    with transaction.atomic():
        # still ours: a scoring that outlived the time limit was handed to another worker (release_orphans)
        ours = Submission.objects.filter(pk=submission.pk, status=Submission.RUNNING, claimed_by=process_id())
        if outcome.document is None:
            ours.update(status=Submission.FAILED, message=outcome.message)
            return
        if not ours.update(status=Submission.DONE):
            return
        Score.objects.create(
            submission=submission,
            sgg_eval_version=sgg_eval.__version__,
            protocol=bench.protocol,
            document=outcome.document,
            worker=process_id(),
        )


def release_orphans() -> list[int]:
    """Give back what a dead worker left: a submission ``running`` whose worker is a dead process of this machine, or
    whose scoring began longer ago than the time limit allows (its worker, on any machine, is gone or stuck), goes
    back to ``queued``. The scratch folders of this machine's dead workers go. Returns every ``queued`` submission,
    for the caller to queue again (``queue._requeue_orphans``, when a worker starts): its message may have been lost
    with a worker, and a second message is harmless, since the task claims before it scores."""
    sweep_dead(settings.SCRATCH)
    stale = timezone.now() - timedelta(seconds=settings.EVAL_TIMEOUT_S + 60)
    running = Submission.objects.filter(status=Submission.RUNNING)
    orphans = [s.pk for s in running if is_dead(s.claimed_by) or (s.claimed_at and s.claimed_at < stale)]
    Submission.objects.filter(pk__in=orphans, status=Submission.RUNNING).update(status=Submission.QUEUED)
    return list(Submission.objects.filter(status=Submission.QUEUED).order_by("pk").values_list("pk", flat=True))
