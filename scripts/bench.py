"""`make bench`: the command a user types, `sgg-eval evaluate FILE --task T -o OUT`, timed as a whole process
on real files, against the read floor of the same file and (with ``--reference``) Scene-Graph-Benchmark.pytorch's
own evaluator, in the same run.

For each task it writes, with the test suite's torch-free writer, a VG150-shaped `eval_results.pytorch` in
both torch layouts (zip and legacy) plus the matching GT split store, then runs, each a fresh process timed
from outside (interpreter start-up, imports and exit included):

- floor: parse the file with sgg-eval's reader and touch every image's scores once (the least any
  evaluator of this file must do);
- ours:  `sgg-eval evaluate FILE --task T --jobs J -o OUT`, file only (its own GT; the full metric suite),
  for each ``--jobs`` value;
- --gt:  the same with `--gt SPLIT` and the most jobs (the file's GT checked against the split).

Times are the best of ``--repeat`` runs (default 3; a shared machine only ever adds time). It prints seconds,
the speed-up of the most jobs over one, ours ÷ floor, whether every metrics document is byte-identical (every
``--jobs`` value and ``--gt``), the peak heap (anonymous memory of the process and its workers, sampled from
outside every 10 ms; the file's mapped pages are page cache, not heap) and peak RSS of ours, the checksums'
own cost in a real `--jobs 1 --gt SPLIT` run (every zip member's CRC-32 and the split store's seal, timed where
they run; ``CHECKS``) and its share of that run, and what they add to a whole run, as the median ratio of
2 × repeat + 1 runs with and without them (``UNCHECKED``, alternating) in wall and CPU time (the legacy
layout has no CRC-32s: its columns show the noise). Shapes follow VG150's test split: 12 objects and
every ordered pair per image (132 pairs) for PredCls/SGCls; 80 detections (6,320 pairs) for SGDet. No timing
is asserted anywhere.

    make bench                      # 5,000 PredCls, 3,000 SGCls and 1,000 SGDet images; --jobs 1 and every core
    make bench ARGS="--images 1000 --sgcls-images 1000 --sgdet-images 300 --jobs 2"
    make bench ARGS="--full"        # plus SGDet at the VG test split's size: 26,446 images (~36 GB on disk)
    make bench ARGS="--reference ~/Scene-Graph-Benchmark.pytorch --reference-python ~/torch-env/bin/python"
    make bench ARGS="--sgdet-images 300 --iou-threshold 0.7 --reference ..."  # both at IoU 0.7

With ``--reference`` (a clone of Scene-Graph-Benchmark.pytorch and a Python that has torch) each row also
runs the reference evaluator on the same file (``scripts/reference_eval.py``: torch.load + its seven relation
metrics, the way its test script's evaluation does), timed the same way as a whole process (``ref s``; its
own timer, load + evaluation only, in ``ref in s``), prints reference ÷ ours for each ``--jobs`` value, and
checks that every metric both compute agrees (largest difference).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the torch-free writer of the test fixtures

from torch_writer import BoxList, Deferred, eval_results_object, save_legacy, save_zip  # noqa: E402

from sgg_eval.data.store import write_split  # noqa: E402
from sgg_eval.data.types import GTImage, PredImage, SplitMeta  # noqa: E402
from sgg_eval.data.vg150_facts import vg150_vocabulary  # noqa: E402

FLOOR = """
import sys
from sgg_eval.formats.eval_results import EvalResults
n = 0
for gt, pred in EvalResults(sys.argv[1]).pairs():
    n += pred.rel_scores.shape[0] > 0 and float(pred.rel_scores.max()) >= 0
