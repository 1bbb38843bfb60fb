"""Valid seed files of every input format sgg-eval reads, and the command that reads each (the fuzzer's targets).

One small deterministic world (6 SGDet-like images, 6 classes, 5 predicates) written as every format: the
eval_results.pytorch zip and legacy layouts, a prediction store, split stores, statistics, SGBench JSON, the
three raw VG150 files, a zero-shot file, the ``conf/`` folder with its ``params.yaml``, the PSG files, and GQA's
scene graphs and question ids and GQA200's files (``tests/gqa_fixture.py``), and Open Images V6's files with a
PySGG ``eval_results.pytorch`` (``tests/oiv6_fixture.py``), an open-vocabulary split file, Action Genome's release
with a SIMULATED model's per-video predictions (``tests/ag_fixture.py``), and SGG-Benchmark's COCO-style files with
its evaluator's ``predictions.pth`` and caption triplets (``tests/coco_sgg_fixture.py``,
``tests/sgg_benchmark_fixture.py``).
"""

from __future__ import annotations

import json
import shutil
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
sys.path.insert(0, str(TESTS))

from ag_fixture import release_with_splits  # noqa: E402
from asmv2_fixture import write_fixture as write_asmv2_fixture  # noqa: E402
from coco_sgg_fixture import write_coco_sgg  # noqa: E402
from conftest import random_case, small_vocab  # noqa: E402
from gqa_fixture import write_gqa, write_gqa200  # noqa: E402
from oiv6_fixture import write_eval_results as write_oiv6_predictions  # noqa: E402
from oiv6_fixture import write_oiv6  # noqa: E402
from provision_fixture import StandInSentenceTransformer  # noqa: E402
from provision_fixture import write_fixture as write_provision_fixture  # noqa: E402
from psg_fixture import write_psg_fixture  # noqa: E402
from r1sgg_fixture import write_fixture as write_r1sgg_fixture  # noqa: E402
from sgg_benchmark_fixture import write_predictions as write_sggbench_predictions  # noqa: E402
from sgvlm_fixture import write_fixture as write_sgvlm_fixture  # noqa: E402
from test_openpsg_submit import write_both  # noqa: E402
from torch_writer import eval_results_object, save_legacy, save_zip  # noqa: E402
from vg150_fixture import write_vg150_fixture  # noqa: E402

from sgg_eval.data.stats import compute_stats, write_stats  # noqa: E402
from sgg_eval.data.store import write_predictions, write_split  # noqa: E402
from sgg_eval.data.types import PredictionMeta, SplitMeta  # noqa: E402
from sgg_eval.pipeline.config import write_params  # noqa: E402

VOCAB = small_vocab(6, 5)
# --protocol provision reads names with SBERT, which is not installed here: the fixture's stand-in, in every case
sys.modules.setdefault("sentence_transformers", type(sys)("sentence_transformers"))
sys.modules["sentence_transformers"].__dict__.setdefault("SentenceTransformer", StandInSentenceTransformer)
EVAL = ["--task", "sgdet", "--jobs", "1", "-o", "out/m.json"]


@dataclass(frozen=True)
class Target:
    """A file the fuzzer mutates, how it is built (``kind``: what the mutators know of it), whether it carries
    checksums over all of its content (then any byte-level change that is accepted must leave the numbers as
    they were), and the command lines that read it (run from the case folder; outputs go to ``out/``)."""

    name: str
    path: str
    kind: str
    checksummed: bool
    commands: tuple[tuple[str, ...], ...]
    real_numbers: tuple[str, ...] = ()  # JSON: top-level keys under which any number is valid (pixel boxes)


R1SGG = ("evaluate", "r1/answers", "--text-graphs", "--gt", "r1/rows.jsonl", "--protocol", "r1sgg", "-o", "out/r1.json")
SGVLM = ("--text-graphs", "--protocol", "sgvlm", "-o", "out/s.json")
PROVISION = ("--text-graphs", "--protocol", "provision", "--top-k", "3", "-o", "out/p.json")
ASMV2 = ("evaluate", "asmv2/answers.jsonl", "--text-graphs", "--gt", "asmv2/psg_eval.jsonl", "--protocol", "asmv2",
         "-o", "out/a.json")  # fmt: skip
