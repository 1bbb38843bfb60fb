"""`make bench` (panoptic part): `sgg-eval evaluate --psg` against `sgbench` 1.0.0 and the decode floor, whole
processes, on a PSG-test-sized fixture (`tests/psg_scale.py`: 2,186 test images at 640×480, ~40 predicted
masks, 200 triplets and 5,000 ng_triplets each, 46,563 more psg.json entries), in the same run.

For each mode (masks: the ZIP; boxes: its JSON alone) and each process count (1 and 2):

- sgbench: the `sgbench` command of `.venv-sgbench` (`--workers 0` is its default, one process; `--workers 2`);
- ours:    `sgg-eval evaluate PRED --psg psg.json [--psg-root coco] --jobs N`;
- floor:   what any evaluator of these files must do, nothing else, in N processes. Masks: read every TIFF of
  the ZIP and decode all its layers (sgg-eval's fastest decoder: own IFD walk + ISA-L), and decode every test
  PNG with Pillow. Boxes: parse psg.json and the submission with simdjson and take every image's triplet
  arrays (with 2 processes or more, each file in its own process: a document parses in one).

It prints seconds (best of ``--repeat``; sgbench runs once: ~2 min a run), the ratios sgbench ÷ ours and
ours ÷ floor, the peak RSS of the largest process of each (sgbench extracts the whole ZIP to a temporary
folder first; we never extract), and whether every value sgbench prints equals ours (protocol sgbench,
within 1e-12). The fixture is written once to ``--cache`` (~2 min; ~0.5 GB) and reused. No timing is asserted.

    make bench                                  # VG150 rows, then these
    python scripts/bench_psg.py --test 300 --other 5000    # a quick look
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

from psg_scale import write_psg_scale_fixture  # noqa: E402

SGBENCH = ROOT / ".venv-sgbench" / "bin" / "sgbench"
SGG_EVAL = Path(sys.executable).parent / "sgg-eval"

FLOOR_MASKS = """
import io, multiprocessing, os, sys, zipfile
import numpy as np
from PIL import Image
from sgg_eval.panoptic.tiff_layers import tiff_stack
root, zip_path, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = sorted(n for n in zipfile.ZipFile(zip_path).namelist() if n.endswith(".tiff"))
pngs = sorted(os.path.join(root, "panoptic", f) for f in os.listdir(os.path.join(root, "panoptic")))
def work(k):
    zf = zipfile.ZipFile(zip_path)
    for name, png in zip(names[k::jobs], pngs[k::jobs]):
        raw = zf.read(name)
        with Image.open(png) as im:
            shape = np.asarray(im).shape[:2]
        tiff_stack(raw, _pages(raw), shape, {})
def _pages(raw):
    import struct
    order = "<" if raw[:2] == b"II" else ">"
    at, n = struct.unpack_from(order + "I", raw, 4)[0], 0
    while at:
        n += 1
        at = struct.unpack_from(order + "I", raw, at + 2 + 12 * struct.unpack_from(order + "H", raw, at)[0])[0]
    return n
if jobs == 1:
    work(0)
else:
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        pool.map(work, range(jobs))
"""

FLOOR_BOXES = """
import os, sys
import numpy as np
from sgg_eval.io.jsonfast import parse_document
psg, sub, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def gt():
    parser, doc = parse_document(open(psg, "rb").read(), psg)
    sum(1 for entry in doc["data"] if entry["image_id"] is not None)
def submission():
    parser, doc = parse_document(open(sub, "rb").read(), sub)
    for image in doc["images"]:
        for key in ("triplets", "ng_triplets"):
            np.frombuffer(image[key].as_buffer(of_type="i"), dtype=np.int64)
if jobs == 1:
    gt()  # its tape (8 bytes a byte) is freed on return, before the submission's is made
    submission()
elif (child := os.fork()) == 0:  # two processes: psg.json in one, the submission in the other
    gt()
    os._exit(0)
else:
    submission()
    os.waitpid(child, 0)
