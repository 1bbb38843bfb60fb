"""numpy's .npy and .npz without numpy.load (sgg_eval.formats.numpy_files): what numpy.load reads, the same arrays;
every damaged file one InputError naming it (the fuzzer found an .npz member of an unknown compression method let
out as our own error, exit 1; a header may ask for a terabyte), and Action Genome's predictions refused in one line
through the command line."""

from __future__ import annotations

import io
import struct
import zipfile

import numpy as np
import pytest
from ag_fixture import release_with_splits

from sgg_eval.cli import main
from sgg_eval.core.errors import InputError
from sgg_eval.formats.numpy_files import read_npy, read_npz
from sgg_eval.video.ag_example import predictions_for
from sgg_eval.video.ag_store import read_ag_store

ARRAYS = {
    "boxes": np.arange(20, dtype=np.float32).reshape(4, 5),
    "pair_idx": np.array([[0, 1], [0, 2]], dtype=np.int64),
    "empty": np.zeros((0, 3), dtype=np.float64),
    "scalar": np.array(2.5),
    "fortran": np.asfortranarray(np.arange(6, dtype=np.int16).reshape(2, 3)),
    "big_endian": np.arange(3, dtype=">i4"),
}


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_the_arrays_are_those_numpy_load_reads(tmp_path, save):
    path = tmp_path / "a.npz"
    save(path, **ARRAYS)
    got = read_npz(path)
    with np.load(path) as want:
        assert list(got) == list(want.files)
        for key in want.files:
            assert got[key].dtype == want[key].dtype and got[key].shape == want[key].shape
            assert np.array_equal(got[key], want[key])


def _compressed(tmp_path) -> bytes:
    path = tmp_path / "c.npz"
    np.savez_compressed(path, **ARRAYS)
    return path.read_bytes()


def _set_method(data: bytes, method: int) -> bytes:
    """Every local and central header's compression method set to ``method`` (ZIP's offsets 8 and 10)."""
    out = bytearray(data)
    for signature, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        at = out.find(signature)
        while at >= 0:
            struct.pack_into("<H", out, at + offset, method)
            at = out.find(signature, at + 4)
    return bytes(out)


def _bomb() -> bytes:
    """One member of 65 MiB of zeros (deflated to ~65 kB): above the 64 MiB a file this small may inflate to."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("boxes.npy", "w", force_zip64=True) as fh:
            np.lib.format.write_array(fh, np.zeros(65 << 20, dtype=np.uint8))
    return buf.getvalue()


def _member(name: str, payload: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(name, payload)
    return buf.getvalue()


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, allow_pickle=True)
    return buf.getvalue()


def _huge_header() -> bytes:
    """A .npy of 4 bytes whose header says shape (10**12,): numpy.load would allocate a terabyte first."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "|u1", "fortran_order": False, "shape": (10**12,)})
    return buf.getvalue() + b"\0" * 4


def _bad_deflate(data: bytes) -> bytes:
    out = bytearray(data)
    at = out.find(b"PK\x03\x04")
    name_len, extra_len = struct.unpack_from("<HH", out, at + 26)
    start = at + 30 + name_len + extra_len
    out[start : start + 8] = b"\xff" * 8  # deflate blocks of an invalid type
    return bytes(out)


CASES = {
    "an unknown compression method": (lambda tmp: _set_method(_compressed(tmp), 99), "unreadable"),
    "a bad deflate stream": (lambda tmp: _bad_deflate(_compressed(tmp)), "deflate"),
    "a member larger than the cap": (lambda tmp: _bomb(), "more than"),
    "an object array (a pickle)": (lambda tmp: _member("x.npy", _npy(np.array([{}], dtype=object))), "x.npy"),
    "a member that is not an array": (lambda tmp: _member("x.txt", b"hello"), "not a .npy"),
    "a damaged .npy header": (lambda tmp: _member("x.npy", b"\x93NUMPY\x01\x00\x10\x00{'descr': <i8}   \n"), "x.npy"),
    "a truncated .npy": (lambda tmp: _member("x.npy", _npy(np.arange(10))[:-8]), "x.npy"),
    "a truncated file": (lambda tmp: _compressed(tmp)[:-30], "not a readable .npz"),
    "a header asking for a terabyte": (lambda tmp: _member("x.npy", _huge_header()), "asks for 1000000000000 bytes"),
    "not a ZIP at all": (lambda tmp: b"\x00" * 100, "not a readable .npz"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_damaged_file_is_one_input_error_naming_it(tmp_path, case):
    make, says = CASES[case]
    path = tmp_path / "bad.npz"
    path.write_bytes(make(tmp_path))
    with pytest.raises(InputError) as err:
        read_npz(path)
    line = str(err.value)
    assert "\n" not in line and says in line, line
    assert err.value.path == str(path)


@pytest.mark.parametrize("case", ["a header asking for a terabyte", "an object array (a pickle)", "a truncated .npy"])
def test_a_damaged_npy_file_is_one_input_error_naming_it(tmp_path, case):
    """The same checks for a lone .npy (`sgg-eval psg-pack`'s masks), the member's bytes as the whole file."""
    with zipfile.ZipFile(io.BytesIO(CASES[case][0](tmp_path))) as zf:
        data = zf.read("x.npy")
    path = tmp_path / "bad.npy"
    path.write_bytes(data)
    with pytest.raises(InputError) as err:
        read_npy(path)
    assert "\n" not in str(err.value) and err.value.path == str(path) and "not a readable .npy" in str(err.value)


def test_a_good_npy_file_is_what_numpy_load_reads(tmp_path):
    for key, value in ARRAYS.items():
        np.save(tmp_path / f"{key}.npy", value)
        got = read_npy(tmp_path / f"{key}.npy")
        assert got.dtype == value.dtype and np.array_equal(got, value)


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    root = tmp_path_factory.mktemp("ag")
    release_with_splits(root, 6, seed=7)
    return root


def test_ag_predictions_with_a_damaged_npz_are_refused_in_one_line(release, tmp_path, capsys):
    """The fuzzer's case: a video's .npz with a member of an unknown compression method, through `evaluate --ag`."""
    split, _, _ = read_ag_store(release / "splits" / "test.h5")
    preds = predictions_for(split, "predcls", seed=1)
    folder = tmp_path / "preds"
    folder.mkdir()
    for video, arrays in preds.items():
        np.savez_compressed(folder / f"{video}.npz", **arrays)
    first = folder / f"{next(iter(preds))}.npz"
    args = ["evaluate", str(folder), "--ag", str(release / "splits" / "test.h5"), "--task", "predcls"]
    assert main([*args, "-o", str(tmp_path / "good.json")]) == 0
    capsys.readouterr()
    first.write_bytes(_set_method(first.read_bytes(), 99))
    code = main([*args, "-o", str(tmp_path / "bad.json")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and str(first) in err, err
    assert not (tmp_path / "bad.json").exists()
