"""The service's parts that need no server: the benchmarks' file, the limits of one evaluation, `sgg-eval submit`
without a server, and that `import sgg_eval` and the command load none of the service's packages."""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sgg_eval.core.errors import InputError
from sgg_eval.service import leftovers
from sgg_eval.service.benchmarks import read_benchmarks
from sgg_eval.service.scoring import evaluate_in_child


def test_the_command_and_the_package_load_none_of_the_service():
    code = "import sys, sgg_eval, sgg_eval.cli; sgg_eval.cli.build_parser(); print(sorted(m for m in sys.modules if "
    code += "m.split('.')[0] in ('django', 'waitress', 'whitenoise', 'celery', 'kombu')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "benchmarks.yaml"
    path.write_text(text)
    return path


def test_a_benchmarks_file_gives_the_commands_arguments(tmp_path):
    for name in ("splits/test.h5", "stats.h5", "psg/psg.json"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    specs = read_benchmarks(
        write(
            tmp_path,
            """benchmarks:
  - {name: vg-predcls, task: predcls, protocol: reference, gt: splits/test.h5, stats: stats.h5, daily_limit: 3}
  - {name: psg, task: sgdet, protocol: sgbench, gt: psg/psg.json, gt_root: psg, headline: [R@20, mR@20]}
""",
        )
    )
    box, psg = specs
    assert box.arguments() == ["--gt", str(tmp_path / "splits/test.h5"), "--task", "predcls", "--protocol",
                               "reference", "--stats", str(tmp_path / "stats.h5")]  # fmt: skip
    assert box.daily_limit == 3 and box.headline == ("R@50", "R@100", "mR@50", "mR@100") and not box.simulated
    assert psg.arguments() == ["--psg", str(tmp_path / "psg/psg.json"), "--psg-root", str(tmp_path / "psg"),
                               "--protocol", "sgbench"]  # fmt: skip
    assert psg.headline == ("R@20", "mR@20")


@pytest.mark.parametrize(
    "text, field, says",
    [
        ("benchmarks: []", "benchmarks", "expected a list"),
        ("benchmarks:\n  - {name: a, task: predcls, protocol: reference}", "benchmarks[0]", "missing gt"),
        ("benchmarks:\n  - {name: a, task: predcls, protocol: nope, gt: x}", "benchmarks[0]", "protocol must be"),
        ("benchmarks:\n  - {name: a, task: predcls, protocol: sets, gt: x}", "benchmarks[0]", "protocol must be"),
        ("benchmarks:\n  - {name: a, task: predcls, protocol: ovsgtr, gt: x}", "benchmarks[0]", "scores sgdet"),
        (
            "benchmarks:\n  - {name: a, task: predcls, protocol: reference, gt: x}\n  - {name: a, task: sgcls, "
            "protocol: reference, gt: y}",
            "benchmarks[1]",
            "appears twice",
        ),  # fmt: skip
        ("benchmarks: [1]", "benchmarks[0]", "expected a mapping"),
        (
            "benchmarks:\n  - {name: a, task: predcls, protocol: reference, gt: x, daily_limit: lots}",
            "benchmarks[0]",
            "daily_limit must be",
        ),  # fmt: skip
        (
            "benchmarks:\n  - {name: a, task: predcls, protocol: reference, gt: absent.h5}",
            "benchmarks[0]",
            "gt: no such file or folder",
        ),  # fmt: skip
        ("benchmarks: [", "", "cannot read"),
    ],
)
def test_a_bad_benchmarks_file_is_one_line_naming_the_file_and_the_entry(tmp_path, text, field, says):
    (tmp_path / "x").write_bytes(b"")
    (tmp_path / "y").write_bytes(b"")
    path = write(tmp_path, text)
    with pytest.raises(InputError) as caught:
        read_benchmarks(path)
    assert str(caught.value).startswith(str(path)) and says in str(caught.value)
    assert caught.value.field == (field or None)


def test_an_evaluation_past_its_time_limit_is_stopped_with_a_line_that_says_so(tmp_path):
    """A limit of a millisecond: a child needs several to be forked and to run the command at all."""
    out = evaluate_in_child(tmp_path / "x.h5", ["--task", "predcls"], memory_mb=8192, timeout_s=0.001, scratch=tmp_path)
    assert (
        out.document is None and out.message == "the evaluation took longer than the limit of 0.001 s and was stopped"
    )
    assert [*tmp_path.iterdir()] == []  # its folder removed, the child gone with it


def test_an_evaluation_past_its_memory_limit_fails_and_the_caller_goes_on(tmp_path):
    out = evaluate_in_child(tmp_path / "x.h5", ["--task", "predcls"], memory_mb=40, timeout_s=120, scratch=tmp_path)
    assert out.document is None and out.message and "\n" not in out.message


def test_a_refusal_names_the_file_as_it_was_uploaded(tmp_path):
    stored = tmp_path / "uploads/a8f3_predictions.h5"
    stored.parent.mkdir()
    stored.write_bytes(b"junk")
    out = evaluate_in_child(
        stored, ["--task", "predcls"], memory_mb=8192, timeout_s=120, scratch=tmp_path, shown_as="predictions.h5"
    )
    assert out.document is None and "predictions.h5: " in out.message and str(tmp_path) not in out.message


def test_submit_without_a_server_is_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("SGG_EVAL_SERVER", "SGG_EVAL_TOKEN")}
    env["HOME"] = str(tmp_path)  # no ~/.config/sgg-eval/service.yaml
    run = subprocess.run([sys.executable, "-m", "sgg_eval.cli", "submit", "f.h5", "--benchmark", "b"], env=env,
                         capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert "set SGG_EVAL_SERVER and SGG_EVAL_TOKEN" in run.stderr
    env.update(SGG_EVAL_SERVER="http://127.0.0.1:9", SGG_EVAL_TOKEN="sgg_x")
    (tmp_path / "f.h5").write_bytes(b"x")
    run = subprocess.run([sys.executable, "-m", "sgg_eval.cli", "submit", "f.h5", "--benchmark", "b"], env=env,
                         capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert run.returncode == 2 and "cannot reach the service at http://127.0.0.1:9" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_a_taken_port_or_a_bad_database_address_is_one_line(tmp_path):
    import socket

    (tmp_path / "x.h5").write_bytes(b"")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "SGG_EVAL_SERVICE_BENCHMARKS": str(write(tmp_path, "benchmarks:\n  - {name: a, task: "
               "predcls, protocol: reference, gt: x.h5}\n"))}  # fmt: skip
        args = [sys.executable, "-m", "sgg_eval.cli", "serve", "--home", str(tmp_path / "home"), "--port", str(port)]
        run = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stderr.strip().splitlines() == [
        f"sgg-eval serve: error: cannot listen on 127.0.0.1:{port}: Address already in use"
    ], run.stderr
    assert "service on" not in run.stdout
    env["SGG_EVAL_SERVICE_DATABASE"] = "mysql://u@h/db"
    run = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "SGG_EVAL_SERVICE_DATABASE must be postgresql://" in run.stderr


def test_a_starting_process_clears_the_scratch_of_dead_processes_of_this_machine_only(tmp_path):
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    host = socket.gethostname()
    dead, alive, elsewhere = f"{host}:{ended.pid}", f"{host}:{os.getpid()}", f"other-host:{ended.pid}"
    for name in (dead, alive, elsewhere, "not-a-process"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "part.upload").write_bytes(b"x")
    assert leftovers.sweep_dead(tmp_path) == [dead]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive, elsewhere, "not-a-process"])