"""


# Runs the command and writes the peak RSS (KB) of the largest process of its tree to argv[1]: wait4's ru_maxrss
# of a child covers the children it waited for (sgbench's and our workers).
_WRAP = """
import os, subprocess, sys
p = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(p.pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _timed(cmd: list[str], repeat: int, folder: Path) -> tuple[float, float, str]:
    """(best seconds, peak RSS MB of the largest process of the tree, stdout of the last run)."""
    best, rss, out = float("inf"), 0.0, ""
    peak = folder / "peak_rss_kb"
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _WRAP, str(peak), *cmd], capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
        best, out = min(best, seconds), done.stdout
        rss = max(rss, int(peak.read_text()) / 1024)
    return best, rss, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--test", type=int, default=2186, help="test images (default: PSG's %(default)s)")
    ap.add_argument("--other", type=int, default=46563, help="other psg.json entries (default: %(default)s)")
    ap.add_argument("--cache", default=str(ROOT / "data" / "bench"), help="where the fixture is kept")
    ap.add_argument("--repeat", type=int, default=2, help="runs of ours and the floor, best kept")
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="process counts (default: 1 2)")
    ap.add_argument("--modes", nargs="+", default=["masks", "boxes"], choices=["masks", "boxes"])
    args = ap.parse_args()
    folder = Path(args.cache) / f"psg_{args.test}_{args.other}"
    if not (folder / "psg.json").exists():
        t0 = time.perf_counter()
        print(f"writing the fixture to {folder} ...", flush=True)
        write_psg_scale_fixture(folder, test=args.test, other=args.other)
        print(f"  {time.perf_counter() - t0:.0f} s", flush=True)
    files = {
        "psg": folder / "psg.json",
        "root": folder / "coco",
        "zip": folder / "submission.zip",
        "json": folder / "submission.json",
    }
    sizes = {k: os.path.getsize(files[k]) / 2**20 for k in ("psg", "zip", "json")}
    print(
        f"PSG fixture: {args.test} test images, {args.test + args.other} psg.json entries ({sizes['psg']:.0f} MB), "
        f"submission.zip {sizes['zip']:.0f} MB, submission.json {sizes['json']:.0f} MB; machine: "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}"
    )
    if not SGBENCH.exists():
        print(f"(no {SGBENCH}: `make .venv-sgbench/.installed` installs sgbench 1.0.0; its columns are skipped)")
    print(
        f"{'mode':6} {'procs':>5} {'sgbench s':>9} {'ours s':>7} {'floor s':>7} {'sgbench/ours':>12} "
        f"{'ours/floor':>10} {'sgbench RSS MB':>14} {'ours RSS MB':>11} {'same values':>11}"
    )
    for mode in args.modes:
        pred = str(files["zip"] if mode == "masks" else files["json"])
        for jobs in args.jobs:
            metrics = folder / f"ours_{mode}_{jobs}.json"
            ours_cmd = [
                str(SGG_EVAL),
                "evaluate",
                pred,
                "--psg",
                str(files["psg"]),
                "--jobs",
                str(jobs),
                "-o",
                str(metrics),
            ] + (["--psg-root", str(files["root"])] if mode == "masks" else [])
            if mode == "masks":
                floor_cmd = [sys.executable, "-c", FLOOR_MASKS, str(files["root"]), pred, str(jobs)]
            else:
                floor_cmd = [sys.executable, "-c", FLOOR_BOXES, str(files["psg"]), pred, str(jobs)]
            floor, _, _ = _timed(floor_cmd, args.repeat, folder)
            ours, ours_rss, _ = _timed(ours_cmd, args.repeat, folder)
            theirs = their_rss = None
            same = "-"
            if SGBENCH.exists():
                cmd = [str(SGBENCH), str(files["psg"]), pred, "--workers", str(0 if jobs == 1 else jobs)]
                cmd += ["--gt-masks", str(files["root"])] if mode == "masks" else []
                theirs, their_rss, out = _timed(cmd, 1, folder)
                same = "yes" if _same(out, json.loads(metrics.read_text())["metrics"]) else "NO"
            print(
                f"{mode:6} {jobs:>5} {_s(theirs):>9} {ours:>7.1f} {floor:>7.1f} "
                f"{_ratio(theirs, ours):>12} {ours / floor:>9.2f}x {_s(their_rss, 0):>14} {ours_rss:>11.0f} "
                f"{same:>11}",
                flush=True,
            )


def _same(printed: str, ours: dict) -> bool:
    for line in printed.splitlines():
        key, value = line.split(": ")
        value, mine = float(value), ours.get({"PRank": "PRk"}.get(key, key))
        if value != value:
            if mine is not None:
                return False
        elif mine is None or abs(mine - value) > 1e-12:
            return False
    return True


def _s(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ratio(theirs: float | None, ours: float) -> str:
    return "-" if theirs is None else f"{theirs / ours:.1f}x"


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"bench_psg: {time.perf_counter() - t0:.0f} s")
