"""COCO panoptic PNGs as PSG's GT uses them: each pixel's segment (``R + 256·G + 256²·B``) as an index into the
image's ``segments_info`` (:func:`segment_index`), with every PNG chunk's CRC-32 checked (:func:`check_png`)."""

from __future__ import annotations

import contextlib
import io
import os
import struct

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.io.integrity import crc32
from sgg_eval.panoptic.types import PsgGT, PsgImage

_PNG = b"\x89PNG\r\n\x1a\n"


def check_png(raw: bytes, where: dict) -> None:
    """Every chunk's CRC-32, as the PNG format records it: Pillow skips those of the image data (IDAT), so a
    flipped bit there could decode to other segment ids, i.e. another ground truth."""
    if raw[:8] != _PNG:
        raise InputError("not a PNG file", **where)
    at, view = 8, memoryview(raw)
    while at + 12 <= len(raw):
        (length,) = struct.unpack_from(">I", raw, at)
        end = at + 8 + length
        if end + 4 > len(raw):
            raise InputError(f"PNG chunk at byte {at} runs past the end of the file", **where)
        if crc32(view[at + 4 : end]) != struct.unpack_from(">I", raw, end)[0]:
            raise InputError(
                f"PNG chunk {bytes(raw[at + 4 : at + 8])!r} fails its CRC-32: the file is corrupt", **where
            )
        if raw[at + 4 : at + 8] == b"IEND":
            return
        at = end + 4
    raise InputError("PNG without its end chunk: truncated", **where)


def segment_index(gt: PsgGT, image: PsgImage) -> tuple[np.ndarray, np.ndarray | None]:
    """``[H, W]``: each pixel's index into the image's ``segments_info``, ``len(segments_info)`` where no segment
    is (void, or an id the list does not name); uint8 (uint16 past 255 segments). Read from the PNG under
    ``gt.root``. And each segment's pixel count, from the PNG's colour counts (None past ``_MAX_COLOURS``).

    When one colour channel alone tells every colour of the PNG apart (its few colours usually differ in their
    red, green or blue byte), Pillow maps that channel through a 256-entry table; otherwise the full ids go
    through :func:`index_of_ids`."""
    file = os.path.join(gt.root, image.png)
    where = dict(path=file, image_id=image.image_id)
    if not os.path.isfile(file):
        raise InputError("PNG not found (is --psg-root the folder its pan_seg_file_name is relative to?)", **where)
    with _panoptic_png(file, where) as im:
        colours = im.getcolors(_MAX_COLOURS)
        if colours is None:
            return index_of_ids(_ids(im), image.segment_ids), None
        present, counts = _colour_ids(colours)
        index = {seg_id: i for i, seg_id in enumerate(image.segment_ids.tolist())}
        g = len(index)
        area = np.zeros(g, dtype=np.int64)
        for seg_id, n in zip(present.tolist(), counts.tolist()):
            if seg_id in index:
                area[index[seg_id]] = n
        for channel in range(3) if g < 255 else ():
            byte = (present >> (8 * channel)) & 0xFF
            if len(np.unique(byte)) == len(byte):  # this channel names every colour of the image
                table = [g] * 256
                for seg_id, value in zip(present.tolist(), byte.tolist()):
                    table[value] = index.get(seg_id, g)
                return np.asarray(im.getchannel(channel).point(table)), area
        return index_of_ids(_ids(im), image.segment_ids, present), area


def index_of_ids(ids: np.ndarray, segment_ids: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
    """Each pixel's index in ``segment_ids`` (distinct, < 2²⁴), ``len(segment_ids)`` for any other id. A table
    indexed by the fewest low bits that tell the ids apart names each pixel's segment: when ``present`` lists
    every id of the image (PNGs of a few hundred colours), that is the answer, two passes over the pixels;
    otherwise one comparison with the segment's id confirms it. No hashing or search."""
    g = len(segment_ids)
    dtype = np.uint8 if g < 255 else np.uint16
    keys = np.union1d(segment_ids, present) if present is not None else segment_ids
    bits = max(1, int(len(keys)).bit_length())
    while len(np.unique(keys & ((1 << bits) - 1))) < len(keys):
        bits += 1
    mask = (1 << bits) - 1
    table = np.full(1 << bits, g, dtype=dtype)
    table[segment_ids & mask] = np.arange(g, dtype=dtype)  # the other keys keep g: they name no segment
    candidate = table[ids & mask]
    if present is not None:
        return candidate
    known = np.append(segment_ids, 1 << 24).astype(np.uint32)  # the sentinel matches no 24-bit id
    return np.where(known[candidate] == ids, candidate, dtype(g))


_MAX_COLOURS = 4096  # a panoptic PNG has one colour per segment (and void); past this, ids are checked per pixel


def read_panoptic_png(file: str, where: dict) -> np.ndarray:
    """``[H, W]`` uint32 segment ids ``R + 256·G + 256²·B`` of a COCO panoptic PNG (RGB or RGBA), its chunk CRCs
    checked first; read with Pillow."""
    with _panoptic_png(file, where) as im:
        return _ids(im)


@contextlib.contextmanager
def _panoptic_png(file: str, where: dict):
    """The PNG decoded by Pillow (RGB or RGBA), its chunk CRCs checked first; one InputError when unreadable."""
    from PIL import Image, UnidentifiedImageError

    try:
        with open(file, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise InputError(f"PNG unreadable ({exc.strerror or exc})", **where) from None
    check_png(raw, where)
    try:
        im = Image.open(io.BytesIO(raw))
        if im.mode not in ("RGB", "RGBA"):
            raise InputError(f"PNG mode {im.mode}, expected RGB (ids R + 256 G + 256² B)", **where)
        im.load()
    except (OSError, UnidentifiedImageError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise InputError(f"unreadable PNG ({' '.join(str(exc).split())[:100]})", **where) from None
    with im:
        yield im


def _ids(im) -> np.ndarray:
    # R + 256 G + 256² B is the pixel's little-endian uint32 without its alpha byte
    return np.asarray(im.convert("RGBA")).view("<u4")[..., 0] & 0xFFFFFF


def _colour_ids(colours: list) -> tuple[np.ndarray, np.ndarray]:
    """Pillow's ``getcolors`` as (distinct ids, their pixel counts): RGBA colours of one id are summed."""
    present = np.array([c[0] + 256 * c[1] + 65536 * c[2] for _, c in colours], dtype=np.int64)
    counts = np.array([n for n, _ in colours], dtype=np.int64)
    present, inverse = np.unique(present, return_inverse=True)
    return present, np.bincount(inverse, weights=counts, minlength=len(present)).astype(np.int64)
