"""`make bench` (open-vocabulary part): `sgg-eval evaluate --protocol ovsgtr|vs3|pgsg` against each codebase's own
evaluator and the read floor, whole processes, on a 5,000-image SGDet file, in the same run.

The fixture (``tests/openvocab_fixture.py``, written once to ``--cache``): VG150 files with ``--test`` (5,000)
test images in ``split_GLIPunseen`` (a few GLIP saw are left out by the key) and a Scene-Graph-Benchmark
``eval_results.pytorch`` with ``--detections`` (20) boxes and every ordered pair (380) per image, 51 score
columns; for PGSG, the same images after 5,000 tiny ones (its loader drops the first 5,000), under the key
``split``. Rows, per protocol:

- floor: parse the file with sgg-eval's reader and touch every image's scores once;
- ours:  `sgg-eval evaluate FILE --gt test.h5 --task sgdet --protocol P --jobs N -o OUT`, N = 1 and 2;
- theirs: with ``--python PY`` (a Python with torch, never this project's) and the checkouts ``--ovsgtr``,
  ``--vs3``, ``--pgsg``, ``scripts/{ovsgtr,vs3,pgsg}_eval.py`` in that Python (the codebase's own loader and
  evaluator on the same images), timed the same way; and whether every value it prints equals ours within 1e-12.

It prints seconds (best of ``--repeat``; theirs once), theirs ÷ ours, ours ÷ floor, the peak heap (anonymous
memory of the process tree, sampled every 10 ms) of ours at 1,000 images and at all of them, and how much of the
latter the protocol adds (the same run under ``--protocol reference`` subtracted). No timing is asserted.

    make bench OPENVOCAB_ARGS="--python ~/ov-env/bin/python --ovsgtr ~/OvSGTR --vs3 ~/VS3_CVPR23 --pgsg ~/Pix2Grp"
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

from bench import Run, _cli  # noqa: E402
from bench_oiv6 import FLOOR, best, fixture_args  # noqa: E402
from openvocab_fixture import write_predictions, write_vg150  # noqa: E402

ZEROSHOT = ROOT / "src/sgg_eval/data/resources/zeroshot_triplet.pytorch"
SCRIPTS = {"ovsgtr": "ovsgtr_eval.py", "vs3": "vs3_eval.py", "pgsg": "pgsg_eval.py"}
FILLER = 5000  # PGSG drops the first 5,000 test images


def fixture(folder: Path, test: int, detections: int) -> dict[str, dict[str, Path]]:
    """Per kind (``glip``: the GLIP-unseen images; ``pgsg``: filler first; ``first``: the first 1,000), its VG150
    folder, predictions and split store."""
    # (pgsg's folder is pgsg_unclipped: its split is kept unclipped, as PGSG's loader reads it, since issue 64)
    kinds = {"glip": (test, 0, "split_GLIPunseen"), "pgsg": (test, FILLER, "split"),
             "first": (min(test, 1000), 0, "split_GLIPunseen")}  # fmt: skip
    files = {}
    for kind, (n, filler, key) in kinds.items():
        root = folder / ("pgsg_unclipped" if kind == "pgsg" else kind)  # a cache made before: not reused
        files[kind] = {"vg": root / "vg150", "pred": root / "eval_results_sgdet.pytorch",
                       "plain": root / "predictions.npz", "split": root / "splits" / "test.h5"}  # fmt: skip
        if files[kind]["split"].exists():
            continue
        t0 = time.perf_counter()
        print(f"writing the fixture to {root} ...", flush=True)
        write_vg150(files[kind]["vg"], n_test=n, filler=filler)
        write_predictions(files[kind]["vg"], files[kind]["pred"], split_key=key, detections=detections)
        cmd = [*_cli(), "split", "--vg150-dir", str(files[kind]["vg"]), "--split-key", key, "--splits", "test",
               "-o", str(root / "splits"), "--no-clip"]  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True)
        print(f"  {time.perf_counter() - t0:.0f} s", flush=True)
    return files


def ours(pred: Path, split: Path, protocol: str, jobs: int, out: Path) -> list[str]:
    return [*_cli(), "evaluate", str(pred), "--gt", str(split), "--task", "sgdet", "--protocol", protocol,
            "--zeroshot", "vg150", "--jobs", str(jobs), "-o", str(out)]  # fmt: skip


def theirs(args, protocol: str, files: dict[str, Path], out: Path) -> list[str] | None:
    source = getattr(args, protocol)
    if not (args.python and source):
        return None
    extra = ["ovd+r"] if protocol == "ovsgtr" else []
    return [args.python, str(ROOT / "scripts" / SCRIPTS[protocol]), source, str(files["vg"]), str(files["plain"]),
            *extra, str(ZEROSHOT), str(out)]  # fmt: skip


def same_values(printed: dict, doc: dict) -> str:
    every = {**doc["metrics"], **doc.get("beyond_protocol", {}).get("metrics", {})}
    diffs = [abs(every[k] - v) for k, v in printed["metrics"].items() if v is not None]
    counts = all(doc["counts"].get(k) == v for k, v in printed["counts"].items())
    worst = max(diffs)
    return f"{'yes' if worst <= 1e-12 and counts else 'NO'} ({worst:.1g})"


def main() -> None:
    ap = fixture_args(__doc__, 5000, "test images (default: %(default)s)")
    ap.add_argument("--protocols", nargs="+", default=list(SCRIPTS), choices=list(SCRIPTS))
    ap.add_argument("--python", help="a Python with torch (and h5py, pycocotools, tqdm, Pillow, tabulate, "
                    "matplotlib, scikit-learn), never this project's")  # fmt: skip
    for name, repo in (("ovsgtr", "gpt4vision/OvSGTR"), ("vs3", "zyong812/VS3_CVPR23"),
                       ("pgsg", "SHTUPLUS/Pix2Grp_CVPR2024")):  # fmt: skip
        ap.add_argument(f"--{name}", help=f"a checkout of {repo}")
    args = ap.parse_args()
    folder = Path(args.cache) / f"openvocab_{args.test}_{args.detections}"
    files = fixture(folder, args.test, args.detections)
    size = os.path.getsize(files["glip"]["pred"]) / 2**20
    print(
        f"open-vocabulary fixture: {args.test} test images, {args.detections} detections and "
        f"{args.detections * (args.detections - 1)} pairs each, eval_results {size:.0f} MB; machine: "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}"
    )
    head = ("protocol", 8), ("procs", 5), ("theirs s", 8), ("ours s", 7), ("floor s", 7), ("theirs/ours", 11)
    head += ("ours/floor", 10), ("heap MB 1k", 10), ("heap MB all", 11), ("of which P", 10), ("same values", 15)
    print(" ".join(f"{name:>{width}}" for name, width in head))
    for protocol in args.protocols:
        f = files["pgsg" if protocol == "pgsg" else "glip"]
        floor = best([sys.executable, "-c", FLOOR, str(f["pred"]), str(f["split"])], args.repeat)
        cmd = theirs(args, protocol, f, folder / f"{protocol}_theirs.json")
        run_theirs = Run(cmd, sample=True) if cmd else None
        printed = json.loads((folder / f"{protocol}_theirs.json").read_text()) if cmd else None
        for jobs in args.jobs:
            out = folder / f"{protocol}_ours_{jobs}.json"
            run = best(ours(f["pred"], f["split"], protocol, jobs, out), args.repeat, sample=True)
            first = files["first"]
            small = best(ours(first["pred"], first["split"], "vs3", jobs, folder / "first.json"), 1, sample=True)
            plain = best(ours(f["pred"], f["split"], "reference", jobs, folder / "ref.json"), 1, sample=True)
            same = same_values(printed, json.loads(out.read_text())) if printed else "-"
            t = run_theirs.seconds if run_theirs else float("nan")
            ratio = f"{t / run.seconds:.1f}x" if run_theirs else "-"
            print(
                f"{protocol:>8} {jobs:>5} {t:>8.1f} {run.seconds:>7.2f} {floor.seconds:>7.2f} {ratio:>11} "
                f"{run.seconds / floor.seconds:>9.2f}x {small.heap_mb:>10.0f} {run.heap_mb:>11.0f} "
                f"{run.heap_mb - plain.heap_mb:>+10.0f} {same:>15}",
                flush=True,
            )
    if not (args.python and any(getattr(args, p) for p in SCRIPTS)):
        print("(no --python and checkouts: the codebases' columns are skipped)")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"bench_openvocab: {time.perf_counter() - t0:.0f} s")
