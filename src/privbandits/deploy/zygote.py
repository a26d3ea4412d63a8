"""Party processes forked from one process that imported the party code once (``deploy local``).

Starting ``python -m privbandits.deploy.cli party run …`` per party costs each party the same
imports (numpy, the TLS and certificate code, the protocol's modules): most of the CPU a short local
session spends (``benchmarks/party_start.py`` measures it). :class:`ForkServer` starts one server process
with the launcher's child environment, imports that code in it, and forks each party from it.
Every party is still a process of its own, with its own memory, its own inherited listening
socket, its own stdout and stderr pipes, and it runs exactly the ``party run`` command line it
would have run; it draws its secrets after the fork (``secrets``, OS entropy; OpenSSL reseeds in
a forked child), so forked parties share no randomness. The server never draws any.

The launcher and the server talk over a ``SOCK_SEQPACKET`` Unix socket pair: a request carries the
party's arguments and, as ancillary data, its stdout, stderr and listening-socket descriptors; the
server answers with the child's pid, and reports each child's exit status when it reaps it. A
:class:`ForkedProcess` stands where a :class:`subprocess.Popen` stood (``pid``, ``stdout``,
``stderr``, ``poll``, ``wait``, ``kill``, ``returncode``: negative for a signal, as Popen's).
Where fork or descriptor passing is missing (not Linux/Unix), :func:`available` is false and the
launcher starts each party with ``subprocess`` as before.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Mapping, Sequence

_MAX_MESSAGE = 1 << 16
_POLL_S = 0.01


def available() -> bool:
    """Whether this platform can fork parties from a server (fork, SOCK_SEQPACKET and descriptor passing)."""
    return hasattr(os, "fork") and hasattr(socket, "send_fds") and hasattr(socket, "SOCK_SEQPACKET")


class ForkedProcess:
    """A party forked by a :class:`ForkServer`: the parts of :class:`subprocess.Popen` the launcher uses."""

    def __init__(self, server: ForkServer, pid: int, stdout, stderr) -> None:
        self._server, self.pid, self.stdout, self.stderr = server, pid, stdout, stderr
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._server.exit_code(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if timeout is not None and end is not None and time.monotonic() >= end:
                raise subprocess.TimeoutExpired(f"party process {self.pid}", timeout)
            time.sleep(_POLL_S)
        return code

    def send_signal(self, number: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, number)
            except ProcessLookupError:  # it ended in between; the server reports its code
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class ForkServer:
    """One server process that imported ``preload`` with environment ``env``; :meth:`start` forks a party."""

    def __init__(self, preload: Sequence[str], env: Mapping[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        command = [sys.executable, "-m", "privbandits.deploy.zygote", str(theirs.fileno()), *preload]
        try:
            self._process = subprocess.Popen(
                command, pass_fds=(theirs.fileno(),), env=dict(env), stdin=subprocess.DEVNULL
            )
        finally:
            theirs.close()
        self._socket = ours
        self._codes: dict[int, int] = {}  # pid -> exit code
        self._pids: list[int] = []
        self._lock = threading.Condition()
        self._replies: list[int] = []  # pids of the processes started, as the server answers
        ready = self._socket.recv(_MAX_MESSAGE)
        if json.loads(ready or b"{}").get("ready") is not True:
            self.close()
            raise RuntimeError("the party fork server did not start (see its error above)")
        threading.Thread(target=self._listen, daemon=True).start()

    def start(self, argv: Sequence[str], *, capture_stdout: bool, listen_fd: int | None) -> ForkedProcess:
        """Fork a party running ``python *argv`` (``argv`` is ``-m MODULE ARGS...``; ``--listen-fd`` added for
        ``listen_fd``): its stderr, and its stdout if ``capture_stdout`` (else /dev/null), are pipes to us."""
        err_read, err_write = os.pipe()
        out_read, out_write = os.pipe() if capture_stdout else (None, os.open(os.devnull, os.O_WRONLY))
        fds = [out_write, err_write] + ([listen_fd] if listen_fd is not None else [])
        request = {"argv": list(argv), "listen": listen_fd is not None}
        try:
            with self._lock:
                socket.send_fds(self._socket, [json.dumps(request).encode()], fds)
                while not self._replies:
                    if not self._lock.wait(timeout=60.0):
                        raise RuntimeError("the party fork server did not answer within 60 s")
                pid = self._replies.pop(0)
        except BaseException:
            for fd in (err_read, out_read):
                if fd is not None:
                    os.close(fd)
            raise
        finally:
            os.close(err_write)
            os.close(out_write)
        self._pids.append(pid)
        stdout = os.fdopen(out_read, "r") if out_read is not None else None
        return ForkedProcess(self, pid, stdout, os.fdopen(err_read, "r"))

    def done_starting(self) -> None:
        """No more parties: the server reports their exits, then ends once the last has ended."""
        try:
            self._socket.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def exit_code(self, pid: int) -> int | None:
        with self._lock:
            return self._codes.get(pid)

    def _listen(self) -> None:
        while True:
            try:
                message = self._socket.recv(_MAX_MESSAGE)
            except OSError:
                message = b""
            with self._lock:
                if not message:  # the server ended: any child it did not report is lost to us
                    for pid in self._pids:
                        self._codes.setdefault(pid, _lost(pid))
                    self._lock.notify_all()
                    break

                reply = json.loads(message)
                if "pid" in reply:  # before that child's exit: forget a code a reused pid had (a server kept up)
                    self._codes.pop(int(reply["pid"]), None)
                    self._replies.append(int(reply["pid"]))
                else:
                    self._codes[int(reply["exited"])] = int(reply["code"])
                self._lock.notify_all()
        self._process.wait()
        self._socket.close()

    def close(self) -> None:
        """Stop the server (its children run on; their exit codes then reach no one)."""
        try:
            self._socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._socket.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def _lost(pid: int) -> int:
    """An exit code for a child whose server died before reporting it: -SIGKILL if it is gone, else 1."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return -signal.SIGKILL
    except PermissionError:
        pass
    return 1


