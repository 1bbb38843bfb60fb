"""Hostile and broken inputs (issue 9): every one is refused with exit 2 and one line naming the file, the
image and the field; no traceback; nothing new or changed in the output folder. Valid edge cases still pass.

Each case builds its input from one small valid world (three images, 6 classes, 5 predicates) and breaks one
thing. The CLI runs in-process (``main``), so the whole catalogue takes seconds.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from conftest import small_vocab
from torch_writer import _dump, eval_results_object, save_legacy, save_zip
from vg150_fixture import IMAGE_DATA, write_vg150_fixture

from sgg_eval.cli import main
from sgg_eval.data.stats import compute_stats, write_stats
from sgg_eval.data.store import write_predictions, write_split
from sgg_eval.data.types import GTImage, PredictionMeta, PredImage, SplitMeta
from sgg_eval.io.integrity import seal

pytestmark = pytest.mark.integration  # the command line end to end: not in `make test-fast`

VOCAB = small_vocab(6, 5)
C = VOCAB.num_predicates + 1


def _cases() -> list[tuple[GTImage, PredImage]]:
    rng = np.random.default_rng(9)
    boxes = np.array([[0, 0, 10, 10], [5, 5, 20, 20], [30, 30, 40, 50]], dtype=np.float32)
    pairs = np.array([(i, j) for i in range(3) for j in range(3) if i != j])
    out = []
    for k in range(2):
        gt = GTImage(100 + k, 64, 64, boxes, [1, 2, 3 + k], [[0, 1, 1], [1, 2, 2 + k]])
        scores = rng.random((len(pairs), C)).astype(np.float32)
        scores /= scores.sum(1, keepdims=True)
        out.append((gt, PredImage(100 + k, boxes, [1, 2, 3 + k], [0.9, 0.8, 0.7], pairs, scores)))
    # valid edge case: a GT image without relations, and a prediction without any pair
    out.append(
        (
            GTImage(102, 64, 64, boxes[:1], [4], np.zeros((0, 3))),
            PredImage(102, boxes[:1], [4], [0.5], np.zeros((0, 2)), np.zeros((0, C), np.float32)),
        )
    )
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("world")
    cases = _cases()
    write_split(root / "test.h5", SplitMeta("test", VOCAB, "unit", True, "unit"), [g for g, _ in cases])
    write_predictions(
        root / "pred.h5", PredictionMeta("predcls", "probabilities", VOCAB, "m", True, "unit"), [p for _, p in cases]
    )
    write_stats(root / "stats.h5", compute_stats([g for g, _ in cases], VOCAB, [g for g, _ in cases]))
    save_zip(eval_results_object(cases), root / "eval_zip.pytorch")
    save_legacy(eval_results_object(cases), root / "eval_legacy.pytorch")
    (root / "sgbench.json").write_text(json.dumps(_sgbench(cases)))
    return root, cases


def _sgbench(cases) -> dict:
    return {
        "version": 1,
        "images": [
            {
                "id": p.image_id,
                "instances": [{"bbox": b.tolist(), "category": int(c) - 1} for b, c in zip(p.boxes, p.labels)],
                "triplets": [[int(s), int(o), int(np.argmax(r[1:]))] for (s, o), r in zip(p.pairs, p.rel_scores)],
            }
            for _, p in cases
        ],
    }


def _snapshot(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def refused(capsys, args: list[str], out_dir: Path, *, must_name: tuple[str, ...] = ()) -> str:
    """Run the CLI; assert exit 2, one line on stderr naming ``must_name``, no traceback, out_dir unchanged."""
    before = _snapshot(out_dir)
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    for word in must_name:
        assert word in lines[0], (word, lines[0])
    assert _snapshot(out_dir) == before
    return lines[0]


# --------------------------------------------------------------------------- eval_results.pytorch


def _field(box, name, value):
    box.extra_fields[name] = value


def _pred0(obj):
    return obj["predictions"][0]


def _gt0(obj):
    return obj["groundtruths"][0]


EVAL_RESULTS_MUTATIONS = {
    "logits_as_probabilities": (
        lambda o: _pred0(o).extra_fields["pred_rel_scores"].__setitem__((0, 3), 4.2),
        "pred_rel_scores",
    ),
    "nan_score": (lambda o: _pred0(o).extra_fields["pred_rel_scores"].__setitem__((0, 1), np.nan), "pred_rel_scores"),
    "inf_score": (lambda o: _pred0(o).extra_fields["pred_rel_scores"].__setitem__((1, 2), np.inf), "pred_rel_scores"),
    "pair_minus_one": (lambda o: _pred0(o).extra_fields["rel_pair_idxs"].__setitem__((0, 0), -1), "rel_pair_idxs"),
    "pair_out_of_range": (lambda o: _pred0(o).extra_fields["rel_pair_idxs"].__setitem__((2, 1), 3), "rel_pair_idxs"),
    "pairs_transposed": (
        lambda o: _field(_pred0(o), "rel_pair_idxs", np.ascontiguousarray(_pred0(o).extra_fields["rel_pair_idxs"].T)),
        "rel_pair_idxs",
    ),
    "gt_rels_two_columns": (lambda o: _field(_gt0(o), "relation_tuple", np.array([[0, 1], [1, 2]])), "relation_tuple"),
    "gt_predicate_zero": (lambda o: _gt0(o).extra_fields["relation_tuple"].__setitem__((0, 2), 0), "predicate"),
    "gt_predicate_too_big": (lambda o: _gt0(o).extra_fields["relation_tuple"].__setitem__((0, 2), 6), "predicate"),
    "gt_label_zero": (lambda o: _gt0(o).extra_fields["labels"].__setitem__(0, 0), "labels"),
    "gt_label_151": (lambda o: _gt0(o).extra_fields["labels"].__setitem__(1, 151), "labels"),
    "pred_label_million": (lambda o: _pred0(o).extra_fields["pred_labels"].__setitem__(2, 10**6), "pred_labels"),
    "gt_rel_index_out_of_range": (
        lambda o: _gt0(o).extra_fields["relation_tuple"].__setitem__((1, 1), 7),
        "object index",
    ),
    "scores_too_wide": (
        lambda o: _field(_pred0(o), "pred_rel_scores", np.ones((6, C + 1), np.float32)),
        "pred_rel_scores",
    ),
    "pred_box_inverted": (lambda o: _pred0(o).bbox.__setitem__((1, 2), 1.0), "bbox"),
    "gt_box_nan": (lambda o: _gt0(o).bbox.__setitem__((0, 0), np.nan), "bbox"),
    "obj_scores_short": (lambda o: _field(_pred0(o), "pred_scores", np.ones(2, np.float32)), "pred_scores"),
    "obj_score_negative": (lambda o: _pred0(o).extra_fields["pred_scores"].__setitem__(1, -0.5), "pred_scores"),
    "missing_scores": (lambda o: _pred0(o).extra_fields.pop("pred_rel_scores"), "pred_rel_scores"),
    "fractional_labels": (lambda o: _field(_gt0(o), "labels", np.array([1.5, 2, 3])), "labels"),
    "groundtruths_dict": (lambda o: o.__setitem__("groundtruths", {"a": 1}), "groundtruths"),
    "fewer_predictions": (lambda o: o["predictions"].pop(), "predictions"),
    "bad_image_size": (lambda o: setattr(_gt0(o), "size", ("wide", 3)), "size"),
}


@pytest.mark.parametrize("layout", ["zip", "legacy"])
@pytest.mark.parametrize("mutation", sorted(EVAL_RESULTS_MUTATIONS))
def test_eval_results_content(world, tmp_path, capsys, layout, mutation):
    root, cases = world
    obj = copy.deepcopy(eval_results_object(cases))
    mutate, field = EVAL_RESULTS_MUTATIONS[mutation]
    mutate(obj)
    path = tmp_path / "eval_results.pytorch"
    (save_zip if layout == "zip" else save_legacy)(obj, path)
    out = tmp_path / "out"
    out.mkdir()
    names = (str(path), field) if mutation not in ("groundtruths_dict", "fewer_predictions") else (str(path),)
    line = refused(
        capsys,
        ["evaluate", str(path), "--task", "predcls", "--stats", str(root / "stats.h5"), "-o", str(out / "m.json")],
        out,
        must_name=names,
    )
    if field in ("pred_rel_scores", "rel_pair_idxs", "relation_tuple", "labels", "bbox"):
        assert "image 0" in line  # the image is named by id and position


# --------------------------------------------------------------------------- corrupt or hostile torch files


class _Evil:
    def __reduce__(self):
        return os.system, ("touch /tmp/sgg_eval_pwned",)


def _legacy_with_bad_count(obj, path):
    data, storages = _dump(obj, legacy=True)
    with open(path, "wb") as fh:
        for plain in (0x1950A86A20F9469CFC6C, 1001, {"protocol_version": 1001, "little_endian": True}):
            pickle.dump(plain, fh, protocol=2)
        fh.write(data)
        pickle.dump([st.key for st in storages], fh, protocol=2)
        for i, st in enumerate(storages):
            fh.write(struct.pack("<q", st.array.size * (10**6 if i == 0 else 1)))
            fh.write(st.array.tobytes())


def _zip_bomb(obj, path):
    data, storages = _dump({"pad": b"\0" * (80 << 20), **obj}, legacy=False)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", data, compress_type=zipfile.ZIP_DEFLATED)
        for st in storages:
            zf.writestr(f"archive/data/{st.key}", st.array.tobytes())


def _zip_missing_member(obj, path):
    save_zip(obj, path.with_suffix(".full"))
    with zipfile.ZipFile(path.with_suffix(".full")) as src, zipfile.ZipFile(path, "w") as dst:
        for info in src.infolist():
            if info.filename != "archive/data/0":
                dst.writestr(info, src.read(info.filename))
    path.with_suffix(".full").unlink()


CORRUPT_FILES = {
    "truncated_zip": lambda obj, p: (save_zip(obj, p), p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2])),
    "truncated_legacy": lambda obj, p: (save_legacy(obj, p), p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 3])),
    "garbage_after_pickle_opcode": lambda obj, p: p.write_bytes(b"\x80\x02" + os.urandom(300)),
    "malicious_legacy_pickle": lambda obj, p: save_legacy({"groundtruths": [_Evil()], "predictions": []}, p),
    "malicious_zip_pickle": lambda obj, p: save_zip({"groundtruths": [_Evil()], "predictions": []}, p),
    "storage_larger_than_file": _legacy_with_bad_count,
    "compressed_pickle_bomb": _zip_bomb,
    "missing_storage_member": _zip_missing_member,
    "not_a_known_format": lambda obj, p: p.write_text("hello"),
    "empty_file": lambda obj, p: p.write_bytes(b""),
}


@pytest.mark.parametrize("kind", sorted(CORRUPT_FILES))
def test_corrupt_torch_files(world, tmp_path, capsys, kind):
    root, cases = world
    path = tmp_path / "eval_results.pytorch"
    CORRUPT_FILES[kind](eval_results_object(cases), path)
    out = tmp_path / "out"
    out.mkdir()
    refused(
        capsys,
        ["evaluate", str(path), "--task", "predcls", "--stats", str(root / "stats.h5"), "-o", str(out / "m.json")],
        out,
        must_name=(str(path),),
    )
    assert not os.path.exists("/tmp/sgg_eval_pwned")


# --------------------------------------------------------------------------- our HDF5 stores


def _edit(path: Path, dataset: str, fn):
    with h5py.File(path, "r+") as h5:
        data = h5[dataset][()]
        fn(data)
        h5[dataset][...] = data


STORE_MUTATIONS = {
    "pred_negative_probability": (
        "pred.h5",
        lambda p: _edit(p, "pairs/rel_scores", lambda a: a.__setitem__((1, 1), -2)),
        "rel_scores",
    ),
    "pred_nan_score": (
        "pred.h5",
        lambda p: _edit(p, "pairs/rel_scores", lambda a: a.__setitem__((0, 0), np.nan)),
        "rel_scores",
    ),
    "pred_pair_out_of_range": (
        "pred.h5",
        lambda p: _edit(p, "pairs/pairs", lambda a: a.__setitem__((0, 0), 9)),
        "pairs",
    ),
    "pred_label_zero": ("pred.h5", lambda p: _edit(p, "objects/labels", lambda a: a.__setitem__(0, 0)), "labels"),
    "pred_negative_obj_score": (
        "pred.h5",
        lambda p: _edit(p, "objects/obj_scores", lambda a: a.__setitem__(1, -0.5)),
        "obj_scores",
    ),
    "split_predicate_zero": (
        "test.h5",
        lambda p: _edit(p, "relations/rels", lambda a: a.__setitem__((0, 2), 0)),
        "predicate",
    ),
    "split_label_too_big": ("test.h5", lambda p: _edit(p, "objects/labels", lambda a: a.__setitem__(1, 77)), "labels"),
    "split_box_inverted": (
        "test.h5",
        lambda p: _edit(p, "objects/boxes", lambda a: a.__setitem__((0, 0), 99)),
        "boxes",
    ),
    "split_offsets_decreasing": (
        "test.h5",
        lambda p: _edit(p, "objects/offsets", lambda a: a.__setitem__(1, 9)),
        "offsets",
    ),
    "pred_duplicate_ids": (
        "pred.h5",
        lambda p: _edit(p, "images/image_id", lambda a: a.__setitem__(1, a[0])),
        "image_id",
    ),
    "pred_unknown_task": ("pred.h5", lambda p: h5py.File(p, "r+").__enter__().attrs.__setitem__("task", "foo"), "task"),
    "pred_bad_json_attr": (
        "pred.h5",
        lambda p: h5py.File(p, "r+").__enter__().attrs.__setitem__("extra", "{"),
        "extra",
    ),
    "split_given_as_predictions": ("pred.h5", lambda p: p.write_bytes((p.parent / "test.h5").read_bytes()), "kind"),
}


@pytest.mark.parametrize("mutation", sorted(STORE_MUTATIONS))
def test_store_content(world, tmp_path, capsys, mutation):
    root, _ = world
    for name in ("test.h5", "pred.h5"):
        (tmp_path / name).write_bytes((root / name).read_bytes())
    target, mutate, field = STORE_MUTATIONS[mutation]
    mutate(tmp_path / target)
    seal(tmp_path / target)  # as a tool that writes the seal would: the content checks behind it are tested
    out = tmp_path / "out"
    out.mkdir()
    refused(
        capsys,
        [
            "evaluate",
            str(tmp_path / "pred.h5"),
            "--gt",
            str(tmp_path / "test.h5"),
            "--task",
            "predcls",
            "-o",
            str(out / "m.json"),
        ],
        out,
        must_name=(target, field),
    )


def test_prediction_store_missing_a_gt_image(world, tmp_path, capsys):
    root, cases = world
    write_predictions(
        tmp_path / "pred.h5",
        PredictionMeta("predcls", "probabilities", VOCAB, "m", True, "unit"),
        [p for _, p in cases[:2]],
    )
    refused(
        capsys,
        ["evaluate", str(tmp_path / "pred.h5"), "--gt", str(root / "test.h5"), "--task", "predcls"],
        tmp_path,
        must_name=("pred.h5", "image 102"),
    )


# --------------------------------------------------------------------------- SGBench JSON


def _sg(fn):
    def make(doc, path):
        fn(doc)
        path.write_text(json.dumps(doc))

    return make


SGBENCH_CASES = {
    "invalid_utf8": (lambda doc, p: p.write_bytes(b'{"version": 1, "images": ["\xff\xfe"]}'), "UTF-8"),
    "deep_nesting": (lambda doc, p: p.write_text('{"a":' * 100000 + "1" + "}" * 100000), "nested"),
    "entry_without_id": (_sg(lambda d: d["images"][0].pop("id")), "id"),
    "id_is_text": (_sg(lambda d: d["images"][0].__setitem__("id", "abc")), "id"),
    "triplets_two_columns": (_sg(lambda d: d["images"][0].__setitem__("triplets", [[0, 1]])), "triplets"),
    "predicate_out_of_range": (_sg(lambda d: d["images"][0]["triplets"][0].__setitem__(2, 5)), "triplets"),
    "instance_index_negative": (_sg(lambda d: d["images"][0]["triplets"][0].__setitem__(0, -1)), "triplets"),
    "bbox_not_finite": (
        _sg(lambda d: d["images"][0]["instances"][0].__setitem__("bbox", [0, 0, float("nan"), 1])),
        "bbox",
    ),
    "images_not_a_list": (_sg(lambda d: d.__setitem__("images", {"0": 1})), "version"),
    "bbox_three_numbers": (_sg(lambda d: d["images"][1]["instances"][0].__setitem__("bbox", [0, 0, 1])), "bbox"),
}


@pytest.mark.parametrize("case", sorted(SGBENCH_CASES))
def test_sgbench_json(world, tmp_path, capsys, case):
    root, cases = world
    path = tmp_path / "sg.json"
    make, field = SGBENCH_CASES[case]
    make(_sgbench(cases), path)
    refused(
        capsys,
        ["evaluate", str(path), "--gt", str(root / "test.h5"), "--task", "predcls"],
        tmp_path,
        must_name=(str(path), field),
    )


# --------------------------------------------------------------------------- zero-shot files and statistics


def test_zeroshot_file_holding_a_dict(world, tmp_path, capsys):
    root, _ = world
    save_zip({"a": np.zeros((2, 3), np.int64)}, tmp_path / "zs.pytorch")
    refused(
        capsys,
        [
            "evaluate",
            str(root / "eval_zip.pytorch"),
            "--task",
            "predcls",
            "--stats",
            str(root / "stats.h5"),
            "--zeroshot",
            str(tmp_path / "zs.pytorch"),
        ],
        tmp_path,
        must_name=("zs.pytorch", "zeroshot"),
    )


@pytest.mark.parametrize("array", [np.zeros((4, 2), np.int64), np.array([[1, 1, 9]]), np.ones((2, 3), np.float32)])
def test_zeroshot_file_with_bad_content(world, tmp_path, capsys, array):
    root, _ = world
    save_zip(array, tmp_path / "zs.pytorch")
    refused(
        capsys,
        [
            "evaluate",
            str(root / "eval_zip.pytorch"),
            "--task",
            "predcls",
            "--stats",
            str(root / "stats.h5"),
            "--zeroshot",
            str(tmp_path / "zs.pytorch"),
        ],
        tmp_path,
        must_name=("zs.pytorch", "zeroshot"),
    )


def _negative_count(a):
    a.flat[0] = -1
    return a


@pytest.mark.parametrize(
    "dataset, make",
    [
        ("triplet_counts", _negative_count),
        ("zeroshot_triplets", lambda a: np.array([[1, 1, 99]])),
        ("predicate_counts", lambda a: a[:-1]),
        ("graph_density", lambda a: a.astype(np.int64)),
    ],
)
def test_statistics_with_bad_content(world, tmp_path, capsys, dataset, make):
    root, _ = world
    stats = tmp_path / "stats.h5"
    stats.write_bytes((root / "stats.h5").read_bytes())
    with h5py.File(stats, "r+") as h5:
        data = make(h5[dataset][()])
        del h5[dataset]
        h5[dataset] = data
    seal(stats)
    refused(
        capsys,
        ["evaluate", str(root / "eval_zip.pytorch"), "--task", "predcls", "--stats", str(stats)],
        tmp_path,
        must_name=("stats.h5", dataset),
    )


def test_statistics_file_that_is_not_hdf5(world, tmp_path, capsys):
    root, _ = world
    (tmp_path / "stats.h5").write_text("not hdf5")
    refused(
        capsys,
        ["evaluate", str(root / "eval_zip.pytorch"), "--task", "predcls", "--stats", str(tmp_path / "stats.h5")],
        tmp_path,
        must_name=("stats.h5",),
    )


# --------------------------------------------------------------------------- options and outputs

OPTION_CASES = {
    "tau_negative": (["evaluate", "{eval}", "--task", "predcls", "--tau", "-1"], "--tau"),
    "tau_text": (["evaluate", "{eval}", "--task", "predcls", "--tau", "abc"], "--tau"),
    "tau_nan": (["evaluate", "{eval}", "--task", "predcls", "--tau", "nan"], "--tau"),
    "unknown_task": (["evaluate", "{eval}", "--task", "detection"], "--task"),
    "max_n_huge": (["blind-replace", "{eval}", "--stats", "{stats}", "--max-n", "100000"], "max"),
    "max_n_negative": (["blind-replace", "{eval}", "--stats", "{stats}", "--max-n", "-1"], "--max-n"),
    "max_n_above_predicates": (["blind-replace", "{eval}", "--stats", "{stats}", "--max-n", "40"], "max_n"),
    "eps_zero": (
        ["pko", "{eval}", "--stats", "{stats}", "--task", "predcls", "--eps", "0", "-o", "{out}/p.h5"],
        "--eps",
    ),
    "lam_infinite": (
        ["pko", "{eval}", "--stats", "{stats}", "--task", "predcls", "--lam", "inf", "-o", "{out}/p.h5"],
        "--lam",
    ),
    "num_val_im_negative": (["split", "--vg150-dir", "{out}", "--num-val-im", "-5", "-o", "{out}/s"], "--num-val-im"),
    "output_is_a_directory": (
        ["evaluate", "{eval}", "--task", "predcls", "--stats", "{stats}", "-o", "{out}/sub"],
        "directory",
    ),
    "output_parent_is_a_file": (
        ["evaluate", "{eval}", "--task", "predcls", "--stats", "{stats}", "-o", "{out}/file.txt/m.json"],
        "file.txt",
    ),
    "missing_predictions": (["evaluate", "{out}/nope.pytorch", "--task", "predcls"], "not found"),
    "store_without_gt": (["evaluate", "{pred}", "--task", "predcls"], "--gt"),
    "split_without_source": (["split", "-o", "{out}/s"], "--simulated"),
}


@pytest.mark.parametrize("case", sorted(OPTION_CASES))
def test_options_and_outputs(world, tmp_path, capsys, case):
    root, _ = world
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "file.txt").write_text("x")
    args, name = OPTION_CASES[case]
    fill = {
        "eval": str(root / "eval_zip.pytorch"),
        "stats": str(root / "stats.h5"),
        "pred": str(root / "pred.h5"),
        "out": str(out),
    }
    refused(capsys, [a.format(**fill) for a in args], out, must_name=(name,))


# --------------------------------------------------------------------------- configuration

REAL_MODEL = "name: real\nsource: file\nfiles: {predcls: a.pytorch}\nbackbone: Motifs\nmethod: Baseline\n"
SIM_MODEL = "name: pko_only\nsource: simulated\nsim_backbone: sim_motifs\nsim_method: baseline\nbackbone: Motifs\n"


def _conf_edit(path: str, old: str, new: str):
    return path, lambda text: text.replace(old, new) if old in text else pytest.fail(f"{old!r} not in {path}")


# (overrides, files written into a copy of conf/ as {path: text or edit}, what the one-line error names)
CONFIG_CASES = [
    ("metrics.tau=-1", {}, "metrics.tau"),
    ("metrics.tau=abc", {}, "metrics.tau"),
    ("metrics.tau=2", {}, "metrics.tau"),
    ("metrics.imr_k=0", {}, "metrics.imr_k"),
    ("metrics.protocol=foo", {}, "metrics.protocol"),
    ("dataset.sim.scale=huge", {}, "dataset.sim.scale"),
    ("evaluation.entries=[nope]", {}, "evaluation.entries"),
    ("pko.eps=0", {}, "pko.eps"),
    ("no_such_key=1", {}, "no_such_key"),
    ("", dict([_conf_edit("simulation/default.yaml", "rtpb_beta: 0.9999", "rtpb_beta: 1")]), "rtpb_beta"),
    (
        "",
        dict([_conf_edit("simulation/default.yaml", "anchor_spread: 1.5", "anchor_spread: 0")]),
        "simulation.world.anchor_spread",
    ),
    (
        "",
        dict([_conf_edit("simulation/default.yaml", "anchor_domains: 0", "anchor_domains: 1.5")]),
        "simulation.world.anchor_domains",
    ),
    (
        "",
        dict([_conf_edit("simulation/default.yaml", "domain_share: 0.8", "domain_share: 2")]),
        "simulation.world.domain_share",
    ),
    (
        "",
        dict([_conf_edit("simulation/default.yaml", "  reuse_prob: 0.8", "  reuse_prob: 0.8\n  scale: tiny")]),
        "dataset.sim.scale",
    ),
    ("evaluation.entries=[real]", {"model/real.yaml": REAL_MODEL}, "models.real.files"),
    ("", {"model/sim_motifs_tde.yaml": "- not a mapping\n"}, "sim_motifs_tde.yaml"),
    ("dataset=vg150", {}, "are simulated models"),  # simulated rows never mix with a real dataset's
    ("experiment=one_model", {}, "evaluation.model"),
    ("experiment=one_model evaluation.model=nope", {}, "conf/model/nope.yaml"),
    ("", {"model/pko_only.yaml": SIM_MODEL}, "models.pko_only"),  # the PKO-only entry's name is taken
]


@pytest.mark.parametrize("override, files, key", CONFIG_CASES)
def test_config_refused_before_params_yaml_is_written(tmp_path, capsys, override, files, key):
    conf = tmp_path / "conf"
    shutil.copytree(Path(__file__).resolve().parents[1] / "conf", conf)
    for name, change in files.items():
        path = conf / name
        path.write_text(change(path.read_text()) if callable(change) else change)
    out = tmp_path / "params.yaml"
    out.write_text("old: true\n")
    refused(capsys, ["params", *override.split(), "--conf-dir", str(conf), "-o", str(out)], tmp_path, must_name=(key,))


# --------------------------------------------------------------------------- VG150 files

VG150_CASES = {
    "entry_without_image_id": (lambda d: d[0].pop("image_id"), "image_id"),
    "width_zero": (lambda d: d[0].__setitem__("width", 0), "width"),
    "height_text": (lambda d: d[2].__setitem__("height", "tall"), "height"),
    "entry_not_an_object": (lambda d: d.__setitem__(3, 42), "image_data.json"),
}


@pytest.mark.parametrize("case", sorted(VG150_CASES))
def test_vg150_image_data(tmp_path, capsys, case):
    data = copy.deepcopy(IMAGE_DATA)
    mutate, name = VG150_CASES[case]
    mutate(data)
    raw = write_vg150_fixture(tmp_path / "raw", image_data=data)
    out = tmp_path / "out"
    out.mkdir()
    refused(
        capsys,
        ["split", "--vg150-dir", str(raw), "--num-val-im", "1", "-o", str(out)],
        out,
        must_name=("image_data.json", name),
    )


def test_vg150_validation_carve_out_larger_than_the_training_split(tmp_path, capsys):
    raw = write_vg150_fixture(tmp_path / "raw")
    out = tmp_path / "out"
    out.mkdir()
    refused(
        capsys,
        ["split", "--vg150-dir", str(raw), "-o", str(out), "--splits", "train"],
        out,
        must_name=("num_val_im", "takes all"),
    )


# --------------------------------------------------------------------------- valid edge cases still accepted


@pytest.mark.parametrize("fmt", ["eval_zip.pytorch", "eval_legacy.pytorch", "pred.h5", "sgbench.json"])
def test_valid_edge_cases_are_accepted(world, tmp_path, capsys, fmt):
    """An image without GT relations, a prediction without pairs (image 102), tied scores (SGBench one-hot)."""
    root, _ = world
    args = ["evaluate", str(root / fmt), "--task", "predcls", "-o", str(tmp_path / "m.json")]
    args += ["--stats", str(root / "stats.h5")] if fmt.endswith(".pytorch") else ["--gt", str(root / "test.h5")]
    assert main(args) == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["counts"]["images_input"] == 3


def test_a_bug_is_one_line_and_exit_1(monkeypatch, capsys, world):
    """An unexpected exception is reported as a bug (exit 1), its traceback only with SGG_EVAL_DEBUG=1."""
    import sgg_eval.boxes.evaluate as ev

    root, _ = world
    monkeypatch.setattr(ev, "evaluate", lambda *a, **k: 1 / 0)
    args = ["evaluate", str(root / "eval_zip.pytorch"), "--task", "predcls", "--stats", str(root / "stats.h5")]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "internal error" in err and "ZeroDivisionError" in err and "Traceback" not in err
    monkeypatch.setenv("SGG_EVAL_DEBUG", "1")
    assert main(args) == 1
    assert "Traceback" in capsys.readouterr().err


@pytest.mark.parametrize("override", ["metrics.tau=2", "metrics.imr_k=30"])
def test_sweep_job_refuses_out_of_range_values_before_writing(tmp_path, override):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from sgg_eval.core.errors import InputError
    from sgg_eval.pipeline.sweep import run_job

    conf = Path(__file__).resolve().parents[1] / "conf"
    with initialize_config_dir(str(conf), version_base="1.3"):
        cfg = compose(config_name="sweep", overrides=[override])
    with pytest.raises(InputError, match=override.split("=")[0]):
        run_job(OmegaConf.to_container(cfg, resolve=True), str(tmp_path / "job"), str(tmp_path))
    assert not (tmp_path / "job").exists()


def test_a_store_made_without_gt_is_refused_with_the_fix(world, tmp_path, capsys):
    """`pko` on an eval_results file without --gt numbers images by position; evaluating the store against a
    split names the problem and the fix instead of 'no prediction for this GT image' (issue 27)."""
    root, _ = world
    store = tmp_path / "pko.h5"
    assert (
        main(
            [
                "pko",
                str(root / "eval_zip.pytorch"),
                "--task",
                "predcls",
                "--stats",
                str(root / "stats.h5"),
                "-o",
                str(store),
            ]
        )
        == 0
    )
    capsys.readouterr()
    err = refused(
        capsys,
        ["evaluate", str(store), "--task", "predcls", "--gt", str(root / "test.h5")],
        tmp_path,
        must_name=(str(store), "made for another split", "numbered 0..2", f"--gt {root / 'test.h5'}"),
    )
    assert "3 of the 3 images" in err
    with_gt = tmp_path / "pko_gt.h5"
    assert (
        main(
            [
                "pko",
                str(root / "eval_zip.pytorch"),
                "--task",
                "predcls",
                "--stats",
                str(root / "stats.h5"),
                "--gt",
                str(root / "test.h5"),
                "-o",
                str(with_gt),
            ]
        )
        == 0
    )
    assert main(["evaluate", str(with_gt), "--task", "predcls", "--gt", str(root / "test.h5")]) == 0
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"version": 1, "images": []}))
    refused(
        capsys,
        ["evaluate", str(other), "--task", "predcls", "--gt", str(root / "test.h5")],
        tmp_path,
        must_name=(str(other), "made for another split"),
    )


@pytest.mark.parametrize("which", ["predictions", "--gt", "--stats"])
def test_a_fifo_in_place_of_a_file_is_refused_at_once(world, tmp_path, which):
    """A named pipe (or a device) would make a reader wait forever for bytes no one writes: each input is refused
    in one line instead. In a child with a time limit, so that a reader that waits fails the test, not the run."""
    root, _ = world
    fifo = tmp_path / "input.h5"
    os.mkfifo(fifo)
    files = {"predictions": root / "pred.h5", "--gt": root / "test.h5", "--stats": root / "stats.h5", which: fifo}
    args = [str(files["predictions"]), "--gt", str(files["--gt"]), "--stats", str(files["--stats"])]
    run = subprocess.run([sys.executable, "-m", "sgg_eval.cli", "evaluate", *args, "--task", "predcls", "-o",
                          str(tmp_path / "m.json")], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert (
        run.returncode == 2
        and run.stderr.strip().endswith(f"{fifo}: not a file, expected an HDF5 file")
        or (which == "predictions" and run.stderr.strip().endswith(f"{fifo}: not a file, expected predictions"))
    ), run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and not (tmp_path / "m.json").exists()
