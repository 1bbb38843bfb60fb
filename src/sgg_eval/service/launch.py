"""``sgg-eval serve`` and ``sgg-eval worker``: the database migrated, the benchmarks' file read into it, the
simulated benchmarks made on first start, a worker and the web server started."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

from sgg_eval.core.errors import InputError, os_error_reason

SYSTEM_USER = "sgg-eval"  # the owner of the pre-loaded rows (no password: it never logs in)
CONNECTIONS = 1024  # open connections the web server keeps at once (waitress's default: 100)
FORM_MARGIN = 2**20  # an upload's request: the file and the form's other fields (method, links) around it


def setup(home: str | None) -> None:
    """Django set up for ``home`` (SGG_EVAL_SERVICE_HOME when None)."""
    if home:
        os.environ["SGG_EVAL_SERVICE_HOME"] = str(Path(home).resolve())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sgg_eval.service.settings")
    import django

    django.setup()


def prepare(simulated_scale: str) -> list[str]:
    """Migrate, collect the static files, bring the benchmarks in step with their file; the names offered."""
    from django.conf import settings
    from django.core.management import call_command

    from sgg_eval.service.benchmarks import read_benchmarks
    from sgg_eval.service.simulated import prepare_simulated

    call_command("migrate", interactive=False, verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)
    if settings.BENCHMARKS_FILE:
        specs = read_benchmarks(Path(settings.BENCHMARKS_FILE))
    else:
        specs = prepare_simulated(settings.HOME, simulated_scale)
    _sync(specs)
    return [s.name for s in specs]


def clear_leftovers() -> tuple[list[str], list[str]]:
    """What killed web servers of this machine left: their incoming uploads, and stored files no submission names
    (a server killed between storing an upload and recording it). Then points Django's uploads at this server's
    own incoming folder. Returns the folders and the files removed."""
    from django.conf import settings

    from sgg_eval.service.leftovers import own_folder, sweep_dead, sweep_unreferenced
    from sgg_eval.service.models import Submission

    folders = sweep_dead(settings.INCOMING)
    settings.FILE_UPLOAD_TEMP_DIR = str(own_folder(settings.INCOMING))
    stored = settings.MEDIA_ROOT / "submissions"
    referenced = {name.removeprefix("submissions/") for name in Submission.objects.values_list("file", flat=True)}
    return folders, sweep_unreferenced(stored, referenced)


def _sync(specs) -> None:
    from django.contrib.auth import get_user_model
    from django.core.files import File
    from django.db import transaction

    from sgg_eval.service.models import Benchmark, Submission
    from sgg_eval.service.queue import enqueue

    with transaction.atomic():
        Benchmark.objects.exclude(name__in=[s.name for s in specs]).update(active=False)
        system, _ = get_user_model().objects.get_or_create(username=SYSTEM_USER, defaults={"is_active": False})
        for spec in specs:
            fields = {
                "title": spec.title,
                "description": spec.description,
                "arguments": spec.arguments(),
                "stats": spec.stats,
                "protocol": spec.protocol,
                "task": spec.task,
                "headline": list(spec.headline),
                "daily_limit": spec.daily_limit,
                "simulated": spec.simulated,
                "active": True,
            }
            bench, _ = Benchmark.objects.update_or_create(name=spec.name, defaults=fields)
            for row in spec.preload:
                if Submission.objects.filter(benchmark=bench, owner=system, method=row.method).exists():
                    continue
                with open(row.file, "rb") as f:
                    sha = hashlib.file_digest(f, "sha256").hexdigest()
                    f.seek(0)
                    s = Submission(
                        benchmark=bench,
                        owner=system,
                        filename=Path(row.file).name,
                        sha256=sha,
                        method=row.method,
                        paper_url=row.paper,
                        code_url=row.code,
                        public=True,
                        approved=True,
                    )
                    s.file.save(Path(row.file).name, File(f), save=True)
                enqueue(s)


def worker_command(concurrency: int) -> list[str]:
    """A Celery worker of the service's queue: its tasks run in threads, each evaluation in a child process."""
    return [
        sys.executable,
        "-m",
        "celery",
        "--quiet",
        "-A",
        "sgg_eval.service.queue",
        "worker",
        "--loglevel",
        "ERROR",
        "--pool",
        "threads",
        "--concurrency",
        str(concurrency),
        "--without-gossip",
        "--without-mingle",
    ]


class _Supervised:
    """The local worker process, started again whenever it ends (killed, or out of memory) while the service runs:
    the new worker re-queues what the dead one left (``jobs.release_orphans``), so nobody has to."""

    def __init__(self, command: list[str]):
        self.command, self.ended = command, threading.Event()
        self.process = self._start()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        while not self.ended.wait(1.0):
            if self.process.poll() is not None and not self.ended.is_set():
                status = self.process.returncode
                print(f"sgg-eval serve: the worker ended (status {status}); starting another", flush=True)
                self.process = self._start()

    def _start(self) -> subprocess.Popen:
        from sgg_eval.service.leftovers import die_with_parent

        return subprocess.Popen(self.command, env=os.environ.copy(), preexec_fn=die_with_parent)

    def stop(self) -> None:
        self.ended.set()
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def serve(host: str, port: int, workers: int, simulated_scale: str) -> None:
    """The web server bound first (a taken port is one line, before anything starts), then the worker."""
    from django.conf import settings
    from waitress import create_server

    names = prepare(simulated_scale)
    clear_leftovers()
    from sgg_eval.service.wsgi import application  # after prepare(): WhiteNoise reads the collected static files

    try:
        # A body over the upload limit is cut off by waitress as it arrives, before Django or the disk keep it
        # (its own default, 1 GB, was below the service's limit); the margin is the form's other fields.
        limit = settings.SUBMISSION_MAX_BYTES + FORM_MARGIN
        # waitress accepts 100 connections by default: a 101st keep-alive reader waited, unanswered, until one of
        # them closed (a minute, under `make load-test`); idle connections cost a socket each, not a thread
        server = create_server(application, host=host, port=port, threads=8, max_request_body_size=limit,
                               connection_limit=CONNECTIONS, backlog=CONNECTIONS)  # fmt: skip
    except OSError as exc:  # the port is taken, or the address is not this machine's
        raise InputError(f"cannot listen on {host}:{port}: {os_error_reason(exc)}") from None
    worker = _Supervised(worker_command(workers)) if workers else None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the worker is stopped below
    db = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    broker = settings.CELERY_BROKER_URL
    queue = "embedded" if broker == settings.EMBEDDED_BROKER else broker.split("://")[0]
    print(
        f"sgg-eval service on http://{host}:{port}/ (home {settings.HOME}; database {db}; queue {queue}; "
        f"{workers} local worker{'s' if workers != 1 else ''}; benchmarks: {', '.join(names)})",
        flush=True,
    )
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
        if worker is not None:
            worker.stop()
        shutil.rmtree(settings.FILE_UPLOAD_TEMP_DIR, ignore_errors=True)


def run_worker(concurrency: int) -> None:
    os.execv(sys.executable, worker_command(concurrency))


def have_service() -> bool:
    """The extra sgg-eval[service] is installed."""
    from importlib.util import find_spec

    return all(find_spec(m) is not None for m in ("django", "waitress", "whitenoise"))