def test_a_stored_file_no_submission_names_goes_once_no_transaction_can_still_hold_it(tmp_path):
    for name in ("2026/12/kept.h5", "2026/12/orphan.h5", "2026/12/young.h5"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    old = time.time() - leftovers.UNREFERENCED_AFTER_S - 1
    for name in ("2026/12/kept.h5", "2026/12/orphan.h5"):
        os.utime(tmp_path / name, (old, old))
    assert leftovers.sweep_unreferenced(tmp_path, {"2026/12/kept.h5"}) == ["2026/12/orphan.h5"]
    assert sorted(p.name for p in (tmp_path / "2026/12").iterdir()) == ["kept.h5", "young.h5"]


def test_a_child_dies_with_the_process_that_started_it(tmp_path):
    """A parent killed with SIGKILL (no clean-up of its own) takes its child along: the child's pid file names a
    process that is gone soon after."""
    pid_file = tmp_path / "child.pid"
    parent = textwrap.dedent(f"""
        import subprocess, sys, time
        from sgg_eval.service.leftovers import die_with_parent
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], preexec_fn=die_with_parent)
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(120)
    """)
    process = subprocess.Popen([sys.executable, "-c", parent])
    deadline = time.time() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.time() < deadline
        time.sleep(0.05)
    child = int(pid_file.read_text())
    process.kill()
    process.wait()
    while not leftovers.is_dead(f"{socket.gethostname()}:{child}"):
        assert time.time() < deadline, "the child outlived its parent"
        time.sleep(0.05)


def test_a_full_disk_leaves_no_partial_upload_and_the_reserve_refuses_before_writing(tmp_path):
    """The uploads' storage, given a file whose second chunk meets a full disk, removes what it wrote and says the
    storage is full; and an upload that would eat into SGG_EVAL_SERVICE_MIN_FREE_MB is refused before a byte is
    written. In a child with the service's settings (Django is set up once per process)."""
    code = textwrap.dedent("""
        import errno, django, os
        django.setup()
        from django.core.files.base import File
        from sgg_eval.service.storage import StorageFull, Uploads, ensure_room

        class Full(File):
            def chunks(self, chunk_size=None):
                yield b"x" * 1000
                raise OSError(errno.ENOSPC, "No space left on device")

        storage = Uploads(location=os.environ["SGG_EVAL_SERVICE_HOME"] + "/uploads")
        try:
            storage.save("submissions/a.h5", Full(None, name="a.h5"))
        except StorageFull:
            print("full", sorted(os.listdir(storage.path("submissions"))))
        try:
            ensure_room(1)
        except StorageFull:
            print("reserve")
    """)
    env = {**os.environ, "SGG_EVAL_SERVICE_HOME": str(tmp_path), "DJANGO_SETTINGS_MODULE": "sgg_eval.service.settings"}
    env["SGG_EVAL_SERVICE_MIN_FREE_MB"] = str(2**40)  # more than any disk has
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert run.stdout.split("\n")[:2] == ["full []", "reserve"], run.stdout + run.stderr


_BROKER_WATCH = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    from kombu import Connection
    folder, transport = Path(sys.argv[1]), sys.argv[2]
    seen, busy = [], [False]

    def watch(event, args):
        # at every file operation of the producer, every file a reader would take must already be whole
        if busy[0] or event not in ("open", "fcntl.flock", "os.rename", "os.link", "os.remove"):
            return
        busy[0] = True
        try:
            for path in folder.iterdir():
                if path.name.endswith((".celery.msg", ".exchange")):
                    try:
                        json.loads(path.read_bytes())
                    except (ValueError, FileNotFoundError) as exc:
                        seen.append(f"{path.name}: {type(exc).__name__}")
        finally:
            busy[0] = False

    options = {f"{k}_folder{io}": str(folder) for k, io in (("data", "_in"), ("data", "_out"), ("control", ""))}
    with Connection("filesystem://", transport=transport, transport_options=options) as connection:
        queue = connection.SimpleQueue("celery")
        sys.addaudithook(watch)
        for i in range(3):
            queue.put({"i": i})
        got = []
        for _ in range(3):
            message = queue.get(timeout=5)
            message.ack()
            got.append(message.payload["i"])
    print(json.dumps({"got": got, "half_written": len(seen), "left": sorted(p.name for p in folder.iterdir())}))
""")


@pytest.mark.parametrize("transport", ["sgg_eval.service.embedded_broker:Transport", "filesystem"])
def test_the_embedded_queue_shows_a_reader_whole_files_only(tmp_path, transport):
    """At every file operation while a queue is declared and three messages are sent, each message file and exchange
    table a worker could read parses: a half-written one ended the worker that read it and lost its message (CI,
    2026-12-03). kombu's own transport is run too, to show the check finds what it is for."""
    run = subprocess.run([sys.executable, "-c", _BROKER_WATCH, str(tmp_path), transport],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert sorted(result["got"]) == [0, 1, 2]  # (kombu orders by the millisecond: two in one are in either order)
    if transport == "filesystem":
        assert result["half_written"] > 0  # kombu's transport: the file exists, empty, before it is written
    else:
        assert result["half_written"] == 0 and result["left"] == ["celery.exchange"]


def test_a_queue_file_that_cannot_be_put_in_place_leaves_nothing_beside_it(tmp_path):
    """The embedded queue's writer removes its partial file when the last step fails: an exchange table another
    process made first (``os.link``), or a rename that meets a full disk."""
    from sgg_eval.service.embedded_broker import _put_whole

    table = tmp_path / "celery.exchange"
    table.write_text("[]")
    with pytest.raises(FileExistsError):
        _put_whole(table, b'[["celery", "", "celery"]]', os.link)

    def full(partial, path):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError):
        _put_whole(tmp_path / "1_x.celery.msg", b"{}", full)
    assert [p.name for p in tmp_path.iterdir()] == ["celery.exchange"] and table.read_text() == "[]"
