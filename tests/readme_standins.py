"""Stand-ins for the files the README's commands name as the user's own (`path/to/eval_results.pytorch`,
`preds.json`, `/ckpt/...`, `submission.zip`, ...), written where the commands expect them, so
tests/test_readme.py can run each command exactly as the README prints it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
from psg_fixture import write_psg_fixture
from test_formats import _sgbench_doc  # SGBench JSON of (GT, prediction) cases
from test_openpsg_submit import write_both
from test_psg_pack import unpack
from torch_writer import eval_results_object, save_legacy, save_zip
from vg150_fixture import write_vg150_fixture

from sgg_eval.boxes.splits import build_splits
from sgg_eval.data.store import SplitStore
from sgg_eval.data.types import GTImage, PredImage
from sgg_eval.simulate.world import SimParams, SimulatedWorld


def model_output(gt: GTImage, rng: np.random.Generator, columns: int = 51) -> PredImage:
    """A model's output for one image: the GT objects, every ordered pair, random probabilities over
    ``columns`` (background and the predicates)."""
    n = len(gt.labels)
    pairs = np.array([(a, b) for a in range(n) for b in range(n) if a != b], dtype=np.int64).reshape(-1, 2)
    probs = rng.random((len(pairs), columns)).astype(np.float32)
    probs /= probs.sum(axis=1, keepdims=True)
    return PredImage(gt.image_id, gt.boxes, gt.labels, np.ones(n), pairs, probs)


def split_cases(split: Path, seed: int = 0) -> list[tuple[GTImage, PredImage]]:
    rng = np.random.default_rng(seed)
    with SplitStore(split) as store:
        return [(gt, model_output(gt, rng)) for gt in store]


def command_line_files(project: Path) -> None:
    """A Scene-Graph-Benchmark.pytorch output (`path/to/eval_results.pytorch`, and `eval_results.pytorch` with
    `test.h5` beside it), an SGBench JSON (`preds.json`) and a real split's store (`data/vg150/splits/test.h5`),
    all over the tiny simulated test split (the README's `sgg-eval split --simulated` writes the default one,
    whose 2,000 test images made the commands after it, `simulate` and `blind-replace` among them, take 26 s
    more of a test run alone, 38 s against 12 s, and show nothing more)."""
    split = project / "standins/test.h5"
    split.parent.mkdir()
    build_splits(SimulatedWorld(SimParams(scale="tiny")), {"test": str(split)})
    cases = split_cases(split)
    (project / "path/to").mkdir(parents=True)
    save_zip(eval_results_object(cases), project / "path/to/eval_results.pytorch")
    shutil.copy(project / "path/to/eval_results.pytorch", project / "eval_results.pytorch")
    shutil.copy(split, project / "test.h5")
    (project / "data/vg150/splits").mkdir(parents=True)
    shutil.copy(split, project / "data/vg150/splits/test.h5")
    (project / "preds.json").write_text(json.dumps(_sgbench_doc(cases)))


def real_vg150(project: Path, model_yaml: str, ckpt: Path) -> None:
    """The README's real-VG150 setup: the three VG150 files in `data/raw/vg150/` (a small fixture of 3
    predicates, so `conf/` sets no validation carve-out and Table 1 up to 2 replaced predicates) and the
    README's `conf/model/motifs.yaml` with its `/ckpt/` files written under ``ckpt``."""
    raw = write_vg150_fixture(project / "data/raw/vg150")
    for rel, old, new in (
        ("conf/dataset/vg150.yaml", "num_val_im: 5000", "num_val_im: 0"),
        ("conf/pko/default.yaml", "blind_max_n: 6", "blind_max_n: 2"),
    ):  # 3 predicates
        conf = project / rel
        assert old in conf.read_text(), rel
        conf.write_text(conf.read_text().replace(old, new))
    from sgg_eval.data.vg150 import VG150Files, read_vg150_split

    _, _, images = read_vg150_split(VG150Files.in_dir(str(raw)), "test", num_val_im=0)
    images = list(images)
    rng = np.random.default_rng(1)
    model_yaml = model_yaml.replace("/ckpt/", f"{ckpt}/")
    for _task, file in re.findall(r"^\s+(predcls|sgcls|sgdet): (\S+)$", model_yaml, re.M):
        Path(file).parent.mkdir(parents=True)
        cases = [(gt, model_output(gt, rng, columns=4)) for gt in images]  # the fixture's 3 predicates
        save_legacy(eval_results_object(cases), file)
    (project / "conf/model/motifs.yaml").write_text(model_yaml)


def panoptic_files(folder: Path) -> None:
    """PSG: `psg.json`, `coco/`, `submission.zip`, `triplets.json` (its JSON alone), OpenPSG's `submission/`
    folder in `openpsg/` and the unpacked `preds.json` + `masks/` in `pack/` (each command's own folder)."""
    files = write_psg_fixture(folder, seed=3, test=12, other=4)
    shutil.copy(files["json"], folder / "triplets.json")
    write_both(files, folder / "openpsg")
    for name in ("psg.json", "coco"):
        (folder / "openpsg" / name).symlink_to(folder / name)
    unpack(files, folder / "pack")


def real_psg(project: Path, model_yaml: str, elsewhere: Path) -> Path:
    """The README's real-PSG setup: ``psg.json`` and ``coco/`` in `data/raw/psg/` (the generated PSG-like
    fixture as if it were PSG) and the README's `conf/model/my_psg.yaml`, its submission written under
    ``elsewhere`` (for `/path/to/`); returns the submission."""
    files = write_psg_fixture(project / "data/raw/psg", seed=4, test=12, other=6, min_false=1)
    model_yaml = model_yaml.replace("/path/to/", f"{elsewhere}/")
    (submission,) = re.findall(r"files: \{psg: (\S+)\}", model_yaml)
    Path(submission).parent.mkdir(parents=True, exist_ok=True)
    shutil.move(files["zip"], submission)
    (project / "conf/model/my_psg.yaml").write_text(model_yaml)
    return Path(submission)
