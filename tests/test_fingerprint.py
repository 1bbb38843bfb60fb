"""Content fingerprints of real model files (the model_files DVC stage)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from sgg_eval.core.errors import InputError
from sgg_eval.core.tuning import FINGERPRINT_CHUNK as CHUNK
from sgg_eval.pipeline.fingerprint import fingerprints, link_files, write_tree


def test_fingerprint_is_the_sha256_of_the_content_and_the_size(tmp_path):
    data = os.urandom(2 * CHUNK + 123)  # several read chunks
    (tmp_path / "m.pytorch").write_bytes(data)
    out = fingerprints({"models.m.files.predcls": str(tmp_path / "m.pytorch")})
    assert out == {
        "models.m.files.predcls": {
            "path": str(tmp_path / "m.pytorch"),
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    }


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


@pytest.mark.parametrize("make, message", [(lambda p: None, "file not found"), (lambda p: p.mkdir(), "is a directory")])
def test_a_missing_file_or_a_directory_names_the_model_setting(tmp_path, make, message):
    make(tmp_path / "m")
    with pytest.raises(InputError, match=message) as err:
        fingerprints({"models.real.files.sgdet": str(tmp_path / "m")})
    assert err.value.field == "models.real.files.sgdet"


def test_a_tree_holds_one_fingerprint_per_name_and_task_and_drops_stale_ones(tmp_path):
    real = tmp_path / "real.pytorch"
    real.write_bytes(b"scores")
    tree = tmp_path / "tree"
    write_tree(tree, {("m", "predcls"): str(real), ("sim", "sgdet"): None, ("old", "sgcls"): None}, None)
    write_tree(tree, {("m", "predcls"): str(real), ("sim", "sgdet"): None}, None)
    assert json.loads((tree / "m/predcls.json").read_text()) == {
        "path": str(real),
        "bytes": 6,
        "sha256": hashlib.sha256(b"scores").hexdigest(),
    }
    assert json.loads((tree / "sim/sgdet.json").read_text()) == {"source": "simulated"}
    assert not (tree / "old/sgcls.json").exists()  # a name no longer in use: no file a stage could read
    assert json.loads((tree / "index.json").read_text()) == ["m/predcls", "sim/sgdet"]
    with pytest.raises(InputError) as err:
        write_tree(tree, {("m", "sgdet"): str(tmp_path / "gone")}, None, {("m", "sgdet"): "models.m.files.sgdet"})
    assert err.value.field == "models.m.files.sgdet"


def test_links_follow_the_files_and_a_missing_one_is_refused_before_any_change(tmp_path):
    a, b = tmp_path / "a.pytorch", tmp_path / "b.pytorch"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    links = tmp_path / "links"
    link_files(links, {"m.predcls": (str(a), "models.m.files.predcls"), "n.sgdet": (str(b), "x")})
    link_files(links, {"m.predcls": (str(a), "models.m.files.predcls")})
    assert sorted(os.listdir(links)) == ["index.json", "m.predcls"]
    assert (links / "m.predcls").read_bytes() == b"a" and os.readlink(links / "m.predcls") == str(a)
    with pytest.raises(InputError, match="file not found") as err:
        link_files(links, {"m.predcls": (str(a), "f1"), "z.sgcls": (str(tmp_path / "gone"), "models.z.files.sgcls")})
    assert err.value.field == "models.z.files.sgcls"
    assert sorted(os.listdir(links)) == ["index.json", "m.predcls"]  # untouched


def test_a_submission_folder_is_one_fingerprint_of_its_files_and_one_link_per_file(tmp_path):
    """SGBench accepts a submission as a folder: its fingerprint changes with any file's content or name and
    with nothing else; it is linked file by file (DVC follows a link to a file, not one to a folder)."""
    sub = tmp_path / "sub"
    (sub / "masks").mkdir(parents=True)
    (sub / "triplets.json").write_text("{}")
    (sub / "masks/1.tiff").write_bytes(b"one")

    def digest() -> str:
        return fingerprints({"models.m.files.psg": str(sub)}, folders=True)["models.m.files.psg"]["sha256"]

    first = digest()
    listing = "masks/1.tiff\t" + hashlib.sha256(b"one").hexdigest() + "\n"
    listing += "triplets.json\t" + hashlib.sha256(b"{}").hexdigest() + "\n"
    assert first == hashlib.sha256(listing.encode()).hexdigest() and digest() == first
    (sub / "masks/1.tiff").write_bytes(b"One")
    assert digest() != first
    (sub / "masks/1.tiff").write_bytes(b"one")
    (sub / "masks/1.tiff").rename(sub / "masks/2.tiff")
    assert digest() != first
    with pytest.raises(InputError, match="is a directory"):
        fingerprints({"models.m.files.predcls": str(sub)})  # a box model's file is a file
    links = tmp_path / "links"
    link_files(links, {"m.psg": (str(sub), "models.m.files.psg")})
    assert (links / "m.psg/masks/2.tiff").read_bytes() == b"one" and not os.path.islink(links / "m.psg")
    (sub / "masks/2.tiff").rename(sub / "masks/3.tiff")
    link_files(links, {"m.psg": (str(sub), "models.m.files.psg")})
    assert sorted(os.listdir(links / "m.psg/masks")) == ["3.tiff"]  # the stale link is gone
    link_files(links, {})
    assert os.listdir(links) == ["index.json"]