"""
# The CLI run in a plain interpreter (what the `sgg-eval` script does), to pair with UNCHECKED + CLI.
CLI = """
import sys
from sgg_eval.cli import main
sys.exit(main(sys.argv[1:]))
"""
# The same run with every checksum switched off (zip CRC-32s, the fold of the score matrices' CRC-32 into their
# validation, the split store's seal): what the checks add to a whole evaluation is CLI ÷ this.
UNCHECKED = """
import numpy as np
from sgg_eval.io import integrity
from sgg_eval.formats.torch.tensor_table import TensorTable
TensorTable.check = lambda self, ids: None
TensorTable.whole_storages = lambda self, ids: np.full(len(ids), -1)
integrity._check_seal = lambda path, hint: None
"""
# The checksums' own cost inside a real run: the CLI with --jobs 1 in this process, every check timed where it
# runs (the CRC-32s folded over each block of a score matrix while validation has it in the CPU's cache, the
# other members' CRC-32s, the split store's seal), printed as "seconds in checks, seconds of main()". A CRC-32
# pass of its own over the file, from memory, would cost several times the fold (SGDet: 0.10 s against ~0.02 s).
CHECKS = """
import sys, time
from sgg_eval.io import integrity
from sgg_eval.formats import eval_results
from sgg_eval.formats.torch.tensor_table import TensorTable
spent = [0.0]
def timed(f):
    def run(*args, **kwargs):
        t = time.perf_counter()
        try:
            return f(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - t
    return run
TensorTable.check = timed(TensorTable.check)
call = timed(eval_results._FoldedCrc.__call__)  # a matrix's sink (whole_storages runs inside it)
def folding(self, field, k):
    sink = call(self, field, k)
    return None if sink is None else timed(sink)  # and each block it folds
eval_results._FoldedCrc.__call__ = folding
eval_results._FoldedCrc.settle = timed(eval_results._FoldedCrc.settle)
integrity._check_seal = timed(integrity._check_seal)
from sgg_eval.cli import main
t = time.perf_counter()
code = main(sys.argv[1:])
print(spent[0], time.perf_counter() - t)
sys.exit(code)
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


def _cli() -> list[str]:
    """The user's command: the `sgg-eval` script installed beside this Python (make's virtualenv)."""
    script = Path(sys.executable).with_name("sgg-eval")
    return [str(script)] if script.exists() else [sys.executable, "-c", CLI]


class Run:
    """One whole process, timed from outside: wall seconds, CPU seconds of it and every process it waited for
    (``--jobs`` workers, the parse's child), and, when ``sample``, the peak heap (``Pss_Anon`` of the process
    tree, so a page a forked worker shares with its parent counts once; every 10 ms) and peak RSS, in MB."""

    def __init__(self, cmd: list[str], sample: bool = False):
        with tempfile.TemporaryFile() as err:
            cpu = _children_cpu()
            t = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err)
            self.heap_mb = 0.0
            stop = threading.Event()
            sampler = threading.Thread(target=self._sample, args=(proc.pid, stop), daemon=True)
            if sample:
                sampler.start()
            self.stdout = proc.stdout.read().decode()
            _, status, usage = os.wait4(proc.pid, 0)
            self.seconds = time.perf_counter() - t
            stop.set()
            if sample:
                sampler.join()
            proc.returncode = os.waitstatus_to_exitcode(status)
            self.cpu = _children_cpu() - cpu
            self.rss_mb = usage.ru_maxrss / 1024  # the process or the largest process it waited for
            if proc.returncode:
                err.seek(0)
                raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}\n{err.read().decode()}")

    def _sample(self, pid: int, stop: threading.Event) -> None:
        while not stop.is_set():
            self.heap_mb = max(self.heap_mb, sum(_anon_kb(p) for p in _tree(pid)) / 1024)
            time.sleep(0.01)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _anon_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            return next(int(ln.split()[1]) for ln in fh if ln.startswith("Pss_Anon:"))
    except (OSError, StopIteration, ValueError):
        return 0


def _tree(pid: int) -> list[int]:
    try:
        kids = [
            int(c)
            for t in os.listdir(f"/proc/{pid}/task")
            for c in open(f"/proc/{pid}/task/{t}/children").read().split()
        ]
    except OSError:
        kids = []
    return [pid] + [q for k in kids for q in _tree(k)]


def _best(cmd: list[str], repeat: int) -> float:
    """The best wall seconds of ``repeat`` runs (a shared machine only ever adds time)."""
    return min(Run(cmd).seconds for _ in range(max(1, repeat)))


