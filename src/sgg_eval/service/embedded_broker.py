"""The embedded queue's broker: kombu's filesystem transport, with every file written whole before anyone reads it.

kombu's own transport creates a message file, then locks and writes it; a worker that lists the folder in between
moves the empty (or half-written) file away, fails to parse it, and ends (kombu issue #1551's error; it happened
once in CI among 524 uploads, and the message was lost with it). The exchange table is created the same way. Here
both are written to a name the reader skips, then put in place in one step (``os.rename``, ``os.link``: atomic
within a folder), so a reader sees a whole file or none. Chosen in ``settings`` (``CELERY_BROKER_TRANSPORT``) for
the embedded broker only; Redis and RabbitMQ need none of this.
"""

from __future__ import annotations

import os
import uuid
from contextlib import suppress
from pathlib import Path
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

# a file being written ends in this: kombu reads a message only if its name ends in ".<queue>.msg"
PARTIAL = ".part"


def _put_whole(path: Path, data: bytes, place) -> None:
    """``data`` written beside ``path`` under a name no reader looks at, then put in place by ``place(partial,
    path)``: ``os.rename``, or ``os.link`` (which fails if ``path`` exists). The partial file goes in every case,
    a write cut short (a full disk) included."""
    partial = path.with_name(f"{path.name}.{uuid.uuid4().hex}{PARTIAL}")
    try:
        with open(partial, "wb") as f:
            f.write(data)
        place(partial, path)
    finally:
        with suppress(FileNotFoundError):  # renamed away; or the second name of a link
            os.remove(partial)


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        """As kombu's, but the message appears under its name (time first: kombu reads in name order) whole."""
        path = Path(self.data_folder_out) / f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        try:
            _put_whole(path, str_to_bytes(dumps(payload)), os.rename)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {str(path)!r} to directory") from exc

    def _queue_bind(self, exchange, routing_key, pattern, queue):
        """A new exchange table appears whole (``os.link`` fails if another process made it first); an existing one
        is updated by kombu, under its lock."""
        file = self._exchange_file(exchange)
        if not file.exists():
            self.control_folder.mkdir(exist_ok=True)
            row = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
            try:
                _put_whole(file, str_to_bytes(dumps([row])), os.link)
                return
            except FileExistsError:
                pass  # another process made it: add the row to theirs
            except OSError as exc:
                raise ChannelError(f"Cannot open {file}") from exc
        super()._queue_bind(exchange, routing_key, pattern, queue)


class Transport(filesystem.Transport):
    Channel = Channel