PSG_MASKS = (
    "evaluate",
    "psg/submission.zip",
    "--psg",
    "psg/psg.json",
    "--psg-root",
    "psg/coco",
    "--jobs",
    "1",
    "-o",
    "out/m.json",
)
PSG_BOXES = ("evaluate", "psg/submission.json", "--psg", "psg/psg.json", "--jobs", "1", "-o", "out/m.json")
PSG_FOLDER = ("evaluate", "psg/folder", *PSG_MASKS[2:])  # the same submission as a folder of TIFFs
OPENPSG = ("evaluate", "psg/submission", *PSG_MASKS[2:-2], "--protocol", "openpsg", "-o", "out/m.json")  # its --submit
SETS_R1 = ("evaluate", "r1/answers", "--text-graphs", "--gt", "r1/rows.jsonl", "-o", "out/t.json")
SETS_ASMV2 = ("evaluate", "asmv2/answers.jsonl", "--text-graphs", "--gt", "asmv2/psg_eval.jsonl", "-o", "out/t.json")
R1SGG_GATHERED = ("evaluate", "r1/gathered.json", "--text-graphs", "--gt", "r1/rows.jsonl", "--protocol", "r1sgg",
                  "-o", "out/r1.json")  # fmt: skip

GQA_SPLIT = ("split", "--gqa-dir", "gqa", "--num-val-im", "8", "-o", "out")
GQA_NLR_SPLIT = ("split", "--gqa-dir", "gqa", "--num-val-im", "8", "--exclude-left-right", "-o", "out")
GQA200_SPLIT = ("split", "--gqa200-dir", "gqa200", "--num-val-im", "5", "-o", "out")
OIV6_SPLIT = ("split", "--oiv6-dir", "oiv6", "-o", "out")
OIV6_EVAL = ("evaluate", "oiv6/eval_results.pytorch", "--gt", "oiv6/test.h5", "--task", "sgdet", "--protocol", "oiv6",
             "--jobs", "1", "-o", "out/m.json")  # fmt: skip

AG_SPLIT = ("split", "--ag-dir", "ag/AG", "--ag-small-boxes", "ag/AG/object_bbox_and_relationship_filtersmall.pkl",
            "-o", "out")  # fmt: skip
AG_EVAL = ("--ag", "ag/splits/test.h5", "--task", "predcls", "--constraint", "all", "-o", "out/v.json")
COCO_SPLIT = ("split", "--coco-sgg", "coco", "--splits", "train,test", "--draw-seed", "3", "-o", "out")
SGG_BENCHMARK = ("evaluate", "sggbench/predictions.pth", "--gt", "sggbench/test.h5", "--stats", "sggbench/stats.h5",
                 "--protocol", "sgg-benchmark", "--task", "sgdet", "--captions", "sggbench/captions.json",
                 "--jobs", "1", "-o", "out/m.json")  # fmt: skip

OPENVOCAB = ("evaluate", "pred.h5", "--gt", "test.h5", "--split-file", "split.yaml", "--zeroshot", "zs.pytorch")

