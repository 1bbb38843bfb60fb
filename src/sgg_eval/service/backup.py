"""A service's backup, one file, and its restore into an empty service: `sgg-eval manage backup FILE` and
`sgg-eval manage restore FILE` (the management commands in ``management/commands``).

The backup is a gzipped tar of ``database.json`` (Django's ``dumpdata`` of every table that holds what users and
admins made: accounts with their password hashes, API tokens (hashed), benchmarks, submissions, scores, the admin's
log; natural keys, so it loads into SQLite or PostgreSQL alike), ``uploads/`` (every stored file) and
``secret_key``. Left out: sessions (users log in again), log-in attempts, and ``simulated/``, which `serve`
rebuilds, byte for byte, when it finds it missing. Django's own tools do the work; the restore extracts with
tarfile's ``data`` filter (no member outside the folder, no links or devices) and then checks every submission's
file against the SHA-256 recorded when it was uploaded."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.db import transaction

from sgg_eval.core.errors import InputError
from sgg_eval.io.atomic import atomic_output

DATABASE = "database.json"
# tables whose rows are not the service's content: made again by `migrate`, or kept only while they matter
LEFT_OUT = ["contenttypes", "auth.permission", "sessions", "axes"]


def backup(out: Path) -> dict:
    """Write the backup to ``out`` (atomically); the number of rows and files in it."""
    from sgg_eval.service.models import Submission

    text = io.StringIO()
    call_command("dumpdata", natural_foreign=True, natural_primary=True, exclude=LEFT_OUT, stdout=text)
    data = text.getvalue().encode()
    uploads = Path(settings.MEDIA_ROOT)
    files = sorted(p for p in uploads.rglob("*") if p.is_file()) if uploads.exists() else []
    # gzip's fastest level: uploads are mostly compressed already (ZIP, HDF5), and level 9 spent 30 s on 800 MB
    with atomic_output(out) as tmp, tarfile.open(tmp, "w:gz", compresslevel=1) as tar:
        info = tarfile.TarInfo(DATABASE)
        info.size, info.mode = len(data), 0o600
        tar.addfile(info, io.BytesIO(data))
        tar.add(Path(settings.HOME) / "secret_key", "secret_key")
        for path in files:
            tar.add(path, f"uploads/{path.relative_to(uploads).as_posix()}")
    return {"submissions": Submission.objects.count(), "files": len(files), "bytes": out.stat().st_size}


def restore(archive: Path) -> dict:
    """Restore ``archive`` into this service, whose database must hold no account and no submission yet."""
    from django.contrib.auth import get_user_model

    from sgg_eval.service.models import Submission

    call_command("migrate", interactive=False, verbosity=0)
    if Submission.objects.exists() or get_user_model().objects.exists():
        raise InputError(f"the service in {settings.HOME} is not empty: restore into a new SGG_EVAL_SERVICE_HOME")
    try:
        with tarfile.open(archive, "r:gz") as tar, tempfile.TemporaryDirectory(dir=settings.HOME) as tmp:
            names = set(tar.getnames())
            if DATABASE not in names:
                raise InputError(f"no {DATABASE} in it: not a backup of sgg-eval's service", path=str(archive))
            tar.extractall(tmp, filter="data")
            with transaction.atomic():
                call_command("loaddata", str(Path(tmp) / DATABASE), verbosity=0)
            _move(Path(tmp) / "uploads", Path(settings.MEDIA_ROOT))
            if (Path(tmp) / "secret_key").is_file():
                os.replace(Path(tmp) / "secret_key", Path(settings.HOME) / "secret_key")
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise InputError(f"not a readable backup ({' '.join(str(exc).split())[:100]})", path=str(archive)) from None
    damaged = [s.pk for s in Submission.objects.all() if _sha256(Path(settings.MEDIA_ROOT) / s.file.name) != s.sha256]
    if damaged:
        raise InputError(f"submissions {damaged[:10]} have no file, or another file, than they were uploaded with")
    return {"submissions": Submission.objects.count(), "accounts": get_user_model().objects.count()}


def _move(source: Path, target: Path) -> None:
    for path in sorted(source.rglob("*")) if source.exists() else []:
        if path.is_file():
            (target / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target / path.relative_to(source))


def _sha256(path: Path) -> str:
    if not path.is_file():
        return ""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
