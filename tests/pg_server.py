"""A throw-away PostgreSQL server for the report-queue tests: ``initdb`` in a temporary folder, ``pg_ctl start``
listening only on a unix socket in that folder, stopped and removed at the end of the session.

PostgreSQL refuses to run as root: as root the server runs as the ``postgres`` user (the folder is made its
own). Where it cannot start (no ``initdb``, no psycopg, no user to run it as, a failed start) :func:`unavailable`
or :meth:`PostgresServer.start` says why, and the tests skip with that reason.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

TIMEOUT = 60


def binaries() -> tuple[str, str] | None:
    """``initdb`` and ``pg_ctl`` from PATH, else from Debian's /usr/lib/postgresql/VERSION/bin (newest first)."""
    found = shutil.which("initdb"), shutil.which("pg_ctl")
    if all(found):
        return found  # type: ignore[return-value]
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        initdb, pg_ctl = Path(folder, "initdb"), Path(folder, "pg_ctl")
        if initdb.is_file() and pg_ctl.is_file():
            return str(initdb), str(pg_ctl)
    return None


def server_user() -> pwd.struct_passwd | None:
    """Who runs the server: this process's user, or ``postgres`` when that is root (None: no such user)."""
    if os.geteuid() != 0:
        return pwd.getpwuid(os.geteuid())
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        return None


def psycopg_missing() -> str | None:
    """Why psycopg cannot be imported here, or None."""
    try:
        import psycopg  # noqa: F401
    except ImportError:  # not installed, or installed without a libpq to load
        return "PostgreSQL queue tests need psycopg 3 (pip install 'privbandits[postgres]' or '.[test]')"
    return None


def unavailable() -> str | None:
    """Why no throw-away server can run here, or None."""
    if psycopg_missing() is not None:
        return psycopg_missing()
    if binaries() is None:
        return (
            "PostgreSQL queue tests need initdb and pg_ctl (Debian's postgresql package): neither on PATH nor in "
            "/usr/lib/postgresql/*/bin"
        )
    if server_user() is None:
        return "PostgreSQL queue tests run as root, which PostgreSQL refuses: there is no 'postgres' user to run it as"
    return None


class PostgresServer:
    """One running throw-away server; :meth:`database` makes a fresh database and gives its URL."""

    def __init__(self, folder: Path, pg_ctl: str, user: pwd.struct_passwd) -> None:
        self.folder, self.pg_ctl, self.user = folder, pg_ctl, user
        self.data = folder / "data"
        self._names = itertools.count()

    @classmethod
    def start(cls, *, fsync: bool = False) -> PostgresServer:
        """initdb and start a server (``fsync`` off by default: a test kills clients, never the server; a benchmark
        turns it on, so a commit costs what it costs in service). RuntimeError says why it did not start."""
        initdb, pg_ctl = binaries()  # type: ignore[misc]
        user = server_user()
        for orphan in Path(tempfile.gettempdir()).glob("privbandits-pg-*"):
            cls._stop_orphan(orphan, pg_ctl, user)
        folder = Path(tempfile.mkdtemp(prefix="privbandits-pg-"))
        (folder / "owner").write_text(str(os.getpid()))
        os.chown(folder, user.pw_uid, user.pw_gid)
        server = cls(folder, pg_ctl, user)
        options = (f"-k {folder} -c listen_addresses='' -c fsync={'on' if fsync else 'off'} -c shared_buffers=16MB "
                   "-c max_connections=60")  # fmt: skip
        try:
            server._run([initdb, "-D", str(server.data), "-A", "trust", "-U", "postgres", "-E", "UTF8",
                         "--locale=C", "--no-sync"])  # fmt: skip
            server._run([pg_ctl, "-D", str(server.data), "-l", str(folder / "log"), "-w", "-t", str(TIMEOUT),
                         "-o", options, "start"])  # fmt: skip
        except (OSError, subprocess.SubprocessError, RuntimeError) as exc:
            server.stop()
            raise RuntimeError(f"the throw-away PostgreSQL server did not start: {exc}") from None
        return server

    @classmethod
    def _stop_orphan(cls, folder: Path, pg_ctl: str, user: pwd.struct_passwd) -> None:
        """Stop and remove the server of a test run that was killed before it could (its owner process is gone)."""
        try:
            os.kill(int((folder / "owner").read_text()), 0)
            return  # its run is still going
        except ProcessLookupError:
            pass
        except (OSError, ValueError):
            return  # not ours to judge: no readable owner
        cls(folder, pg_ctl, user).stop()

    def _run(self, argv: list[str]) -> None:
        as_user = {} if os.geteuid() != 0 else {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, cwd=self.folder, **as_user)
        if done.returncode != 0:
            log = self.folder / "log"
            said = (done.stderr + (log.read_text() if log.is_file() else "")).strip().splitlines()
            raise RuntimeError(f"{Path(argv[0]).name} exited {done.returncode}: {said[-1] if said else ''}")

    def url(self, database: str = "postgres") -> str:
        """The libpq URL of ``database`` on this server's socket."""
        return f"postgresql://postgres@/{database}?host={self.folder}"

    def database(self) -> str:
        """A fresh, empty database's URL."""
        import psycopg

        name = f"test_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        """Stop the server (immediately: nothing here needs to survive) and remove its folder."""
        try:
            if (self.data / "postmaster.pid").exists():
                self._run([self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-t", str(TIMEOUT), "stop"])
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
