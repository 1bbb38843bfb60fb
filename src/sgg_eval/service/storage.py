"""A full disk, met at each place an upload is written: refused with one line (HTTP 507), nothing half-written kept.

An upload is written twice: as it arrives, into the web server's incoming folder (Django's upload handler, past
2.5 MB), and when it is recorded, into ``uploads/`` (the storage; a move from the incoming folder, or the bytes of a
small one). Before it is recorded, the service also keeps ``SGG_EVAL_SERVICE_MIN_FREE_MB`` free on the uploads'
disk, so that the database and the scores beside them always have room to be written."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

from django.conf import settings
from django.core.files.storage import FileSystemStorage
from django.core.files.uploadhandler import StopUpload, TemporaryFileUploadHandler

STORAGE_FULL = "the service's storage is full; nothing was kept; try again later or tell its operators"
_FULL = (errno.ENOSPC, errno.EDQUOT)


class StorageFull(Exception):
    """The disk (or the quota) the service writes to has no room for an upload."""


def is_full(exc: OSError) -> bool:
    return exc.errno in _FULL


def ensure_room(size: int) -> None:
    """Raise :class:`StorageFull` unless ``size`` bytes fit on the uploads' disk with the reserve left over."""
    folder = Path(settings.MEDIA_ROOT)
    free = shutil.disk_usage(folder if folder.exists() else folder.parent).free
    if free - size < settings.MIN_FREE_BYTES:
        raise StorageFull


class Uploads(FileSystemStorage):
    """Django's file storage, but a write cut short by a full disk removes what it wrote and raises
    :class:`StorageFull` (Django's own leaves the partial file)."""

    def _save(self, name, content):
        try:
            return super()._save(name, content)
        except OSError as exc:
            if not is_full(exc):
                raise
            # the name was free when the write began (get_available_name): what is there is the partial file
            Path(self.path(name)).unlink(missing_ok=True)
            raise StorageFull from None


class Incoming(TemporaryFileUploadHandler):
    """Django's handler of an upload as it arrives, but a full disk stops the upload: its file is closed (and so
    removed), the rest of the body is read and dropped, and ``request.storage_full`` is set for the view to refuse
    it (:func:`refused_as_full`)."""

    def receive_data_chunk(self, raw_data, start):
        try:
            return super().receive_data_chunk(raw_data, start)
        except OSError as exc:
            if not is_full(exc):
                raise
            self.file.close()
            self.request.storage_full = True
            raise StopUpload(connection_reset=False) from None


def refused_as_full(request) -> bool:
    """Whether the request's upload was stopped by a full disk (reads the body first, if nothing has)."""
    request.FILES  # noqa: B018 (reading it parses the body, through the upload handlers)
    return getattr(request, "storage_full", False)
