"""The SGBench TIFF reader: its fast path (own IFD walk + ISA-L inflate) gives what ``tifffile.imread`` gives
on every layout tifffile writes that it takes, hands every other layout to tifffile, and refuses damage in one
line."""

from __future__ import annotations

import io
import struct
import warnings

import numpy as np
import pytest
import tifffile

from sgg_eval.core.errors import InputError
from sgg_eval.panoptic.tiff_layers import _plain_strips, tiff_stack

SHAPE = (37, 53)  # odd sizes: strips do not divide evenly


def _stack(n: int, seed: int = 0, dtype=np.uint8) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.random((n, *SHAPE)) < 0.2).astype(dtype) * rng.integers(1, 3, (n, *SHAPE)).astype(dtype)


def _tiff(stack: np.ndarray, **options) -> bytes:
    out = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tifffile.imwrite(out, stack, **options)
    return out.getvalue()


FAST = {
    "deflate": dict(compression="zlib"),
    "deflate_level1": dict(compression="zlib", compressionargs={"level": 1}),
    "none": dict(),
    "big_endian": dict(compression="zlib", byteorder=">"),
    "small_strips": dict(compression="zlib", rowsperstrip=4),
    "minisblack_metadata": dict(compression="zlib", photometric="minisblack", metadata={"shape": [5, *SHAPE]}),
}


@pytest.mark.parametrize("layout", sorted(FAST))
def test_the_fast_path_equals_tifffile(layout):
    stack = _stack(5)
    raw = _tiff(stack, **FAST[layout])
    assert _plain_strips(raw, 5, SHAPE) is not None
    got = tiff_stack(raw, 5, SHAPE, {})
    assert np.array_equal(got, tifffile.imread(io.BytesIO(raw))) and np.array_equal(got, stack)


GENERAL = {
    "lzma": (5, dict(compression="lzma")),
    "predictor": (5, dict(compression="zlib", predictor=True)),
    "tiled": (5, dict(compression="zlib", tile=(16, 16))),
    "planar_rgb_3": (3, dict(compression="zlib", photometric="rgb", planarconfig="separate")),
    "bigtiff": (5, dict(compression="zlib", bigtiff=True)),
    "uint16": (5, dict(compression="zlib")),
    "one_layer_no_metadata": (1, dict(compression="zlib", metadata=None)),
}


@pytest.mark.parametrize("layout", sorted(GENERAL))
def test_other_layouts_take_tifffiles_path_with_the_same_layers(layout):
    n, options = GENERAL[layout]
    stack = _stack(n, dtype=np.uint16 if layout == "uint16" else np.uint8)
    raw = _tiff(stack[0] if layout == "one_layer_no_metadata" else stack, **options)
    if layout != "one_layer_no_metadata":
        assert _plain_strips(raw, n, SHAPE) is None
    got = tiff_stack(raw, n, SHAPE, {})
    assert np.array_equal(got != 0, stack != 0)


def test_zero_layers_are_read():
    raw = _tiff(np.zeros((0, *SHAPE), dtype=np.uint8), photometric="minisblack", metadata={"shape": [0, *SHAPE]})
    assert tiff_stack(raw, 0, SHAPE, {}).shape == (0, *SHAPE)


def _corrupt_first_strip(raw: bytes) -> bytes:
    at = _plain_strips(raw, 5, SHAPE)[1][0][0][0]
    return raw[: at + 3] + bytes([raw[at + 3] ^ 0xFF]) + raw[at + 4 :]


def _truncated(raw: bytes) -> bytes:
    return raw[: len(raw) // 2]


@pytest.mark.parametrize(
    "damage, words",
    [
        (_corrupt_first_strip, "layer 0"),
        (_truncated, "TIFF"),
        (lambda raw: b"II*\x00" + struct.pack("<I", 10**9) + raw[8:], "TIFF"),
    ],
)
def test_damaged_files_are_refused(damage, words):
    raw = damage(_tiff(_stack(5), compression="zlib"))
    with pytest.raises(InputError) as info:
        tiff_stack(raw, 5, SHAPE, {"path": "x.tiff"})
    assert words in info.value.message


def test_a_count_or_size_mismatch_is_refused():
    raw = _tiff(_stack(5), compression="zlib")
    with pytest.raises(InputError, match="expected 4 layers"):
        tiff_stack(raw, 4, SHAPE, {})
    with pytest.raises(InputError, match="px"):
        tiff_stack(raw, 5, (SHAPE[0], SHAPE[1] + 1), {})


def test_a_strip_that_inflates_beyond_its_layer_is_refused():
    tall = np.ones((1, 2 * SHAPE[0], SHAPE[1]), dtype=np.uint8)
    raw = bytearray(_tiff(tall, compression="zlib", rowsperstrip=2 * SHAPE[0]))
    for kind in (3, 4):  # ImageLength says half the rows the strip holds
        entry = struct.pack("<HHI", 257, kind, 1)
        if entry in raw:
            at = raw.index(entry) + 8
            raw[at : at + 4] = struct.pack("<I", SHAPE[0]) if kind == 4 else struct.pack("<HH", SHAPE[0], 0)
    assert _plain_strips(bytes(raw), 1, SHAPE) is not None
    with pytest.raises(InputError, match="holds"):
        tiff_stack(bytes(raw), 1, SHAPE, {})
