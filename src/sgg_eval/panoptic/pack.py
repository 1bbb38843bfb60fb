"""``sgg-eval psg-pack JSON MASKS -o submission.zip``: an SGBench submission ZIP from a model's masks.

JSON is an SGBench file (``{"version", "images": [{"id", <instances>, "triplets", ...}]}``, any of the three
instance spellings, ``seg_filename`` optional). MASKS holds each image's instance masks, one layer per
instance in the instance list's order, as either

- ``<id>.npy``: an array ``[N, H, W]`` (``[H, W]`` when N = 1) of bool or integers, read without pickle; or
- ``<id>/<k>.png`` for k = 0 … N − 1: one PNG per instance (any mode; a pixel is in the mask when any of its
  channels is non-zero).

Any non-zero value is in the mask; layers may overlap. The ZIP holds ``triplets.json`` (the JSON with each
``seg_filename`` set to ``masks/<id>.tiff``) and one TIFF per image: N pages of uint8 0/1, Deflate-compressed,
with tifffile's shape metadata, so that 0, 1, 3 and 4 layers read back as ``[N, H, W]`` (what sgbench 1.0.0
and ``sgg-eval evaluate`` read). Written atomically: on any error nothing is left behind.
"""

from __future__ import annotations

import io
import json
import os
import re
import warnings
import zipfile

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.formats.numpy_files import read_npy
from sgg_eval.io.atomic import atomic_output
from sgg_eval.io.jsonio import load_json

_SAFE_ID = re.compile(r"[A-Za-z0-9._-]{1,200}")


def pack_submission(predictions: str | os.PathLike, masks: str | os.PathLike, output: str | os.PathLike) -> dict:
    """Write the ZIP; returns ``{"images", "layers"}`` counted."""
    predictions, masks = os.fspath(predictions), os.fspath(masks)
    doc = load_json(predictions)
    if not isinstance(doc, dict) or not isinstance(doc.get("images"), list) or type(doc.get("version")) is not int:
        raise InputError("expected {'version': 1 or 2, 'images': [...]}", path=predictions, field="images")
    if not os.path.isdir(masks):
        raise InputError("not a folder of masks (<id>.npy, or <id>/<k>.png)", path=masks)
    layers_total = 0
    with atomic_output(output) as tmp, zipfile.ZipFile(tmp, "w") as zf:
        for position, entry in enumerate(doc["images"]):
            image_id, count = _entry(entry, position, predictions)
            stack = _read_masks(masks, image_id, count)
            name = f"masks/{image_id}.tiff"
            zf.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), _tiff(stack))
            entry["seg_filename"] = name
            layers_total += count
        info = zipfile.ZipInfo("triplets.json", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info, json.dumps(doc))
    return {"images": len(doc["images"]), "layers": layers_total}


def _entry(entry, position: int, path: str) -> tuple[str | int, int]:
    """(id, instance count) of one image entry."""
    if not isinstance(entry, dict):
        raise InputError("image entry is not an object", path=path, position=position, field="images")
    image_id = entry.get("id")
    if type(image_id) not in (int, str) or not _SAFE_ID.fullmatch(str(image_id)):
        raise InputError(
            f"id {image_id!r:.40} cannot name a mask file (letters, digits, '.', '_', '-')",
            path=path,
            position=position,
            field="id",
        )
    where = dict(path=path, image_id=image_id, field="instances")
    listed = [k for k in ("instances", "annotation", "categories") if k in entry]
    if not listed or not all(isinstance(entry[k], list) for k in listed):
        raise InputError("give the instances: 'instances', 'annotation' or 'bboxes' + 'categories'", **where)
    counts = {len(entry[k]) for k in listed}
    if len(counts) > 1:  # several spellings must hold the same instances (the reader checks them in full)
        raise InputError(f"the instance lists {', '.join(listed)} differ in length", **where)
    return image_id, counts.pop()


def _read_masks(folder: str, image_id, count: int) -> np.ndarray:
    """``[count, H, W]`` uint8 0/1 of one image."""
    npy, pngs = os.path.join(folder, f"{image_id}.npy"), os.path.join(folder, str(image_id))
    where = dict(image_id=image_id)
    if os.path.isfile(npy):
        try:
            stack = read_npy(npy)
        except InputError as exc:
            raise InputError(exc.message, path=npy, **where) from None
        if stack.ndim == 2 and count == 1:
            stack = stack[None]
        where["path"] = npy
    elif os.path.isdir(pngs):
        where["path"] = pngs
        if not count:
            raise InputError("an image without instances needs <id>.npy of shape [0, H, W] (its size)", **where)
        layers = [_png_layer(os.path.join(pngs, f"{k}.png"), image_id) for k in range(count)]
        sizes = {layer.shape for layer in layers}
        if len(sizes) > 1:
            raise InputError(f"PNGs of different sizes {sorted(sizes)}", **where)
        stack = np.stack(layers)
    else:
        raise InputError(f"no masks: expected {image_id}.npy or a folder {image_id}/ of PNGs", path=folder, **where)
    if stack.dtype.kind not in "biu" or stack.ndim != 3 or stack.shape[0] != count:
        raise InputError(
            f"masks of dtype {stack.dtype} and shape {list(stack.shape)}: expected {count} layers "
            "[N, H, W] of bool or integers (one per instance)",
            **where,
        )
    if 0 in stack.shape[1:]:
        raise InputError("masks of 0 pixels", **where)
    return (stack != 0).astype(np.uint8)


def _png_layer(file: str, image_id) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError

    if not os.path.isfile(file):
        raise InputError("missing: one PNG per instance, 0.png … N-1.png", path=file, image_id=image_id)
    try:
        with Image.open(file) as im:
            pixels = np.asarray(im)
    except (OSError, UnidentifiedImageError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise InputError(f"unreadable PNG ({' '.join(str(exc).split())[:100]})", path=file, image_id=image_id) from None
    return pixels.any(axis=2) if pixels.ndim == 3 else pixels != 0


def _tiff(stack: np.ndarray) -> bytes:
    import tifffile

    out = io.BytesIO()
    with warnings.catch_warnings():  # 0 layers: tifffile warns "nonconformant TIFF", which it reads back
        warnings.simplefilter("ignore")
        tifffile.imwrite(
            out, stack, photometric="minisblack", compression="zlib", metadata={"shape": list(stack.shape)}
        )
    return out.getvalue()
