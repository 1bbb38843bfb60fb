"""The benchmarking service under load, on this machine, loopback only (docs/service.md "What the service promises").

For each mode it starts a service of its own in a temporary folder (tiny simulated benchmarks), as the tests do:
``embedded`` is `sgg-eval serve` (SQLite, the embedded queue, one local worker); ``scale`` is PostgreSQL and Redis
(Debian's packages, tests/service_servers.py), `sgg-eval serve --workers 0` and two `sgg-eval worker` processes.
Then, one phase after the other:

- readers: ``--readers`` clients (each one thread, one keep-alive connection) read the home page, the boards and
  their JSON exports and result pages, as fast as they are answered, for ``--seconds``; each answer that is not
  200 is an error. Reported: requests, requests a second, p50/p95/p99 latency, errors.
- uploads: ``--uploads`` uploads at once of a ``--upload-mb`` SGBench ZIP (the simulated PSG method's, with a
  member of random bytes that the reader skips), by an admin (no daily limit). Reported: every one stored
  (201), scored once (its one score's numbers equal the unpadded file's, evaluated by the command), the web
  process's resident memory before and at its peak while the uploads arrive.

    make load-test                                    # both modes, the figures the docs give
    make load-test ARGS="--modes embedded --seconds 10 --readers 20 --uploads 4"   # a quick look

It prints one Markdown table and exits 1 when any request failed or any submission was lost or doubled. The
client shares the machine's cores with the server, so latencies are an upper bound."""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import service_servers  # noqa: E402

SGG = [sys.executable, "-m", "sgg_eval.cli"]
PSG = "psg-sim"


@contextlib.contextmanager
def started(mode: str, home: Path):
    """A service of ``mode`` in ``home``: (url, env, web process pid)."""
    port = service_servers.free_port()
    env = {**os.environ, "SGG_EVAL_SERVICE_HOME": str(home), "SGG_EVAL_SERVICE_SIMULATED_SCALE": "tiny"}
    with contextlib.ExitStack() as stack:
        if mode == "embedded":
            commands = [[*SGG, "serve", "--port", str(port)]]
        else:
            env["SGG_EVAL_SERVICE_DATABASE"] = stack.enter_context(service_servers.postgres()).url
            env["SGG_EVAL_SERVICE_BROKER"] = stack.enter_context(service_servers.redis())
            commands = [[*SGG, "serve", "--port", str(port), "--workers", "0"], [*SGG, "worker"], [*SGG, "worker"]]
        log = open(home / "serve.log", "w")  # noqa: SIM115 (closed by the stack)
        stack.callback(log.close)
        processes = []
        for command in commands:
            processes.append(subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT))
            stack.callback(_stop, processes[-1])
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 600
        while "sgg-eval service on" not in (home / "serve.log").read_text() or not service_servers.answers(url):
            if time.time() > deadline or any(p.poll() is not None for p in processes):
                raise SystemExit((home / "serve.log").read_text())
            time.sleep(0.5)
        yield url, env, processes[0].pid


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()


def admin_token(url: str, env: dict) -> str:
    """An admin made with Django's own command, logged in through the page, and its API token."""
    password = "load-test-passphrase-7"
    made = [*SGG, "manage", "createsuperuser", "--noinput", "--username", "load", "--email", "l@x.org"]
    subprocess.run(made, env={**env, "DJANGO_SUPERUSER_PASSWORD": password}, check=True, stdout=subprocess.DEVNULL)
    return service_servers.new_token(url, service_servers.logged_in(url, "load", password), "load")


def read_paths(url: str) -> list[str]:
    """What readers read: the home page, every board (page and JSON) and the result page of each approved row."""
    boards = ["vg150-sim-predcls", "vg150-sim-sgcls", "vg150-sim-sgdet", PSG]
    deadline = time.time() + 600
    while any(len(requests.get(f"{url}/b/{b}/approved.json").json()["rows"]) < 4 for b in boards):
        if time.time() > deadline:
            raise SystemExit("the pre-loaded methods were not scored in 10 minutes")
        time.sleep(1)
    ids = [r["id"] for b in boards for r in requests.get(f"{url}/b/{b}/approved.json").json()["rows"]]
    return ["/", *(f"/b/{b}/" for b in boards), *(f"/b/{b}/approved.json" for b in boards), *(f"/s/{i}/" for i in ids)]


def readers(url: str, paths: list[str], clients: int, seconds: float) -> dict:
    host, port = url.removeprefix("http://").split(":")
    latencies: list[float] = []
    by_path: dict[str, list[float]] = {}
    errors: list[str] = []
    lock, end = threading.Lock(), time.time() + seconds

    def client(k: int) -> None:
        connection, mine, bad, i = http.client.HTTPConnection(host, int(port), timeout=120), [], [], k
        while time.time() < end:
            path, i = paths[i % len(paths)], i + 1
            start = time.perf_counter()
            try:
                connection.request("GET", path)
                response = connection.getresponse()
                response.read()
                if response.status != 200:
                    bad.append(f"{path}: {response.status}")
            except (OSError, http.client.HTTPException) as exc:
                bad.append(f"{path}: {exc!r}")
                connection.close()
                connection = http.client.HTTPConnection(host, int(port), timeout=120)
            mine.append((path, time.perf_counter() - start))
        connection.close()
        with lock:
            latencies.extend(t for _, t in mine)
            for path, t in mine:
                by_path.setdefault(path.split("/")[1] + ("" if not path.endswith(".json") else ".json"), []).append(t)
            errors.extend(bad)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ms = np.asarray(latencies) * 1000
    return {
        "requests": len(ms),
        "per_s": len(ms) / seconds,
        **{f"p{q}": float(np.percentile(ms, q)) for q in (50, 95, 99)},
        "errors": len(errors),
        "first_errors": errors[:5],
        "median_ms_by_page": {k: round(float(np.median(v)) * 1000) for k, v in sorted(by_path.items())},
    }