def _paired(cmd: list[str], versus: list[str], repeat: int) -> tuple[float, float, float]:
    """Runs of ``cmd`` and ``versus``, alternating which goes first (whichever runs second was measured 1-3%
    faster on the legacy layout, where both do the same work): the best seconds of ``versus`` and the medians
    of the pairs' ratios cmd ÷ versus in wall and in CPU time. A shared machine slows both runs of a pair
    alike, so a ratio is steadier than one of the best times; CPU time, which a neighbour's load barely moves,
    is the steadiest."""
    pairs = []
    for i in range(max(1, repeat)):
        if i % 2:
            later = Run(versus)
            pairs.append((Run(cmd), later))
        else:
            first = Run(cmd)
            pairs.append((first, Run(versus)))
    wall = statistics.median(a.seconds / b.seconds for a, b in pairs)
    cpu = statistics.median(a.cpu / b.cpu for a, b in pairs)
    return min(b.seconds for _, b in pairs), wall, cpu


def main() -> None:
    cores = len(os.sched_getaffinity(0))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=5000, help="PredCls images (default: %(default)s)")
    ap.add_argument("--sgcls-images", type=int, default=3000, help="SGCls images (default: %(default)s)")
    ap.add_argument("--sgdet-images", type=int, default=1000, help="SGDet images (default: %(default)s)")
    ap.add_argument(
        "--jobs",
        default=",".join(dict.fromkeys(["1", str(cores)])),
        help="sgg-eval --jobs values, comma-separated (default: %(default)s: one process and every core)",
    )
    ap.add_argument(
        "--full",
        action="store_true",
        help="also SGDet at the VG test split's size (--full-images), written as a stream (~36 GB on disk): "
        "wall time and peak RSS of one run with each --jobs value",
    )
    ap.add_argument("--full-images", type=int, default=26446, help="images of --full (default: %(default)s)")
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
    try:
        jobs = sorted({int(j) for j in args.jobs.split(",")})
    except ValueError:
        ap.error(f"--jobs {args.jobs}: expected integers separated by commas")
    if not jobs or jobs[0] < 1:
        ap.error(f"--jobs {args.jobs}: every value must be at least 1")
    reference = (os.path.expanduser(args.reference), args.reference_python) if args.reference else None
    if reference and not os.path.isfile(os.path.join(reference[0], REFERENCE_ZEROSHOT)):
        ap.error(
            f"--reference {args.reference}: not a clone of Scene-Graph-Benchmark.pytorch (no {REFERENCE_ZEROSHOT})"
        )
    vocab = vg150_vocabulary()
    bench = Bench(jobs, reference, args.repeat, args.iou_threshold)
    print(
        f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; whole processes; floor and ours: best of "
        f"{args.repeat}; ours = {' '.join(Path(c).name for c in _cli()[:1])} evaluate FILE --task T --jobs J -o OUT"
    )
    print(bench.header())
    with tempfile.TemporaryDirectory() as tmp:
        for task, n in (("predcls", args.images), ("sgcls", args.sgcls_images), ("sgdet", args.sgdet_images)):
            if n == 0:  # e.g. --images 0 --sgcls-images 0 --sgdet-images 0 --full: the full-size file only
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
                print(bench.row(task, layout, n, path, split), flush=True)
                os.remove(path)
            del obj
        if args.full:
            path, split = os.path.join(tmp, "sgdet_full.pytorch"), os.path.join(tmp, "sgdet_full_test.h5")
            _streamed_sgdet(args.full_images, vocab, split, path)
            size = os.path.getsize(path) / 2**30
            print(f"\nSGDet, {args.full_images} images, zip layout ({size:.1f} GB), one run each:")
            for j in jobs:
                run = Run([*_cli(), "evaluate", path, "--task", "sgdet", "--jobs", str(j), "-o", path + ".json"], True)
                print(
                    f"  sgg-eval evaluate FILE --task sgdet --jobs {j} -o OUT: {run.seconds:.1f} s wall, "
                    f"{run.cpu:.1f} s CPU, peak RSS {run.rss_mb:,.0f} MB, peak heap {run.heap_mb:,.0f} MB",
                    flush=True,
                )
            os.remove(path)


