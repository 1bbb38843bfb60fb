"""`make bench`: `sgg-eval evaluate` on real files, against the read floor of the same file, in the same run.

For each task it writes, with the test suite's torch-free writer, a VG150-shaped `eval_results.pytorch` in
both torch layouts (zip and legacy) plus the matching GT split store, then runs, each in a fresh process:

- floor: parse the file with sgg-eval's reader and touch every image's scores once (the least any
  evaluator of this file must do);
- ours:  `sgg-eval evaluate FILE --gt SPLIT --task T --jobs J` (the full metric suite).

Times are the best of ``--repeat`` runs (default 3; a shared machine only ever adds time). It prints
seconds, the ratio ours/floor, images/s, the peak heap (anonymous memory of the process and its
workers; the file's mapped pages are page cache, not heap) of each, our peak RSS, the checksums' own cost
within ours (every zip member's CRC-32 and the split store's seal; ``CHECKS``), and ours again with every
checksum switched off (``UNCHECKED``, alternating with ours): what the checks add to the evaluation, as the
median ratio of the pairs, in wall time and in CPU time (the legacy layout has no CRC-32s: its columns show
the noise). Shapes follow VG150's test split: 12 objects and every ordered pair per image (132 pairs) for
PredCls/SGCls; 80 detections (6,320 pairs) for SGDet. No timing is asserted anywhere.

    make bench                       # 2,000 PredCls/SGCls and 300 SGDet images
    make bench ARGS="--images 5000 --sgdet-images 1000 --jobs 1"
    make bench ARGS="--full-sgdet 26446"   # plus the VG test split's size in SGDet (~33 GB on disk)
    make bench ARGS="--reference ~/Scene-Graph-Benchmark.pytorch --reference-python ~/torch-env/bin/python"
    make bench ARGS="--images 0 --sgdet-images 300 --iou-threshold 0.7 --reference ..."  # both at IoU 0.7

With ``--reference`` (a clone of Scene-Graph-Benchmark.pytorch and a Python that has torch) each row also
times the reference evaluator on the same file (``scripts/reference_eval.py``: torch.load + its seven relation
metrics), prints reference ÷ ours, and checks that every metric both compute agrees (largest difference).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the torch-free writer of the test fixtures

from torch_writer import BoxList, Deferred, eval_results_object, save_legacy, save_zip  # noqa: E402

from sgg_eval.data.store import write_split  # noqa: E402
from sgg_eval.data.types import GTImage, PredImage, SplitMeta  # noqa: E402
from sgg_eval.data.vg150_facts import vg150_vocabulary  # noqa: E402

# Peak heap: in a second run of the same code (so the sampling never slows the timed run), a thread samples
# the anonymous memory (proportional set, Pss_Anon, so pages a forked worker shares with its parent count
# once) of the process and its workers every 10 ms. The file's mapped pages are not counted: they are page
# cache, not heap. Peak RSS (ru_maxrss, file pages included) is printed too.
TIMED = """
import resource, time
def cpu_seconds():  # this process and every child it has waited for (--jobs workers, the parse's process)
    return sum(u.ru_utime + u.ru_stime for u in map(resource.getrusage, (resource.RUSAGE_SELF,
                                                                         resource.RUSAGE_CHILDREN)))
def report(seconds, cpu=0.0):
    print(seconds, cpu, 0)
