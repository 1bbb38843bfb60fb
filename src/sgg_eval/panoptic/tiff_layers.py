"""The instance masks of one SGBench TIFF, one layer at a time.

An SGBench TIFF holds one layer per instance, as ``tifffile`` writes them (sgbench's own writer uses it): N
pages; 3 or 4 layers as one planar RGB(A) page; 1 layer with or without shape metadata; 0 layers. Any
non-zero pixel is in the mask.

Fast path, for what sgbench's writer makes (a classic TIFF of one page per layer, 8-bit, one sample, no
predictor, strips Deflate-compressed or not): the IFDs are walked for the ten tags that describe such a
page (``_plain_strips``; any other value of them, or any doubt, takes the general path), and each layer's
strips are inflated by zlib-ng (imagecodecs) straight into the image's ``[N, H, W]`` array, bounded to the
layer's size. Its cost is the decode alone, ~0.06 ms a 640×480 layer; ``tifffile`` spends ~0.07 ms more a
page in Python on its tags. Anything
else (LZMA and other codecs, predictors, tiles, planar RGB pages, BigTIFF, 0 layers) is decoded by
``tifffile.imread``, the general path and the fast path's oracle in the tests. Either way the layer count
must equal the instance count and the size the GT image's.
"""

from __future__ import annotations

import io
import logging
import struct

import imagecodecs
import numpy as np

from sgg_eval.core.errors import InputError

_DEFLATE = (8, 32946)  # TIFF's Adobe Deflate and (old) Deflate: zlib streams
# zlib-ng inflates a mask layer ~3x faster than ISA-L here (long runs of zeros); imagecodecs has both
_ZLIB = imagecodecs.zlibng_decode if imagecodecs.ZLIBNG.available else imagecodecs.zlib_decode
_NONE = 1


def tiff_stack(raw: bytes, count: int, shape: tuple[int, int], where: dict) -> np.ndarray:
    """The ``count`` layers of the TIFF ``raw`` as one ``[count, H, W]`` uint8 array (non-zero: in the mask;
    ``shape`` = (H, W)); InputError naming ``where`` when it is not ``count`` layers of that size."""
    strips = _plain_strips(raw, count, shape)
    if strips is None:
        return _decode_tiff(raw, count, shape, where)
    compressed, pages = strips
    size = shape[0] * shape[1]
    out = np.empty((count, size), dtype=np.uint8)
    view = memoryview(raw)
    for i, (offsets, sizes) in enumerate(pages):
        got = 0
        for at, n in zip(offsets, sizes):
            if at + n > len(raw):
                raise InputError(f"TIFF layer {i}: a strip lies outside the file: truncated or corrupt", **where)
            if compressed:
                got += _inflate(view[at : at + n], out[i, got:], i, where)
            elif got + n > size:
                got += n
                break
            else:
                out[i, got : got + n] = np.frombuffer(view[at : at + n], dtype=np.uint8)
                got += n
        if got != size:
            raise InputError(f"TIFF layer {i} holds {got} bytes, expected {shape[1]}x{shape[0]} px", **where)
    return out.reshape(count, *shape)


# The tags the fast path reads (TIFF 6.0): an IFD with any other value of these takes tifffile's path.
_WIDTH, _LENGTH, _BITS, _COMPRESSION, _OFFSETS, _SAMPLES, _BYTECOUNTS = 256, 257, 258, 259, 273, 277, 279
_FILLORDER, _PREDICTOR, _SAMPLEFORMAT, _TILE_TAGS = 266, 317, 339, (322, 323, 324, 325)
_READ = {_WIDTH, _LENGTH, _BITS, _COMPRESSION, _OFFSETS, _SAMPLES, _BYTECOUNTS, _FILLORDER, _PREDICTOR, _SAMPLEFORMAT}
_TYPES = {3: ("H", 2), 4: ("I", 4)}  # SHORT, LONG: the only types these tags take in a plain file