TARGETS = [
    Target(
        "eval_zip",
        "eval_zip.pytorch",
        "torch_zip",
        True,
        (
            ("evaluate", "eval_zip.pytorch", "--stats", "stats.h5", *EVAL),
            ("pko", "eval_zip.pytorch", "--stats", "stats.h5", "--task", "sgdet", "-o", "out/p.h5"),
        ),
    ),
    Target(
        "eval_predcls",
        "eval_predcls.pytorch",
        "torch_zip",
        True,
        (
            (
                "evaluate",
                "eval_predcls.pytorch",
                "--stats",
                "stats.h5",
                "--task",
                "predcls",
                "--jobs",
                "1",
                "-o",
                "out/m.json",
            ),
            (
                "blind-replace",
                "eval_predcls.pytorch",
                "--stats",
                "stats.h5",
                "--task",
                "predcls",
                "--max-n",
                "2",
                "-o",
                "out/b.json",
            ),
        ),
    ),
    Target(
        "eval_legacy",
        "eval_legacy.pytorch",
        "torch_legacy",
        False,
        (("evaluate", "eval_legacy.pytorch", "--stats", "stats.h5", *EVAL),),
    ),
    Target(
        "pred_store",
        "pred.h5",
        "store",
        True,
        (
            ("evaluate", "pred.h5", "--gt", "test.h5", *EVAL),
            (
                "blind-replace",
                "pred.h5",
                "--gt",
                "test.h5",
                "--stats",
                "stats.h5",
                "--task",
                "sgdet",
                "--max-n",
                "2",
                "-o",
                "out/b.json",
            ),
        ),
    ),
    Target(
        "split_store",
        "test.h5",
        "store",
        True,
        (
            ("evaluate", "pred.h5", "--gt", "test.h5", *EVAL),
            ("stats", "train.h5", "--test", "test.h5", "-o", "out/s.h5"),
        ),
    ),
    Target("train_store", "train.h5", "store", True, (("stats", "train.h5", "--test", "test.h5", "-o", "out/s.h5"),)),
    Target("stats", "stats.h5", "store", True, (("evaluate", "eval_zip.pytorch", "--stats", "stats.h5", *EVAL),)),
    Target("sgbench_json", "sg.json", "json", False, (("evaluate", "sg.json", "--gt", "test.h5", *EVAL),)),
    Target(
        "vg150_h5",
        "vg/VG-SGG-with-attri.h5",
        "hdf5_foreign",
        False,
        (("split", "--vg150-dir", "vg", "--splits", "train,test", "--num-val-im", "0", "-o", "out"),),
    ),
    Target(
        "vg150_dicts",
        "vg/VG-SGG-dicts-with-attri.json",
        "json",
        False,
        (("split", "--vg150-dir", "vg", "--splits", "train,test", "--num-val-im", "0", "-o", "out"),),
    ),
    Target(
        "vg150_image_data",
        "vg/image_data.json",
        "json",
        False,
        (("split", "--vg150-dir", "vg", "--splits", "test", "--num-val-im", "0", "-o", "out"),),
    ),
    Target(
        "zeroshot",
        "zs.pytorch",
        "torch_zip",
        True,
        (("evaluate", "eval_zip.pytorch", "--stats", "stats.h5", "--zeroshot", "zs.pytorch", *EVAL),),
    ),
    Target(
        "conf", "conf/metrics/default.yaml", "yaml", False, (("params", "--conf-dir", "conf", "-o", "out/params.yaml"),)
    ),
    Target(
        "conf_model",
        "conf/model/sim_motifs_baseline.yaml",
        "yaml",
        False,
        (("params", "--conf-dir", "conf", "-o", "out/params.yaml"),),
    ),
    Target("params", "params.yaml", "yaml", False, (("@check_params",),)),
    Target("gqa_graphs", "gqa/val_sceneGraphs.json", "json", False, (GQA_SPLIT,)),
    Target("gqa_train_graphs", "gqa/train_sceneGraphs.json", "json", False, (GQA_SPLIT, GQA_NLR_SPLIT)),
    Target("gqa_ids", "gqa/train_images.json", "json", False, (GQA_SPLIT,)),
    Target("gqa200_info", "gqa200/GQA_200_ID_Info.json", "json", False, (GQA200_SPLIT,)),
    Target("gqa200_test", "gqa200/GQA_200_Test.json", "json", False, (GQA200_SPLIT,), ("gt_boxes_all",)),
    Target("oiv6_categories", "oiv6/annotations/categories_dict.json", "json", False, (OIV6_SPLIT,)),
    Target("oiv6_test", "oiv6/annotations/vrd-test-anno.json", "json", False, (OIV6_SPLIT,), ("bbox",)),
    Target("oiv6_eval", "oiv6/eval_results.pytorch", "torch_zip", True, (OIV6_EVAL,)),
    Target(
        "openvocab_split",
        "split.yaml",
        "yaml",
        False,
        ((*OPENVOCAB, "--protocol", "ovsgtr", "--setting", "ovd+r", *EVAL), (*OPENVOCAB, "--protocol", "vs3", *EVAL)),
    ),
    Target(
        "text_answers",
        "answers.jsonl",
        "binary",
        False,
        (("evaluate", "answers.jsonl", "--text-graphs", "--gt", "test.h5", "-o", "out/m.json"),),
    ),
    Target("r1sgg_answer", "r1/answers/1000.json", "binary", False, (R1SGG, SETS_R1)),  # counted, as text_answers
    Target("r1sgg_rows", "r1/rows.jsonl", "binary", False, (R1SGG, SETS_R1)),
    Target("r1sgg_gathered", "r1/gathered.json", "json", False, (R1SGG_GATHERED,)),
    Target("sgvlm_samples", "sgvlm.jsonl", "binary", False, (("evaluate", "sgvlm.jsonl", *SGVLM),)),
    Target("asmv2_answers", "asmv2/answers.jsonl", "binary", False, (ASMV2, SETS_ASMV2)),
    Target("asmv2_questions", "asmv2/psg_eval.jsonl", "binary", False, (ASMV2, SETS_ASMV2)),
    Target("provision_e2e", "provision/e2e.jsonl", "binary", False, (("evaluate", "provision/e2e.jsonl", *PROVISION),)),
    Target(
        "provision_gt",
        "provision/psg_gt.json",
        "json",
        False,
        (("evaluate", "provision/gpt.jsonl", "--gt", "provision/psg_gt.json", *PROVISION),),
        ("data",),  # its boxes are pixels, any number is one; class ids and indices are checked (refused)
    ),
    Target("psg_json", "psg/psg.json", "json", False, (PSG_MASKS, PSG_BOXES)),
    Target("psg_zip", "psg/submission.zip", "binary", True, (PSG_MASKS,)),
    Target("psg_submission_json", "psg/submission.json", "json", False, (PSG_BOXES,)),
    Target("psg_png", "psg/coco/panoptic/1002.png", "binary", True, (PSG_MASKS,)),
    Target("psg_folder_tiff", "psg/folder/masks/1002.tiff", "binary", False, (PSG_FOLDER,)),
    Target("psg_folder_triplets", "psg/folder/triplets.json", "json", False, (PSG_FOLDER,)),
    Target("openpsg_relation", "psg/submission/relation.json", "json", False, (OPENPSG,)),
    Target("openpsg_png", "psg/submission/panseg/1.png", "binary", True, (OPENPSG,)),
    Target(
        "provision_gpt",
        "provision/gpt.jsonl",
        "binary",
        False,
        (("evaluate", "provision/gpt.jsonl", "--gt", "provision/psg_gt.json", *PROVISION),),
    ),  # fmt: skip
    # Action Genome's release (plain-data pickles) and per-video predictions (numpy's .npz, torch's zip)
    Target("ag_objects", "ag/AG/annotations/object_bbox_and_relationship.pkl", "binary", False, (AG_SPLIT,)),
    Target("ag_persons", "ag/AG/annotations/person_bbox.pkl", "binary", False, (AG_SPLIT,)),
    Target("ag_object_classes", "ag/AG/annotations/object_classes.txt", "binary", False, (AG_SPLIT,)),
    Target("ag_relationship_classes", "ag/AG/annotations/relationship_classes.txt", "binary", False, (AG_SPLIT,)),
    Target("ag_small_boxes", "ag/AG/object_bbox_and_relationship_filtersmall.pkl", "binary", False, (AG_SPLIT,)),
    Target("ag_split_store", "ag/splits/test.h5", "binary", True, (("evaluate", "ag/preds", *AG_EVAL),)),
    Target("ag_npz", "ag/preds/55002.mp4.npz", "binary", False, (("evaluate", "ag/preds", *AG_EVAL),)),
    Target("ag_torch", "ag/preds.pt", "binary", False, (("evaluate", "ag/preds.pt", *AG_EVAL),)),
    # Maelic/SGG-Benchmark's COCO-style files and its evaluator's predictions.pth and caption triplets
    Target("coco_sgg_train", "coco/train/_annotations.coco.json", "json", False, (COCO_SPLIT,), ("bbox",)),
    Target("coco_sgg_test", "coco/test/_annotations.coco.json", "json", False, (COCO_SPLIT,), ("bbox",)),
    Target("sgg_benchmark_pth", "sggbench/predictions.pth", "binary", False, (SGG_BENCHMARK,)),
    Target("sgg_benchmark_captions", "sggbench/captions.json", "json", False, (SGG_BENCHMARK,)),
]