"""
MEMORY = """
import os, resource, threading, time
def _anon_kb(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            return next(int(ln.split()[1]) for ln in fh if ln.startswith("Pss_Anon:"))
    except (OSError, StopIteration):
        return 0
def _tree(pid):
    try:
        kids = [int(c) for t in os.listdir(f"/proc/{pid}/task")
                for c in open(f"/proc/{pid}/task/{t}/children").read().split()]
    except OSError:
        kids = []
    return [pid] + [q for k in kids for q in _tree(k)]
PEAK = [0]
def _sample():
    while True:
        PEAK[0] = max(PEAK[0], sum(_anon_kb(p) for p in _tree(os.getpid())))
        time.sleep(0.01)
threading.Thread(target=_sample, daemon=True).start()
def cpu_seconds():
    return 0.0
def report(seconds, cpu=0.0):
    PEAK[0] = max(PEAK[0], sum(_anon_kb(p) for p in _tree(os.getpid())))
    rss = max(resource.getrusage(w).ru_maxrss for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    print(seconds, PEAK[0], rss)
"""
FLOOR = """
import sys
from sgg_eval.formats.eval_results import EvalResults
t = time.perf_counter()
n = 0
for gt, pred in EvalResults(sys.argv[1]).pairs():
    n += pred.rel_scores.shape[0] > 0 and float(pred.rel_scores.max()) >= 0
report(time.perf_counter() - t)
"""
OURS = """
import json, sys
from sgg_eval.evaluate import run_evaluation
t, cpu = time.perf_counter(), cpu_seconds()
doc = run_evaluation(sys.argv[1], sys.argv[2], gt=sys.argv[3], jobs=int(sys.argv[4]), zeroshot=sys.argv[5] or None,
                     iou_threshold=float(sys.argv[7]))
seconds, cpu = time.perf_counter() - t, cpu_seconds() - cpu
if sys.argv[6]:
    with open(sys.argv[6], "w") as fh:
        json.dump(doc["metrics"], fh)
report(seconds, cpu)
"""
# The same run with every checksum switched off (zip CRC-32s, the fold of the score matrices' CRC-32 into their
# validation, the split store's seal): what the checks add to a whole evaluation is ours ÷ this.
UNCHECKED = """
import sys
sys.argv[6] = ""  # never writes the metrics compared with the reference's
import numpy as np
from sgg_eval import integrity
from sgg_eval.formats.torch.tensor_table import TensorTable
TensorTable.check = lambda self, ids: None
TensorTable.whole_storages = lambda self, ids: np.full(len(ids), -1)
integrity._check_seal = lambda path, hint: None
"""
# The checksums' share of a run (both inside "ours"): every CRC-32 of the file's members and the split store's
# seal, timed on pages already read once (as they are when the evaluation checks them; the page faults are
# the floor's), so this is the checks' own cost.
CHECKS = """
import sys, time
import numpy as np
from sgg_eval.formats.eval_results import EvalResults
from sgg_eval.integrity import _check_seal
tensors = EvalResults(sys.argv[1]).table.tensors
ids = np.flatnonzero(~tensors.t_bad)
ids = ids[np.unique(tensors.t_root[ids], return_index=True)[1]]  # a tensor per storage: each checked once
for timed in (False, True):
    if tensors.crcs is not None:
        tensors.crcs.checked[:] = tensors.crcs.at < 0
    t = time.perf_counter()
    tensors.check(ids)
    _check_seal(sys.argv[2], "")
    seconds = time.perf_counter() - t
print(seconds)
"""
# What both evaluators compute (the reference's seven families; A@K in PredCls and SGCls only).
SHARED = [f"{m}@{k}" for m in ("R", "ngR", "zR", "ng-zR", "mR", "ng-mR", "A") for k in (20, 50, 100)]


def _objects(rng, i: int, task: str, vocab) -> tuple[GTImage, np.ndarray, np.ndarray, np.ndarray]:
    """One image's GT and predicted objects (boxes, labels, scores)."""
    n, m = 12, 6
    xy = rng.integers(0, 500, size=(n, 2))
    boxes = np.column_stack([xy, xy + rng.integers(10, 200, size=(n, 2))]).astype(np.float32)
    labels = rng.integers(1, vocab.num_objects + 1, size=n)
    s = rng.integers(0, n, size=m)
    rels = np.column_stack([s, (s + rng.integers(1, n, size=m)) % n, rng.integers(1, vocab.num_predicates + 1, size=m)])
    gt = GTImage(i, 800, 800, boxes, labels, rels)
    if task == "sgdet":
        extra = rng.integers(0, 500, size=(68, 2))
        pb = np.concatenate([boxes, np.column_stack([extra, extra + rng.integers(10, 200, size=(68, 2))])])
        pl = np.concatenate([labels, rng.integers(1, vocab.num_objects + 1, size=68)])
    else:
        pb, pl = boxes, labels if task == "predcls" else rng.integers(1, vocab.num_objects + 1, size=n)
    return gt, pb.astype(np.float32), pl, rng.random(len(pl)).astype(np.float32)


def _all_pairs(q: int) -> np.ndarray:
    a, b = np.nonzero(~np.eye(q, dtype=bool))
    return np.column_stack([a, b]).astype(np.int64)


def _case(rng, i: int, task: str, vocab) -> tuple[GTImage, PredImage]:
    gt, pb, pl, ps = _objects(rng, i, task, vocab)
    pairs = _all_pairs(len(pl))
    logits = rng.normal(size=(len(pairs), vocab.num_predicates + 1))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return gt, PredImage(i, pb, pl, ps, pairs, probs.astype(np.float32))


def _streamed_sgdet(n: int, vocab, split: str, path: str) -> None:
    """A full-size SGDet file written image by image: scores are made only when written (``Deferred``), so
    a file of tens of GB never sits in memory. pred_rel_labels is a placeholder (no evaluator reads it)."""
    rng, gts, preds = np.random.default_rng(0), [], []
    pairs = _all_pairs(80)
    width = vocab.num_predicates + 1

    def scores(i: int) -> np.ndarray:
        raw = np.random.default_rng((1, i)).random((len(pairs), width), dtype=np.float32) + np.float32(0.01)
        return raw / raw.sum(axis=1, keepdims=True)

    for i in range(n):
        gt, pb, pl, ps = _objects(rng, i, "sgdet", vocab)
        gts.append(gt)
        preds.append(
            BoxList(
                pb,
                (gt.width, gt.height),
                pred_labels=pl.astype(np.int64),
                pred_scores=ps,
                rel_pair_idxs=Deferred(pairs.shape, np.int64, lambda: pairs),
                pred_rel_scores=Deferred((len(pairs), width), np.float32, lambda i=i: scores(i)),
                pred_rel_labels=Deferred((len(pairs),), np.int64, lambda: np.ones(len(pairs))),
            )
        )
    write_split(split, SplitMeta("test", vocab, "bench", True, "bench"), gts)
    save_zip(
        {
            "groundtruths": [
                BoxList(
                    g.boxes,
                    (g.width, g.height),
                    labels=g.labels.astype(np.int64),
                    relation_tuple=g.rels.astype(np.int64),
                )
                for g in gts
            ],
            "predictions": preds,
        },
        path,
    )


def _run(code: str, *args: str, repeat: int = 1) -> tuple[float, float, float]:
    """Seconds (the best of ``repeat`` plain runs: a shared machine only ever adds time; none if 0), then peak
    heap MB and peak RSS MB (a sampled run) of ``code``, each in a fresh process."""
    seconds = min((_once(TIMED + code, args) for _ in range(repeat)), default=float("nan"))
    _, anon_kb, rss_kb = _output(MEMORY + code, args)
    return seconds, float(anon_kb) / 1024, float(rss_kb) / 1024


def _paired(code: str, versus: str, *args: str, repeat: int) -> tuple[float, float, float, float]:
    """Runs of ``code`` and ``versus`` on the same arguments, alternating: the best seconds of each, and the
    medians of the pairs' ratios code ÷ versus in wall time and in CPU time (of the process and its workers).
    A shared machine slows both runs of a pair alike, so a ratio is steadier than one of the best times; CPU
    time, which a neighbour's load barely moves, is the steadiest."""
    pairs = [_pair(TIMED + code, TIMED + versus, args, first=i % 2) for i in range(max(1, repeat))]
    wall = statistics.median(float(a[0]) / float(b[0]) for a, b in pairs)
    cpu = statistics.median(float(a[1]) / float(b[1]) for a, b in pairs)
    return min(float(a[0]) for a, _ in pairs), min(float(b[0]) for _, b in pairs), wall, cpu


def _pair(code: str, versus: str, args: tuple[str, ...], first: int) -> tuple[list[str], list[str]]:
    """Outputs of ``code`` and ``versus``, run in that order (``first`` 0) or the other (1): whichever runs
    second was measured 1-3% faster on the legacy layout, where both are the same work, so a fixed order
    would show that as a cost of the checks."""
    if first:
        later = _output(versus, args)
        return _output(code, args), later
    return _output(code, args), _output(versus, args)


def _once(code: str, args: tuple[str, ...]) -> float:
    return float(_output(code, args)[0])


def _output(code: str, args: tuple[str, ...]) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    return out.stdout.split()[-3:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=2000, help="PredCls and SGCls images (default: %(default)s)")
    ap.add_argument("--sgdet-images", type=int, default=300, help="SGDet images (default: %(default)s)")
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), help="sgg-eval --jobs")
    ap.add_argument(
        "--full-sgdet",
        type=int,
        default=0,
        metavar="N",
        help="also an N-image SGDet zip file written as a stream (VG test size: 26446, ~33 GB)",
    )
    ap.add_argument(
        "--reference",
        metavar="CHECKOUT",
        help="also time Scene-Graph-Benchmark.pytorch's evaluator "
        "from this clone on every file, and compare its metrics with ours",
    )
    ap.add_argument("--reference-python", default="python3", help="a Python with torch, for --reference")
    ap.add_argument(
        "--iou-threshold",
        type=float,
        default=0.5,
        help="sgg-eval's --iou-threshold and the reference's TEST.RELATION.IOU_THRESHOLD (default: %(default)s)",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="timed runs of floor and ours, best kept (default: %(default)s; the reference, ~40 s a file, runs once)",
    )
    args = ap.parse_args()
    reference = (os.path.expanduser(args.reference), args.reference_python) if args.reference else None
    if reference and not os.path.isfile(os.path.join(reference[0], REFERENCE_ZEROSHOT)):
        ap.error(
            f"--reference {args.reference}: not a clone of Scene-Graph-Benchmark.pytorch (no {REFERENCE_ZEROSHOT})"
        )
    vocab = vg150_vocabulary()
    print(
        f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; --jobs {args.jobs}; floor and ours: "
        f"best of {args.repeat}"
    )
    print(
        f"{'task':7} {'layout':6} {'images':>6} {'file MB':>8} {'floor s':>8} {'ours s':>7} {'ours/floor':>10} "
        f"{'img/s':>7} {'floor heap MB':>13} {'ours heap MB':>12} {'ours RSS MB':>11} {'checks s':>8} "
        f"{'of ours':>8} {'unchecked s':>11} {'checks +':>8} {'checks CPU +':>12}"
        + (f" {'ref s':>7} {'ref/ours':>8} {'max |diff|':>10}" if reference else "")
    )
    with tempfile.TemporaryDirectory() as tmp:
        for task, n in (("predcls", args.images), ("sgcls", args.images), ("sgdet", args.sgdet_images)):
            if n == 0:  # e.g. --images 0 --sgdet-images 0 --full-sgdet 26446: the full-size file only
                continue
            rng = np.random.default_rng(0)
            cases = [_case(rng, i, task, vocab) for i in range(n)]
            split = os.path.join(tmp, f"{task}_test.h5")
            write_split(split, SplitMeta("test", vocab, "bench", True, "bench"), [g for g, _ in cases])
            obj = eval_results_object(cases)
            del cases
            for layout, save in (("zip", save_zip), ("legacy", save_legacy)):
                path = os.path.join(tmp, f"{task}_{layout}.pytorch")
                save(obj, path)
                _row(task, layout, n, path, split, args.jobs, reference, args.repeat, args.iou_threshold)
                os.remove(path)
            del obj
        if args.full_sgdet:
            path, split = os.path.join(tmp, "sgdet_full.pytorch"), os.path.join(tmp, "sgdet_full_test.h5")
            _streamed_sgdet(args.full_sgdet, vocab, split, path)
            _row("sgdet", "zip", args.full_sgdet, path, split, args.jobs, reference, 1, args.iou_threshold)
            os.remove(path)


