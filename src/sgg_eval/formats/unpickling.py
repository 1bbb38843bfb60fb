"""What every unpickler of the project runs inside: CPython's C unpickler, asked by a hostile BYTEARRAY8 opcode for
more bytes than it can allocate, raises MemoryError (which each reader turns into one line naming the file) and
also prints ``SystemError: deallocated bytearray object has exported buffers`` to stderr: the half-made object's
export count is never set, and its deallocation reports that through ``sys.excepthook`` (``PyErr_Print``). That
would be a second line beside the reader's. While a pickle is read, the hook does nothing; nothing else reaches it
then, since every reader catches its own errors.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def quiet_excepthook() -> Iterator[None]:
    """``sys.excepthook`` silenced for the ``with`` block."""
    hook, sys.excepthook = sys.excepthook, lambda kind, value, tb: None
    try:
        yield
    finally:
        sys.excepthook = hook
