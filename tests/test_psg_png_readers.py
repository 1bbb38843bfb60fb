"""How each panoptic protocol decodes a GT PNG (``PSG_PNG_READERS``, docs/metrics.md "Reading the GT PNGs"):
``openpsg`` as OpenPSG's loader does (detectron2's ``read_image(format="RGB")``: the EXIF orientation applied, any
mode converted to RGB), ``sgbench`` and ``sgbench-paper`` as sgbench 1.0.0's ``io.load_rgb_seg_mask`` does (Pillow's
array as it is: RGB or RGBA; a palette PNG has no colour channels and is refused). And a PNG whose image data is
damaged under recomputed CRCs, refused by its zlib checksum. A loop reference written from detectron2's code
(``_detectron2_ids``) checks the decoded ids."""

from __future__ import annotations

import io
import json
import struct
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
import tifffile
from PIL import Image

from sgg_eval.core.errors import InputError
from sgg_eval.panoptic.evaluate import evaluate_protocols
from sgg_eval.panoptic.panoptic_png import check_png, read_panoptic_png

A, B = 0x0A0B0C, 0x102030  # two segment ids: the top half and the bottom half of the image
SIZE = 16


def _ids() -> np.ndarray:
    ids = np.full((SIZE, SIZE), A, dtype=np.int64)
    ids[SIZE // 2 :] = B
    ids[:2, :3] = 0  # void in a corner: the image is not symmetric under any turn
    return ids


def _rgb(ids: np.ndarray) -> np.ndarray:
    return np.stack([ids % 256, ids // 256 % 256, ids // 65536], axis=-1).astype(np.uint8)


def _png(ids: np.ndarray, *, orientation: int | None = None, palette: bool = False) -> bytes:
    im = Image.fromarray(_rgb(ids), "RGB")
    if palette:  # each pixel an index into a table of the ids' exact colours
        colours, index = np.unique(ids, return_inverse=True)
        im = Image.fromarray(index.reshape(ids.shape).astype(np.uint8), "P")
        im.putpalette(_rgb(colours[None]).reshape(-1).tolist())
    kwargs = {}
    if orientation is not None:
        exif = Image.Exif()
        exif[274] = orientation
        kwargs["exif"] = exif.tobytes()
    out = io.BytesIO()
    im.save(out, "PNG", **kwargs)
    return out.getvalue()


def _detectron2_ids(raw: bytes) -> np.ndarray:
    """The loop reference, from detectron2's ``read_image`` (``_apply_exif_orientation``, ``convert_PIL_to_numpy``)
    and panopticapi's ``rgb2id``, pixel by pixel."""
    image = Image.open(io.BytesIO(raw))
    try:
        exif = image.getexif()
    except Exception:  # noqa: BLE001  as detectron2
        exif = None
    turns = {2: Image.FLIP_LEFT_RIGHT, 3: Image.ROTATE_180, 4: Image.FLIP_TOP_BOTTOM, 5: Image.TRANSPOSE,
             6: Image.ROTATE_270, 7: Image.TRANSVERSE, 8: Image.ROTATE_90}  # fmt: skip
    method = turns.get(exif.get(274) if exif else None)
    if method is not None:
        image = image.transpose(method)
    rgb = np.asarray(image.convert("RGB")).astype(np.int64)
    out = np.zeros(rgb.shape[:2], dtype=np.int64)
    for y in range(rgb.shape[0]):
        for x in range(rgb.shape[1]):
            r, g, b = rgb[y, x]
            out[y, x] = r + 256 * g + 256 * 256 * b
    return out


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    inter = int(np.count_nonzero(a & b))
    return inter / (int(a.sum()) + int(b.sum()) - inter)


def _world(root: Path, png: bytes) -> tuple[str, str, str]:
    """One test image: person (top, id A) on dog (bottom, id B); a submission whose masks are the PNG's segments
    as written, unturned."""
    (root / "coco" / "panoptic").mkdir(parents=True)
    (root / "coco" / "panoptic" / "1.png").write_bytes(png)
    psg = {
        "data": [
            {
                "image_id": "1", "file_name": "1.jpg", "height": SIZE, "width": SIZE,
                "pan_seg_file_name": "panoptic/1.png", "relations": [[0, 1, 0]],
                "segments_info": [{"id": A, "category_id": 0, "iscrowd": 0}, {"id": B, "category_id": 1, "iscrowd": 0}],
                "annotations": [{"bbox": [0, 0, SIZE, SIZE // 2], "category_id": 0},
                                {"bbox": [0, SIZE // 2, SIZE, SIZE], "category_id": 1}],
            }
        ],
        "test_image_ids": ["1"], "thing_classes": ["person", "dog"], "stuff_classes": ["sky"],
        "predicate_classes": ["on", "beside"],
    }  # fmt: skip
    (root / "psg.json").write_text(json.dumps(psg))
    ids = _ids()
    masks = np.stack([ids == A, ids == B]).astype(np.uint8)
    entry = {"id": "1", "seg_filename": "masks/1.tiff", "triplets": [[0, 1, 0]], "ng_triplets": [[0, 1, 0]],
             "annotation": [{"bbox": [0, 0, SIZE, SIZE // 2], "category": 0},
                            {"bbox": [0, SIZE // 2, SIZE, SIZE], "category": 1}]}  # fmt: skip
    stack = io.BytesIO()
    tifffile.imwrite(stack, masks, compression="zlib")
    with zipfile.ZipFile(root / "submission.zip", "w") as zf:
        zf.writestr("triplets.json", json.dumps({"version": 1, "images": [entry]}))
        zf.writestr("masks/1.tiff", stack.getvalue())
    return str(root / "submission.zip"), str(root / "psg.json"), str(root / "coco")


@pytest.mark.parametrize("orientation", [None, 1, 2, 3, 4])
def test_exif_orientation_turns_openpsgs_gt_only(tmp_path, orientation):
    """Orientation 3 (the issue's case): OpenPSG's GT turned 180°, the prediction on the unturned image misses
    (R@20 0.0); sgbench ignores EXIF (1.0). The loop reference decides which: the prediction hits under openpsg
    when both its masks overlap detectron2's decode of their segment at IoU ≥ 0.5."""
    png = _png(_ids(), orientation=orientation)
    docs = evaluate_protocols(*_world(tmp_path, png), ("sgbench", "sgbench-paper", "openpsg"))
    seen, written = _detectron2_ids(png), _ids()
    assert np.array_equal(seen, written) == (orientation in (None, 1))
    hit = all(_iou(seen == s, written == s) >= 0.5 for s in (A, B))  # OpenPSG's mask IoU of GT and prediction
    assert docs["openpsg"]["metrics"]["R@20"] == (1.0 if hit else 0.0)
    assert hit == (orientation in (None, 1, 2))  # a left-right flip moves only the void corner
    assert docs["sgbench"]["metrics"]["R@20"] == docs["sgbench-paper"]["metrics"]["R@20"] == 1.0
    alone = evaluate_protocols(*_world(tmp_path / "alone", png), ("openpsg",))["openpsg"]
    assert alone["metrics"] == docs["openpsg"]["metrics"]  # the same with or without the other protocols


def test_a_palette_png_is_converted_by_openpsg_and_refused_by_sgbench(tmp_path):
    png = _png(_ids(), palette=True)
    assert Image.open(io.BytesIO(png)).mode == "P"
    assert np.array_equal(_detectron2_ids(png), _ids())  # the palette holds the segments' exact colours
    args = _world(tmp_path, png)
    rgb = evaluate_protocols(*_world(tmp_path / "rgb", _png(_ids())), ("openpsg",))["openpsg"]
    assert evaluate_protocols(*args, ("openpsg",))["openpsg"]["metrics"] == rgb["metrics"]
    for protocol in ("sgbench", "sgbench-paper"):
        with pytest.raises(InputError, match="PNG mode P, expected RGB"):
            evaluate_protocols(*args, (protocol,))


def _recrc(raw: bytes, mutate) -> bytes:
    """``raw`` with its IDAT data changed by ``mutate`` and the chunk's CRC-32 computed again."""
    at = 8
    while True:
        (length,) = struct.unpack_from(">I", raw, at)
        kind = raw[at + 4 : at + 8]
        if kind == b"IDAT":
            data = mutate(bytearray(raw[at + 8 : at + 8 + length]))
            chunk = struct.pack(">I", len(data)) + b"IDAT" + bytes(data)
            chunk += struct.pack(">I", zlib.crc32(b"IDAT" + bytes(data)))
            return raw[:at] + chunk + raw[at + 12 + length :]
        at += 12 + length


def test_damaged_image_data_under_recomputed_crcs_is_refused():
    """The case random mutation found: Pillow decodes such a file without a word; its Adler-32 says otherwise."""
    rng = np.random.default_rng(0)
    raw = _png(rng.integers(0, 1 << 24, (SIZE, SIZE)))
    check_png(raw, {})

    def flip(data: bytearray) -> bytearray:
        data[len(data) // 2] ^= 0x01
        return data

    def cut(data: bytearray) -> bytearray:
        return data[:-6]

    for mutate, words in ((flip, "zlib"), (cut, "zlib")):
        with pytest.raises(InputError, match=words):
            check_png(_recrc(raw, mutate), {"path": "x.png"})


def _png_bomb(path, side: int) -> None:
    """An RGB PNG of ``side``x``side`` px of zeros: a few hundred kilobytes that decode to side² x 3 bytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    packer, row, rows = zlib.compressobj(9), bytes(1 + 3 * side), []
    for _ in range(side):
        rows.append(packer.compress(row))
    data = b"".join(rows) + packer.flush()
    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b""))


def test_a_png_bomb_is_refused_from_its_header_without_a_warning(tmp_path):
    """A submission's PNG claiming 12000x12000 px (432 MB decoded; Pillow warns past 89 Mpx) for a 64x48 image is
    refused by its size before it is decoded, in one line and without Pillow's DecompressionBombWarning."""
    bomb = tmp_path / "bomb.png"
    _png_bomb(bomb, 12000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError, match="masks of 12000x12000 px, the GT image is 64x48"):
            read_panoptic_png(str(bomb), dict(path=str(bomb)), (48, 64))
