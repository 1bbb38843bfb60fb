"""Content fingerprints of real model files (the model_files DVC stage)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from sgg_eval.errors import InputError
from sgg_eval.pipeline.fingerprint import CHUNK, fingerprints


def test_fingerprint_is_the_sha256_of_the_content_and_the_size(tmp_path):
    data = os.urandom(2 * CHUNK + 123)  # several read chunks
    (tmp_path / "m.pytorch").write_bytes(data)
    out = fingerprints({"models.m.files.predcls": str(tmp_path / "m.pytorch")})
    assert out == {"models.m.files.predcls": {"path": str(tmp_path / "m.pytorch"), "bytes": len(data),
                                              "sha256": hashlib.sha256(data).hexdigest()}}


def test_the_cache_skips_untouched_files_and_rehashes_changed_ones(tmp_path):
    f, cache = tmp_path / "m.h5", tmp_path / "cache.json"
    f.write_bytes(b"first")
    fingerprints({"a": str(f)}, str(cache))
    # plant a marker in the cache: it is returned while the file's (inode, size, mtime) are unchanged ...
    doc = json.loads(cache.read_text())
    (entry,) = doc.values()
    entry["sha256"] = "cached"
    cache.write_text(json.dumps(doc))
    assert fingerprints({"a": str(f)}, str(cache))["a"]["sha256"] == "cached"
    # ... and ignored once the file is rewritten (new content, new mtime)
    f.write_bytes(b"second, longer")
    os.utime(f, ns=(1, 1))
    assert fingerprints({"a": str(f)}, str(cache))["a"]["sha256"] == hashlib.sha256(b"second, longer").hexdigest()


def test_an_unreadable_cache_only_costs_time(tmp_path):
    f, cache = tmp_path / "m.h5", tmp_path / "cache.json"
    f.write_bytes(b"x")
    cache.write_text("{not json")
    assert fingerprints({"a": str(f)}, str(cache))["a"]["sha256"] == hashlib.sha256(b"x").hexdigest()
    assert json.loads(cache.read_text())  # rewritten


@pytest.mark.parametrize("make, message", [(lambda p: None, "file not found"),
                                            (lambda p: p.mkdir(), "is a directory")])
def test_a_missing_file_or_a_directory_names_the_model_setting(tmp_path, make, message):
    make(tmp_path / "m")
    with pytest.raises(InputError, match=message) as err:
        fingerprints({"models.real.files.sgdet": str(tmp_path / "m")})
    assert err.value.field == "models.real.files.sgdet"
