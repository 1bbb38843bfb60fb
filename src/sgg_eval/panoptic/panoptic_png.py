"""COCO panoptic PNGs as PSG's GT uses them: each pixel's segment (``R + 256·G + 256²·B``) as an index into the
image's ``segments_info`` (:func:`segment_index`), decoded as each protocol's tool decodes it (``PSG_PNG_READERS``:
Pillow's array as sgbench takes it, or detectron2's ``read_image`` as OpenPSG does), with every PNG chunk's CRC-32
and the image data's own zlib checksum verified (:func:`check_png`)."""

from __future__ import annotations

import contextlib
import io
import os
import struct
import zlib

import numpy as np

from sgg_eval.core.defaults import PSG_PNG_READERS
from sgg_eval.core.errors import InputError
from sgg_eval.io.integrity import crc32
from sgg_eval.panoptic.types import PsgGT, PsgImage

_PNG = b"\x89PNG\r\n\x1a\n"


def check_png(raw: bytes, where: dict) -> None:
    """Every chunk's CRC-32, as the PNG format records it, and the image data's zlib stream to its Adler-32: Pillow
    checks neither for the image data (IDAT), so a flipped bit there could decode to other segment ids, i.e. another
    ground truth, and a file whose CRCs were recomputed over damaged data decodes without a word."""
    if raw[:8] != _PNG:
        raise InputError("not a PNG file", **where)
    at, view, data = 8, memoryview(raw), []
    while at + 12 <= len(raw):
        (length,) = struct.unpack_from(">I", raw, at)
        end = at + 8 + length
        if end + 4 > len(raw):
            raise InputError(f"PNG chunk at byte {at} runs past the end of the file", **where)
        if crc32(view[at + 4 : end]) != struct.unpack_from(">I", raw, end)[0]:
            raise InputError(
                f"PNG chunk {bytes(raw[at + 4 : at + 8])!r} fails its CRC-32: the file is corrupt", **where
            )
        if raw[at + 4 : at + 8] == b"IDAT":
            data.append(view[at + 8 : end])
        if raw[at + 4 : at + 8] == b"IEND":
            _check_zlib(data, where)
            return
        at = end + 4
    raise InputError("PNG without its end chunk: truncated", **where)


_ZLIB_STEP = 1 << 22  # bytes of image data inflated at a time: memory stays flat whatever the PNG claims


def _check_zlib(parts: list, where: dict) -> None:
    """The IDAT chunks' zlib stream inflated to its end, which checks its Adler-32 (output discarded as it comes)."""
    inflate = zlib.decompressobj()
    try:
        for part in parts:
            inflate.decompress(part, _ZLIB_STEP)
            while inflate.unconsumed_tail:
                inflate.decompress(inflate.unconsumed_tail, _ZLIB_STEP)
    except zlib.error as exc:
        raise InputError(f"PNG image data is corrupt (zlib: {exc}): the file is damaged", **where) from None
    if not inflate.eof:
        raise InputError("PNG image data ends before its zlib stream does: the file is damaged", **where)


def segment_indexes(gt: PsgGT, image: PsgImage, protocols: tuple[str, ...]) -> list[tuple[tuple[str, ...], tuple]]:
    """:func:`segment_index` for each of ``protocols``, grouped: ``[(protocols, (index, areas)), ...]``. A PNG that
    every reader decodes alike (RGB or RGBA, no EXIF orientation: every COCO panoptic PNG) is decoded once."""
    readers: dict[str, list[str]] = {}
    for protocol in protocols:
        readers.setdefault(PSG_PNG_READERS[protocol], []).append(protocol)
    file, where = _gt_png(gt, image)
    raw = _png_bytes(file, where)
    groups = list(readers.items())
    if len(groups) > 1 and _read_alike(raw):
        groups = [(groups[0][0], [p for _, ps in groups for p in ps])]
    return [(tuple(ps), _segment_index(raw, reader, image, where)) for reader, ps in groups]


def segment_index(gt: PsgGT, image: PsgImage, reader: str = "pillow") -> tuple[np.ndarray, np.ndarray | None]:
    """``[H, W]``: each pixel's index into the image's ``segments_info``, ``len(segments_info)`` where no segment
    is (void, or an id the list does not name); uint8 (uint16 past 255 segments). Read from the PNG under
    ``gt.root`` as ``reader`` decodes it (``PSG_PNG_READERS``). And each segment's pixel count, from the PNG's
    colour counts (None past ``_MAX_COLOURS``)."""
    file, where = _gt_png(gt, image)
    return _segment_index(_png_bytes(file, where), reader, image, where)


