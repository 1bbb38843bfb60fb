"""The service's Django settings, every one from the environment (docs/service.md lists them):

- ``SGG_EVAL_SERVICE_HOME``: its folder (default ``service/``): the SQLite database, uploaded files, the embedded
  queue, the secret key, the simulated benchmarks' data;
- ``SGG_EVAL_SERVICE_DATABASE``: ``postgresql://user:password@host:port/name`` at scale (default: SQLite in HOME);
- ``SGG_EVAL_SERVICE_BROKER``: the queue's broker at scale (``redis://host:6379/0``, ``amqp://...``; default: an
  embedded filesystem broker in HOME, for workers on this machine);
- ``SGG_EVAL_SERVICE_BENCHMARKS``: the benchmarks' file (default: the simulated ones, ``benchmarks.py``);
- ``SGG_EVAL_SERVICE_HOSTS``: the host names it answers to (comma-separated; default ``localhost,127.0.0.1``);
- ``SGG_EVAL_SERVICE_SECURE``: ``1`` behind HTTPS (secure cookies);
- ``SGG_EVAL_SERVICE_MEMORY_MB``, ``SGG_EVAL_SERVICE_TIMEOUT_S``: one evaluation's limits (default 8192 MB, 3600 s);
- ``SGG_EVAL_SERVICE_MAX_UPLOAD_MB``: the largest upload (default 2048);
- ``SGG_EVAL_SERVICE_MIN_FREE_MB``: the room an upload must leave free on the uploads' disk (default 100);
- ``SGG_EVAL_SERVICE_LOGIN_ATTEMPTS``, ``SGG_EVAL_SERVICE_LOGIN_LOCKOUT_MINUTES``: failed log-ins before a user name
  is locked out from an address, and for how long (default 5 and 15);
- ``SGG_EVAL_SERVICE_SIMULATED_SCALE``: ``default`` or ``tiny``, the size of the simulated benchmarks made on first
  start (``sgg-eval serve --simulated-scale``).
"""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from importlib import resources
from pathlib import Path
from urllib.parse import unquote, urlsplit

from sgg_eval.core.errors import InputError

HOME = Path(os.environ.get("SGG_EVAL_SERVICE_HOME", "service")).resolve()
HOME.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    """Made once per HOME and kept there (owner-readable only): sessions survive a restart."""
    path = HOME / "secret_key"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(50))
    return path.read_text().strip()


def _database(url: str) -> dict:
    if not url:
        # IMMEDIATE: a transaction takes the write lock when it begins, so that checking the daily limit and adding
        # the upload are one step even with concurrent uploads (PostgreSQL locks the user's row instead)
        options = {"timeout": 30, "transaction_mode": "IMMEDIATE"}
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": HOME / "db.sqlite3", "OPTIONS": options}
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise InputError(f"SGG_EVAL_SERVICE_DATABASE must be postgresql://user:password@host:port/name, got {url!r}")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": parts.path.lstrip("/"),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
    }


