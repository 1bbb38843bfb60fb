"""What the service stores. A :class:`Benchmark` is a row of the benchmarks' file (``benchmarks.py`` keeps them in
step); a :class:`Submission` is one uploaded file, kept so that it can be scored again; a :class:`Score` is one
evaluation of it by one sgg-eval version (a re-score adds one and keeps the old); an :class:`ApiToken` lets a
script act for its owner (only its SHA-256 is stored)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Benchmark(models.Model):
    name = models.SlugField(unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    # the arguments of `sgg-eval evaluate` besides the file: ["--gt", path, "--task", task, ...]
    arguments = models.JSONField(default=list)
    protocol = models.CharField(max_length=40)
    task = models.CharField(max_length=40)
    # its training statistics (an .h5 on the server): a result page's predicate order and head/body/tail groups
    stats = models.CharField(max_length=1000, blank=True)
    # the metrics a board shows, in order; the first sorts it by default
    headline = models.JSONField(default=list)
    daily_limit = models.PositiveIntegerField(default=5)
    simulated = models.BooleanField(default=False)
    # still in the benchmarks' file (a benchmark taken out keeps its submissions but takes no new ones)
    active = models.BooleanField(default=True)

    def __str__(self) -> str:
        return self.name


class Submission(models.Model):
    QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
    STATUSES = [(s, s) for s in (QUEUED, RUNNING, DONE, FAILED)]

    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="submissions")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions")
    file = models.FileField(upload_to="submissions/%Y/%m/")
    filename = models.CharField(max_length=255)
    sha256 = models.CharField(max_length=64)
    method = models.CharField(max_length=120)
    paper_url = models.URLField(blank=True)
    code_url = models.URLField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=10, choices=STATUSES, default=QUEUED)
    # the one line `sgg-eval evaluate` printed when it refused the file
    message = models.TextField(blank=True)
    # on the public board (its owner's choice)
    public = models.BooleanField(default=False)
    # on the approved board (an admin's)
    approved = models.BooleanField(default=False)
    # taken off every board by an admin
    hidden = models.BooleanField(default=False)
    # the worker scoring it (host:pid) and since when: a task claims a queued submission before it scores it, and
    # a worker that starts re-queues what a dead worker left running (jobs.release_orphans)
    claimed_by = models.CharField(max_length=120, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.method} on {self.benchmark} (#{self.pk})"

    @property
    def score(self) -> Score | None:
        """The newest score (a re-score keeps the older ones)."""
        return self.scores.order_by("-created", "-pk").first()


class Score(models.Model):
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="scores")
    created = models.DateTimeField(auto_now_add=True)
    sgg_eval_version = models.CharField(max_length=40)
    protocol = models.CharField(max_length=40)
    # the worker process that scored it (host:pid), for an operator tracing a number
    worker = models.CharField(max_length=120, blank=True)
    # the metrics JSON `sgg-eval evaluate -o` wrote
    document = models.JSONField()

    def metric(self, name: str):
        return (self.document.get("metrics") or {}).get(name)


class ApiToken(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=100)
    # the token's first characters, to tell tokens apart in a list
    prefix = models.CharField(max_length=12)
    digest = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(auto_now_add=True)
    revoked = models.DateTimeField(null=True, blank=True)
