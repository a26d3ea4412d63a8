"""Separate hosts on one Linux machine: one network namespace per party, each in a folder of its own.

A deployment is meant for hosts that share nothing but the deployment file and the CA
certificate. This module builds that situation on one machine, to test it and to try it out:

* :func:`lay_out` writes one folder per party holding only the deployment file (the same bytes
  for every party), that party's bundle (the CA certificate, its own certificate and key) and
  its own data file, under paths the file names relative to itself;
* :class:`Namespaces` makes one network namespace per party with its own address on a private
  bridge (in a namespace of its own as well), so a party can reach the others only through the
  addresses in the file, never through a shared loopback;
* :func:`run_hosts` runs ``privbandits party run`` for every party inside its namespace, from its
  folder, and returns each party's exit code and result.

It needs Linux, root and ``ip`` (iproute2); :func:`unavailable` says why it cannot run here.
The addresses are ``SUBNET.k`` inside namespaces this process makes and removes: no traffic
leaves them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from privbandits.deploy.deployment import Deployment, _toml_value, bundle_files, parse_address

SUBNET = "10.231.0"
"""The /24 the namespaces' addresses come from (.1 upwards, in file order)."""


def unavailable() -> str | None:
    """Why separate namespaces cannot be made here (None: they can)."""
    if sys.platform != "linux":
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "network namespaces need the `ip` command (iproute2)"
    probe = f"pbprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip() or made.returncode}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError(f"ip {' '.join(args)}: {done.stderr.strip()}")


class Namespaces:
    """One network namespace per name, each with address ``SUBNET.k`` on a bridge; removed on exit."""

    def __init__(self, names: list[str], subnet: str = SUBNET) -> None:
        if len(names) > 250:
            raise ValueError(f"at most 250 hosts fit in {subnet}.0/24, got {len(names)}")
        tag = f"pb{os.getpid() % 100000}"
        self.hub = f"{tag}hub"
        self.namespaces = {name: f"{tag}h{k}" for k, name in enumerate(names)}
        self.addresses = {name: f"{subnet}.{k + 1}" for k, name in enumerate(names)}
        self._made: list[str] = []

    def __enter__(self) -> Namespaces:
        try:
            self._add(self.hub)
            _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.hub, "link", "set", "br0", "up")
            for k, (name, namespace) in enumerate(self.namespaces.items()):
                self._add(namespace)
                inside, outside = f"veth{k}", f"port{k}"
                pair = ("type", "veth", "peer", "name", outside, "netns", self.hub)
                _ip("link", "add", inside, "netns", namespace, *pair)
                _ip("-n", self.hub, "link", "set", outside, "master", "br0")
                _ip("-n", self.hub, "link", "set", outside, "up")
                _ip("-n", namespace, "addr", "add", f"{self.addresses[name]}/24", "dev", inside)
                _ip("-n", namespace, "link", "set", inside, "up")
                _ip("-n", namespace, "link", "set", "lo", "up")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _add(self, namespace: str) -> None:
        _ip("netns", "add", namespace)
        self._made.append(namespace)

    def __exit__(self, *exc: object) -> None:
        for namespace in reversed(self._made):  # removing a namespace removes its veth ends
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
        self._made.clear()

    def command(self, name: str, argv: list[str]) -> list[str]:
        """``argv`` run inside party ``name``'s namespace."""
        return ["ip", "netns", "exec", self.namespaces[name], *argv]


BUNDLES = "bundles"
"""The bundles folder the shared file names; each host holds only ``bundles/NAME`` of its own party."""


def data_file(name: str) -> str:
    """Where party ``name``'s data file lies in its folder (and in the shared file)."""
    return f"data/{name}.npz"


