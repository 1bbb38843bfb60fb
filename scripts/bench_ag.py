"""`make bench` (Action Genome part): `sgg-eval evaluate --ag` under the three constraints against STTran's own
evaluation (its loader and its three evaluators, as its test.py runs them minus the model), whole processes, on a
generated input the size of AG's test split in SGDet, in the same run.

The fixture (``video/ag_example.py``, written once to ``--cache``): ``--videos`` videos of 25 to 52 frames
(about 1,737 videos and 54,000 frames, AG's test split), every video in the test split, 1 to 4 objects a frame,
the small-box file, and a SIMULATED SGDet model's per-video ``.npz`` predictions (the GT boxes jittered, 0 to 2
extra detections, a pair per person-object box). Rows:

- ours: `sgg-eval split --ag-dir` (the pickles to a store, once for every model, task and constraint, as the
  split store of every other dataset), then `sgg-eval evaluate --ag ... --constraint all` (the three, as STTran's
  test.py computes them in one run), each a whole process; and each constraint alone;
- theirs: with ``--python PY`` (a Python with torch and h5py, never this project's) and ``--sttran DIR`` (a
  checkout of yrcong/STTran with ``lib/fpn/box_intersections_cpu`` built), ``scripts/sttran_eval.py`` in that
  Python: its loader reading the pickles, then every video through its three evaluators; and whether each R@K
  equals ours within 1e-12.

It prints seconds (theirs once; ours best of ``--repeat``), our peak heap, and theirs ÷ ours against the evaluation
alone and with the split. No timing is asserted.

    make bench AG_ARGS="--python ~/sttran-env/bin/python --sttran ~/STTran"
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from bench import Run, _cli  # noqa: E402
from bench_oiv6 import best  # noqa: E402

CONSTRAINTS = ("with", "semi", "no", "all")
FRAMES = (25, 53)  # frames a video has before STTran's loader drops some: about AG's 31 per test video


def fixture(folder: Path, videos: int) -> Path:
    """Write the release and the predictions once (in a child: the generator is the project's library)."""
    if (folder / "preds_sgdet").exists() and (folder / "AG").exists():
        return folder
    t0 = time.perf_counter()
    print(f"writing the fixture to {folder} ...", flush=True)
    code = f"""
import os, numpy as np
from sgg_eval.video.ag_example import write_release, predictions_for
from sgg_eval.video.ag_names import read_vocabulary
from sgg_eval.video.ag_annotations import read_ag_split
root = {str(folder)!r}
paths = write_release(os.path.join(root, "AG"), {videos}, seed=1, frames={FRAMES}, test_share=1.0)
split = read_ag_split(os.path.join(root, "AG", "annotations"), read_vocabulary(os.path.join(root, "AG", "annotations")),
                      "test", paths["filtersmall"])
out = os.path.join(root, "preds_sgdet.tmp")
os.makedirs(out, exist_ok=True)
for video, arrays in predictions_for(split, "sgdet", seed=2).items():
    np.savez(os.path.join(out, video + ".npz"), **arrays)
os.rename(out, os.path.join(root, "preds_sgdet"))
"""
    subprocess.run([sys.executable, "-c", code], check=True)
    print(f"  {time.perf_counter() - t0:.0f} s", flush=True)
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--videos", type=int, default=1737, help="videos of the fixture (default: AG test's %(default)s)")
    ap.add_argument("--cache", default=str(ROOT / "data" / "bench"), help="where the fixture is kept")
    ap.add_argument("--repeat", type=int, default=2, help="runs of ours, best kept")
    ap.add_argument("--python", help="a Python with torch and h5py, never this project's")
    ap.add_argument("--sttran", help="a checkout of yrcong/STTran, lib/fpn/box_intersections_cpu built")
    args = ap.parse_args()
    folder = fixture(Path(args.cache) / f"ag_{args.videos}", args.videos)
    ag, small, preds = (
        folder / "AG",
        folder / "AG" / "object_bbox_and_relationship_filtersmall.pkl",
        folder / "preds_sgdet",
    )
    split = best([*_cli(), "split", "--ag-dir", str(ag), "--ag-small-boxes", str(small), "--splits", "test",
                  "-o", str(folder / "splits")], args.repeat)  # fmt: skip
    store = folder / "splits" / "test_filtersmall.h5"
    runs = {c: best([*_cli(), "evaluate", str(preds), "--ag", str(store), "--task", "sgdet", "--constraint", c,
                     "-o", str(folder / f"ours_{c}.json")], args.repeat, sample=True) for c in CONSTRAINTS}  # fmt: skip
    frames = json.loads((folder / "ours_with.json").read_text())["counts"]
    print(f"Action Genome fixture: {frames['videos']} videos, {frames['frames']} scored frames, "
          f"{frames['relations']} GT relations, SGDet; machine: {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    theirs = None
    if args.python and args.sttran:
        out = folder / "theirs.json"
        run = Run([args.python, str(ROOT / "scripts" / "sttran_eval.py"), args.sttran, str(ag), str(small), "sgdet",
                   str(preds), str(out)])  # fmt: skip
        theirs = (run, json.loads(out.read_text()))
    print(f"{'step':>24} {'ours s':>7} {'heap MB':>8} {'theirs s':>9} {'same R@K':>14}")
    print(f"{'split (pickles → store)':>24} {split.seconds:>7.2f} {'':>8} {'':>9}")
    for c in CONSTRAINTS:
        same = "-"
        if theirs:
            results = json.loads((folder / f"ours_{c}.json").read_text())["results"]
            worst = max(abs(r["metrics"][k] - v) for name, r in results.items() for k, v in theirs[1][name].items())
            same = f"{'yes' if worst <= 1e-12 else 'NO'} ({worst:.1g})"
        print(f"{'evaluate --constraint ' + c:>24} {runs[c].seconds:>7.2f} {runs[c].heap_mb:>8.0f} {'':>9} {same:>14}")
    total = split.seconds + runs["all"].seconds
    print(f"{'split + evaluate all':>24} {total:>7.2f}")
    if theirs:
        seconds, t = theirs[1]["seconds"], theirs[0].seconds
        print(f"STTran, whole process: {t:.1f} s (its loader {seconds['loader']:.1f} s, its three evaluators "
              f"{seconds['evaluation']:.1f} s); theirs/ours: {t / runs['all'].seconds:.1f}x against evaluate "
              f"--constraint all, {t / total:.1f}x with the split too")  # fmt: skip
    if not theirs:
        print("(no --python and --sttran: STTran's column is skipped)")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"bench_ag: {time.perf_counter() - t0:.0f} s")