def _gt_png(gt: PsgGT, image: PsgImage) -> tuple[str, dict]:
    file = os.path.join(gt.root, image.png)
    where = dict(path=file, image_id=image.image_id)
    if not os.path.isfile(file):
        raise InputError("PNG not found (is --psg-root the folder its pan_seg_file_name is relative to?)", **where)
    return file, where


def _segment_index(raw: bytes, reader: str, image: PsgImage, where: dict) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`segment_index` of the PNG bytes ``raw``, checked. When one colour channel alone tells every colour of
    the PNG apart (its few colours usually differ in their red, green or blue byte), Pillow maps that channel
    through a 256-entry table; otherwise the full ids go through :func:`index_of_ids`."""
    with _decoded(raw, reader, where) as im:
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


def read_panoptic_png(file: str, where: dict, shape: tuple[int, int] | None = None) -> np.ndarray:
    """``[H, W]`` uint32 segment ids ``R + 256·G + 256²·B`` of a COCO panoptic PNG (RGB or RGBA), its checksums
    verified first; read with Pillow as it is (OpenPSG's ``grade.py`` reads a submission's PNGs so). With ``shape``
    (H, W), a PNG of any other size is refused before it is decoded (a PNG bomb claims gigapixels in kilobytes)."""
    with _decoded(_png_bytes(file, where), "pillow", where, shape) as im:
        return _ids(im)


def _png_bytes(file: str, where: dict) -> bytes:
    """The PNG's bytes, its checksums verified (:func:`check_png`); one InputError when unreadable."""
    try:
        with open(file, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise InputError(f"PNG unreadable ({exc.strerror or exc})", **where) from None
    check_png(raw, where)
    return raw


# EXIF Orientation (tag 274) as detectron2's ``_apply_exif_orientation`` turns the image (its Pillow transposes)
_ORIENTATION = 274
_TURNS = {2: "FLIP_LEFT_RIGHT", 3: "ROTATE_180", 4: "FLIP_TOP_BOTTOM", 5: "TRANSPOSE", 6: "ROTATE_270",
          7: "TRANSVERSE", 8: "ROTATE_90"}  # fmt: skip


def _turn(im):
    """detectron2's turn for ``im``'s EXIF orientation (a Pillow ``Transpose``), or None: a missing or unreadable
    EXIF block, or an orientation outside 2..8, leaves the image as it is."""
    from PIL import Image

    try:
        exif = im.getexif()
    except Exception:  # noqa: BLE001  detectron2 catches every error here too (its issue #1885)
        return None
    name = _TURNS.get(exif.get(_ORIENTATION)) if exif is not None else None
    return None if name is None else getattr(Image.Transpose, name)


def _read_alike(raw: bytes) -> bool:
    """Whether every reader decodes ``raw`` to the same ids: RGB or RGBA, and no EXIF orientation to apply."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(raw)) as im:
            return im.mode in ("RGB", "RGBA") and _turn(im) is None
    except Exception:  # noqa: BLE001  unreadable: each reader says so in its own words
        return False


@contextlib.contextmanager
def _decoded(raw: bytes, reader: str, where: dict, shape: tuple[int, int] | None = None):
    """The PNG ``raw`` (checksums verified) decoded by Pillow as ``reader`` decodes it: ``pillow`` (sgbench, and
    OpenPSG's submission reader) takes RGB or RGBA as it is and refuses any other mode, whose array has no colour
    channels; ``detectron2`` (OpenPSG's GT reader, ``read_image(format="RGB")``) turns the image by its EXIF
    orientation, then converts any mode to RGB (a palette PNG to its colours). One InputError when unreadable."""
    from PIL import Image, UnidentifiedImageError

    if shape is not None and raw[12:16] == b"IHDR":  # its size, from the header, before Pillow opens it
        width, height = struct.unpack_from(">II", raw, 16)
        if (height, width) != tuple(shape):
            raise InputError(f"masks of {width}x{height} px, the GT image is {shape[1]}x{shape[0]}", **where)
    try:
        im = Image.open(io.BytesIO(raw))
        if reader == "pillow" and im.mode not in ("RGB", "RGBA"):
            raise InputError(f"PNG mode {im.mode}, expected RGB (ids R + 256 G + 256² B)", **where)
        im.load()
        if reader == "detectron2":
            turn = _turn(im)
            if turn is not None:
                im = im.transpose(turn)
            if im.mode != "RGB":
                im = im.convert("RGB")
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