# ---- the server process -------------------------------------------------------------------------------


def _serve(channel: socket.socket) -> None:
    """Fork a party per request until the launcher says it has no more (end of stream), then report every
    child's exit and end."""
    children: set[int] = set()
    while True:
        readable, _, _ = select.select([channel], [], [], _POLL_S if children else None)
        _reap(channel, children, block=False)
        if not readable:
            continue
        try:
            message, fds, _, _ = socket.recv_fds(channel, _MAX_MESSAGE, 4)
        except OSError:
            message, fds = b"", []
        if not message:  # no more parties to start: wait for those started
            _reap(channel, children, block=True)
            return
        request = json.loads(message)
        pid = os.fork()
        if pid == 0:
            _child(channel, request, fds)  # never returns
        for fd in fds:
            os.close(fd)
        children.add(pid)
        channel.send(json.dumps({"pid": pid}).encode())


def _reap(channel: socket.socket, children: set[int], *, block: bool) -> None:
    while children:
        pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
        if pid == 0:
            return
        children.discard(pid)
        try:
            channel.send(json.dumps({"exited": pid, "code": os.waitstatus_to_exitcode(status)}).encode())
        except OSError:  # the launcher is gone; reap the rest all the same
            pass


def _child(channel: socket.socket, request: dict, fds: list[int]) -> None:
    code = 1
    try:
        channel.close()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a fresh interpreter
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        os.close(fds[0])
        os.close(fds[1])
        argv = list(request["argv"]) + (["--listen-fd", str(fds[2])] if request["listen"] else [])
        code = _run_module(argv)
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def _run_module(argv: list[str]) -> int:
    """Run ``argv`` (``-m MODULE ARGS...``) as ``python -m MODULE ARGS...`` would, then end as an interpreter would:
    other non-daemon threads joined, exit functions run, streams flushed."""
    if argv[:1] != ["-m"] or len(argv) < 2:
        raise ValueError(f"a forked party runs '-m MODULE ARGS...', got {argv!r}")
    module = argv[1]
    sys.argv = [module, *argv[2:]]  # runpy sets argv[0] to the module's file, as -m does
    try:
        with warnings.catch_warnings():  # the module was preloaded: run anew as __main__, as -m runs it
            warnings.filterwarnings("ignore", ".*found in sys.modules after import of package", RuntimeWarning)
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int | None):
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        code = 1
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return code


def _warm_numba() -> None:
    """Load numba's typing and target registries here once, if the parties' code imported numba: each forked
    party would otherwise load them again at its first kernel call (``benchmarks/party_start.py`` measures what
    forking saves)."""
    if "numba" not in sys.modules:
        return
    from numba.core.registry import cpu_target

    cpu_target.typing_context.refresh()
    cpu_target.target_context.refresh()


def main(args: Sequence[str]) -> None:
    channel = socket.socket(fileno=int(args[0]))
    for module in args[1:]:
        importlib.import_module(module)
    _warm_numba()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupt is for the parties; their ends end us
    channel.send(json.dumps({"ready": True}).encode())
    _serve(channel)


if __name__ == "__main__":
    main(sys.argv[1:])
