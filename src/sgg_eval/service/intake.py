"""Taking in an upload, the same for the web form and the API: the daily limit, the size limit, the SHA-256, the
record, and the task on the queue."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from sgg_eval.service.models import Benchmark, Submission
from sgg_eval.service.queue import enqueue
from sgg_eval.service.storage import STORAGE_FULL, StorageFull, ensure_room


class Refused(Exception):
    """An upload the service does not take; the message says why, in one line, and ``status`` is the HTTP status
    the API answers with (429 for the daily limit, 507 for a full disk, 400 otherwise)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def submit(user, benchmark: Benchmark, upload, *, method: str, paper_url="", code_url="", public=False) -> Submission:
    if not benchmark.active:
        raise Refused(f"benchmark {benchmark.name} takes no new submissions")
    if upload is None or not upload.name:
        raise Refused("no file was uploaded")
    if upload.size > settings.SUBMISSION_MAX_BYTES:
        raise Refused(f"the file is {upload.size} bytes; the limit is {settings.SUBMISSION_MAX_BYTES}")
    if not method.strip():
        raise Refused("name the method")
    try:
        ensure_room(upload.size)
        return _recorded(user, benchmark, upload, method, paper_url, code_url, public)
    except StorageFull:
        raise Refused(STORAGE_FULL, status=507) from None


def _recorded(user, benchmark, upload, method, paper_url, code_url, public) -> Submission:
    sha = hashlib.sha256()
    for chunk in upload.chunks():
        sha.update(chunk)
    upload.seek(0)
    with transaction.atomic():
        # one upload of a user at a time from here to the commit, so that concurrent uploads cannot all pass the
        # daily limit: PostgreSQL locks the user's row; SQLite's transactions take the write lock as they begin
        # (settings: transaction_mode IMMEDIATE)
        list(get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk", flat=True))
        since = timezone.now() - timedelta(days=1)
        today = Submission.objects.filter(owner=user, benchmark=benchmark, created__gte=since).count()
        if today >= benchmark.daily_limit and not user.is_staff:
            limit = f"{benchmark.name} takes {benchmark.daily_limit} submissions a day per user; try again later"
            raise Refused(limit, status=429)
        submission = Submission.objects.create(
            benchmark=benchmark,
            owner=user,
            file=upload,
            filename=upload.name[:255],
            sha256=sha.hexdigest(),
            method=method.strip()[:120],
            paper_url=paper_url,
            code_url=code_url,
            public=public,
        )
        enqueue(submission)
    return submission


def visible(submission: Submission, user) -> bool:
    """Its owner and the admins see a submission; everyone else only a published or approved, unhidden one."""
    if user.is_authenticated and (user.is_staff or submission.owner_id == user.pk):
        return True
    return (submission.public or submission.approved) and not submission.hidden
