"""Real PostgreSQL and Redis servers for the service's scale mode (tests/test_service.py): Debian's packages
(`apt install postgresql redis-server`; CI installs them), each in a temporary folder of its own, on a free port,
stopped afterwards. PostgreSQL refuses to run as root: as root, it runs as the `postgres` user.

Also the client's side that the service's tests and its load test (scripts/load_service.py) share: whether a
service answers, and logging in and making an API token through its pages, CSRF token and all."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator

import requests


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


class Postgres:
    """A PostgreSQL server of its own folder and port: ``url``, and :meth:`restart`."""

    def __init__(self, folder: str):
        self.folder, self.port, self.bindir = folder, free_port(), postgres_bin()
        self.data = os.path.join(folder, "data")
        self.url = f"postgresql://sgg@127.0.0.1:{self.port}/sgg"
        self.server: subprocess.Popen | None = None

    def start(self) -> None:
        self.server = subprocess.Popen([*_as_server_user(), f"{self.bindir}/postgres", "-D", self.data, "-p",
                                        str(self.port), "-h", "127.0.0.1", "-k", self.folder],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        _wait(self.port)

    def stop(self) -> None:
        """A fast shutdown (`pg_ctl stop -m fast`): open connections are cut, as in a restart by the system."""
        subprocess.run([*_as_server_user(), f"{self.bindir}/pg_ctl", "stop", "-D", self.data, "-m", "fast"],
                       check=True, stdout=subprocess.DEVNULL)  # fmt: skip
        self.server.wait(timeout=60)

    def restart(self) -> None:
        self.stop()
        self.start()


@contextlib.contextmanager
def postgres() -> Iterator[Postgres]:
    """A PostgreSQL server with an empty database ``sgg``."""
    folder = tempfile.mkdtemp(prefix="sgg-eval-pg-", dir="/tmp")
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(folder, user.pw_uid, user.pw_gid)
    server = Postgres(folder)
    subprocess.run([*_as_server_user(), f"{server.bindir}/initdb", "-D", server.data, "-U", "sgg", "--auth=trust",
                    "-E", "UTF8"], check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    try:
        server.start()
        import psycopg

        deadline = time.time() + 60
        while True:
            try:
                with psycopg.connect(f"postgresql://sgg@127.0.0.1:{server.port}/postgres", autocommit=True) as db:
                    db.execute("CREATE DATABASE sgg")
                break
            except psycopg.OperationalError:  # still starting
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        yield server
    finally:
        if server.server is not None and server.server.poll() is None:
            server.server.terminate()
            server.server.wait(timeout=60)
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


def answers(url: str) -> bool:
    """The service's home page answers 200."""
    try:
        return requests.get(url, timeout=5).status_code == 200
    except requests.RequestException:
        return False


def csrf(html: str) -> str:
    """The CSRF token of a page's form."""
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


def logged_in(url: str, name: str, password: str) -> requests.Session:
    """A session logged in through the log-in page."""
    web = requests.Session()
    page = web.get(f"{url}/login/")
    form = {"csrfmiddlewaretoken": csrf(page.text), "username": name, "password": password}
    assert f">{name}</a>" in web.post(f"{url}/login/", data=form, headers={"Referer": page.url}).text
    return web


def new_token(url: str, web: requests.Session, name: str = "script") -> str:
    """A new API token of the session's user, made on the tokens page (shown once)."""
    page = web.get(f"{url}/tokens/")
    reply = web.post(page.url, data={"csrfmiddlewaretoken": csrf(page.text), "name": name},
                     headers={"Referer": page.url})  # fmt: skip
    return re.search(r'id="new-token">([^<]+)<', reply.text).group(1)