def padded_submission(source: Path, out: Path, megabytes: int) -> None:
    """``source`` (an SGBench ZIP) with a stored member of random bytes, to ``megabytes`` in all."""
    shutil.copy(source, out)
    room = megabytes * 2**20 - out.stat().st_size - 200
    with zipfile.ZipFile(out, "a") as zf, zf.open("padding.bin", "w", force_zip64=True) as member:
        rng = np.random.default_rng(0)
        while room > 0:
            chunk = rng.integers(0, 256, min(room, 8 << 20), dtype=np.uint8).tobytes()
            member.write(chunk)
            room -= len(chunk)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def uploads(url: str, env: dict, home: Path, token: str, count: int, megabytes: int, web_pid: int) -> dict:
    source = home / "simulated/psg/outputs/sim_psg_imp.zip"
    big = home / f"padded_{megabytes}mb.zip"
    padded_submission(source, big, megabytes)
    psg = home / "simulated/psg"
    cli = home / "cli.json"
    subprocess.run([*SGG, "evaluate", str(source), "--psg", str(psg / "psg.json"), "--psg-root", str(psg / "coco"),
                    "--protocol", "sgbench", "--stats", str(psg / "stats.h5"), "-o", str(cli)],
                   check=True, stdout=subprocess.DEVNULL, env={k: v for k, v in env.items()
                                                               if not k.startswith("SGG_EVAL_SERVICE")})  # fmt: skip
    expected = json.loads(cli.read_text())["metrics"]
    before, peak, sampling = rss_mb(web_pid), [0.0], threading.Event()

    def sample() -> None:
        while not sampling.is_set():
            peak[0] = max(peak[0], rss_mb(web_pid))
            time.sleep(0.05)

    def upload(i: int) -> requests.Response:
        with open(big, "rb") as f:
            return requests.post(f"{url}/api/submissions", headers={"Authorization": f"Token {token}"},
                                 data={"benchmark": PSG, "method": f"load {i}"}, files={"file": (big.name, f)},
                                 timeout=600)  # fmt: skip

    sampler = threading.Thread(target=sample)
    sampler.start()
    start = time.time()
    with ThreadPoolExecutor(count) as pool:
        replies = list(pool.map(upload, range(count)))
    stored_s = time.time() - start
    sampling.set()
    sampler.join()
    ids = [r.json()["id"] for r in replies if r.status_code == 201]
    deadline = time.time() + 1800
    while True:
        states = [requests.get(f"{url}/api/submissions/{i}", headers={"Authorization": f"Token {token}"}).json()
                  for i in ids]  # fmt: skip
        if all(s["status"] in ("done", "failed") for s in states) or time.time() > deadline:
            break
        time.sleep(1)
    scored_s = time.time() - start
    code = "from sgg_eval.service.models import Score; import json; "
    code += f"print(json.dumps([Score.objects.filter(submission=i).count() for i in {ids}]))"
    counts = json.loads(subprocess.run([*SGG, "manage", "shell", "-c", code], env=env, capture_output=True,
                                       text=True, check=True).stdout.strip().splitlines()[-1])  # fmt: skip
    return {
        "uploads": count,
        "stored": len(ids),
        "done_equal": sum(s["status"] == "done" and s["metrics"] == expected for s in states),
        "scored_once": sum(c == 1 for c in counts),
        "stored_s": stored_s,
        "scored_s": scored_s,
        "rss_before_mb": before,
        "rss_peak_mb": peak[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="embedded,scale")
    parser.add_argument("--readers", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--uploads", type=int, default=20)
    parser.add_argument("--upload-mb", type=int, default=50)
    args = parser.parse_args()
    rows, ok = [], True
    for mode in args.modes.split(","):
        with tempfile.TemporaryDirectory(prefix=f"sgg-eval-load-{mode}-") as tmp, started(mode, Path(tmp)) as svc:
            url, env, web_pid = svc
            token = admin_token(url, env)
            read = readers(url, read_paths(url), args.readers, args.seconds)
            up = uploads(url, env, Path(tmp), token, args.uploads, args.upload_mb, web_pid)
            print(json.dumps({"mode": mode, **read, **up}), flush=True)
            ok &= read["errors"] == 0 and up["stored"] == up["done_equal"] == up["scored_once"] == args.uploads
            rows.append((mode, read, up))
    print(f"\n{args.readers} readers for {args.seconds:g} s; {args.uploads} uploads of {args.upload_mb} MB at once\n")
    print(
        "| mode | requests | per s | p50 ms | p95 ms | p99 ms | errors | uploads stored | scored once, equal to "
        "the command | all stored, s | all scored, s | web RSS before → peak, MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for mode, r, u in rows:
        print(
            f"| {mode} | {r['requests']} | {r['per_s']:.0f} | {r['p50']:.0f} | {r['p95']:.0f} | {r['p99']:.0f} | "
            f"{r['errors']} | {u['stored']}/{u['uploads']} | {min(u['done_equal'], u['scored_once'])} | "
            f"{u['stored_s']:.1f} | {u['scored_s']:.1f} | {u['rss_before_mb']:.0f} → {u['rss_peak_mb']:.0f} |"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