def _cases(n: int = 6, task: str = "sgdet"):
    """The seed world's (GT, prediction) pairs; ``predcls``: the PredCls outputs (GT boxes) of other images."""
    rng = np.random.default_rng(2024 if task == "sgdet" else 2025)
    return [random_case(rng, VOCAB, task, 100 + i) for i in range(n)]


CASES_OF = {"eval_predcls": "predcls"}  # a torch target's task, where it is not the SGDet world


def sgbench_doc(cases) -> dict:
    return {
        "version": 1,
        "images": [
            {
                "id": p.image_id,
                "instances": [
                    {"bbox": [float(v) for v in b], "category": int(c) - 1} for b, c in zip(p.boxes, p.labels)
                ],
                "triplets": [[int(s), int(o), int(np.argmax(r[1:]))] for (s, o), r in zip(p.pairs, p.rel_scores)],
            }
            for _, p in cases
        ],
    }


def write_seeds(folder: Path) -> Path:
    """Every seed file in ``folder`` (created), deterministically."""
    folder.mkdir(parents=True, exist_ok=True)
    cases = _cases()
    gts = [g for g, _ in cases]
    write_split(folder / "test.h5", SplitMeta("test", VOCAB, "fuzz", True, "fuzz"), gts)
    write_split(folder / "train.h5", SplitMeta("train", VOCAB, "fuzz", True, "fuzz"), gts[::-1])
    write_predictions(
        folder / "pred.h5", PredictionMeta("sgdet", "probabilities", VOCAB, "m", True, "fuzz"), [p for _, p in cases]
    )
    write_stats(folder / "stats.h5", compute_stats(gts, VOCAB, gts))
    obj = eval_results_object(cases)
    save_zip(obj, folder / "eval_zip.pytorch")
    save_zip(eval_results_object(_cases(task="predcls")), folder / "eval_predcls.pytorch")
    save_legacy(obj, folder / "eval_legacy.pytorch")
    save_zip(np.array([[1, 2, 1], [2, 3, 4]], dtype=np.int64), folder / "zs.pytorch")
    (folder / "sg.json").write_text(json.dumps(sgbench_doc(cases)))
    (folder / "answers.jsonl").write_text(text_answers(gts))
    write_r1sgg_fixture(folder / "r1", "vg150", 0, n_images=8)
    write_sgvlm_fixture(folder / "sgvlm.jsonl", 0, n=16)
    write_asmv2_fixture(folder / "asmv2", 0, n=12)
    write_provision_fixture(folder / "provision", 0, n=10)
    (folder / "provision" / "gt.json").replace(folder / "provision" / "psg_gt.json")
    objects, predicates = VOCAB.object_classes, VOCAB.predicate_classes  # an open-vocabulary split of the world
    (folder / "split.yaml").write_text(
        f"name: fuzz\nnovel_objects: [{objects[0]}, {objects[2]}, 4]\nnovel_predicates: [{predicates[1]}]\n"
        f"base_objects: [{objects[1]}]\n"
    )
    write_vg150_fixture(_mkdir(folder / "vg"))
    shutil.copytree(ROOT / "conf", folder / "conf", dirs_exist_ok=True)
    write_params(folder / "params.yaml", folder / "conf", ["dataset.sim.scale=tiny"])
    psg = write_psg_fixture(_mkdir(folder / "psg"), seed=1, test=6, other=2, absent=1)  # image 1002: evaluated
    with zipfile.ZipFile(psg["zip"]) as zf:
        zf.extractall(folder / "psg" / "folder")  # the same submission as a folder
    write_both(psg, folder / "psg")  # and as OpenPSG's --submit folder (psg/submission)
    write_r1sgg_gathered(folder / "r1")
    write_gqa(folder / "gqa", n_train=30, n_val=20)
    write_gqa200(folder / "gqa200", n_train=20, n_test=20)
    write_oiv6_seeds(folder / "oiv6")
    write_ag_seeds(folder / "ag")
    write_sgg_benchmark_seeds(folder)
    return folder


