"""The SIMULATED benchmarks a service offers when no benchmarks' file is given: those the pipeline builds, made
once in ``HOME/simulated`` on first start, with the pipeline's simulated methods pre-loaded on their approved
boards, each linked to the paper and code of the method it stands for.

- **VG150** PredCls, SGCls and SGDet (protocol ``reference``): the split store, statistics and model outputs
  made by the command itself (``sgg-eval split --simulated``, ``stats``, ``simulate``).
- **PSG** (protocol ``sgbench``, the SGBench paper's): the simulated panoptic world and its eight methods'
  SGBench submissions. Their settings are catalogue, ``conf/simulation/psg.yaml`` beside the package's source,
  and the method names ``conf/model/sim_psg_*.yaml``, as the pipeline reads them; a service installed without
  the repository has no such folder and offers VG150 alone.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sgg_eval.core.defaults import PROTOCOL, PSG_PROTOCOL, RECALL_KS
from sgg_eval.core.protocols import BY_NAME
from sgg_eval.core.tasks import TASKS
from sgg_eval.io.jsonio import load_yaml
from sgg_eval.metrics.names import metric_name
from sgg_eval.service.benchmarks import BenchmarkSpec, Preload

SGB = "https://github.com/KaihuaTang/Scene-Graph-Benchmark.pytorch"
OPENPSG = "https://github.com/Jingkang50/OpenPSG"
# VG150: (simulated backbone, method, the name on the board, paper); their code is SGB's
VG_METHODS = (
    ("sim_motifs", "baseline", "Motifs", "https://arxiv.org/abs/1711.06640"),
    ("sim_motifs", "tde", "Motifs + TDE", "https://arxiv.org/abs/2002.11949"),
    ("sim_vctree", "baseline", "VCTree", "https://arxiv.org/abs/1812.01880"),
    ("sim_vctree", "tde", "VCTree + TDE", "https://arxiv.org/abs/2002.11949"),
)
# PSG: the method of conf/simulation/psg.yaml -> (paper, code); the first six were trained in OpenPSG
PSG_LINKS = {
    "imp": ("https://arxiv.org/abs/1701.02426", OPENPSG),
    "motifs": ("https://arxiv.org/abs/1711.06640", OPENPSG),
    "gpsnet": ("https://arxiv.org/abs/2003.12962", OPENPSG),
    "vctree": ("https://arxiv.org/abs/1812.01880", OPENPSG),
    "psgtr": ("https://arxiv.org/abs/2207.11247", OPENPSG),
    "psgformer": ("https://arxiv.org/abs/2207.11247", OPENPSG),
    "pair_net": ("https://arxiv.org/abs/2307.08699", "https://github.com/king159/Pair-Net"),
    "hilo": ("https://arxiv.org/abs/2303.15994", "https://github.com/franciszzj/HiLo"),
}
# the PSG papers' columns: R@K and mR@K at each K of RECALL_KS
PSG_HEADLINE = tuple(metric_name(family, k) for family in ("R", "mR") for k in RECALL_KS)
CONF = Path(__file__).resolve().parents[3] / "conf"  # the repository's, for a checkout (src/sgg_eval/service/)
NOTE = "SIMULATED: the simulated {} benchmark sgg-eval's pipeline builds; its numbers say nothing about a real model."


def _command(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "sgg_eval.cli", *args], check=True, stdout=subprocess.DEVNULL)


def prepare_simulated(home: Path, scale: str = "default") -> list[BenchmarkSpec]:
    """Every simulated benchmark, made in ``home/simulated`` at ``scale`` (``tiny`` or ``default``) if not yet."""
    root = home / "simulated"
    return [*_vg150(root, scale), *_psg(root / "psg", scale)]


def _vg150(root: Path, scale: str) -> list[BenchmarkSpec]:
    splits, stats, outputs = root / "splits", root / "stats.h5", root / "outputs"
    done = root / ".done"
    if not done.exists():
        _command("split", "--simulated", "--scale", scale, "-o", str(splits))
        _command("stats", str(splits / "train.h5"), "--test", str(splits / "test.h5"), "-o", str(stats))
        for backbone in sorted({b for b, *_ in VG_METHODS}):
            for task in TASKS:
                gt = ["--gt", str(splits / "test.h5"), "--stats", str(stats)]
                _command("simulate", *gt, "--task", task, "--backbone", backbone, "-o", str(outputs))
        done.write_text(scale)
    return [
        BenchmarkSpec(
            name=f"vg150-sim-{task}",
            title=f"VG150 {task_title}",
            task=task,
            protocol=PROTOCOL,
            gt=str(splits / "test.h5"),
            stats=str(stats),
            simulated=True,
            description=NOTE.format("VG150-like"),
            preload=tuple(
                Preload(str(outputs / f"{backbone}_{method}_{task}.h5"), title, paper, SGB)
                for backbone, method, title, paper in VG_METHODS
            ),
        )
        for task, task_title in zip(TASKS, ("PredCls", "SGCls", "SGDet"))
    ]


def _psg(folder: Path, scale: str) -> list[BenchmarkSpec]:
    catalogue = CONF / "simulation/psg.yaml"
    if not catalogue.is_file():
        return []
    from sgg_eval.simulate.psg_models import PsgDetector, PsgMethod, write_psg_models
    from sgg_eval.simulate.psg_world import PsgWorld, write_psg_world

    sim = load_yaml(catalogue)
    models = [load_yaml(f) for f in sorted(CONF.glob("model/sim_psg_*.yaml"))]
    names = {model["sim_method"]: model["method"] for model in models}  # imp -> IMP, as the pipeline's tables
    files = {m: folder / "outputs" / f"sim_psg_{m}.zip" for m in PSG_LINKS}
    gt, stats = folder / "psg.json", folder / "stats.h5"
    done = folder / ".done"
    if not done.exists():
        world = PsgWorld(seed=0, scale=scale, **sim["world"])
        write_psg_world(world, folder)
        _command("stats", "--psg", str(gt), "-o", str(stats))
        (folder / "outputs").mkdir(exist_ok=True)
        detectors = {k: PsgDetector(**v) for k, v in sim["detectors"].items()}
        methods = {m: PsgMethod(**sim["methods"][m]) for m in files}
        write_psg_models(world, detectors, methods, files, seed=int(sim["seed"]))
        done.write_text(scale)
    return [
        BenchmarkSpec(
            name="psg-sim",
            title="PSG panoptic SGG",
            task=BY_NAME[PSG_PROTOCOL].tasks[0],
            protocol=PSG_PROTOCOL,
            gt=str(gt),
            gt_root=str(folder / "coco"),
            stats=str(stats),
            headline=PSG_HEADLINE,
            simulated=True,
            description=NOTE.format("PSG-like panoptic"),
            preload=tuple(Preload(str(files[m]), names[m], *links) for m, links in PSG_LINKS.items()),
        )
    ]
