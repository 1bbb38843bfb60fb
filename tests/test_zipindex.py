"""The zip central directory read without a Python object per member (issue 11): the same members as
``zipfile`` on plain, zip64 and commented archives, and ``zipfile`` itself wherever the archive is unusual."""

from __future__ import annotations

import struct
import zipfile
import zlib

import numpy as np
import pytest
from conftest import random_case, small_vocab
from torch_writer import eval_results_object, save_zip

from sgg_eval.core.errors import InputError
from sgg_eval.formats.torch.reader import load
from sgg_eval.io import zipindex
from sgg_eval.io.archive import map_file

VOCAB = small_vocab(6, 5)


def _zip64_archive(path, files: dict[str, bytes]) -> None:
    """A zip64 archive written by hand: every central-directory size and offset in a zip64 extra field."""
    out, central = bytearray(), bytearray()
    for name, data in files.items():
        raw, offset, crc = name.encode(), len(out), zlib.crc32(data)
        out += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 45, 0, 0, 0, 0, crc, len(data), len(data), len(raw), 0)
        out += raw + data
        extra = struct.pack("<HHQQQ", 1, 24, len(data), len(data), offset)
        central += (
            struct.pack(
                "<4sHHHHHHIIIHHHHHII",
                b"PK\x01\x02",
                45,
                45,
                0,
                0,
                0,
                0,
                crc,
                0xFFFFFFFF,
                0xFFFFFFFF,
                len(raw),
                len(extra),
                0,
                0,
                0,
                0,
                0xFFFFFFFF,
            )
            + raw
            + extra
        )
    cd_at = len(out)
    out += central
    end64_at = len(out)
    out += struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, len(files), len(files), len(central), cd_at)
    out += struct.pack("<4sIQI", b"PK\x06\x07", 0, end64_at, 1)
    out += struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    path.write_bytes(bytes(out))


def _same_as_zipfile(path, expect_fast: bool) -> None:
    whole = map_file(path)
    fast = zipindex._central_directory(whole)
    assert (fast is not None) == expect_fast
    got = zipindex.members(str(path), whole)
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        assert got.names == [i.filename for i in infos]
        assert got.header_at.tolist() == [i.header_offset for i in infos]
        assert got.size.tolist() == [i.compress_size for i in infos]
        assert got.method.tolist() == [i.compress_type for i in infos]
        data_at = got.data_at(whole, np.arange(len(infos)))
        for i, info in enumerate(infos):
            if info.compress_type == zipfile.ZIP_STORED:
                assert whole[data_at[i] : data_at[i] + info.compress_size].tobytes() == zf.read(info)


def test_a_torch_file_is_indexed_like_zipfile_does(tmp_path):
    rng = np.random.default_rng(3)
    save_zip(eval_results_object([random_case(rng, VOCAB, "sgdet", i) for i in range(30)]), tmp_path / "e.pytorch")
    _same_as_zipfile(tmp_path / "e.pytorch", expect_fast=True)


def test_zip64_records_extra_fields_and_comments(tmp_path):
    files = {f"archive/data/{i}": bytes([i % 251]) * (i % 9) for i in range(40)}
    _zip64_archive(tmp_path / "z64.zip", files)
    _same_as_zipfile(tmp_path / "z64.zip", expect_fast=True)
    many = tmp_path / "many.zip"  # more members than a 16-bit count: the zip64 end record; and a comment
    with zipfile.ZipFile(many, "w") as zf:
        for i in range(70_000):
            zf.writestr(f"d/{i}", b"")
        zf.writestr("d/data.pkl", b"x" * 500, compress_type=zipfile.ZIP_DEFLATED)
        zf.comment = b"written by a test"
    _same_as_zipfile(many, expect_fast=True)


def test_an_unusual_archive_is_left_to_zipfile(tmp_path):
    odd = tmp_path / "odd.zip"  # a central-directory signature inside a name: the records do not chain
    with zipfile.ZipFile(odd, "w") as zf:
        zf.writestr("a/PK\x01\x02/b", b"123")
        zf.writestr("c", b"4")
    _same_as_zipfile(odd, expect_fast=False)
    # an end record that points at a central directory past the end of the file
    (tmp_path / "bad.zip").write_bytes(b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, 1, 1, 46, 999, 0))
    with pytest.raises(zipfile.BadZipFile):
        zipindex.members(str(tmp_path / "bad.zip"), map_file(tmp_path / "bad.zip"))


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_a_torch_file_with_a_compressed_pickle_loads(tmp_path, compression):
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    save_zip({"x": arr}, tmp_path / "plain.pytorch")
    with zipfile.ZipFile(tmp_path / "plain.pytorch") as src, zipfile.ZipFile(tmp_path / "t.pytorch", "w") as dst:
        for info in src.infolist():
            pickle_member = info.filename.endswith("data.pkl")
            dst.writestr(info.filename, src.read(info), compress_type=compression if pickle_member else 0)
    np.testing.assert_array_equal(load(tmp_path / "t.pytorch")["x"].numpy(), arr)


def _dict_lookup(m: zipindex.Members, prefix: str, suffixes: list[str]) -> list[int]:
    """The obvious lookup: the last member of each name (zipfile's rule), by decoded name."""
    row_of = {}
    for i, name in enumerate(m.names):
        row_of[name] = i
    return [row_of.get(prefix + s, -1) for s in suffixes]


