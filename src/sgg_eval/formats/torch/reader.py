"""The way in: a ``torch.save`` file of either layout, read without torch (``formats.torch``)."""

from __future__ import annotations

import os
import zipfile

from sgg_eval.core.errors import InputError
from sgg_eval.formats.torch.layouts import load_legacy, load_zip
from sgg_eval.io.allocator import release_free_memory


def load(path: str | os.PathLike):
    """Load a ``torch.save`` file into plain Python objects, ``LazyTensor``s and BoxList stand-ins (whose
    class's ``table`` holds the BoxLists' rows)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError("file not found", path=path)
    obj = load_zip(path) if zipfile.is_zipfile(path) else load_legacy(path)
    release_free_memory()
    return obj
