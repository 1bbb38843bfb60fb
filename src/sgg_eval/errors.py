"""One error type for bad input, so every entry point can print one clear line and exit non-zero."""

from __future__ import annotations


class InputError(Exception):
    """Bad or missing input. The message names the file, the image id and the field when they are known."""

    def __init__(self, message: str, *, path: str | None = None, image_id=None, field: str | None = None):
        self.path, self.image_id, self.field = path, image_id, field
        parts = []
        if path:
            parts.append(str(path))
        if image_id is not None:
            parts.append(f"image {image_id}")
        if field is not None:
            parts.append(f"field '{field}'")
        super().__init__(": ".join(parts + [message]))
