"""The error types and the one error path of every entry point (CLI and DVC stages).

- :class:`InputError`: anything a user can cause (bad or missing input, a bad option, an unwritable output).
  One line on stderr, exit code 2.
- Any other exception is a bug: one line that says so, exit code 1; the traceback only with ``--debug`` or
  ``SGG_EVAL_DEBUG=1``.
"""

from __future__ import annotations

import errno
import os
import re
import sys
import traceback
from collections.abc import Callable

EXIT_USER, EXIT_BUG = 2, 1


class InputError(Exception):
    """Bad or missing input. The message names the file, the image (id and position) and the field when known."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        image_id=None,
        field: str | None = None,
        position: int | None = None,
    ):
        self.path, self.image_id, self.field, self.position = path, image_id, field, position
        self.message = " ".join(str(message).split())
        parts = []
        if path:
            parts.append(str(path))
        if image_id is not None:
            parts.append(f"image {image_id}" + (f" (#{position})" if position is not None else ""))
        elif position is not None:
            parts.append(f"image #{position}")
        if field is not None:
            parts.append(f"field '{field}'")
        super().__init__(": ".join(parts + [self.message]))

    def __reduce__(self):  # picklable with its fields (errors raised in worker processes reach the user intact)
        return (_rebuild_input_error, (self.message, self.path, self.image_id, self.field, self.position))

    def renamed(self, names: dict[str, str]) -> InputError:
        """The same error with the field named as the file format names it (``rel_scores`` ->
        ``pred_rel_scores``): a user then finds the field in their own file."""
        field = self.field
        for ours, theirs in names.items():
            if field is not None and (field == ours or field.startswith(ours + " ")):
                field = theirs + field[len(ours) :]
                break
        return InputError(self.message, path=self.path, image_id=self.image_id, field=field, position=self.position)


def _rebuild_input_error(message, path, image_id, field, position) -> InputError:
    return InputError(message, path=path, image_id=image_id, field=field, position=position)


_OS_ERRORS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EISDIR: "is a directory",
    errno.ENOTDIR: "a parent is not a directory",
    errno.EROFS: "read-only file system",
    errno.ENOENT: "no such file or directory",
}


def os_error_reason(exc: OSError) -> str:
    """What an I/O failure was, without file names: from its errno, or from the ``errno = N`` libhdf5 writes
    into its message (with the temporary file's name and its error stack, which are left out)."""
    code = exc.errno
    if code is None:
        found = re.search(r"errno = (\d+)", str(exc))
        code = int(found.group(1)) if found else None
    what = _OS_ERRORS.get(code)
    detail = exc.strerror if exc.strerror and exc.strerror.startswith(what or "\0") else what or exc.strerror
    return " ".join(str(detail or exc).split())[:160]


def os_error_message(exc: OSError) -> str:
    """A one-line description of an I/O failure the user can act on (disk full, permission, not a file)."""
    name = exc.filename if exc.filename is not None else ""
    return f"{name}: {os_error_reason(exc)}".lstrip(": ")


def debug_enabled(flag: bool = False) -> bool:
    return flag or os.environ.get("SGG_EVAL_DEBUG", "") not in ("", "0")


def guarded(body: Callable[[], object], prog: str, *, debug: bool = False) -> int:
    """Run ``body``; map every failure to one line on stderr and an exit code (0, 1 bug, 2 user error)."""
    try:
        body()
    except InputError as exc:
        _report(f"{prog}: error: {exc}", debug)
        return EXIT_USER
    except OSError as exc:  # disk full, permissions, a directory where a file was expected: the user's to fix
        _report(f"{prog}: error: {os_error_message(exc)}", debug)
        return EXIT_USER
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except RecursionError:
        _report(f"{prog}: error: input nested too deeply", debug)
        return EXIT_USER
    except MemoryError:
        _report(f"{prog}: error: out of memory (input too large for this machine)", debug)
        return EXIT_USER
    except Exception as exc:  # noqa: BLE001 - the one place that turns a bug into one line
        first = " ".join(str(exc).split())[:300]
        _report(
            f"{prog}: internal error (a bug in sgg-eval, please report it with the command line): "
            f"{type(exc).__name__}: {first}; rerun with SGG_EVAL_DEBUG=1 for the traceback",
            debug,
        )
        return EXIT_BUG
    return 0


def _report(line: str, debug: bool) -> None:
    if debug_enabled(debug):
        traceback.print_exc(file=sys.stderr)
    print(line, file=sys.stderr)
