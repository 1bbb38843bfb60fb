"""``sgg-eval s2g`` (issue 50): the command end to end on the reference-layout case (``tests/s2g_fixture.inputs``), its
refusals (one line, exit 2), and sgg-eval without torch: the command says how to install it, and no other module
needs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from s2g_fixture import inputs

SRC = Path(__file__).resolve().parents[1] / "src"
NO_TORCH = "import sys; sys.modules['torch'] = None\n"  # `import torch` raises, find_spec finds nothing


def _cli(args: list[str], prelude: str = "") -> subprocess.CompletedProcess:
    code = prelude + "import sys\nfrom sgg_eval.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    from s2g_fixture import OBJECTS, PREDICATES

    from sgg_eval.data.store import write_split
    from sgg_eval.data.types import SplitMeta, Vocabulary

    folder = tmp_path_factory.mktemp("s2g_cli")
    cases = inputs(folder, n=60)
    (folder / "splits").mkdir()
    for split in ("train", "val", "test"):  # one file as all three: its 5 predicates are not VG150's
        meta = SplitMeta(split, Vocabulary(OBJECTS, PREDICATES), "unit", True, "unit")
        write_split(folder / "splits" / f"{split}.h5", meta, [g for g, _ in cases])
    results = str(folder / "eval_results.pytorch")
    return folder, ["--train", results, "--val", results, "--test", results, "--splits", str(folder / "splits"),
                    "--captions", str(folder / "vg_capgraphs_anno.json")]  # fmt: skip


def test_without_torch_the_command_says_how_to_install_it(case, tmp_path):
    folder, args = case
    out = _cli(["s2g", *args, "-o", str(tmp_path / "s2g.json")], NO_TORCH)
    assert out.returncode == 2, out.stderr
    assert out.stdout == "" and len(out.stderr.strip().splitlines()) == 1
    assert "pip install 'sgg-eval[s2g]'" in out.stderr
    assert not (tmp_path / "s2g.json").exists()


def test_every_other_module_imports_without_torch(tmp_path):
    """Only the retrieval model and its training import torch, and the torchmetrics adapter: the rest of
    sgg-eval works without the extras."""
    code = NO_TORCH + (
        # the service's modules need Django's settings (its folder: a temporary one)
        f"import os, django; os.environ['SGG_EVAL_SERVICE_HOME'] = {str(tmp_path)!r}\n"
        "os.environ['DJANGO_SETTINGS_MODULE'] = 'sgg_eval.service.settings'; django.setup()\n"
        "import importlib, pkgutil, sgg_eval\n"
        "skip = {'sgg_eval.retrieval.model', 'sgg_eval.retrieval.training', 'sgg_eval.api.metric'}\n"
        "names = [m.name for m in pkgutil.walk_packages(sgg_eval.__path__, 'sgg_eval.')\n"
        "         if m.name not in skip and not m.name.endswith('__main__')]\n"
        "[importlib.import_module(n) for n in names]\n"
        "print(len(names))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) > 100


@pytest.mark.integration
def test_the_command_trains_ranks_and_writes_the_document(case, tmp_path):
    pytest.importorskip("torch", reason="the S2G extra; make test installs it")
    folder, args = case
    out = _cli(["s2g", *args, "-o", str(tmp_path / "s2g.json"), "--epochs", "2", "--seed", "3"])
    assert out.returncode == 0, out.stderr
    assert [line.split(",")[0] for line in out.stderr.splitlines()] == ["s2g: epoch 1/2", "s2g: epoch 2/2"]
    doc = json.loads((tmp_path / "s2g.json").read_text())
    (size,) = doc["galleries"]  # 60 images: one gallery, the whole test block
    assert int(size) == doc["galleries"][size]["images"] == doc["images"]["test_block"] > 10
    assert set(doc["galleries_not_reported"]) == {"1000", "5000"}
    assert doc["training"]["epochs"] == 2 and doc["training"]["seed"] == 3 and len(doc["history"]) == 2
    assert out.stdout.splitlines()[0].startswith(
        f"the whole test block ({size} usable images), image_to_caption: R@1=0.00 "
    )
    assert "gallery of 1,000 not reported" in out.stdout


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (["--device", "nope"], "field '--device': torch cannot use device 'nope'"),
        (["--splits", "/nonexistent"], "no such split store"),
        (["--epochs", "0"], "argument --epochs: 0 is outside [1, 1000]"),
    ],
)
def test_bad_options_are_refused_in_one_line(case, tmp_path, change, says):
    pytest.importorskip("torch", reason="the S2G extra; make test installs it")
    folder, args = case
    out = _cli(["s2g", *args, "-o", str(tmp_path / "s2g.json"), *change])
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert says in out.stderr and not (tmp_path / "s2g.json").exists()


def test_captions_of_other_images_are_refused_naming_the_counts(case, tmp_path):
    pytest.importorskip("torch", reason="the S2G extra; make test installs it")
    folder, args = case
    doc = json.loads((folder / "vg_capgraphs_anno.json").read_text())
    doc["vg_image_ids"] = [i + 10_000 for i in doc["vg_image_ids"]]
    other = tmp_path / "other_caps.json"
    other.write_text(json.dumps(doc))
    changed = args[:-1] + [str(other)]
    out = _cli(["s2g", *changed, "-o", str(tmp_path / "s2g.json")])
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "none of its 60 images has caption graphs in the caption file" in out.stderr