def write_ag_seeds(folder: Path) -> None:
    """Action Genome's release for 8 videos, its split stores, and a SIMULATED model's PredCls predictions for the
    test videos as a folder of .npz files and as one torch file."""
    from torch_writer import save_zip as save_torch

    from sgg_eval.video.ag_example import predictions_for
    from sgg_eval.video.ag_store import read_ag_store

    release_with_splits(folder, 8, seed=11)
    split, _, _ = read_ag_store(folder / "splits" / "test.h5")
    preds = predictions_for(split, "predcls", seed=2, skill=0.3)  # not perfect: a changed score shows
    _mkdir(folder / "preds")
    for video, arrays in preds.items():
        np.savez(folder / "preds" / f"{video}.npz", **arrays)
    save_torch(preds, folder / "preds.pt")


def write_sgg_benchmark_seeds(folder: Path) -> None:
    """SGG-Benchmark's COCO-style train and test files, their split stores and statistics, and its evaluator's
    SGDet predictions.pth with caption triplets (InformativeRecall) for the test images."""
    from sgg_eval.cli import main
    from sgg_eval.data.store import SplitStore

    write_coco_sgg(folder / "coco", seed=4)
    out = folder / "sggbench"
    assert main(["split", "--coco-sgg", str(folder / "coco"), "--draw-seed", "3", "--splits", "train,test",
                 "-o", str(out)]) == 0  # fmt: skip
    assert main(["stats", str(out / "train.h5"), "--test", str(out / "test.h5"), "-o", str(out / "stats.h5")]) == 0
    with SplitStore(out / "test.h5") as store:
        gts, vocab = list(store), store.vocab
    entries = write_sggbench_predictions(out / "predictions.pth", gts, "sgdet", vocab, seed=5)
    from test_sgg_benchmark import captions_for

    (out / "captions.json").write_text(json.dumps(captions_for(np.random.default_rng(6), gts, entries, vocab)))


