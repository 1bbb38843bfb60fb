"""The CRC-32 of every storage of a torch zip file (each is a zip member) and which of them are checked.

A storage is checked the first time a tensor of it is read, in the process that reads it, so a file is read
once, block by block, however large. Either here (:meth:`MemberCrcs.check`, the bytes read once more) or by a
caller that folds the CRC-32 over the bytes while it reads them anyway and hands it in (:meth:`settle`).
"""

from __future__ import annotations

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.io.integrity import crc32


class MemberCrcs:
    """Storage ``i``'s ``nbytes[i]`` bytes at ``at[i]`` of the file (-1: never located) must have CRC-32
    ``crc[i]``, the zip member's data and the CRC its directory records."""

    def __init__(self, at: np.ndarray, nbytes: np.ndarray, crc: np.ndarray):
        self.at, self.nbytes, self.crc = at.astype(np.int64), nbytes.astype(np.int64), crc.astype(np.uint32)
        # storages checked, or never located (nothing to check them against: the reader refuses their tensors)
        self.checked = self.at < 0

    def __len__(self) -> int:
        return len(self.crc)

    def check(self, whole: np.ndarray, roots: np.ndarray) -> None:
        """Raise InputError if a storage of ``roots`` (any order, repeats allowed) not yet checked fails. A
        repeated storage is checked as often as it is named: rare (tensors sharing one), and cheaper than
        sorting every batch's roots to find it."""
        roots = roots[~self.checked[roots]]
        if not len(roots):
            return
        # C-level maps over memoryview slices: a PredCls file has ~9 storages of ~3.4 kB an image, where a Python
        # loop's per-storage overhead was a third of the checks' cost
        at = self.at[roots]
        spans = map(slice, at.tolist(), (at + self.nbytes[roots]).tolist())
        got = np.fromiter(map(crc32, map(memoryview(whole).__getitem__, spans)), dtype=np.uint32, count=len(roots))
        bad = np.flatnonzero(got != self.crc[roots])
        if len(bad):
            raise _corrupt(int(roots[bad[0]]))
        self.checked[roots] = True

    def to_fold(self, roots: np.ndarray, byte_at: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
        """Per tensor (its storage ``roots``, its bytes ``nbytes`` at ``byte_at``): the storage, when the
        tensor's bytes are exactly the storage's and it is still to check, else -1."""
        whole = (byte_at == self.at[roots]) & (nbytes == self.nbytes[roots])
        return np.where(whole & ~self.checked[roots], roots, -1)

    def settle(self, root: int, crc: int) -> None:
        """Storage ``root``'s CRC-32, computed by the caller over all its bytes: the storage counts as
        checked, or InputError as in :meth:`check`."""
        if crc != int(self.crc[root]):
            raise _corrupt(root)
        self.checked[root] = True


def _corrupt(root: int) -> InputError:
    return InputError(
        f"tensor storage #{root} fails its CRC-32 check: the file is corrupt (changed after torch wrote it)"
    )