@pytest.mark.parametrize("fast", [True, False])
def test_find_looks_names_up_like_a_dict_of_decoded_names(tmp_path, fast, monkeypatch):
    path = tmp_path / "n.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(300):
            zf.writestr(f"archive/data/{i}", b"")
        zf.writestr("archive/data.pkl", b"")
        zf.writestr("other/data/5", b"")
        zf.writestr("archive/data/", b"")  # the prefix itself: an empty suffix
    if not fast:
        monkeypatch.setattr(zipindex, "_central_directory", lambda whole: None)  # zipfile's member list
    m = zipindex.members(str(path), map_file(path))
    suffixes = ["7", "0", "299", "300", "", "5", "data.pk", "1" * 7] + [str(i) for i in range(0, 300, 7)]
    assert m.find("archive/data/", suffixes).tolist() == _dict_lookup(m, "archive/data/", suffixes)
    assert m.find("archive/", ["data.pkl", "byteorder"]).tolist() == _dict_lookup(
        m, "archive/", ["data.pkl", "byteorder"]
    )
    assert m.find("archive/data/", []).tolist() == []
    assert [m.name(i) for i in m.ending_with("data.pkl")] == ["archive/data.pkl"]


@pytest.mark.parametrize("fast", [True, False])
def test_two_members_of_one_name_are_refused(tmp_path, fast, monkeypatch):
    """zipfile reads the last of two same-named members, other readers the first: refused, naming it."""
    path = tmp_path / "d.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(50):
            zf.writestr(f"archive/data/{i}", b"x")
        with pytest.warns(UserWarning, match="Duplicate name"):
            zf.writestr("archive/data/7", b"again")
    if not fast:
        monkeypatch.setattr(zipindex, "_central_directory", lambda whole: None)
    with pytest.raises(InputError, match="d.zip: two zip members are named 'archive/data/7'"):
        zipindex.members(str(path), map_file(path))


def test_first_duplicate_agrees_with_a_set_of_names(tmp_path):
    rng = np.random.default_rng(3)
    for trial in range(20):
        names = [bytes(rng.integers(97, 100, size=int(rng.integers(0, 5))).astype(np.uint8)) for _ in range(30)]
        length = np.array([len(n) for n in names], dtype=np.int64)
        m = zipindex.Members(
            np.frombuffer(b"".join(names) or b"\0", np.uint8),
            np.concatenate([[0], np.cumsum(length)[:-1]]),
            length,
            np.ones(30, bool),
            *(np.zeros(30, np.int64) for _ in range(6)),
            np.zeros(30, bool),
        )
        got = zipindex.first_duplicate(m)
        assert (got is not None) == (len(set(names)) < len(names)), trial
        if got is not None:
            assert names.count(names[got]) > 1


def test_find_falls_back_to_decoded_names_for_non_ascii_names(tmp_path):
    path = tmp_path / "u.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name in ("arch/data/é1", "arch/data/1", "arch/data/ü"):
            zf.writestr(name, b"")
    m = zipindex.members(str(path), map_file(path))
    suffixes = ["é1", "1", "ü", "x"]
    assert m.find("arch/data/", suffixes).tolist() == [0, 1, 2, -1] == _dict_lookup(m, "arch/data/", suffixes)


def test_find_packs_short_names_exactly_and_looks_long_ones_up_by_name(tmp_path):
    """Suffixes of up to 7 bytes are compared packed into integers (with their length, so "1" and "1\\0"
    differ); a longer wanted suffix takes the lookup by decoded name, with the same answers."""
    path = tmp_path / "c.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name in ["a/1", "a/10", "a/1234567", "a/12345678", "a/", "b/1"]:
            zf.writestr(name, b"")
    m = zipindex.members(str(path), map_file(path))
    short = ["1", "10", "1234567", "", "2", "01"]
    assert zipindex._find_short(m, "a/", short) is not None
    assert m.find("a/", short).tolist() == [0, 1, 2, 4, -1, -1] == _dict_lookup(m, "a/", short)
    long = ["12345678", "1"]
    assert zipindex._find_short(m, "a/", long) is None
    assert m.find("a/", long).tolist() == [3, 0] == _dict_lookup(m, "a/", long)
    one, padded = (
        zipindex._packed(np.frombuffer(b, np.uint8), np.array([0]), np.array([len(b)])) for b in (b"1", b"1\0")
    )
    assert one != padded


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2])
def test_head_is_the_first_bytes_of_a_member_as_read_gives_them(tmp_path, compression):
    """``Archive.head``: the first n bytes (a stored member read no further), whatever the method; fewer when the
    member is shorter; and a damaged local header is a MemberError, as ``read`` raises it."""
    from sgg_eval.io.archive import Archive, MemberError

    path = tmp_path / "a.zip"
    payload = bytes(range(256)) * 40
    with zipfile.ZipFile(path, "w", compression) as zf:
        zf.writestr("x/data.pkl", payload)
        zf.writestr("short", b"ab")
    archive = Archive(path)
    row, short = archive.row("x/data.pkl"), archive.row("short")
    assert archive.head(row, 3) == payload[:3] == archive.read(row, 1 << 20)[:3]
    assert archive.head(short, 3) == b"ab"
    data = bytearray(path.read_bytes())
    data[int(archive.members.header_at[row])] ^= 0xFF  # the local header's signature
    path.write_bytes(bytes(data))
    with pytest.raises(MemberError):
        Archive(path).head(row, 3)