def write_r1sgg_gathered(folder: Path) -> None:
    """R1-SGG's gathered file of the answers in ``folder`` (as its sgg_gather_preds.py writes it)."""
    from test_r1sgg import _gathered

    from sgg_eval.text.r1sgg.answers import read_r1sgg_folder
    from sgg_eval.text.r1sgg.names import R1Names
    from sgg_eval.text.r1sgg.rows import read_r1sgg_rows

    rows, vocab, dataset = read_r1sgg_rows(folder / "rows.jsonl")
    parsed, _ = read_r1sgg_folder(folder / "answers", {r.image_id: (r.width, r.height) for r in rows})
    names = R1Names(dataset, vocab)
    answers = {i: (names.map(a) if a.failure is None else None) for i, a in parsed.items()}
    (folder / "gathered.json").write_text(json.dumps(_gathered(rows, answers, dataset == "psg")))


def write_oiv6_seeds(folder: Path) -> None:
    """Open Images V6's files (12 test images, some dropped), PySGG's predictions and the test split store."""
    from sgg_eval.boxes.splits import build_splits, open_dataset

    ann = write_oiv6(folder, n_train=8, n_val=4, n_test=12)
    write_oiv6_predictions(ann, folder / "eval_results.pytorch", "sgdet")
    build_splits(open_dataset({"kind": "oiv6", "name": "oiv6", "raw": str(folder)}), {"test": folder / "test.h5"})


def text_answers(gts) -> str:
    """Text scene graphs of the world's GT images (JSONL, issue 48): every other image answered with its GT."""
    lines = []
    for gt in gts[::2]:
        objects = [{"name": VOCAB.object_classes[c - 1], "box": b.tolist()} for c, b in zip(gt.labels, gt.boxes)]
        relations = [[int(s), VOCAB.predicate_classes[p - 1], int(o)] for s, o, p in gt.rels]
        lines.append(json.dumps({"image_id": gt.image_id, "objects": objects, "relations": relations}))
    return "\n".join(lines) + "\n"


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
