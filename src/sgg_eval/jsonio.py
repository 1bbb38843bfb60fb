"""Reading a user's JSON file: one clear error for a missing file, bad UTF-8, bad syntax or hostile nesting."""

from __future__ import annotations

import json
import os

from sgg_eval.errors import InputError


def load_json(path: str | os.PathLike):
    """The parsed document of ``path``, or :class:`InputError` naming the file and what is wrong."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError("file not found", path=path)
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc})", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=path) from None
    except RecursionError:
        raise InputError("JSON nested too deeply", path=path) from None
