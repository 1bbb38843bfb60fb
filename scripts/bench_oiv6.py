"""`make bench` (Open Images V6 part): `sgg-eval evaluate --protocol oiv6` against PySGG's own OI evaluation and
the read floor, whole processes, on an OIv6-test-sized fixture, in the same run.

The fixture (``tests/oiv6_fixture.py``, written once to ``--cache``): 5,322 test images (OIv6's test split, none
dropped) in PySGG's annotation layout and a PySGG ``eval_results.pytorch`` for SGDet with ``--detections`` (20)
boxes and every ordered pair (380) per image, 31 score columns each (~0.25 GB). Rows:

- floor: parse the file with sgg-eval's reader and touch every image's scores once (the least any evaluator of
  this file must do);
- ours:  `sgg-eval evaluate FILE --gt test.h5 --task sgdet --protocol oiv6 --jobs N -o OUT`, N = 1 and 2;
- PySGG: with ``--pysgg DIR`` (a checkout of SHTUPLUS/PySGG) and ``--pysgg-python PY`` (a Python with torch and
  PySGG's requirements, never this project's), ``scripts/pysgg_oi_eval.py`` in that Python: ``torch.load`` of the
  file and PySGG's ``oi_evaluation`` on it (its classic and OI evaluators), timed the same way; and whether every
  value it prints equals ours within 1e-12 (ties: PySGG's argsort made stable, ``docs/oiv6.md``).

It prints seconds (best of ``--repeat``; PySGG once), PySGG ÷ ours, ours ÷ floor, the peak heap (anonymous
memory of the process tree, sampled every 10 ms) of ours at 1,000 images and at all of them, and how much of the
latter the OIv6 protocol adds (the same run under ``--protocol reference`` subtracted: the rest is the file's
parse, as for any eval_results). No timing is asserted.

    make bench                                   # VG150 and PSG rows, then these
    python scripts/bench_oiv6.py --pysgg ~/PySGG --pysgg-python ~/pysgg-env/bin/python
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
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

from bench import Run, _cli  # noqa: E402
from oiv6_fixture import write_eval_results, write_oiv6  # noqa: E402

# bench.py's floor with the split's vocabulary (an OIv6 file has 30 predicates, not VG150's 50)
FLOOR = """
import sys
from sgg_eval.data.store import SplitStore
from sgg_eval.formats.eval_results import EvalResults
with SplitStore(sys.argv[2]) as split:
    vocab = split.vocab
n = 0
for gt, pred in EvalResults(sys.argv[1], vocab).pairs():
    n += pred.rel_scores.shape[0] > 0 and float(pred.rel_scores.max()) >= 0
"""


def fixture(folder: Path, test: int, detections: int) -> dict[str, Path]:
    files = {
        "ann": folder / "annotations",
        "pred": folder / "eval_results_sgdet.pytorch",
        "split": folder / "splits" / "test.h5",
        "first": folder / "first" / "eval_results_sgdet.pytorch",
        "first_split": folder / "first" / "splits" / "test.h5",
    }
    if not files["split"].exists():
        t0 = time.perf_counter()
        print(f"writing the fixture to {folder} ...", flush=True)
        for root, n in ((folder, test), (folder / "first", min(test, 1000))):  # all images, and the first 1,000
            write_oiv6(root, n_train=50, n_val=10, n_test=n, drop=False)
            write_eval_results(
                root / "annotations", root / "eval_results_sgdet.pytorch", "sgdet", detections=detections
            )
            subprocess.run([*_cli(), "split", "--oiv6-dir", str(root), "--splits", "test", "-o", str(root / "splits")],
                           check=True, capture_output=True)  # fmt: skip
        print(f"  {time.perf_counter() - t0:.0f} s", flush=True)
    return files


def ours(pred: Path, split: Path, jobs: int, out: Path, protocol: str = "oiv6") -> list[str]:
    return [*_cli(), "evaluate", str(pred), "--gt", str(split), "--task", "sgdet", "--protocol", protocol,
            "--jobs", str(jobs), "-o", str(out)]  # fmt: skip


def best(cmd: list[str], repeat: int, sample: bool = False) -> Run:
    runs = [Run(cmd, sample=sample) for _ in range(max(1, repeat))]
    return min(runs, key=lambda r: r.seconds)


def same_values(printed: dict, doc: dict) -> str:
    """Whether every value PySGG printed (its metrics and per-predicate APs) equals ours within 1e-12, and the
    largest difference."""
    diffs = [abs(doc["metrics"][name] - value) for name, value in printed["metrics"].items()]
    for kind in ("AP_rel", "AP_phr"):
        diffs += [abs(doc["per_predicate"][kind][name] - value) for name, value in printed[kind].items()]
    worst = max(diffs)
    return f"{'yes' if worst <= 1e-12 else 'NO'} ({worst:.1g})"


def fixture_args(doc: str, test: int, test_help: str) -> argparse.ArgumentParser:
    """The options of a bench on a generated SGDet fixture (this one, ``bench_openvocab.py``): its size, where it
    is kept, the repeats and the process counts."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--test", type=int, default=test, help=test_help)
    ap.add_argument("--detections", type=int, default=20, help="SGDet boxes per image (default: %(default)s)")
    ap.add_argument("--cache", default=str(ROOT / "data" / "bench"), help="where the fixture is kept")
    ap.add_argument("--repeat", type=int, default=2, help="runs of ours and the floor, best kept")
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="process counts (default: 1 2)")
    return ap


