"""What a worker does with a submission (the queue's task, ``queue.score``, calls :func:`run_score`)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from django.conf import settings
from django.db import transaction

import sgg_eval
from sgg_eval.service.models import Score, Submission
from sgg_eval.service.scoring import evaluate_in_child


def run_score(submission_id: int) -> None:
    """queued -> running -> done (a new :class:`Score`) | failed (the command's line in ``message``)."""
    submission = Submission.objects.select_related("benchmark").filter(pk=submission_id).first()
    if submission is None:  # deleted while it waited
        return
    Submission.objects.filter(pk=submission.pk).update(status=Submission.RUNNING, message="")
    bench = submission.benchmark
    outcome = evaluate_in_child(
        Path(submission.file.path),
        list(bench.arguments),
        memory_mb=settings.EVAL_MEMORY_MB,
        timeout_s=settings.EVAL_TIMEOUT_S,
        shown_as=submission.filename,
    )
    with transaction.atomic():
        if outcome.document is None:
            Submission.objects.filter(pk=submission.pk).update(status=Submission.FAILED, message=outcome.message)
            return
        Score.objects.create(
            submission=submission,
            sgg_eval_version=sgg_eval.__version__,
            protocol=bench.protocol,
            document=outcome.document,
            worker=f"{socket.gethostname()}:{os.getpid()}",
        )
        Submission.objects.filter(pk=submission.pk).update(status=Submission.DONE)
