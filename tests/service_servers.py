"""Real PostgreSQL and Redis servers for the service's scale mode (tests/test_service.py): Debian's packages
(`apt install postgresql redis-server`; CI installs them), each in a temporary folder of its own, on a free port,
stopped afterwards. PostgreSQL refuses to run as root: as root, it runs as the `postgres` user."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def postgres_bin() -> str | None:
    """The folder of PostgreSQL's server programs (initdb, postgres), or None."""
    found = shutil.which("initdb")
    if found:
        return os.path.dirname(found)
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return os.path.dirname(versions[-1]) if versions else None


def available() -> bool:
    return postgres_bin() is not None and shutil.which("redis-server") is not None


def _as_server_user() -> list[str]:
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


@contextlib.contextmanager
def postgres() -> Iterator[str]:
    """A PostgreSQL server with an empty database ``sgg``; its ``postgresql://`` address."""
    folder = tempfile.mkdtemp(prefix="sgg-eval-pg-", dir="/tmp")
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(folder, user.pw_uid, user.pw_gid)
    port, bindir, run = free_port(), postgres_bin(), _as_server_user()
    data = os.path.join(folder, "data")
    subprocess.run([*run, f"{bindir}/initdb", "-D", data, "-U", "sgg", "--auth=trust", "-E", "UTF8"], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    server = subprocess.Popen([*run, f"{bindir}/postgres", "-D", data, "-p", str(port), "-h", "127.0.0.1", "-k",
                               folder], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        _wait(port)
        import psycopg

        deadline = time.time() + 60
        while True:
            try:
                with psycopg.connect(f"postgresql://sgg@127.0.0.1:{port}/postgres", autocommit=True) as db:
                    db.execute("CREATE DATABASE sgg")
                break
            except psycopg.OperationalError:  # still starting
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        yield f"postgresql://sgg@127.0.0.1:{port}/sgg"
    finally:
        server.terminate()
        server.wait(timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def redis() -> Iterator[str]:
    """A Redis server, nothing saved to disk; its ``redis://`` address."""
    port = free_port()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no"], stdout=subprocess.DEVNULL)  # fmt: skip
    try:
        _wait(port)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=60)


def _wait(port: int, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on port {port}")
