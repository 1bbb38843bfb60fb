"""The benchmarking service's commands (docs/service.md): ``serve`` (the web application and a worker),
``worker`` (more workers, on any machine), ``manage`` (Django's management commands: ``createsuperuser``, ...)
and ``submit`` (upload a file from a script, with an API token). The first three need ``sgg-eval[service]``;
``submit`` needs nothing more than sgg-eval."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import yaml

from sgg_eval.core.errors import InputError
from sgg_eval.service.benchmarks import DEFAULT_HEADLINE

EXTRA = "the service needs its extra: pip install 'sgg-eval[service]'"
CONFIG = Path("~/.config/sgg-eval/service.yaml").expanduser()
FINAL = ("done", "failed")


def _launch():
    from sgg_eval.service.launch import have_service

    if not have_service():
        raise InputError(EXTRA)
    import sgg_eval.service.launch as launch

    return launch


def run_serve(args: argparse.Namespace) -> None:
    launch = _launch()
    launch.setup(args.home)
    scale = args.simulated_scale or os.environ.get("SGG_EVAL_SERVICE_SIMULATED_SCALE", "default")
    if scale not in ("tiny", "default"):
        raise InputError(f"SGG_EVAL_SERVICE_SIMULATED_SCALE must be tiny or default, got {scale!r}")
    launch.serve(args.host, args.port, args.workers, scale)


def run_worker(args: argparse.Namespace) -> None:
    launch = _launch()
    launch.setup(args.home)
    launch.run_worker(args.concurrency)


def run_manage(args: argparse.Namespace) -> None:
    launch = _launch()
    launch.setup(args.home)
    from django.core.management import execute_from_command_line

    execute_from_command_line(["sgg-eval manage", *args.arguments])


def client_settings() -> tuple[str, str]:
    """The server and the token: SGG_EVAL_SERVER and SGG_EVAL_TOKEN, else ~/.config/sgg-eval/service.yaml
    (``server:``, ``token:``)."""
    server, token = os.environ.get("SGG_EVAL_SERVER", ""), os.environ.get("SGG_EVAL_TOKEN", "")
    if (not server or not token) and CONFIG.exists():
        try:
            doc = yaml.safe_load(CONFIG.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise InputError(f"cannot read it: {exc}", path=str(CONFIG)) from None
        server, token = server or str(doc.get("server") or ""), token or str(doc.get("token") or "")
    if not server or not token:
        raise InputError(f"set SGG_EVAL_SERVER and SGG_EVAL_TOKEN, or server: and token: in {CONFIG}")
    return server.rstrip("/"), token


def run_submit(args: argparse.Namespace) -> None:
    import requests

    server, token = client_settings()
    path = Path(args.file)
    if not path.is_file():
        raise InputError("no such file", path=str(path))
    headers = {"Authorization": f"Token {token}"}
    data = {
        "benchmark": args.benchmark,
        "method": args.method or path.stem,
        "paper_url": args.paper or "",
        "code_url": args.code or "",
        "public": "on" if args.public else "",
    }
    try:
        with open(path, "rb") as f:
            reply = requests.post(
                f"{server}/api/submissions", headers=headers, data=data, files={"file": f}, timeout=600
            )
        body = _json(reply, server)
        if reply.status_code != 201:
            raise InputError(body.get("error") or f"the server answered {reply.status_code}", path=str(path))
        print(f"submitted #{body['id']} to {body['benchmark']} ({body['sha256'][:12]}…): {body['url']}", flush=True)
        while args.wait and body["status"] not in FINAL:
            time.sleep(1)
            body = _json(requests.get(f"{server}/api/submissions/{body['id']}", headers=headers, timeout=60), server)
    except requests.RequestException as exc:
        raise InputError(f"cannot reach the service at {server}: {type(exc).__name__}") from None
    if args.wait:
        from sgg_eval.report.tables import cell_text

        if body["status"] == "failed":
            raise InputError(f"scoring failed: {body['message']}", path=str(path))
        # as the pages print them: recalls in %, an undefined one (sgbench's mR with a predicate never in the GT) "-"
        shown = ", ".join(f"{k} {cell_text(k, v)}" for k, v in (body["metrics"] or {}).items() if k in args.show)
        print(f"done ({body['protocol']}, sgg-eval {body['sgg_eval_version']}): {shown}")


def _json(reply, server: str) -> dict:
    try:
        return reply.json()
    except ValueError:
        raise InputError(f"{server} did not answer as an sgg-eval service (HTTP {reply.status_code})") from None


def add(sub) -> None:
    """The sub-commands ``serve``, ``worker``, ``manage`` and ``submit`` of ``sub``."""
    home = {"default": None, "help": "the service's folder (default: $SGG_EVAL_SERVICE_HOME or ./service)"}
    p = sub.add_parser(
        "serve",
        help="start the benchmarking service: web application and a worker (docs/service.md)",
        description="The benchmarking service on an embedded default: SQLite and a local folder, "
        "no other server; its benchmarks from SGG_EVAL_SERVICE_BENCHMARKS, else the SIMULATED VG150 "
        "ones, made on first start.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--home", **home)
    p.add_argument("--workers", type=int, default=1, help="evaluations at a time on this machine (0: none)")
    p.add_argument(
        "--simulated-scale",
        choices=["tiny", "default"],
        help="size of the SIMULATED benchmarks made on first start (default: $SGG_EVAL_SERVICE_SIMULATED_SCALE or "
        "default)",
    )
    p.set_defaults(func=run_serve)
    p = sub.add_parser("worker", help="a worker of the service's queue (on any machine; docs/service.md)")
    p.add_argument("--home", **home)
    p.add_argument("--concurrency", type=int, default=1, help="evaluations at a time")
    p.set_defaults(func=run_worker)
    p = sub.add_parser("manage", help="the service's Django management commands, e.g. createsuperuser")
    p.add_argument("--home", **home)
    p.add_argument("arguments", nargs=argparse.REMAINDER)
    p.set_defaults(func=run_manage)
    p = sub.add_parser(
        "submit",
        help="upload a prediction file to a benchmarking service",
        description="Upload FILE to a benchmark of an sgg-eval service. The server and the token "
        "come from SGG_EVAL_SERVER and SGG_EVAL_TOKEN, or from ~/.config/sgg-eval/service.yaml.",
    )
    p.add_argument("file", help="a prediction file `sgg-eval evaluate` reads for the benchmark's product")
    p.add_argument("--benchmark", required=True, help="the benchmark's name, as in its address /b/NAME/")
    p.add_argument("--method", help="the method's name on the board (default: the file's name)")
    p.add_argument("--paper", help="link to the paper")
    p.add_argument("--code", help="link to the code")
    p.add_argument("--public", action="store_true", help="publish it on the public board once scored")
    p.add_argument("--wait", action="store_true", help="wait for the score and print it")
    p.add_argument("--show", nargs="*", default=list(DEFAULT_HEADLINE), help="metrics --wait prints")
    p.set_defaults(func=run_submit)