def shared_file(deployment: Deployment, addresses: dict[str, str]) -> str:
    """The deployment file every host gets: the same protocol and parties at ``addresses`` (party → IP, the port
    kept), each party's bundle under ``bundles/NAME`` and its data under ``data/``, all relative to the file."""
    data = deployment.model_dump(mode="json", exclude_none=True)
    lines = [f"name = {_toml_value(data['name'])}", f"bundles = {_toml_value(BUNDLES)}", 'output = "out"']
    for key in ("deadline_s", "connect_deadline_s", "checkpoint_every", "reproducible"):
        lines.append(f"{key} = {_toml_value(data[key])}")
    lines.append("\n[protocol]")
    lines += [f"{key} = {_toml_value(value)}" for key, value in data["protocol"].items()]
    for name, entry in data["parties"].items():
        _, port = parse_address(entry["address"])
        lines.append(f"\n[parties.{name}]")
        lines.append(f"role = {_toml_value(entry['role'])}")
        lines.append(f"address = {_toml_value(f'{addresses[name]}:{port}')}")
        if "data" in entry:
            lines.append(f"data = {_toml_value(data_file(name))}")
    return "\n".join(lines) + "\n"


def lay_out(deployment: Deployment, addresses: dict[str, str], root: Path) -> dict[str, Path]:
    """One folder per party under ``root`` holding only what that host holds: the shared file, its own bundle
    (the CA certificate, its certificate and key) and its own data file. Returns each party's folder."""
    text = shared_file(deployment, addresses)
    folders = {}
    for name, entry in deployment.parties.items():
        folder = root / name
        folder.mkdir(parents=True)
        (folder / "deployment.toml").write_text(text)
        targets = {what: folder / path for what, path in bundle_files(BUNDLES, name).items()}
        if entry.data is not None:
            targets["data"] = folder / data_file(name)
        for what, target in targets.items():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(getattr(entry, what), target)
            target.chmod(0o644 if what in ("ca", "certificate") else 0o600)
        folders[name] = folder
    return folders


@dataclass
class HostRun:
    """What each host's party did: exit codes, the last lines of stderr, and the result files read back."""

    codes: dict[str, int]
    stderr: dict[str, str]
    results: dict[str, dict] = field(default_factory=dict)


def run_hosts(deployment: Deployment, root: Path, *, timeout_s: float = 300.0, port: int = 7100) -> HostRun:
    """Lay the deployment out under ``root`` (one folder per party) and run every party in a namespace of its
    own; ports come from the file, or ``port`` where the file says 0 (ephemeral ports are a one-host notion)."""
    names = list(deployment.parties)
    with Namespaces(names) as spaces:
        fixed = {}
        for name, entry in deployment.parties.items():
            _, own = parse_address(entry.address)
            fixed[name] = entry.model_copy(update={"address": f"127.0.0.1:{own or port}"})
        folders = lay_out(deployment.model_copy(update={"parties": fixed}), spaces.addresses, root)
        processes = {}
        for name in names:
            argv = [sys.executable, "-m", "privbandits.deploy.cli", "party", "run", "deployment.toml", "--as", name]
            with open(folders[name] / "party.log", "w") as log:  # the child keeps its own copy of the descriptor
                processes[name] = subprocess.Popen(
                    spaces.command(name, argv), cwd=folders[name], stdout=log, stderr=subprocess.STDOUT,
                    env=_one_thread_env(),
                )  # fmt: skip
        codes = _wait(processes, timeout_s)
    results, stderr = {}, {}
    for name, folder in folders.items():
        stderr[name] = "\n".join((folder / "party.log").read_text().strip().splitlines()[-5:])
        path = folder / "out" / f"{name}.result.json"
        if path.is_file():
            results[name] = json.loads(path.read_text())
    return HostRun(codes, stderr, results)


def _one_thread_env() -> dict[str, str]:
    from privbandits.deploy.local import child_environment

    return child_environment()


def _wait(processes: dict[str, subprocess.Popen], timeout_s: float) -> dict[str, int]:
    """Every party's exit code; all are killed once ``timeout_s`` has passed (their code is then negative)."""
    ends = time.monotonic() + timeout_s
    for process in processes.values():
        try:
            process.wait(timeout=max(0.1, ends - time.monotonic()))
        except subprocess.TimeoutExpired:
            for other in processes.values():
                other.kill()
            process.wait()
    return {name: process.wait() for name, process in processes.items()}
