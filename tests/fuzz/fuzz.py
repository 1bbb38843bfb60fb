"""sgg-eval's own fuzzer: mutate valid seeds of every input format and run the real CLI on each.

    python tests/fuzz/fuzz.py --cases 10000 [--seed 0] [--jobs 2] [--timeout 20] [--keep DIR]

Every case copies the seeds into a scratch folder, mutates one file once (``mutations``), and runs one
command that reads it (``seeds.TARGETS``) through ``sgg_eval.cli.main`` in a forked process (its own session,
stdout and stderr to files, an address-space limit, killed at the time limit): the CLI's whole code path,
without paying Python's start-up per case. The result is put in one class:

    refused      exit 2, one line on stderr, nothing written, the inputs unchanged
    same         exit 0 and the very outputs of the unmutated seeds
    valid        exit 0 with other outputs, from a mutation that makes a valid input (or a warning said so)
    SILENT       exit 0 with other outputs, no warning, from a corrupting mutation (a wrong number)
    traceback    a Python traceback on stderr
    internal     exit 1 (a bug of ours)
    unclean      exit 2 with more than one line, warnings on stderr, any other exit code
    hang         still running at the time limit
    signal       killed by a signal
    leftover     a file left behind or an input changed

Only the first three are acceptable; ``main`` exits 1 when any case falls in another class.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import os
import random
import resource
import runpy
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mutations import mutate  # noqa: E402
from seeds import ROOT, TARGETS, Target, write_seeds  # noqa: E402

OK_CLASSES = ("refused", "same", "valid")
CLASSES = OK_CLASSES + ("SILENT", "traceback", "internal", "unclean", "hang", "signal", "leftover")
MEMORY_LIMIT = 4 << 30


@dataclass
class Outcome:
    target: str
    command: str
    mutation: str
    cls: str
    detail: str


def _run_child(folder: Path, argv: tuple[str, ...]) -> None:
    """In the forked child: limits, redirections, then the CLI (or the check_params stage) in ``folder``."""
    os.setsid()
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    os.chdir(folder)
    for fd, name in ((1, ".stdout"), (2, ".stderr")):
        handle = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(handle, fd)
        os.close(handle)
    # new streams on the redirected descriptors: a test runner may have replaced sys.stdout/err with its own
    sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = sys.__stderr__ = open(2, "w", encoding="utf-8", closefd=False)
    code = 1
    try:
        if argv[0] == "@sleep":  # the harness's own test of its time limit
            time.sleep(3600)
        elif argv[0] == "@check_params":
            sys.argv = [str(ROOT / "stages" / "check_params.py")]
            try:
                runpy.run_path(sys.argv[0], run_name="__main__")
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
        else:
            from sgg_eval.cli import main

            code = main(list(argv))
    except BaseException:  # noqa: BLE001 - what a real process would print
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run_case(folder: Path, argv: tuple[str, ...], timeout: float) -> tuple[int | None, int | None, float]:
    """(exit code, signal, seconds); exit code None with signal None: killed at the time limit."""
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _run_child(folder, argv)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - start > timeout:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None, None, timeout
        time.sleep(0.005)
    with _suppress():
        os.killpg(pid, signal.SIGKILL)  # workers it may have left
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status), time.monotonic() - start
    return os.WEXITSTATUS(status), None, time.monotonic() - start


class _suppress:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return exc[0] is not None and issubclass(exc[0], OSError)


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name not in (".stdout", ".stderr")
    }


def _outputs(snap: dict[str, str], before: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in snap.items() if k not in before}


def classify(
    code,
    sig,
    folder: Path,
    before: dict[str, str],
    baseline: dict[str, str] | None,
    corrupting: bool,
    baseline_err: str = "",
) -> tuple[str, str]:
    """The outcome's class and a detail. A warning excuses changed outputs only if the unmutated run did not
    print it too (a seed whose run always warns would otherwise excuse every change)."""
    if code is None and sig is None:
        return "hang", ""
    if sig is not None:
        return "signal", f"signal {sig}"
    err = (folder / ".stderr").read_text(errors="replace")
    first = err.strip().splitlines()[-1][:200] if err.strip() else ""
    if "Traceback (most recent call last)" in err:
        return "traceback", first
    if code == 1:
        return "internal", first
    after = _snapshot(folder)
    changed_inputs = [k for k in before if after.get(k) != before[k]]
    if changed_inputs:
        return "leftover", f"input changed: {changed_inputs[0]}"
    new = _outputs(after, before)
    if code == 2:
        if new:
            return "leftover", f"refused but wrote {sorted(new)[0]}"
        if err.count("\n") != 1 or "error" not in err:
            return "unclean", err.replace("\n", " | ")[:200]
        return "refused", first
    if code != 0:
        return "unclean", f"exit {code}: {first}"
    if "Warning:" in err or "RuntimeWarning" in err:
        return "unclean", first
    if baseline is not None and new == baseline:
        return "same", ""
    new_warnings = [ln for ln in err.splitlines() if "warning" in ln.lower() and ln not in baseline_err]
    if new_warnings:
        return "valid", f"with warning: {new_warnings[0][:200]}"
    return ("SILENT" if corrupting else "valid"), ", ".join(
        sorted(set(new) ^ set(baseline or {})) or [k for k in new if baseline.get(k) != new[k]]
    )[:200]


def fuzz(
    cases: int,
    seed: int,
    jobs: int,
    timeout: float,
    keep: Path | None = None,
    quiet: bool = False,
    only: set[str] | None = None,
) -> list[Outcome]:
    """``cases`` mutated inputs over every target (or the targets named in ``only``), ``jobs`` at a time."""
    work = Path(tempfile.mkdtemp(prefix="sgg-fuzz-"))
    try:
        seeds = write_seeds(work / "seeds")
        seed_snap = _snapshot(seeds)
        plans = [(t, cmd) for t in TARGETS for cmd in t.commands if only is None or t.name in only]
        if not plans:
            raise SystemExit(f"no target named {sorted(only)}; targets: {', '.join(t.name for t in TARGETS)}")
        baselines = {}
        for target, cmd in plans:  # each command on the unmutated seeds: its outputs are the reference
            folder = work / "base"
            shutil.rmtree(folder, ignore_errors=True)
            shutil.copytree(seeds, folder)
            code, sig, _ = run_case(folder, cmd, timeout)
            if code != 0:
                raise SystemExit(
                    f"seed command failed ({code}, {sig}): {' '.join(cmd)}\n" + (folder / ".stderr").read_text()
                )
            baselines[cmd] = (_outputs(_snapshot(folder), seed_snap), (folder / ".stderr").read_text())
        rnd = random.Random(seed)
        work_items = []
        for i in range(cases):
            target, cmd = plans[i % len(plans)] if i < len(plans) else rnd.choice(plans)
            work_items.append((i, target, cmd, rnd.randrange(2**32)))
        results: list[Outcome] = []
        running: dict[int, tuple] = {}
        pending = list(reversed(work_items))
        while pending or running:
            while pending and len(running) < jobs:
                i, target, cmd, case_seed = pending.pop()
                running[i] = _start(work, seeds, i, target, cmd, case_seed, timeout)
            for i in list(running):
                outcome = _poll(running[i], seed_snap, baselines, timeout)
                if outcome is not None:
                    results.append(outcome)
                    folder = running.pop(i)[0]
                    if keep is not None and outcome.cls not in OK_CLASSES:
                        shutil.copytree(folder, keep / f"{i:05d}-{outcome.cls}", dirs_exist_ok=True)
                    shutil.rmtree(folder, ignore_errors=True)
                    if not quiet and outcome.cls not in OK_CLASSES:
                        print(
                            f"{outcome.cls:9} {outcome.target:16} {outcome.mutation[:60]:60} {outcome.detail[:90]}",
                            flush=True,
                        )
            time.sleep(0.002)
        return results
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _start(work: Path, seeds: Path, i: int, target: Target, cmd, case_seed: int, timeout: float):
    folder = work / f"case{i}"
    shutil.copytree(seeds, folder)
    what, corrupting = mutate(random.Random(case_seed), target, folder)
    before = _snapshot(folder)
    pid = os.fork()
    if pid == 0:
        _run_child(folder, cmd)
    return folder, pid, time.monotonic(), target, cmd, what, corrupting, before


def _poll(state, seed_snap, baselines, timeout) -> Outcome | None:
    folder, pid, start, target, cmd, what, corrupting, before = state
    done, status = os.waitpid(pid, os.WNOHANG)
    if not done:
        if time.monotonic() - start <= timeout:
            return None
        with _suppress():
            os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        code, sig = None, None
    else:
        with _suppress():
            os.killpg(pid, signal.SIGKILL)
        code, sig = (None, os.WTERMSIG(status)) if os.WIFSIGNALED(status) else (os.WEXITSTATUS(status), None)
    cls, detail = classify(code, sig, folder, before, baselines[cmd][0], corrupting, baselines[cmd][1])
    return Outcome(target.name, cmd[0], what, cls, detail)


def table(results: list[Outcome]) -> str:
    """Counts per target and class, as a Markdown table."""
    counts = collections.Counter((r.target, r.cls) for r in results)
    targets = sorted({r.target for r in results})
    lines = ["| target | " + " | ".join(CLASSES) + " | total |", "|---" * (len(CLASSES) + 2) + "|"]
    for t in targets + ["all"]:
        row = [sum(v for (tt, c), v in counts.items() if (t == "all" or tt == t) and c == cls) for cls in CLASSES]
        lines.append(f"| {t} | " + " | ".join(str(v) for v in row) + f" | {sum(row)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--timeout", type=float, default=20.0, help="seconds per case before it counts as a hang")
    p.add_argument("--keep", type=Path, help="copy each failing case's folder here")
    p.add_argument("--targets", help="comma-separated target names (default: all)")
    args = p.parse_args(argv)
    start = time.monotonic()
    only = set(args.targets.split(",")) if args.targets else None
    results = fuzz(args.cases, args.seed, args.jobs, args.timeout, args.keep, only=only)
    print(table(results))
    bad = [r for r in results if r.cls not in OK_CLASSES]
    print(f"{len(results)} cases in {time.monotonic() - start:.0f} s; {len(bad)} outside {', '.join(OK_CLASSES)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