def _plain_strips(raw: bytes, count: int, shape: tuple[int, int]):
    """``(compressed, [(strip offsets, strip sizes)] per page)`` when ``raw`` is a classic TIFF of exactly
    ``count`` pages of ``shape``, 8-bit, one sample, no predictor, untiled, Deflate or uncompressed; else None
    (tifffile then reads it, and says what is wrong). Walks at most ``count + 1`` IFDs, every read bounded."""
    if count < 1 or len(raw) < 8 or raw[:4] not in (b"II*\0", b"MM\0*"):
        return None
    order = "<" if raw[:2] == b"II" else ">"
    want = (shape[1], shape[0], 8, 1, 1, 1)  # width, length, bits, samples, predictor, fill order
    at = struct.unpack_from(order + "I", raw, 4)[0]
    pages, compression = [], None
    while at and len(pages) <= count:
        if at + 2 > len(raw):
            return None
        n = struct.unpack_from(order + "H", raw, at)[0]
        if at + 2 + 12 * n + 4 > len(raw):
            return None
        entries = struct.unpack_from(order + "HHII" * n, raw, at + 2)
        single, arrays = {_SAMPLES: 1, _PREDICTOR: 1, _FILLORDER: 1, _SAMPLEFORMAT: 1, _COMPRESSION: 1}, {}
        for k in range(0, 4 * n, 4):
            tag, kind, number, value = entries[k : k + 4]
            if tag in _TILE_TAGS:
                return None
            if tag not in _READ:
                continue
            if kind not in _TYPES or number < 1:
                return None
            if tag in (_OFFSETS, _BYTECOUNTS):
                arrays[tag] = _values(raw, order, kind, number, value, at + 2 + 12 * (k // 4) + 8)
                if arrays[tag] is None:
                    return None
            elif number != 1:
                return None
            else:  # one value, inline: a SHORT sits in the field's first two bytes
                single[tag] = value if kind == 4 else (value & 0xFFFF if order == "<" else value >> 16)
        if (
            (
                single.get(_WIDTH),
                single.get(_LENGTH),
                single.get(_BITS),
                single[_SAMPLES],
                single[_PREDICTOR],
                single[_FILLORDER],
            )
            != want
            or single[_SAMPLEFORMAT] not in (1, 2)
            or single[_COMPRESSION] not in (_NONE, *_DEFLATE)
            or compression not in (None, single[_COMPRESSION])
        ):
            return None
        compression = single[_COMPRESSION]
        offsets, sizes = arrays.get(_OFFSETS), arrays.get(_BYTECOUNTS)
        if offsets is None or sizes is None or len(offsets) != len(sizes):
            return None
        pages.append((offsets, sizes))
        at = struct.unpack_from(order + "I", raw, at + 2 + 12 * n)[0]
    if len(pages) != count or at:
        return None
    return compression != _NONE, pages


def _values(raw: bytes, order: str, kind: int, number: int, value: int, inline_at: int) -> list[int] | None:
    """A tag's ``number`` values: inline (they fit in 4 bytes) or at offset ``value``; None when out of the file."""
    code, width = _TYPES[kind]
    at = inline_at if number * width <= 4 else value
    if at + number * width > len(raw):
        return None
    return list(struct.unpack_from(f"{order}{number}{code}", raw, at))


def _inflate(data, out: np.ndarray, layer: int, where: dict) -> int:
    """Inflate a strip's zlib stream into ``out`` (the rest of its layer), by zlib-ng (imagecodecs), and return
    the bytes written; a stream that does not fit (a bomb, or a wrong size) or does not decode is refused."""
    try:
        return len(_ZLIB(data, out=out))
    except Exception as exc:  # noqa: BLE001 - imagecodecs raises its own error kinds for bad or oversized data
        raise InputError(
            f"TIFF layer {layer}: corrupt Deflate data, or more than the layer holds "
            f"({' '.join(str(exc).split())[:80]})",
            **where,
        ) from None


class _Heard(logging.Handler):
    """Keeps what tifffile logs while it reads one file: it logs, and goes on, where a file is damaged or cut short
    (a page's tags past the end, a series that no longer fits its shape), and returns what it could read."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


BYTES_PER_PIXEL = 8  # the widest sample a mask layer may take (float64): past it, a TIFF declares more than masks


def _check_declared(raw: bytes, count: int, shape: tuple[int, int], where: dict) -> None:
    """Refuse, before a pixel is decoded, a TIFF with more pages than layers, or whose pages declare more pixel
    bytes than ``count`` layers of ``shape`` can hold (a TIFF bomb: a few bytes of compressed data that claim
    gigapixels, or a million small pages). Reads at most ``count + 1`` page headers; a file tifffile cannot list
    is left to ``imread``, which says what is wrong."""
    import tifffile

    most = max(count, 1)  # zero layers are written as one empty page
    limit, declared, pages = BYTES_PER_PIXEL * most * shape[0] * shape[1], 0, 0
    try:
        with tifffile.TiffFile(io.BytesIO(raw)) as tif:
            for i in range(most + 1):
                try:
                    page = tif.pages[i]
                except IndexError:
                    break
                pages += 1
                declared += int(np.prod(page.shape, dtype=np.int64)) * (page.dtype.itemsize if page.dtype else 1)
    except Exception:  # noqa: BLE001 - damaged: imread reports it in its own words
        return
    if pages > most:
        raise InputError(f"TIFF of more than {most} pages: expected {count} layers (one per instance)", **where)
    if declared > limit:
        raise InputError(
            f"TIFF declares {declared} bytes of pixels; {count} layers of {shape[1]}x{shape[0]} px hold at most "
            f"{limit}: refused before decoding",
            **where,
        )


def _decode_tiff(raw: bytes, count: int, shape: tuple[int, int], where: dict) -> np.ndarray:
    """``tifffile.imread``'s layers of any TIFF it reads (the module docstring's layouts), 1 where non-zero. A file
    tifffile reads only in part (it logs a warning and goes on) is refused with what it said, never printed."""
    import tifffile

    logger, heard = logging.getLogger("tifffile"), _Heard()
    logger.addHandler(heard)
    propagate, logger.propagate = logger.propagate, False
    try:
        _check_declared(raw, count, shape, where)
        layers = tifffile.imread(io.BytesIO(raw))
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - tifffile and its codecs raise many kinds on a damaged file
        raise InputError(
            f"unreadable TIFF ({type(exc).__name__}: {' '.join(str(exc).split())[:100]})", **where
        ) from None
    finally:
        logger.removeHandler(heard)
        logger.propagate = propagate
    if heard.messages:
        said = " ".join(heard.messages[0].split())
        raise InputError(f"damaged or truncated TIFF (tifffile: {said[:100]})", **where)
    layers = np.asarray(layers)
    if layers.ndim == 2 and count == 1:
        layers = layers[None]
    elif layers.ndim == 3 and count in (3, 4) and layers.shape[2] == count and layers.shape[0] != count:
        layers = np.moveaxis(layers, 2, 0)  # one contiguous RGB(A) page
    if layers.ndim != 3 or layers.shape[0] != count:
        raise InputError(f"TIFF of shape {list(layers.shape)}: expected {count} layers (one per instance)", **where)
    if layers.shape[1:] != tuple(shape):
        raise InputError(
            f"masks of {layers.shape[2]}x{layers.shape[1]} px, the GT image is {shape[1]}x{shape[0]}", **where
        )
    if layers.dtype.kind not in "biuf":
        raise InputError(f"TIFF of dtype {layers.dtype}, expected integer masks", **where)
    return (layers != 0).view(np.uint8)
