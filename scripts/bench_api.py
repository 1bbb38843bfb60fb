"""What the Python API costs (docs/api.md), beside the command on the same images, in one run.

The images are `make bench`'s (scripts/bench.py: VG150's vocabulary, 12 objects and 6 relations an image;
PredCls and SGCls score every ordered pair, 132; SGDet 80 detections and 6,320 pairs). For each task:

- command: `run_evaluation` on the images written as an `eval_results.pytorch` (`--jobs 1`, in this process:
  what `sgg-eval evaluate` does after its start-up);
- add:     `Evaluator.add` of the same images as dicts of numpy arrays, 8 a call (a validation batch);
- compute: `Evaluator.compute()` once they are all added.

It prints seconds (best of `--repeat`) and the API's cost per image. No timing is asserted anywhere.

    .venv/bin/python scripts/bench_api.py                  # 5,000 PredCls, 3,000 SGCls, 1,000 SGDet images
    .venv/bin/python scripts/bench_api.py --images 200     # a quick look
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

from bench import _case  # noqa: E402 (make bench's images)
from torch_writer import eval_results_object, save_zip  # noqa: E402

from sgg_eval import Evaluator  # noqa: E402
from sgg_eval.boxes.evaluate import run_evaluation  # noqa: E402
from sgg_eval.data.vg150_facts import vg150_vocabulary  # noqa: E402


def _dicts(gt, pred) -> tuple[dict, dict]:
    return (
        {"boxes": gt.boxes, "labels": gt.labels, "relations": gt.rels},
        {
            "boxes": pred.boxes,
            "labels": pred.labels,
            "scores": pred.obj_scores,
            "rel_pairs": pred.pairs,
            "rel_scores": pred.rel_scores,
        },
    )


def _best(f, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=5000, help="PredCls images (SGCls 3/5 of them, SGDet 1/5)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs, best kept (default: %(default)s)")
    args = ap.parse_args()
    vocab = vg150_vocabulary()
    sizes = {"predcls": args.images, "sgcls": args.images * 3 // 5, "sgdet": max(1, args.images // 5)}
    print(f"machine: {len(os.sched_getaffinity(0))} cores, load {os.getloadavg()[0]:.2f}")
    print(f"{'task':7s} {'images':>7s} {'command s':>10s} {'add s':>8s} {'compute s':>10s} {'add ms/image':>13s}")
    with tempfile.TemporaryDirectory() as tmp:
        for task, n in sizes.items():
            rng = np.random.default_rng(0)
            cases = [_case(rng, i, task, vocab) for i in range(n)]
            path = Path(tmp) / f"{task}.pytorch"
            save_zip(eval_results_object(cases), path)
            items = [_dicts(g, p) for g, p in cases]
            command, doc = _best(lambda: run_evaluation(str(path), task, jobs=1), args.repeat)

            def fed():
                ev = Evaluator(task)
                for lo in range(0, len(items), 8):
                    ev.add([g for g, _ in items[lo : lo + 8]], [p for _, p in items[lo : lo + 8]])
                return ev

            add, ev = _best(fed, args.repeat)
            compute, metrics = _best(ev.compute, args.repeat)
            same = all(metrics[k] == v for k, v in doc["metrics"].items())
            print(
                f"{task:7s} {n:7d} {command:10.3f} {add:8.3f} {compute:10.3f} {1000 * add / n:13.3f}"
                f"{'' if same else '  (metrics differ!)'}"
            )


if __name__ == "__main__":
    main()