def _row(
    task: str,
    layout: str,
    n: int,
    path: str,
    split: str,
    jobs: int,
    reference: tuple[str, str] | None,
    repeat: int,
    iou: float = 0.5,
) -> None:
    floor, floor_heap, _ = _run(FLOOR, path, repeat=repeat)
    checks = min(
        float(
            subprocess.run(
                [sys.executable, "-c", CHECKS, path, split], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(max(1, repeat))
    )
    zeroshot = os.path.join(reference[0], REFERENCE_ZEROSHOT) if reference else ""
    mine = path + ".metrics.json"
    args = (path, task, split, str(jobs), zeroshot, mine if reference else "", str(iou))
    ours, unchecked, ratio, cpu_ratio = _paired(OURS, UNCHECKED + OURS, *args, repeat=repeat)
    _, ours_heap, ours_rss = _run(OURS, *args, repeat=0)
    size = os.path.getsize(path) / 2**20
    extra = ""
    if reference:
        ref = json.loads(
            subprocess.run(
                [
                    reference[1],
                    str(ROOT / "scripts" / "reference_eval.py"),
                    reference[0],
                    path,
                    task,
                    zeroshot,
                    str(iou),
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        with open(mine) as fh:
            got = json.load(fh)
        diff = max(_difference(got[k], ref["metrics"][k]) for k in SHARED if k in ref["metrics"])
        extra = f" {ref['seconds']:>7.2f} {ref['seconds'] / ours:>7.1f}x {diff:>10.1e}"
    print(
        f"{task:7} {layout:6} {n:>6} {size:>8.0f} {floor:>8.3f} {ours:>7.3f} {ours / floor:>9.1f}x "
        f"{n / ours:>7.0f} {floor_heap:>13.0f} {ours_heap:>12.0f} {ours_rss:>11.0f} {checks:>8.3f} "
        f"{100 * checks / ours:>7.1f}% {unchecked:>10.3f} {100 * (ratio - 1):>+7.1f}% "
        f"{100 * (cpu_ratio - 1):>+11.1f}%{extra}",
        flush=True,
    )


def _difference(ours: float | None, ref: float) -> float:
    """|ours − reference|; our null (no image has such a row) matches the reference's NaN (a mean of nothing)."""
    if ours is None or ref != ref:
        return 0.0 if ours is None and ref != ref else float("inf")
    return abs(ours - ref)


REFERENCE_ZEROSHOT = "maskrcnn_benchmark/data/datasets/evaluation/vg/zeroshot_triplet.pytorch"


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"bench: {time.perf_counter() - t0:.0f} s")
