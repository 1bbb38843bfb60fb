"""Mutations that random mutation of valid files once found to be defects (issue 64), made on purpose in a share of
their targets' cases (``mutations.TARGETED``). Each returns its description, or ``(description, corrupting)`` where
the file stays a valid input: then it must be read as it was or with a warning, never refused for a wrong reason."""

from __future__ import annotations

import json
import random
import struct
import zlib
from pathlib import Path

import h5py
import numpy as np


def whitespace_before_json(path: Path, rnd: random.Random) -> tuple[str, bool]:
    """Any amount of JSON whitespace before the document (once: 4,000 bytes, refused as an unknown format)."""
    n = rnd.choice([40, 4000, 70_000])
    k = rnd.randrange(4)
    path.write_bytes(b" \n\t\r"[k : k + 1] * n + path.read_bytes())
    return f"{n} bytes of whitespace before the first brace", False


def id_past_64_bits(path: Path, rnd: random.Random) -> str:
    doc = json.loads(path.read_text())
    image = rnd.randrange(len(doc["images"]))
    doc["images"][image]["id"] = rnd.choice([1 << 70, -(1 << 64), 1180591620717411303424])
    path.write_text(json.dumps(doc))
    return f"images[{image}].id past 64 bits"


def idat_under_new_crc(path: Path, rnd: random.Random) -> str:
    """A byte of the PNG's image data changed and the chunk's CRC-32 computed again: only zlib's check tells."""
    raw, at = path.read_bytes(), 8
    while raw[at + 4 : at + 8] != b"IDAT":
        at += 12 + struct.unpack_from(">I", raw, at)[0]
    length = struct.unpack_from(">I", raw, at)[0]
    data = bytearray(raw[at + 8 : at + 8 + length])
    k = rnd.randrange(2, max(3, len(data) - 4))
    data[k] ^= 1 << rnd.randrange(8)
    chunk = raw[at : at + 8] + bytes(data) + struct.pack(">I", zlib.crc32(b"IDAT" + bytes(data)))
    path.write_bytes(raw[:at] + chunk + raw[at + 12 + length :])
    return f"IDAT byte {k} changed under a recomputed CRC"


def nonfinite_box_scale(path: Path, rnd: random.Random) -> tuple[str, bool]:
    """A ``box_scale`` of NaN or ±Infinity, which Python's JSON reads: R1-SGG scores the answer (its boxes match
    nothing) and ``--protocol r1sgg`` warns; the sets protocol counts it a failure, as any answer file that does not
    read (its failure rate), so the numbers of both move with a word: a valid input, read as its tool reads it."""
    doc = json.loads(path.read_text())
    value = rnd.choice(["NaN", "Infinity", "-Infinity"])
    text = json.dumps({**doc, "box_scale": [562, 0]}).replace('"box_scale": [562, 0]', f'"box_scale": [562, {value}]')
    path.write_text(text)
    return f"box_scale [562, {value}]", False


def no_test_image(path: Path, rnd: random.Random) -> str:
    """Every test image of the split codes excluded (−2), as split_GLIPunseen marks the images GLIP saw."""
    with h5py.File(path, "r+") as h5:
        codes = h5["split"][:]
        h5["split"][...] = np.where(codes == 2, -2, codes)
    return "every test image's split code -2"


def empty_annotations(path: Path, rnd: random.Random) -> str:
    path.write_text("[]")
    return "no image in the annotation file"


def index_base_not_an_integer(path: Path, rnd: random.Random) -> str:
    value = rnd.choice(["1.0", "0.0", "true"])
    path.write_text(path.read_text() + f"index_base: {value}\n")
    return f"index_base: {value}"


def truncated(path: Path, rnd: random.Random) -> str:
    data = path.read_bytes()
    keep = rnd.randrange(8, len(data))
    path.write_bytes(data[:keep])
    return f"cut to {keep} of {len(data)} bytes"


def unreadable_first_line(path: Path, rnd: random.Random) -> tuple[str, bool]:
    """A line that is not JSON before the first answer: that line is counted, the others read as before."""
    path.write_text(rnd.choice(['{"question_id": 0, "text": \n', "not json\n", "[1, 2]\n"]) + path.read_text())
    return "an unreadable first line", False


def segment_without_pixels(path: Path, rnd: random.Random) -> tuple[str, bool]:
    """A segments_info entry whose id no pixel of the image's PNG carries: an empty GT mask (warned of), and in box
    mode one more GT box (valid)."""
    doc = json.loads(path.read_text())
    image = rnd.choice([d for d in doc["data"] if d["relations"] and d["image_id"] in doc["test_image_ids"]])
    image["segments_info"].append({"id": (1 << 24) - 1, "category_id": 0, "iscrowd": 0})
    image["annotations"].append({"bbox": [0.0, 0.0, 1.0, 1.0], "category_id": 0})
    path.write_text(json.dumps(doc))
    return f"image {image['image_id']}: a segment no pixel carries", False


TARGETED = {
    "sgbench_json": (whitespace_before_json, id_past_64_bits),
    "psg_png": (idat_under_new_crc,),
    "openpsg_png": (idat_under_new_crc,),
    "r1sgg_answer": (nonfinite_box_scale,),
    "vg150_h5": (no_test_image,),
    "oiv6_test": (empty_annotations,),
    "openvocab_split": (index_base_not_an_integer,),
    "psg_folder_tiff": (truncated,),
    "asmv2_answers": (unreadable_first_line,),
    "psg_json": (segment_without_pixels,),
}
