"""The benchmarking service (issue 66) as its users meet it: the real server (`sgg-eval serve`, waitress), a real
Celery worker on the embedded queue and a real SQLite database, started once for the module at the tiny simulated
scale. Accounts and tokens are made through the pages, files go up with `sgg-eval submit` and the API, and every
number is checked against `sgg-eval evaluate` on the same file. The browser test drives Chromium through the pages
(tests/browser.py) as a new user would."""

from __future__ import annotations

import contextlib
import html
import io
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import requests
import service_servers
import tifffile
from browser import Browser, browser_or_skip
from reproduced import ROOT, shell_env
from service_servers import answers, csrf
from test_bad_inputs import CORRUPT_FILES
from torch_writer import eval_results_object

from sgg_eval.core.protocols import BY_NAME
from sgg_eval.service.storage import STORAGE_FULL
from sgg_eval.service.unavailable import UNAVAILABLE

sys.path.insert(0, str(Path(__file__).resolve().parent / "fuzz"))
from mutations import corrupt_store_bytes  # noqa: E402 (the project's fuzzer, tests/fuzz)
from seeds import _cases  # noqa: E402

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out

SGG = [sys.executable, "-m", "sgg_eval.cli"]
PREDCLS = "vg150-sim-predcls"
PSG = "psg-sim"
MAX_UPLOAD_MB = 32  # the services' upload limit here (SGG_EVAL_SERVICE_MAX_UPLOAD_MB), so that a test can pass it
PASSWORD = "a-long-passphrase-7"