class Bench:
    """The runs of one file and the row that reports them."""

    def __init__(self, jobs: list[int], reference: tuple[str, str] | None, repeat: int, iou: float):
        self.jobs, self.reference, self.repeat, self.iou = jobs, reference, repeat, iou

    def header(self) -> str:
        ours = "".join(f" {f'j{j} s':>7}" for j in self.jobs)
        ref = "".join(f" {f'ref/j{j}':>8}" for j in self.jobs)
        return (
            f"{'task':7} {'layout':6} {'images':>6} {'file MB':>8} {'floor s':>8}{ours} {'speed-up':>8} "
            f"{'--gt s':>7} {'ours/floor':>10} {'same':>4} {'heap MB':>7} {'RSS MB':>7} {'checks s':>8} "
            f"{'of run':>8} {'checks +':>8} {'checks CPU +':>12}"
            + (f" {'ref s':>7} {'ref in s':>8}{ref} {'max |diff|':>10}" if self.reference else "")
        )

    def row(self, task: str, layout: str, n: int, path: str, split: str) -> str:
        most = self.jobs[-1]
        zeroshot = os.path.join(self.reference[0], REFERENCE_ZEROSHOT) if self.reference else None
        options = ["--task", task, "--iou-threshold", str(self.iou)] + (["--zeroshot", zeroshot] if zeroshot else [])

        def arguments(j: int, *extra: str, out: str = "") -> list[str]:
            return ["evaluate", path, *options, "--jobs", str(j), *extra, "-o", out or path + ".out.json"]

        def ours(j: int, *extra: str, out: str = "") -> list[str]:
            return [*_cli(), *arguments(j, *extra, out=out)]

        floor = _best([sys.executable, "-c", FLOOR, path], self.repeat)
        seconds = {j: _best(ours(j), self.repeat) for j in self.jobs}
        with_gt = _best(ours(most, "--gt", split), self.repeat)
        # byte-identical metrics for every --jobs value and with --gt (the documents' notes and input differ)
        docs = [ours(j, out=f"{path}.j{j}.json") for j in self.jobs] + [
            ours(most, "--gt", split, out=path + ".gt.json")
        ]
        sampled = [Run(cmd, sample=(k == len(self.jobs) - 1)) for k, cmd in enumerate(docs)][len(self.jobs) - 1]
        metrics = [json.dumps(json.loads(Path(cmd[-1]).read_text())["metrics"]) for cmd in docs]
        same = "yes" if len(set(metrics)) == 1 else "NO"
        runs = [
            subprocess.run(
                [sys.executable, "-c", CHECKS, *arguments(1, "--gt", split)], capture_output=True, text=True, check=True
            ).stdout.split()[-2:]
            for _ in range(max(1, self.repeat))
        ]
        checks, run_seconds = (min(float(run[k]) for run in runs) for k in (0, 1))
        plain = [sys.executable, "-c", CLI, *arguments(most, "--gt", split)]
        unchecked = [sys.executable, "-c", UNCHECKED + CLI, *arguments(most, "--gt", split)]
        _, ratio, cpu_ratio = _paired(plain, unchecked, 2 * self.repeat + 1)
        size = os.path.getsize(path) / 2**20
        line = (
            f"{task:7} {layout:6} {n:>6} {size:>8.0f} {floor:>8.3f}"
            + "".join(f" {seconds[j]:>7.3f}" for j in self.jobs)
            + f" {seconds[self.jobs[0]] / seconds[most]:>7.2f}x {with_gt:>7.3f} {seconds[most] / floor:>9.1f}x "
            f"{same:>4} {sampled.heap_mb:>7.0f} {sampled.rss_mb:>7.0f} {checks:>8.3f} "
            f"{100 * checks / run_seconds:>7.1f}% {100 * (ratio - 1):>+7.1f}% {100 * (cpu_ratio - 1):>+11.1f}%"
        )
        if self.reference:
            run = Run(
                [
                    self.reference[1],
                    str(ROOT / "scripts" / "reference_eval.py"),
                    self.reference[0],
                    path,
                    task,
                    zeroshot,
                    str(self.iou),
                ]
            )
            ref = json.loads(run.stdout)
            got = json.loads(metrics[0])
            diff = max(_difference(got[k], ref["metrics"][k]) for k in SHARED if k in ref["metrics"])
            line += (
                f" {run.seconds:>7.2f} {ref['seconds']:>8.2f}"
                + "".join(f" {run.seconds / seconds[j]:>7.1f}x" for j in self.jobs)
                + f" {diff:>10.1e}"
            )
        for cmd in [*docs, ours(most)]:
            os.remove(cmd[-1])
        return line


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
