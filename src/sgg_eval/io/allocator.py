"""Two settings of the C allocator (glibc's malloc; no-ops elsewhere) that decide how much a run pays the
kernel for memory: on this kind of machine a page fault costs ~1-2 µs, and evaluating a block of images
allocates tens of MB of short-lived arrays.

- :func:`release_free_memory` after a large parse: freed memory goes back to the system, so that forked
  workers do not copy pages their parent only kept as free space.
- :func:`reuse_freed_memory` in an evaluating process: large arrays come from the heap and freed memory stays
  there, so every block reuses the pages of the last one. By default glibc maps each array above a (moving)
  threshold afresh and trims the heap top, so every block faulted its temporaries in again: ~15% of the time
  of ranking a PredCls block, measured. The heap then stays at the peak of one block: bounded, not growing
  with the images.
"""

from __future__ import annotations

import ctypes

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
_KEEP = 1 << 30  # bytes: arrays below this come from the heap, and a free heap top below this is kept

_LIBC: list = [None]  # the C library, looked up once (False where there is none)


def _libc():
    if _LIBC[0] is None:
        try:
            libc = ctypes.CDLL(None)
            _LIBC[0] = libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else False
        except OSError:
            _LIBC[0] = False
    return _LIBC[0]


def release_free_memory() -> None:
    """Give the memory freed after parsing (the pickle's bytes and transient objects, tens of MB) back to the
    system. glibc keeps freed blocks in its heap, so a ``--jobs`` worker that later allocates there copies
    those pages from its parent: the heap of the run would grow with the size of the file."""
    libc = _libc()
    if libc:
        libc.malloc_trim(0)


def reuse_freed_memory() -> None:
    """Keep freed memory in this process's heap and take large arrays from it (see the module docstring)."""
    libc = _libc()
    if libc:
        libc.mallopt(_M_MMAP_THRESHOLD, _KEEP)
        libc.mallopt(_M_TRIM_THRESHOLD, _KEEP)