class Service:
    def __init__(self, mode: str, home: Path, port: int, env: dict, processes: list, log: Path):
        self.mode, self.home, self.url, self.env = mode, home, f"http://127.0.0.1:{port}", env
        self.process, self.processes, self.log = processes[0], processes, log
        self.root_before: set[str] = set()
        self.commands: list = []
        self.stack: contextlib.ExitStack | None = None

    def kill_and_restart_web(self) -> None:
        """SIGKILL to the web server's process group (embedded: make, serve and its worker, as a power cut would),
        then its command again, as an init system restarts it, until it answers."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        started = len(self.log.read_text())
        command, env = self.commands[0]
        with open(self.log, "a") as out:
            self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)  # fmt: skip
        self.processes[0] = self.process
        self.stack.callback(_stop, self.process)
        deadline = time.time() + 300
        while "sgg-eval service on" not in self.log.read_text()[started:] or not answers(self.url):
            assert self.process.poll() is None and time.time() < deadline, self.log.read_text()[started:]
            time.sleep(0.5)

    def output(self, name: str) -> Path:
        """A SIMULATED model's output the service made for its approved board (tiny scale)."""
        return self.home / "simulated/outputs" / name

    def evaluate(self, file: Path, task: str = "predcls") -> dict:
        """`sgg-eval evaluate` on ``file``, with the benchmark's ground truth: the numbers the board must show."""
        sim = self.home / "simulated"
        out = file.parent / f"{file.name}.cli.json"
        args = [str(file), "--gt", str(sim / "splits/test.h5"), "--task", task, "--protocol", "reference"]
        subprocess.run(
            [*SGG, "evaluate", *args, "--stats", str(sim / "stats.h5"), "-o", str(out)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return json.loads(out.read_text())["metrics"]

    def evaluate_psg(self, file: Path) -> dict:
        """`sgg-eval evaluate --psg` on an SGBench submission, with the simulated PSG benchmark's ground truth."""
        psg = self.home / "simulated/psg"
        out = file.parent / f"{file.name}.cli.json"
        args = [str(file), "--psg", str(psg / "psg.json"), "--psg-root", str(psg / "coco"), "--protocol", "sgbench"]
        subprocess.run(
            [*SGG, "evaluate", *args, "--stats", str(psg / "stats.h5"), "-o", str(out)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return json.loads(out.read_text())["metrics"]


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    with _started("embedded", tmp_path_factory) as svc:
        yield svc


@pytest.fixture(scope="module")
def scaled(embedded, tmp_path_factory):
    """Its simulated benchmarks copied from the embedded service's (made once: `serve` finds them made)."""
    with _started("scale", tmp_path_factory, simulated=embedded.home / "simulated") as svc:
        yield svc


@pytest.fixture(params=["embedded", "scaled"])
def service(request):
    """Each test of both modes runs on both services."""
    return request.getfixturevalue(request.param)


@contextlib.contextmanager
def _started(mode: str, tmp_path_factory, simulated: Path | None = None):
    """Embedded: the README's `make serve`, run as written, with its port, its folder and the tiny simulated scale
    from the environment. Scale: real PostgreSQL and Redis servers (tests/service_servers.py), `sgg-eval serve
    --workers 0` and two `sgg-eval worker` processes, as docs/service.md runs them on several machines. Both get an
    admin made with Django's own command, as `make serve-admin` makes one (without its prompt)."""
    with contextlib.ExitStack() as stack:
        database = None
        home = tmp_path_factory.mktemp(f"service-{mode}")
        if simulated is not None:
            shutil.copytree(simulated, home / "simulated")
        port, log = service_servers.free_port(), home / "serve.log"
        env = {**shell_env(), "SGG_EVAL_SERVICE_HOME": str(home), "SGG_EVAL_SERVICE_SIMULATED_SCALE": "tiny",
               "SGG_EVAL_SERVICE_MAX_UPLOAD_MB": str(MAX_UPLOAD_MB)}  # fmt: skip
        if mode == "embedded":
            commands = [(["make", "serve"], {**env, "PORT": str(port), "SERVICE_HOME": str(home)})]
        else:
            if not service_servers.available():
                if os.environ.get("SGG_EVAL_SCALE_REQUIRED") == "1":
                    pytest.fail("no PostgreSQL or redis-server here, and SGG_EVAL_SCALE_REQUIRED=1")
                pytest.skip("no PostgreSQL or redis-server (apt install postgresql redis-server); CI installs them")
            database = stack.enter_context(service_servers.postgres())
            env["SGG_EVAL_SERVICE_DATABASE"] = database.url
            env["SGG_EVAL_SERVICE_BROKER"] = stack.enter_context(service_servers.redis())
            serve = [*SGG, "serve", "--port", str(port), "--workers", "0"]
            commands = [(serve, env), ([*SGG, "worker"], env), ([*SGG, "worker"], env)]
        before = set(os.listdir(ROOT))
        processes = []
        with open(log, "w") as out:
            for command, command_env in commands:
                processes.append(subprocess.Popen(command, cwd=ROOT, env=command_env, stdout=out,
                                                  stderr=subprocess.STDOUT, start_new_session=True))  # fmt: skip
                stack.callback(_stop, processes[-1])
        svc = Service(mode, home, port, env, processes, log)
        svc.root_before, svc.commands, svc.stack = before, commands, stack
        svc.database = database
        deadline = time.time() + 300
        while "sgg-eval service on" not in log.read_text() or not answers(svc.url):
            assert all(p.poll() is None for p in processes) and time.time() < deadline, log.read_text()
            time.sleep(0.5)
        subprocess.run(
            [*SGG, "manage", "createsuperuser", "--noinput", "--username", "admin", "--email", "a@b.org"],
            env={**env, "DJANGO_SUPERUSER_PASSWORD": PASSWORD},
            check=True,
            stdout=subprocess.DEVNULL,
        )
        yield svc


def _stop(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):  # a worker a test killed
        os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=60)


def signed_up(service: Service, name: str) -> requests.Session:
    """A new account, made through the sign-up page (its CSRF token and all); the session is logged in."""
    web = requests.Session()
    page = web.get(f"{service.url}/signup/")
    form = {"csrfmiddlewaretoken": csrf(page.text), "username": name, "password1": PASSWORD, "password2": PASSWORD}
    reply = web.post(f"{service.url}/signup/", data=form, headers={"Referer": f"{service.url}/signup/"})
    assert reply.status_code == 200 and f">{name}</a>" in reply.text, reply.text[-2000:]
    return web


def logged_in(service: Service, name: str) -> requests.Session:
    return service_servers.logged_in(service.url, name, PASSWORD)


def new_token(service: Service, web: requests.Session) -> str:
    return service_servers.new_token(service.url, web)


def submit(service: Service, token: str, file: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SGG_EVAL_SERVER": service.url, "SGG_EVAL_TOKEN": token}
    env.pop("SGG_EVAL_SERVICE_HOME", None)
    return subprocess.run(
        [*SGG, "submit", str(file), "--benchmark", PREDCLS, *args], env=env, capture_output=True, text=True, timeout=300
    )


def api(service: Service, token: str | None, path: str, method: str = "get", **kw) -> requests.Response:
    headers = {"Authorization": f"Token {token}"} if token else {}
    return getattr(requests, method)(f"{service.url}{path}", headers=headers, timeout=60, **kw)


def submitted_id(out: str) -> int:
    return int(re.search(r"submitted #(\d+)", out).group(1))


def test_the_approved_board_is_preloaded_with_the_simulated_methods(service):
    board = requests.get(f"{service.url}/b/{PREDCLS}/approved.json").json()
    deadline = time.time() + 240
    while len(board["rows"]) < 4 and time.time() < deadline:
        time.sleep(1)
        board = requests.get(f"{service.url}/b/{PREDCLS}/approved.json").json()
    by_method = {r["method"]: r for r in board["rows"]}
    assert set(by_method) == {"Motifs", "Motifs + TDE", "VCTree", "VCTree + TDE"}, board
    assert by_method["Motifs"]["paper"] == "https://arxiv.org/abs/1711.06640"
    expected = service.evaluate(service.output("sim_motifs_baseline_predcls.h5"))
    assert by_method["Motifs"]["R@50"] == expected["R@50"] and by_method["Motifs"]["mR@100"] == expected["mR@100"]
    page = html.unescape(requests.get(f"{service.url}/b/{PREDCLS}/approved/").text)
    ref = BY_NAME["reference"]
    assert "SIMULATED" in page and f"Protocol reference: {ref.summary} ({ref.source.tool}, {ref.source.where})" in page
    ranked = [r["R@50"] for r in board["rows"]]
    assert ranked == sorted(ranked, reverse=True)
    by_mr = requests.get(f"{service.url}/b/{PREDCLS}/approved.json", params={"sort": "mR@50"}).json()["rows"]
    assert [r["mR@50"] for r in by_mr] == sorted((r["mR@50"] for r in by_mr), reverse=True)
    csv = requests.get(f"{service.url}/b/{PREDCLS}/approved.csv").text.splitlines()
    assert (
        csv[0].startswith("rank,id,method,paper,code,date,protocol,sgg_eval_version,sha256,url,R@50") and len(csv) == 5
    )


def test_submit_with_a_token_scores_the_file_as_the_command_does(service, tmp_path):
    web = signed_up(service, "alice")
    token = new_token(service, web)
    file = service.output("sim_motifs_baseline_predcls.h5")
    done = submit(service, token, file, "--method", "Alice's Motifs", "--public", "--wait")
    assert done.returncode == 0, done.stderr
    sid = submitted_id(done.stdout)
    body = api(service, token, f"/api/submissions/{sid}").json()
    assert body["status"] == "done" and body["protocol"] == "reference" and body["sgg_eval_version"]
    import hashlib

    assert body["sha256"] == hashlib.sha256(file.read_bytes()).hexdigest()
    assert body["metrics"] == service.evaluate(file)  # every number, to the last bit
    rows = requests.get(f"{service.url}/b/{PREDCLS}/public.json").json()["rows"]
    assert [r["id"] for r in rows if r["method"] == "Alice's Motifs"] == [sid]


def test_a_revoked_token_is_refused(service):
    web = signed_up(service, "frank")
    token = new_token(service, web)
    page = web.get(f"{service.url}/tokens/")
    revoke = re.findall(r'action="(/tokens/\d+/revoke)"', page.text)[0]  # the newest first
    web.post(f"{service.url}{revoke}", data={"csrfmiddlewaretoken": csrf(page.text)}, headers={"Referer": page.url})
    refused = submit(service, token, service.output("sim_motifs_baseline_predcls.h5"))
    refusal = "a valid API token is required (Authorization: Token ...)"
    assert refused.returncode == 2 and refused.stderr.strip().endswith(refusal), refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert api(service, token, "/api/submissions/1/approve", "post").status_code == 401


def test_the_panoptic_benchmark_scores_an_sgbench_zip_as_the_command_does(service):
    """The simulated PSG benchmark: its eight methods pre-loaded with their papers and code, and a user's SGBench
    ZIP scored by protocol sgbench to the last bit of `sgg-eval evaluate --psg`."""
    deadline = time.time() + 240
    while len(rows := requests.get(f"{service.url}/b/{PSG}/approved.json").json()["rows"]) < 8:
        assert time.time() < deadline, rows
        time.sleep(1)
    by_method = {r["method"]: r for r in rows}
    assert by_method["HiLo"]["paper"] == "https://arxiv.org/abs/2303.15994" and len(by_method) == 8
    assert {r["protocol"] for r in rows} == {"sgbench"}
    file = service.home / "simulated/psg/outputs/sim_psg_imp.zip"
    assert by_method["IMP"]["R@50"] == service.evaluate_psg(file)["R@50"]
    token = new_token(service, signed_up(service, "pam"))
    done = submit(service, token, file, "--benchmark", PSG, "--method", "Pam's PSG", "--wait")
    assert done.returncode == 0, done.stderr
    body = api(service, token, f"/api/submissions/{submitted_id(done.stdout)}").json()
    assert body["status"] == "done" and body["protocol"] == "sgbench"
    assert body["metrics"] == service.evaluate_psg(file)  # every number, to the last bit
    page = requests.get(f"{service.url}/s/{by_method['IMP']['id']}/")
    assert page.status_code == 200 and 'id="confusion-chart"' in page.text and "SIMULATED" in page.text


def test_a_private_submission_is_invisible_to_everyone_else(service):
    bob_web = signed_up(service, "bob")
    bob = new_token(service, bob_web)
    done = submit(service, bob, service.output("sim_vctree_baseline_predcls.h5"), "--method", "Bob's secret", "--wait")
    assert done.returncode == 0, done.stderr
    sid = submitted_id(done.stdout)
    carol_web = signed_up(service, "carol")
    carol = new_token(service, carol_web)
    assert bob_web.get(f"{service.url}/s/{sid}/").status_code == 200  # its owner sees it
    assert api(service, bob, f"/api/submissions/{sid}").status_code == 200
    for guess in (f"/s/{sid}/", f"/s/{sid}/data.js"):  # another account, and nobody, by guessing its address
        assert carol_web.get(f"{service.url}{guess}").status_code == 404
        assert requests.get(f"{service.url}{guess}").status_code == 404
    # nor among the results a public page compares with, except for its owner
    approved = requests.get(f"{service.url}/b/{PREDCLS}/approved.json").json()["rows"][0]["id"]
    assert "Bob's secret" in bob_web.get(f"{service.url}/s/{approved}/data.js").text
    for web in (carol_web, requests):
        assert "Bob's secret" not in web.get(f"{service.url}/s/{approved}/data.js").text
    assert api(service, carol, f"/api/submissions/{sid}").status_code == 404
    assert api(service, None, f"/api/submissions/{sid}").status_code == 404
    for board in ("public", "approved"):
        rows = requests.get(f"{service.url}/b/{PREDCLS}/{board}.json").json()["rows"]
        assert sid not in [r["id"] for r in rows]
    # only an admin puts a row on the approved board
    assert api(service, bob, f"/api/submissions/{sid}/approve", "post").status_code == 403
    assert api(service, carol, f"/api/submissions/{sid}/approve", "post").status_code == 403
    admin = new_token(service, logged_in(service, "admin"))
    assert api(service, admin, f"/api/submissions/{sid}/approve", "post").json()["approved"] is True
    rows = requests.get(f"{service.url}/b/{PREDCLS}/approved.json").json()["rows"]
    assert sid in [r["id"] for r in rows]


def test_a_file_the_command_refuses_fails_with_its_line_and_the_service_stays_up(service, tmp_path):
    web = signed_up(service, "dave")
    token = new_token(service, web)
    bad = tmp_path / "broken.h5"
    bad.write_bytes(b"not an HDF5 file\n" * 10)
    failed = submit(service, token, bad, "--wait")
    assert failed.returncode == 2
    sid = submitted_id(failed.stdout)
    body = api(service, token, f"/api/submissions/{sid}").json()
    command = subprocess.run(
        [*SGG, "evaluate", "broken.h5", "--gt", str(service.home / "simulated/splits/test.h5"), "--task", "predcls"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert command.returncode == 2 and body["status"] == "failed"
    assert body["message"] == command.stderr.strip(), (body["message"], command.stderr)
    assert failed.stderr.strip().endswith(f"scoring failed: {body['message']}"), failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1
    print(failed.stderr)
    assert all(p.poll() is None for p in service.processes) and answers(service.url)
    ok = submit(service, token, service.output("sim_motifs_tde_predcls.h5"), "--wait")
    assert ok.returncode == 0, ok.stderr  # the worker goes on


def test_a_new_user_signs_up_uploads_through_the_form_and_sees_the_public_board(embedded, tmp_path):
    """On the README's service; the pages are the same at scale."""
    service = embedded
    browser_or_skip()
    file = service.output("sim_motifs_baseline_predcls.h5")
    with Browser() as b:
        page = b.open(f"{service.url}/signup/")
        password = json.dumps(PASSWORD)
        page.eval(
            "(() => {const f = document.getElementById('signup'); f.username.value = 'erin';"
            f" f.password1.value = {password}; f.password2.value = {password}; f.submit();}})()"
        )
        page.wait_until("document.querySelector('.me a') && document.querySelector('.me a').textContent === 'erin'")
        page.goto(f"{service.url}/b/{PREDCLS}/submit")
        page.eval("document.querySelector('#upload [name=method]').value = 'Erin Motifs'")
        page.eval("document.querySelector('#upload [name=public]').checked = true")
        node = page.send("Runtime.evaluate", expression="document.querySelector('#upload [name=file]')")["result"]
        page.send("DOM.setFileInputFiles", files=[str(file)], objectId=node["objectId"])
        page.eval("document.getElementById('upload').submit()")
        page.wait_until("location.pathname.startsWith('/s/')")
        page.wait_until("document.getElementById('status').textContent === 'done'", timeout=120)
        sid = int(page.eval("location.pathname.split('/')[2]"))
        # the result's page is the results site's model page: its grid, per-predicate and confusion charts
        page.wait_until("document.body.getAttribute('data-ready') === '1'")
        cells = "[...document.querySelectorAll('table.grid td[data-m]')].map(c => [c.dataset.m, c.dataset.v])"
        shown = dict(page.eval(cells))
        assert page.eval("document.querySelectorAll('#pp-chart svg rect').length") > 0
        assert page.eval("document.querySelectorAll('#confusion-chart svg rect').length") > 0
        assert page.eval("document.getElementById('browser') === null")  # no image browser: the GT is hidden
        # compared with a pre-loaded method: the difference of every cell
        others = page.eval("[...document.getElementById('compare').options].map(o => o.textContent)")
        assert any(o.startswith("Motifs + TDE") for o in others), others
        page.eval("(() => {const s = document.getElementById('compare'); s.value = s.options[1].value;"
                  " s.dispatchEvent(new Event('change'));})()")  # fmt: skip
        assert page.eval("document.getElementById('compare-note').textContent").startswith("differences: Erin Motifs")
        page.screenshot(os.environ.get("SGG_EVAL_SHOT_DIR", str(tmp_path)) + "/submission.png")
        page.goto(f"{service.url}/b/{PREDCLS}/public/")
        assert "Erin Motifs" in page.eval("document.getElementById('board').innerText")
        assert "SIMULATED" in page.eval("document.body.innerText")
        page.screenshot(os.environ.get("SGG_EVAL_SHOT_DIR", str(tmp_path)) + "/board.png")
        assert not page.errors, page.errors
    row = [r for r in requests.get(f"{service.url}/b/{PREDCLS}/public.json").json()["rows"] if r["id"] == sid]
    expected = service.evaluate(file)
    assert row and all(row[0][m] == expected[m] for m in ("R@50", "R@100", "mR@50", "mR@100"))
    assert {m: float(v) for m, v in shown.items() if v} == {m: v for m, v in expected.items() if v is not None}


def admin_action(web: requests.Session, service: Service, action: str, sid: int) -> None:
    """One of the admin's actions on the submissions' list page, as the admin's form posts it."""
    page = web.get(f"{service.url}/admin/service/submission/")
    data = {"csrfmiddlewaretoken": csrf(page.text), "action": action, "_selected_action": [str(sid)], "index": "0"}
    assert web.post(page.url, data=data, headers={"Referer": page.url}).status_code == 200


def test_the_admin_hides_shows_and_rescores_keeping_the_old_numbers(service):
    token = new_token(service, signed_up(service, "gina"))
    done = submit(service, token, service.output("sim_vctree_tde_predcls.h5"), "--method", "Gina", "--public", "--wait")
    assert done.returncode == 0, done.stderr
    sid = submitted_id(done.stdout)
    admin = logged_in(service, "admin")
    on_board = lambda: sid in [r["id"] for r in requests.get(f"{service.url}/b/{PREDCLS}/public.json").json()["rows"]]  # noqa: E731
    assert on_board()
    admin_action(admin, service, "hide", sid)
    assert not on_board() and requests.get(f"{service.url}/s/{sid}/").status_code == 404
    admin_action(admin, service, "unhide", sid)
    assert on_board()
    before = api(service, token, f"/api/submissions/{sid}").json()
    admin_action(admin, service, "rescore", sid)
    deadline = time.time() + 120
    while api(service, token, f"/api/submissions/{sid}").json()["status"] != "done" or _scores(service, sid) < 2:
        assert time.time() < deadline
        time.sleep(0.5)
    after = api(service, token, f"/api/submissions/{sid}").json()
    assert after["metrics"] == before["metrics"] and _scores(service, sid) == 2  # the old score is kept


def _scores(service: Service, sid: int) -> int:
    return int(_orm(service, f"Score.objects.filter(submission={sid}).count()"))


def _orm(service: Service, expression: str) -> str:
    """``expression`` over the service's models, evaluated by `sgg-eval manage shell`; what it prints."""
    code = f"from sgg_eval.service.models import Score, Submission; print({expression})"
    run = subprocess.run([*SGG, "manage", "shell", "-c", code], env=service.env, capture_output=True, text=True,
                         check=True)  # fmt: skip
    return run.stdout.strip().splitlines()[-1]


def test_the_service_writes_nothing_outside_its_folder(service):
    """Its database, uploads, queue (kombu's control folder too) and simulated data are all in SERVICE_HOME."""
    assert set(os.listdir(ROOT)) == service.root_before
    kept = {"uploads", "simulated", "secret_key"} | ({"db.sqlite3", "queue"} if service.mode == "embedded" else set())
    assert kept <= set(os.listdir(service.home))


def test_at_scale_both_workers_score_and_the_numbers_are_the_same(scaled):
    """The pre-loaded rows (12 evaluations at start) are shared by the two worker processes; each number equals
    the command's, whichever worker computed it."""
    service = scaled
    code = "import json; from sgg_eval.service.models import Score as S; "
    code += "print(json.dumps(sorted(set(S.objects.values_list('worker', flat=True)))))"
    deadline = time.time() + 240
    while len(requests.get(f"{service.url}/b/vg150-sim-sgdet/approved.json").json()["rows"]) < 4:
        assert time.time() < deadline
        time.sleep(1)
    run = subprocess.run([*SGG, "manage", "shell", "-c", code], env=service.env, capture_output=True, text=True,
                         check=True)  # fmt: skip
    workers = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(workers) == 2, workers
    rows = requests.get(f"{service.url}/b/vg150-sim-sgdet/approved.json").json()["rows"]
    motifs = next(r for r in rows if r["method"] == "Motifs")
    expected = service.evaluate(service.output("sim_motifs_baseline_sgdet.h5"), task="sgdet")
    assert all(motifs[m] == expected[m] for m in ("R@50", "R@100", "mR@50", "mR@100"))


def test_the_daily_limit_holds_under_concurrent_uploads_and_refuses_with_a_line(service, tmp_path):
    """Eight uploads at once against a limit of five: five are taken, three refused (429), on SQLite and PostgreSQL;
    then the command's refusal is one line that says why."""
    token = new_token(service, signed_up(service, "hugo"))

    def upload(i: int) -> requests.Response:  # junk: refused by the command at once, cheap to score
        data = {"benchmark": PREDCLS, "method": f"m{i}"}
        return api(service, token, "/api/submissions", "post", data=data, files={"file": ("junk.h5", b"junk")})

    with ThreadPoolExecutor(8) as pool:
        statuses = sorted(r.status_code for r in pool.map(upload, range(8)))
    assert statuses == [201] * 5 + [429] * 3, statuses  # the benchmark's daily_limit is 5
    limit = f"{PREDCLS} takes 5 submissions a day per user; try again later"
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"junk")
    refused = submit(service, token, junk)
    assert refused.returncode == 2 and refused.stderr.strip().endswith(limit), refused.stderr
    assert upload(9).json() == {"error": limit}


def test_an_upload_over_the_limit_is_cut_off_before_anything_keeps_it(service):
    """A body over SGG_EVAL_SERVICE_MAX_UPLOAD_MB is refused with 413 as it arrives, whether it says its length or is
    sent in chunks: no submission, no file in the uploads folder, and the service goes on."""
    token = new_token(service, signed_up(service, "oscar"))
    uploads = service.home / "uploads"
    before = sorted(uploads.rglob("*")) if uploads.exists() else []
    big = b"\0" * ((MAX_UPLOAD_MB + 1) * 2**20)
    data = {"benchmark": PREDCLS, "method": "too big"}
    said = api(service, token, "/api/submissions", "post", data=data, files={"file": ("big.h5", big)})
    assert said.status_code == 413, said.status_code

    def chunks():  # no Content-Length: waitress counts the chunks
        yield b'--x\r\nContent-Disposition: form-data; name="file"; filename="big.h5"\r\n\r\n'
        for _ in range(MAX_UPLOAD_MB + 1):
            yield b"\0" * 2**20

    headers = {"Authorization": f"Token {token}", "Content-Type": "multipart/form-data; boundary=x"}
    chunked = requests.post(f"{service.url}/api/submissions", data=chunks(), headers=headers, timeout=60)
    assert chunked.status_code == 413, chunked.status_code
    assert (sorted(uploads.rglob("*")) if uploads.exists() else []) == before
    assert answers(service.url)


def test_log_in_is_locked_for_a_name_after_five_failures_and_cookies_stay_on_the_site(service):
    """django-axes: the fifth wrong password for one name locks that name out from this address (429), the right
    password too; another account logs in as before. The session cookie is HttpOnly and SameSite=Lax."""
    signed_up(service, "victor")
    attacker = requests.Session()
    for attempt in range(1, 6):  # the form again four times; the fifth failure locks the name out
        page = attacker.get(f"{service.url}/login/")
        form = {"csrfmiddlewaretoken": csrf(page.text), "username": "victor", "password": "not-the-password"}
        status = attacker.post(page.url, data=form, headers={"Referer": page.url}).status_code
        assert status == (429 if attempt == 5 else 200), (attempt, status)
    page = attacker.get(f"{service.url}/login/")
    form = {"csrfmiddlewaretoken": csrf(page.text), "username": "victor", "password": PASSWORD}
    locked = attacker.post(page.url, data=form, headers={"Referer": page.url}, allow_redirects=False)
    assert locked.status_code == 429, locked.status_code
    signed_up(service, "wendy")
    web = requests.Session()
    page = web.get(f"{service.url}/login/")
    form = {"csrfmiddlewaretoken": csrf(page.text), "username": "wendy", "password": PASSWORD}
    reply = web.post(page.url, data=form, headers={"Referer": page.url}, allow_redirects=False)
    assert reply.status_code == 302, reply.status_code
    cookie = next(c for c in reply.raw.headers.getlist("Set-Cookie") if c.startswith("sessionid="))
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie, cookie


def test_no_account_changes_another_accounts_things_or_reaches_the_admin(service):
    """Every object is checked against its owner: another account's publish, withdraw and token revocation get 404
    and change nothing; a form posted without its CSRF token gets 403; the admin pages send a non-admin to log in."""
    bob_web = signed_up(service, "bob2")
    bob = new_token(service, bob_web)
    data = {"benchmark": PREDCLS, "method": "Bob's"}
    sid = api(service, bob, "/api/submissions", "post", data=data, files={"file": ("junk.h5", b"junk")}).json()["id"]
    bob_token_id = re.search(r'action="/tokens/(\d+)/revoke"', bob_web.get(f"{service.url}/tokens/").text).group(1)
    eve = signed_up(service, "eve")
    eve_csrf = csrf(eve.get(f"{service.url}/tokens/").text)
    for path in (f"/s/{sid}/publish", f"/s/{sid}/withdraw", f"/tokens/{bob_token_id}/revoke"):
        reply = eve.post(f"{service.url}{path}", data={"csrfmiddlewaretoken": eve_csrf, "public": "1"},
                         headers={"Referer": f"{service.url}/"})  # fmt: skip
        assert reply.status_code == 404, (path, reply.status_code)
    assert bob_web.post(f"{service.url}/s/{sid}/publish", data={"public": "1"}).status_code == 403  # no CSRF token
    body = api(service, bob, f"/api/submissions/{sid}").json()  # bob's token still works; his row is as it was
    assert body["public"] is False
    admin_page = eve.get(f"{service.url}/admin/service/submission/", allow_redirects=False)
    assert admin_page.status_code == 302 and "/admin/login/" in admin_page.headers["Location"]


def test_a_worker_killed_while_scoring_loses_nothing_and_doubles_nothing(service):
    """SIGKILL to the worker that is scoring a submission: once a worker starts again (embedded: `serve` starts its
    own again; at scale: a new `sgg-eval worker`, as an init system restarts one), it re-queues the submission,
    which ends `done` with one score, equal to the command's. Last in the module: it kills a worker."""
    admin = new_token(service, logged_in(service, "admin"))  # the API shows an admin the claiming worker
    file = service.output("sim_vctree_baseline_sgdet.h5")
    data = {"benchmark": "vg150-sim-sgdet", "method": "killed"}
    with open(file, "rb") as f:
        sid = api(service, admin, "/api/submissions", "post", data=data, files={"file": f}).json()["id"]
    deadline = time.time() + 120
    while (body := api(service, admin, f"/api/submissions/{sid}").json())["status"] == "queued":
        assert time.time() < deadline
        time.sleep(0.02)
    assert body["status"] == "running", body  # caught while it is scored (the child takes a second to start)
    host, _, pid = body["worker"].rpartition(":")
    os.kill(int(pid), signal.SIGKILL)
    if service.mode == "scale":  # the test started the workers: it reaps the dead one, as an init system would
        next(p for p in service.processes if p.pid == int(pid)).wait(timeout=30)
        service.processes.append(subprocess.Popen([*SGG, "worker"], cwd=ROOT, env=service.env,
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                  start_new_session=True))  # fmt: skip
    while (body := api(service, admin, f"/api/submissions/{sid}").json())["status"] != "done":
        assert time.time() < deadline and body["status"] != "failed", body
        time.sleep(0.5)
    assert body["worker"] != f"{host}:{pid}"  # another worker scored it
    assert _scores(service, sid) == 1
    assert body["metrics"] == service.evaluate(file, "sgdet")
    if service.mode == "scale":
        _stop(service.processes.pop())


def test_a_web_server_killed_during_an_upload_leaves_no_submission_and_no_file(service):
    """SIGKILL to the web server while an 8 MB upload is half sent, then the server started again: no submission
    was recorded, the dead server's incoming folder is gone, and a stored file no submission names (what a kill
    between storing and recording leaves; planted here, that instant is too short to hit) is removed."""
    token = new_token(service, signed_up(service, "ivan"))
    stored = service.home / "uploads/submissions"
    stray = stored / "2020/01/stray.h5"
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_bytes(b"x")
    os.utime(stray, (0, 0))
    head = (f'--x\r\nContent-Disposition: form-data; name="benchmark"\r\n\r\n{PREDCLS}\r\n'
            '--x\r\nContent-Disposition: form-data; name="method"\r\n\r\ncut\r\n'
            '--x\r\nContent-Disposition: form-data; name="file"; filename="cut.h5"\r\n\r\n').encode()  # fmt: skip
    size = len(head) + 8 * 2**20 + len(b"\r\n--x--\r\n")
    with socket.create_connection(("127.0.0.1", int(service.url.rsplit(":", 1)[1])), timeout=60) as connection:
        connection.sendall(f"POST /api/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token {token}\r\n"
                           f"Content-Type: multipart/form-data; boundary=x\r\nContent-Length: {size}\r\n\r\n"
                           .encode() + head + b"\0" * 4 * 2**20)  # fmt: skip
        service.kill_and_restart_web()
    assert _orm(service, "Submission.objects.filter(method='cut').count()") == "0"
    incoming = service.home / "incoming"
    assert [[*p.iterdir()] for p in incoming.iterdir()] == [[]]  # the new server's own folder, empty
    assert not stray.exists()
    names = json.loads(
        _orm(service, "__import__('json').dumps(list(Submission.objects.values_list('file', flat=True)))")
    )
    assert sorted(p.relative_to(stored.parent).as_posix() for p in stored.rglob("*") if p.is_file()) == sorted(names)
    assert api(service, token, "/api/submissions", "post", data={"benchmark": PREDCLS, "method": "after"},
               files={"file": ("after.h5", b"junk")}).status_code == 201  # fmt: skip


def test_a_full_disk_refuses_an_upload_with_a_line_and_keeps_nothing(service):
    """A 1 MB tmpfs mounted over the running server's incoming folder (needs root: `mount`), then a 3 MB upload,
    by API and by the form: each refused (507) with the one line, no submission, and nothing left in the folder."""
    [incoming] = (service.home / "incoming").iterdir()  # the running server's own (leftovers.py)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(incoming)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small disk here: {mounted.stderr.decode().strip()}")
    try:
        web = signed_up(service, "nina")
        token = new_token(service, web)
        big = ("full.h5", b"\0" * 3 * 2**20)
        reply = api(service, token, "/api/submissions", "post", data={"benchmark": PREDCLS, "method": "full"},
                    files={"file": big})  # fmt: skip
        assert reply.status_code == 507 and reply.json() == {"error": STORAGE_FULL}, reply.text
        page = web.get(f"{service.url}/b/{PREDCLS}/submit")
        form = {"csrfmiddlewaretoken": csrf(page.text), "method": "full"}
        reply = web.post(page.url, data=form, files={"file": big}, headers={"Referer": page.url})
        assert reply.status_code == 507 and html.escape(STORAGE_FULL) in reply.text
        assert list(incoming.iterdir()) == []
    finally:
        subprocess.run(["umount", str(incoming)], check=True)
    assert _orm(service, "Submission.objects.filter(method='full').count()") == "0"
    assert answers(service.url)


def test_a_database_restart_is_survived_without_an_operator(scaled):
    """PostgreSQL stopped (a fast shutdown: open connections cut) while a submission is scored, then started again:
    meanwhile a page and the API answer 503 with one line; afterwards the service answers again and the submission
    ends `done` with one score, equal to the command's, with nothing restarted but the database."""
    service = scaled
    admin = new_token(service, logged_in(service, "admin"))
    file = service.output("sim_motifs_baseline_sgdet.h5")
    with open(file, "rb") as f:
        data = {"benchmark": "vg150-sim-sgdet", "method": "outage"}
        sid = api(service, admin, "/api/submissions", "post", data=data, files={"file": f}).json()["id"]
    deadline = time.time() + 120
    while api(service, admin, f"/api/submissions/{sid}").json()["status"] == "queued":
        assert time.time() < deadline
        time.sleep(0.02)
    service.database.stop()
    try:
        page, status = requests.get(f"{service.url}/b/{PREDCLS}/"), api(service, admin, f"/api/submissions/{sid}")
        assert (page.status_code, page.text.strip(), page.headers["Retry-After"]) == (503, UNAVAILABLE, "30")
        assert (status.status_code, status.json()) == (503, {"error": UNAVAILABLE})
    finally:
        service.database.start()
    while (reply := api(service, admin, f"/api/submissions/{sid}")).status_code != 200 or reply.json()[
        "status"
    ] != "done":
        assert time.time() < deadline, reply.text
        if reply.status_code != 200:  # PostgreSQL still starting: the same one line as while it was down
            assert (reply.status_code, reply.json()) == (503, {"error": UNAVAILABLE})
        else:
            assert reply.json()["status"] != "failed", reply.text
        time.sleep(0.5)
    assert _scores(service, sid) == 1
    assert reply.json()["metrics"] == service.evaluate(file, "sgdet")


def test_a_backup_restores_accounts_submissions_files_and_scores(service, tmp_path):
    """`sgg-eval manage backup` of the running service, `restore` into a new home (and, at scale, a new PostgreSQL
    database): the same rows, table by table (accounts with their password hashes, tokens, submissions with their
    permalink ids, scores, the admin's log; times to the millisecond), and every uploaded file byte for byte. A
    second restore into the now full service is refused with one line."""
    deadline = time.time() + 300
    while _orm(service, "Submission.objects.filter(status__in=['queued', 'running']).count()") != "0":
        assert time.time() < deadline  # a quiet moment: no scoring to change a row between backup and comparison
        time.sleep(1)
    archive = tmp_path / "service-backup.tar.gz"
    made = subprocess.run([*SGG, "manage", "backup", str(archive)], env=service.env, capture_output=True, text=True)
    assert made.returncode == 0 and "submissions" in made.stdout, made.stderr
    env = {**service.env, "SGG_EVAL_SERVICE_HOME": str(tmp_path / "restored")}
    if service.database is not None:
        import psycopg

        with psycopg.connect(service.database.url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as db:
            db.execute("CREATE DATABASE sgg_restored")
        env["SGG_EVAL_SERVICE_DATABASE"] = service.database.url.rsplit("/", 1)[0] + "/sgg_restored"
    restored = subprocess.run([*SGG, "manage", "restore", str(archive)], env=env, capture_output=True, text=True)
    assert restored.returncode == 0 and "restored" in restored.stdout, restored.stderr

    def rows(environment: dict) -> list:
        left_out = [a for table in ("contenttypes", "auth.permission", "sessions", "axes") for a in ("-e", table)]
        dump = [*SGG, "manage", "dumpdata", "--natural-foreign", "--natural-primary", *left_out]
        text = subprocess.run(dump, env=environment, capture_output=True, text=True, check=True).stdout
        # Django's serializer keeps a time to the millisecond, and writes 1-999 µs past a second as ".000", which
        # reads back as no fraction: the same time, two spellings
        return json.loads(re.sub(r'(T\d\d:\d\d:\d\d)\.000Z"', r'\1Z"', text))

    def files(home: Path) -> dict:
        uploads = home / "uploads"
        return {p.relative_to(uploads).as_posix(): p.read_bytes() for p in uploads.rglob("*") if p.is_file()}

    before, after = rows(service.env), rows(env)
    assert after == before and any(r["model"] == "service.score" for r in after)
    assert files(tmp_path / "restored") == files(service.home)
    again = subprocess.run([*SGG, "manage", "restore", str(archive)], env=env, capture_output=True, text=True)
    assert again.returncode == 2 and len(again.stderr.strip().splitlines()) == 1 and "not empty" in again.stderr


def _hostile_files(service: Service, folder: Path) -> list[tuple[str, Path]]:
    """(benchmark, file) of 524 hostile uploads, each a file `sgg-eval evaluate` must refuse: 440 of the project's
    fuzzer's byte mutations of a sealed prediction store (under its checksum); 20 cuts of it; 40 cuts of an SGBench
    ZIP; and the crafted ones: ZIP members climbing out of the archive, bombs (ZIP, TIFF, mask file, compressed
    pickle), pickles that would run a command, torch files cut short, unknown files. (An empty file never gets
    that far: the upload is refused, 400.)"""
    rnd, store = random.Random(67), service.output("sim_motifs_baseline_predcls.h5").read_bytes()
    psg = (service.home / "simulated/psg/outputs/sim_psg_imp.zip").read_bytes()
    files: list[tuple[str, str, bytes]] = [
        (PREDCLS, f"m{i}.h5", corrupt_store_bytes(rnd, store)[0]) for i in range(440)
    ]
    files += [(PREDCLS, f"cut{i}.h5", store[: len(store) * i // 21]) for i in range(1, 21)]
    files += [(PSG, f"cut{i}.zip", psg[: len(psg) * i // 41]) for i in range(1, 41)]
    doc = json.loads(zipfile.ZipFile(io.BytesIO(psg)).read("triplets.json"))
    seg = next(i for i in doc["images"] if i.get("seg_filename"))["seg_filename"]

    def rezipped(replace: dict, *, deflate: bool = False) -> bytes:
        out, mode = io.BytesIO(), zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
        with zipfile.ZipFile(io.BytesIO(psg)) as src, zipfile.ZipFile(out, "w", mode) as dst:
            for name in src.namelist():
                dst.writestr(name, replace.pop(name, src.read(name)))
            for name, data in replace.items():
                dst.writestr(name, data)
        return out.getvalue()

    escape = f"../../../../../../tmp/sgg-eval-zip-slip-{os.getpid()}"
    for i, name in enumerate([escape, "/etc/sgg-eval-zip-slip", "a/../../sgg-eval-zip-slip", "a\\..\\..\\x"]):
        files.append((PSG, f"slip{i}.zip", rezipped({name: b"x"})))
    padded = b'{"version": 1, "images": []}' + b" " * (60 << 20)  # expands over 1000-fold
    files.append((PSG, "bomb.zip", rezipped({"triplets.json": padded}, deflate=True)))
    files.append((PSG, "tiff_bomb.zip", rezipped({seg: _tiff_claiming(60000)})))
    files.append((PSG, "mask_file_too_large.zip", rezipped({seg: bytes(8 << 20)})))
    files.append((PSG, "png_as_tiff.zip", rezipped({seg: b"\x89PNG\r\n\x1a\n" + bytes(100)})))
    files.append((PSG, "no_triplets.zip", rezipped({}).replace(b"triplets.json", b"tripletsXjson")))
    cases = _cases()
    for kind in sorted(set(CORRUPT_FILES) - {"empty_file"}):  # an empty file is refused at the upload (400)
        path = folder / f"{kind}.pytorch"
        CORRUPT_FILES[kind](eval_results_object(cases), path)
        files.append((PREDCLS, f"{kind}.pytorch", path.read_bytes()))
    for i, data in enumerate([b" ", b"{", b"[]", b'{"version": 1, "images": [', b"\0" * 4096, os.urandom(4096)]):
        files.append((PREDCLS, f"junk{i}.json", data))
    paths = []
    for i, (benchmark, name, data) in enumerate(files):
        (folder / str(i)).mkdir()
        (path := folder / str(i) / name).write_bytes(data)
        paths.append((benchmark, path))
    return paths


def _tiff_claiming(side: int) -> bytes:
    """A one-page TIFF whose header claims side x side px over a few bytes of data."""
    out = io.BytesIO()
    tifffile.imwrite(out, np.zeros((4, 4), dtype=np.uint8))
    raw = bytearray(out.getvalue())
    with tifffile.TiffFile(io.BytesIO(bytes(raw))) as tif:
        for name in ("ImageWidth", "ImageLength"):
            tag = tif.pages[0].tags[name]
            struct.pack_into("<H" if tag.dtype == 3 else "<I", raw, tag.valueoffset, side)
    return bytes(raw)


def test_five_hundred_hostile_uploads_each_fail_with_one_line(embedded, tmp_path):
    """524 hostile files uploaded through the API (four at a time) to the embedded service: each ends `failed`
    with one line that names the file as uploaded (never where the server keeps it), the web server is never
    restarted, its worker never dies, the pickles ran nothing and no ZIP member was written anywhere."""
    service = embedded
    admin = new_token(service, logged_in(service, "admin"))  # no daily limit
    files = _hostile_files(service, tmp_path)
    assert len(files) >= 500
    log = service.log.read_text()
    starts, deaths = log.count("sgg-eval service on"), log.count("the worker ended")

    def upload(item: tuple[str, Path]) -> int:
        benchmark, path = item
        with open(path, "rb") as f:
            reply = api(service, admin, "/api/submissions", "post", data={"benchmark": benchmark, "method": "hostile"},
                        files={"file": (path.name, f)})  # fmt: skip
        assert reply.status_code == 201, reply.text
        return reply.json()["id"]

    with ThreadPoolExecutor(4) as pool:
        ids = list(pool.map(upload, files))
    fields = "'status', 'message', 'filename'"
    query = f"__import__('json').dumps(list(Submission.objects.filter(pk__in={ids}).values_list({fields})))"
    deadline = time.time() + 600
    # the queue is first in, first out: wait on the last upload through the API (a request), then read every row
    # with the ORM (a Django process, 0.5 s of CPU, which polling every 2 s paid about 30 times)
    while api(service, admin, f"/api/submissions/{max(ids)}").json()["status"] in ("queued", "running"):
        assert time.time() < deadline and service.process.poll() is None
        time.sleep(1)
    while True:
        rows = json.loads(_orm(service, query))
        if not any(status in ("queued", "running") for status, _, _ in rows):
            break
        assert time.time() < deadline and service.process.poll() is None
        time.sleep(2)
    assert len(rows) == len(files)
    bad = [(name, status, message) for status, message, name in rows
           if status != "failed" or not message or "\n" in message or str(service.home) in message
           or name not in message]  # fmt: skip
    assert not bad, bad[:10]
    log = service.log.read_text()
    assert service.process.poll() is None and log.count("sgg-eval service on") == starts, log[-4000:]
    assert log.count("the worker ended") == deaths, log[-4000:]  # what the worker printed as it ended
    assert not Path("/tmp/sgg_eval_pwned").exists()
    assert not Path(f"/tmp/sgg-eval-zip-slip-{os.getpid()}").exists() and not Path("/etc/sgg-eval-zip-slip").exists()
    assert [*(service.home / "scratch").rglob("score-*")] == []  # every evaluation's folder removed
    assert set(os.listdir(ROOT)) == service.root_before
