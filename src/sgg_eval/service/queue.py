"""The task queue: Celery, configured from Django's settings (``CELERY_*``). Embedded, its broker is a folder of
``HOME`` (kombu's filesystem transport, as DVC's own queue uses it): workers on this machine, no server. At scale
``SGG_EVAL_SERVICE_BROKER`` names Redis or RabbitMQ and ``sgg-eval worker`` runs on any machine that sees the
database, the uploads folder and the benchmarks' ground truth."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_ready
from django.db import InterfaceError, OperationalError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sgg_eval.service.settings")

app = Celery("sgg_eval.service")
app.config_from_object("django.conf:settings", namespace="CELERY")


@app.task(
    name="sgg_eval.service.score",
    bind=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=20,
)
def score(task, submission_id: int) -> None:
    """Score one submission (``jobs.run_score``); Django is set up by the worker before any task runs. A database
    that went away (restarted, or a network cut) is retried with a growing pause, up to about 15 minutes in all;
    the retry takes up the claim the first try made."""
    from sgg_eval.service.jobs import run_score

    run_score(submission_id, retry=task.request.retries > 0)


def enqueue(submission) -> None:
    """Queue ``submission`` for scoring once the transaction that saved it commits (a worker must find it)."""
    from django.db import transaction

    transaction.on_commit(lambda: score.delay(submission.pk))


@app.on_after_finalize.connect
def _django(**_) -> None:
    import django

    django.setup()


@worker_ready.connect
def _requeue_orphans(**_) -> None:
    """A worker that starts takes up what a dead worker left (``jobs.release_orphans``)."""
    from sgg_eval.service.jobs import release_orphans

    for pk in release_orphans():
        score.delay(pk)
