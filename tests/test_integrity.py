"""Checksums (sgg_eval.io.integrity): a flipped bit anywhere in an eval_results.pytorch member or in a store is
refused with one line naming the file, never read as other numbers."""

from __future__ import annotations

import zipfile
import zlib

import numpy as np
import pytest
from conftest import small_vocab
from test_bad_inputs import _cases
from torch_writer import eval_results_object, save_zip

from sgg_eval.cli import main
from sgg_eval.core import tuning
from sgg_eval.core.errors import InputError
from sgg_eval.data.stats import compute_stats, read_stats, write_stats
from sgg_eval.data.store import SplitStore, write_split
from sgg_eval.data.types import SplitMeta
from sgg_eval.formats.eval_results import EvalResults
from sgg_eval.io.integrity import SEAL_BYTES, crc32, seal

VOCAB = small_vocab(6, 5)


def test_crc32_is_the_zip_crc():
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 64, 1000, 1 << 20):
        data = rng.integers(0, 256, n, dtype=np.uint8)
        assert crc32(data) == zlib.crc32(data.tobytes())
        assert crc32(data[n // 2 :], crc32(data[: n // 2])) == zlib.crc32(data.tobytes())


def _storage_spans(path) -> list[tuple[str, int, int]]:
    """(name, first data byte, size) of every tensor storage member of a torch zip file."""
    spans = []
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            if "/data/" in info.filename:
                with open(path, "rb") as fh:
                    fh.seek(info.header_offset + 26)
                    n, m = np.frombuffer(fh.read(4), "<u2")
                spans.append((info.filename, info.header_offset + 30 + int(n) + int(m), info.file_size))
    return spans


@pytest.fixture(scope="module")
def eval_zip(tmp_path_factory):
    path = tmp_path_factory.mktemp("z") / "eval_results.pytorch"
    save_zip(eval_results_object(_cases()), path)
    return path


def test_a_flipped_bit_in_any_tensor_member_is_refused(eval_zip, tmp_path, capsys):
    gts = [g for g, _ in _cases()]
    write_stats(tmp_path / "stats.h5", compute_stats(gts, VOCAB, gts))
    rng = np.random.default_rng(1)
    spans = [s for s in _storage_spans(eval_zip) if s[2]]
    assert len(spans) >= 20
    for name, at, size in spans:
        data = bytearray(eval_zip.read_bytes())
        data[at + int(rng.integers(0, size))] ^= 1 << int(rng.integers(0, 8))
        bad = tmp_path / "flipped.pytorch"
        bad.write_bytes(bytes(data))
        assert (
            main(["evaluate", str(bad), "--task", "predcls", "--stats", str(tmp_path / "stats.h5"), "--jobs", "1"]) == 2
        ), name
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(bad) in err and "CRC-32" in err, (name, err)


@pytest.mark.parametrize("large", [True, False])
@pytest.mark.parametrize("field", ["pred_rel_scores", "rel_pair_idxs"])
def test_the_crc_is_checked_where_the_tensor_is_read_and_names_the_image(eval_zip, tmp_path, monkeypatch, large, field):
    """SGDet-sized score matrices and pair arrays (here every one) have their CRC-32 folded over them by their
    validation pass, a score matrix a block of rows at a time (here a row); all other tensors are read once
    more in line. The same refusal either way, and every large tensor's CRC-32 is settled by the fold."""
    from sgg_eval.formats.eval_results import GT_FIELDS, PRED_FIELDS
    from sgg_eval.io.member_crcs import MemberCrcs

    if large:
        monkeypatch.setattr(tuning, "MAXIMA_ROWS", 1)
        monkeypatch.setattr(tuning, "BLOCK_BYTES", 1)  # a block per row
        monkeypatch.setattr(tuning, "CONCATENATED", 0)  # pair arrays checked one by one
    settled = []
    settle = MemberCrcs.settle
    monkeypatch.setattr(MemberCrcs, "settle", lambda self, root, crc: (settled.append(root), settle(self, root, crc)))
    intact = EvalResults(eval_zip, VOCAB, row_maxima=large)
    column = (GT_FIELDS + PRED_FIELDS).index(field, len(GT_FIELDS))
    tensors = intact.table.tensors
    roots = tensors.t_root[intact._tensor_ids(0, len(intact))[:, column]].astype(np.int64)
    root = int(roots[np.argmax(tensors.crcs.nbytes[roots])])  # the image's with the most pairs
    at, size = int(tensors.crcs.at[root]), int(tensors.crcs.nbytes[root])
    data = bytearray(eval_zip.read_bytes())
    # the last score's lowest mantissa bit, or the last pair's object index ± 1: valid, another number
    data[at + size - (4 if field == "pred_rel_scores" else 8)] ^= 1
    bad = tmp_path / "flipped.pytorch"
    bad.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"flipped.pytorch: image \d+: tensor storage #\d+ fails its CRC-32"):
        list(EvalResults(bad, VOCAB, row_maxima=large).pairs())
    assert bool(settled) == large
    settled.clear()
    assert len(list(intact.pairs())) == len(_cases())  # intact: whole
    with_pairs = sum(len(p.pairs) > 0 for _, p in _cases())
    assert len(settled) == (2 * with_pairs if large else 0)  # every score matrix and pair array


def test_a_flipped_bit_in_the_pickle_member_is_refused(eval_zip, tmp_path, capsys):
    with zipfile.ZipFile(eval_zip) as zf:
        info = next(i for i in zf.infolist() if i.filename.endswith("data.pkl"))
    data = bytearray(eval_zip.read_bytes())
    data[info.header_offset + 30 + len(info.filename) + info.file_size // 2] ^= 4
    bad = tmp_path / "pkl.pytorch"
    bad.write_bytes(bytes(data))
    assert main(["evaluate", str(bad), "--task", "predcls"]) == 2
    assert str(bad) in capsys.readouterr().err


def _split(path):
    gts = [g for g, _ in _cases()]
    write_split(path, SplitMeta("test", VOCAB, "unit", True, "unit"), gts)
    return gts


def test_stores_are_sealed_and_every_flipped_byte_is_refused(tmp_path):
    path = tmp_path / "test.h5"
    _split(path)
    good = path.read_bytes()
    assert good[: len(b"sgg-eval sealed")] == b"sgg-eval sealed"
    rng = np.random.default_rng(2)
    for at in list(rng.integers(SEAL_BYTES, len(good), 40)) + [SEAL_BYTES, len(good) - 1]:
        data = bytearray(good)
        data[at] ^= 1 << int(rng.integers(0, 8))
        path.write_bytes(bytes(data))
        with pytest.raises(InputError, match="test.h5: .*changed or damaged .*checksum mismatch.*sgg-eval split"):
            SplitStore(path)
    for cut in (len(good) - 1, SEAL_BYTES + 10):
        path.write_bytes(good[:cut])
        with pytest.raises(InputError, match="test.h5: .*changed or damaged .*size changed.*sgg-eval split"):
            SplitStore(path)
    path.write_bytes(good[:40] + b"\1" + good[41:])  # the header's own bytes
    with pytest.raises(InputError, match="test.h5: corrupt checksum header|checksum mismatch"):
        SplitStore(path)


@pytest.mark.parametrize("edit", ["add", "rechunk"])
def test_a_store_edited_with_h5py_says_it_changed_and_how_to_write_it_again(tmp_path, edit):
    """An edit that keeps every value (a dataset added, or one re-written with other chunks) is still refused:
    the file is not the one sgg-eval wrote; the line says so and names the command, not a truncation."""
    import h5py

    path = tmp_path / "test.h5"
    _split(path)
    with h5py.File(path, "r+") as h5:
        if edit == "add":
            h5.create_dataset("extra", data=np.arange(3))
        else:
            found = []
            h5.visititems(lambda k, v: found.append(k) if isinstance(v, h5py.Dataset) and v.size > 1 else None)
            name = found[0]
            values = h5[name][()]
            del h5[name]
            h5.create_dataset(name, data=values, chunks=True)
    with pytest.raises(InputError) as err:
        SplitStore(path)
    line = str(err.value)
    assert "changed or damaged after sgg-eval wrote it" in line and "write it again with `sgg-eval split`" in line
    assert "truncated" not in line


def test_an_unsealed_hdf5_file_is_refused_with_the_command_that_writes_it(tmp_path):
    path = tmp_path / "test.h5"
    _split(path)
    path.write_bytes(path.read_bytes()[SEAL_BYTES:])  # an older store: plain HDF5 from byte 0
    with pytest.raises(InputError, match="test.h5: an HDF5 file without sgg-eval's checksum .*sgg-eval split"):
        SplitStore(path)


def test_a_resealed_store_reads_back_the_same(tmp_path):
    path = tmp_path / "test.h5"
    gts = _split(path)
    seal(path)  # sealing twice is idempotent
    with SplitStore(path) as store:
        for got, want in zip(store, gts):
            assert np.array_equal(got.rels, want.rels)


def test_statistics_are_sealed(tmp_path):
    gts = [g for g, _ in _cases()]
    path = tmp_path / "stats.h5"
    write_stats(path, compute_stats(gts, VOCAB, gts))
    assert read_stats(path).vocab == VOCAB
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 2
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="stats.h5: .*checksum mismatch.*write it again with `sgg-eval stats`"):
        read_stats(path)


def test_zero_images_are_refused(tmp_path, capsys):
    empty = tmp_path / "empty.h5"
    write_split(empty, SplitMeta("test", VOCAB, "unit", True, "unit"), [])
    assert main(["stats", str(empty), "-o", str(tmp_path / "s.h5")]) == 2
    assert "empty.h5: the training split has no image" in capsys.readouterr().err
    save_zip({"groundtruths": [], "predictions": []}, tmp_path / "none.pytorch")
    assert main(["evaluate", str(tmp_path / "none.pytorch"), "--task", "predcls"]) == 2
    assert "none.pytorch: no image to evaluate" in capsys.readouterr().err
    assert not (tmp_path / "s.h5").exists()