def main() -> None:
    ap = fixture_args(__doc__, 5322, "test images (default: OIv6's %(default)s)")
    ap.add_argument("--pysgg", help="a checkout of SHTUPLUS/PySGG (its pysgg/ folder), to time its evaluator")
    ap.add_argument("--pysgg-python", help="a Python with torch and PySGG's requirements (never this project's)")
    args = ap.parse_args()
    folder = Path(args.cache) / f"oiv6_{args.test}_{args.detections}"
    files = fixture(folder, args.test, args.detections)
    size = os.path.getsize(files["pred"]) / 2**20
    print(
        f"OIv6 fixture: {args.test} test images, {args.detections} detections and "
        f"{args.detections * (args.detections - 1)} pairs each, eval_results {size:.0f} MB; machine: "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}"
    )
    floor = best([sys.executable, "-c", FLOOR, str(files["pred"]), str(files["split"])], args.repeat)
    theirs = printed = None
    if args.pysgg and args.pysgg_python:
        out = folder / "pysgg.json"
        cmd = [args.pysgg_python, str(ROOT / "scripts" / "pysgg_oi_eval.py"), args.pysgg, str(files["ann"]),
               str(files["pred"]), "sgdet", str(out)]  # fmt: skip
        theirs = Run(cmd, sample=True)
        printed = json.loads(out.read_text())
        print(f"PySGG: {theirs.seconds:.1f} s whole process ({printed['seconds']:.1f} s in its script), peak heap "
              f"{theirs.heap_mb:.0f} MB")  # fmt: skip
    else:
        print("(no --pysgg/--pysgg-python: PySGG's columns are skipped)")
    print(f"{'procs':>5} {'PySGG s':>8} {'ours s':>7} {'floor s':>7} {'PySGG/ours':>10} {'ours/floor':>10} "
          f"{'heap MB 1k':>10} {'heap MB all':>11} {'of which OI':>11} {'same values':>15}")  # fmt: skip
    for jobs in args.jobs:
        metrics = folder / f"ours_{jobs}.json"
        run = best(ours(files["pred"], files["split"], jobs, metrics), args.repeat, sample=True)
        small = best(ours(files["first"], files["first_split"], jobs, folder / "ours_first.json"), 1, sample=True)
        # the same run under the reference protocol: what the OIv6 records add to the heap is the difference
        plain = best(ours(files["pred"], files["split"], jobs, folder / "ref.json", "reference"), 1, sample=True)
        doc = json.loads(metrics.read_text())
        same = same_values(printed, doc) if printed else "-"
        ratio = f"{theirs.seconds / run.seconds:.1f}x" if theirs else "-"
        print(
            f"{jobs:>5} {theirs.seconds if theirs else float('nan'):>8.1f} {run.seconds:>7.2f} {floor.seconds:>7.2f} "
            f"{ratio:>10} {run.seconds / floor.seconds:>9.2f}x {small.heap_mb:>10.0f} {run.heap_mb:>11.0f} "
            f"{run.heap_mb - plain.heap_mb:>+11.0f} {same:>15}",
            flush=True,
        )


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"bench_oiv6: {time.perf_counter() - t0:.0f} s")