SECRET_KEY = _secret_key()
DEBUG = False
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("SGG_EVAL_SERVICE_HOSTS", "localhost,127.0.0.1").split(",")]
SECURE = os.environ.get("SGG_EVAL_SERVICE_SECURE") == "1"
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE
# no script reads the session cookie, and no other site's page sends either cookie with a form it posts
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = CSRF_COOKIE_SAMESITE = "Lax"
# Log-in attempts are counted by django-axes (the page's and the admin's): after LOGIN_ATTEMPTS failures for one
# user name from one address, that pair is refused (HTTP 429) for LOGIN_LOCKOUT_MINUTES, and a success resets it.
AXES_FAILURE_LIMIT = int(os.environ.get("SGG_EVAL_SERVICE_LOGIN_ATTEMPTS", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("SGG_EVAL_SERVICE_LOGIN_LOCKOUT_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",
    "sgg_eval.service.apps.ServiceConfig",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last of Django's and django-axes', as django-axes asks
    "sgg_eval.service.unavailable.DatabaseUnavailable",
]
ROOT_URLCONF = "sgg_eval.service.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
WSGI_APPLICATION = "sgg_eval.service.wsgi.application"
DATABASES = {"default": _database(os.environ.get("SGG_EVAL_SERVICE_DATABASE", ""))}
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = LOGOUT_REDIRECT_URL = "home"
USE_TZ = True
TIME_ZONE = "UTC"
STATIC_URL = "static/"
STATIC_ROOT = HOME / "static"
# the results site's model-page script, which a result's page runs too (static/sgg_eval/model_page.js)
STATICFILES_DIRS = [("sgg_eval", str(resources.files("sgg_eval.report") / "assets"))]
MEDIA_ROOT = HOME / "uploads"
# an upload is read into a temporary file past 2.5 MB; past this size it is refused (a PSG ZIP with masks is large)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 2**20
SUBMISSION_MAX_BYTES = int(os.environ.get("SGG_EVAL_SERVICE_MAX_UPLOAD_MB", "2048")) * 2**20
FILE_UPLOAD_PERMISSIONS = 0o600
# a full disk refuses an upload with one line and keeps nothing of it (storage.py); this much stays free for the
# database and the scores
MIN_FREE_BYTES = int(os.environ.get("SGG_EVAL_SERVICE_MIN_FREE_MB", "100")) * 2**20
STORAGES = {
    "default": {"BACKEND": "sgg_eval.service.storage.Uploads"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
FILE_UPLOAD_HANDLERS = ["django.core.files.uploadhandler.MemoryFileUploadHandler", "sgg_eval.service.storage.Incoming"]
# scratch folders, one per process (leftovers.py: a process that starts clears those of the dead ones): the web
# server's uploads as they arrive (`serve` points FILE_UPLOAD_TEMP_DIR at its own), a worker's evaluations
INCOMING = HOME / "incoming"
SCRATCH = HOME / "scratch"
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "WARNING"}}

BENCHMARKS_FILE = os.environ.get("SGG_EVAL_SERVICE_BENCHMARKS", "")
EVAL_MEMORY_MB = int(os.environ.get("SGG_EVAL_SERVICE_MEMORY_MB", "8192"))
EVAL_TIMEOUT_S = float(os.environ.get("SGG_EVAL_SERVICE_TIMEOUT_S", "3600"))

_QUEUE = HOME / "queue"
EMBEDDED_BROKER = "filesystem://localhost/"
CELERY_BROKER_URL = os.environ.get("SGG_EVAL_SERVICE_BROKER", "") or EMBEDDED_BROKER
CELERY_BROKER_TRANSPORT_OPTIONS = (
    # every folder kombu's filesystem transport keeps (its "control" folder defaults to the working directory)
    {
        **{
            f"{k}_folder{io}": str(_QUEUE)
            for k, io in (("data", "_in"), ("data", "_out"), ("processed", ""), ("control", ""))
        },
        # how often an idle worker lists the folder: kombu's default, 1 s, cost up to a second per submission;
        # 0.05 s still cost a worker about 0.05 s between two submissions (half the scoring of a refused file)
        "polling_interval": 0.01,
    }
    if CELERY_BROKER_URL == EMBEDDED_BROKER
    # Redis hands a task not yet acknowledged to another worker after this long: longer than a scoring may take,
    # so that a long one is not scored twice at once (a dead worker's is taken up by jobs.release_orphans)
    else {"visibility_timeout": EVAL_TIMEOUT_S + 600}
)
if CELERY_BROKER_URL == EMBEDDED_BROKER:
    _QUEUE.mkdir(exist_ok=True)
    # kombu's filesystem transport with its files written whole (embedded_broker: kombu's could lose a message and
    # end the worker that read it half-written)
    CELERY_BROKER_TRANSPORT = "sgg_eval.service.embedded_broker:Transport"
# the status lives in the database; a task's return value is not kept
CELERY_TASK_IGNORE_RESULT = True
# a task is acknowledged once it ran: a worker killed mid-evaluation leaves it to another worker
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
