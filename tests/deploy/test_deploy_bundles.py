"""Per-party bundles, identity without paths, secret files' modes and what an operator sees (issue 28).

A small vertical deployment (the mask generator, the active party, one passive party) with
``bundles = "certs"``: ``deploy certs`` writes certs/NAME/ per party and the CA key in certs/.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from forked_parties import fork_server, start, stderr_of
from free_ports import free_ports
from project_paths import SHIPPED_DEPLOYMENTS
from typer.testing import CliRunner

from privbandits.deploy import checkpoint
from privbandits.deploy.certs import write_bundles
from privbandits.deploy.cli import standalone
from privbandits.deploy.console import link_summary
from privbandits.deploy.deployment import DeploymentError, load_deployment
from privbandits.deploy.local import PartyProcess, wait_parties
from privbandits.deploy.party import check_own_files, write_json_atomic

NAMES = ("mask_generator", "active", "passive2")
HINT = " (make the bundles with `privbandits deploy certs DEPLOY.toml`)"



def deployment_text(ports, *, rounds: int = 30, head: str = "") -> str:
    lines = [
        'name = "bundle-test"',
        'bundles = "certs"',
        "deadline_s = 10",
        "connect_deadline_s = 20",
        head,
        "[protocol]",
        'name = "vertical-o3m"',
        "partition = [3, 2]",
        "n_arms = 4",
        f"rounds = {rounds}",
        "seed = 5",
    ]
    roles = {"mask_generator": "mask_generator", "active": "active", "passive2": "passive"}
    for name, port in zip(NAMES, ports, strict=True):
        lines += [f"[parties.{name}]", f'role = "{roles[name]}"', f'address = "127.0.0.1:{port}"']
        lines.append(f'data = "data/{name}.npz"')
    return "\n".join(lines) + "\n"


def invoke(*args: str):
    return CliRunner().invoke(standalone, [str(arg) for arg in args])


@pytest.fixture
def deployment(tmp_path) -> Path:
    """The deployment file with its bundles and data files, in tmp_path/a."""
    folder = tmp_path / "a"
    folder.mkdir()
    path = folder / "deploy.toml"
    path.write_text(deployment_text(free_ports(3)))
    for command in (("deploy", "certs", path), ("deploy", "data", path)):
        result = invoke(*command)
        assert result.exit_code == 0, result.output
    return path


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ---------------------------------------------------------------- bundles


def test_deploy_certs_writes_one_bundle_per_party_and_keeps_the_ca_key_apart(deployment):
    certs = deployment.parent / "certs"
    assert sorted(p.name for p in certs.iterdir()) == ["active", "ca.key", "ca.pem", "mask_generator", "passive2"]
    ca_pem, ca_key = (certs / "ca.pem").read_bytes(), (certs / "ca.key").read_bytes()
    ca = x509.load_pem_x509_certificate(ca_pem)
    for name in NAMES:
        folder = certs / name
        assert sorted(p.name for p in folder.iterdir()) == sorted(["ca.pem", f"{name}.pem", f"{name}.key"])
        assert (folder / "ca.pem").read_bytes() == ca_pem
        assert all(ca_key not in p.read_bytes() for p in folder.iterdir())  # no party holds the CA's key
        certificate = x509.load_pem_x509_certificate((folder / f"{name}.pem").read_bytes())
        certificate.verify_directly_issued_by(ca)
        san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert san.get_values_for_type(x509.DNSName) == [name]
        assert mode(folder / f"{name}.key") == 0o600 and mode(folder) == 0o700
    assert mode(certs / "ca.key") == 0o600
    spec = load_deployment(deployment)
    assert spec.parties["active"].key == (certs / "active" / "active.key").resolve()


def test_deploy_certs_refuses_an_out_folder_the_file_does_not_read(deployment, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    result = invoke("deploy", "certs", deployment, "--out", elsewhere)
    assert result.exit_code == 2
    assert result.output == (
        f"error: --out {elsewhere}: the deployment reads its bundles from bundles = {deployment.parent / 'certs'} "
        "(relative to the file); omit --out, or change `bundles` in the file\n"
    )
    assert not elsewhere.exists()
    assert invoke("deploy", "certs", deployment, "--out", deployment.parent / "certs", "--force").exit_code == 0


def test_deploy_certs_needs_the_bundles_field(tmp_path):
    path = tmp_path / "deploy.toml"
    text = deployment_text([7501, 7502, 7503]).replace('bundles = "certs"', 'ca = "pki/ca.pem"')
    for name in NAMES:
        files = f'certificate = "pki/{name}.pem"\nkey = "pki/{name}.key"'
        text = text.replace(f"[parties.{name}]", f"[parties.{name}]\n{files}")
    path.write_text(text)
    result = invoke("deploy", "certs", path)
    assert result.exit_code == 2
    assert result.output == (
        f"error: {path}: bundles: not set; `deploy certs` writes one bundle per party into the folder `bundles` "
        'names (add e.g. bundles = "certs" to the file; it replaces ca, certificate and key)\n'
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deploy.toml"]


def test_a_file_naming_neither_bundles_nor_the_files_names_the_field(tmp_path):
    path = tmp_path / "deploy.toml"
    path.write_text(deployment_text([7501, 7502, 7503]).replace('bundles = "certs"\n', ""))
    with pytest.raises(DeploymentError) as error:
        load_deployment(path)
    assert "parties.mask_generator.ca: missing: name the file, or set `bundles`" in str(error.value)


def test_a_party_needs_only_its_own_bundle_and_data(deployment, tmp_path):
    host = tmp_path / "host-of-passive2"
    (host / "certs").mkdir(parents=True)
    (host / "data").mkdir()
    shutil.copy(deployment, host / "deploy.toml")
    shutil.copytree(deployment.parent / "certs" / "passive2", host / "certs" / "passive2")
    shutil.copy(deployment.parent / "data" / "passive2.npz", host / "data")
    spec = load_deployment(host / "deploy.toml")  # loading reads no party's files
    fingerprint = check_own_files(spec, "passive2")
    ca = x509.load_pem_x509_certificate((deployment.parent / "certs" / "ca.pem").read_bytes())
    assert fingerprint == ca.fingerprint(hashes.SHA256()).hex()
    with pytest.raises(DeploymentError) as error:
        check_own_files(spec, "active")
    assert str(error.value) == (
        f"bundles (active/ca.pem): CA certificate {host.resolve() / 'certs/active/ca.pem'} does not exist{HINT}"
    )


# ---------------------------------------------------------------- identity without paths


def test_the_session_digest_depends_on_no_path(deployment, tmp_path):
    copy = tmp_path / "b" / "deep" / "deploy.toml"
    copy.parent.mkdir(parents=True)
    shutil.copy(deployment, copy)
    here, there = load_deployment(deployment), load_deployment(copy)
    assert here.parties["active"].key != there.parties["active"].key
    assert here.digest("f" * 64) == there.digest("f" * 64) != here.digest("e" * 64)
    assert here.protocol_digest() == there.protocol_digest()
    moved = deployment_text([1, 2, 3])  # other addresses: another session
    assert load_deployment(_write(tmp_path / "c", moved)).digest() != here.digest()


def _write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "deploy.toml").write_text(text)
    return folder / "deploy.toml"


def _party(forks, path: Path, name: str, *more: str):
    return start(forks, ["party", "run", str(path), "--as", name, *more])


def test_parties_in_other_layouts_link_and_each_prints_its_lines(deployment, tmp_path):
    """passive2 runs from a byte-identical copy of the file in another folder, holding only its own bundle and
    data; it links with the others. Each party prints a linked line, the active party progress (--progress),
    and each an outcome line naming its result file."""
    host = tmp_path / "elsewhere" / "passive2"
    (host / "certs").mkdir(parents=True)
    shutil.copy(deployment, host / "deploy.toml")
    shutil.copytree(deployment.parent / "certs" / "passive2", host / "certs" / "passive2")
    shutil.copytree(deployment.parent / "data", host / "data", ignore=lambda *_: ["active.npz", "mask_generator.npz"])
    with fork_server(load_deployment(deployment)) as forks:
        processes = {
            "mask_generator": _party(forks, deployment, "mask_generator"),
            "active": _party(forks, deployment, "active", "--progress"),
            "passive2": _party(forks, host / "deploy.toml", "passive2"),
        }
        errors = {name: stderr_of(process, timeout=120) for name, process in processes.items()}
    assert {name: p.returncode for name, p in processes.items()} == dict.fromkeys(NAMES, 0), errors
    spec = load_deployment(deployment)
    address = {name: entry.address for name, entry in spec.parties.items()}
    lines = errors["active"].splitlines()
    peers = f"mask_generator ({address['mask_generator']}), passive2 ({address['passive2']})"
    assert lines[0] == f"active: linked to {peers}"
    progress = re.compile(r"active: round (\d+)/30, [\d.]+ rounds/s, [\d.]+ (kB|MB) sent, [\d.]+ (kB|MB) received")
    assert lines[1:-1] and all(progress.fullmatch(line) for line in lines[1:-1]), lines
    assert progress.fullmatch(lines[-2]).group(1) == "30"
    outcome = r"active: done in [\d.]+ s \(30 rounds, cumulative reward -?[\d.]+, regret [\d.]+, randomness: os\); "
    outcome += "result "
    assert re.fullmatch(outcome + re.escape(str(spec.result_path("active"))), lines[-1])
    there, passive = load_deployment(host / "deploy.toml"), errors["passive2"].splitlines()
    assert len(passive) == 2  # no progress off a terminal without --progress
    peers = f"mask_generator ({address['mask_generator']}), active ({address['active']})"
    assert passive[0] == f"passive2: linked to {peers}"
    result = re.escape(str(there.result_path("passive2")))
    assert re.fullmatch(r"passive2: done in [\d.]+ s \(randomness: os\); result " + result, passive[1])
    assert there.result_path("passive2").is_file() and not spec.result_path("passive2").exists()


# ---------------------------------------------------------------- secret files are the owner's


def test_every_secret_file_is_the_owners_only(deployment, tmp_path):
    for name in NAMES:  # data files: the passive and active parties' blocks, the mask generator's seed
        assert mode(deployment.parent / "data" / f"{name}.npz") == 0o600
    for protocol in ("mpc-epsilon-greedy", "p2b"):
        example = SHIPPED_DEPLOYMENTS / f"{protocol}.toml"
        copy = _write(tmp_path / protocol, example.read_text())
        assert invoke("deploy", "data", copy).exit_code == 0
        written = sorted((copy.parent / "data").iterdir())
        assert written and {mode(path) for path in written} == {0o600}, written
    saved = tmp_path / "out" / "checkpoints" / "x.npz"
    checkpoint.save(saved, {"a": np.arange(3)}, {"digest": "d"})
    log = checkpoint.DecisionLog(saved.with_suffix(".decisions"))
    log.start()
    log.append([1, 2])
    assert mode(saved) == 0o600 and mode(log.path) == 0o600
    for umask in (0o022, 0o077):  # a party's result holds what only it may see
        previous = os.umask(umask)
        try:
            write_json_atomic(tmp_path / "out" / f"result-{umask:o}.json", {"arms": [1, 2]})
        finally:
            os.umask(previous)
        assert mode(tmp_path / "out" / f"result-{umask:o}.json") == 0o600
    stale = tmp_path / "stale.npz"  # a data file left readable by others is made the owner's when rewritten
    stale.write_bytes(b"")
    os.chmod(stale, 0o644)
    from privbandits.deploy.files import write_private_npz

    write_private_npz(stale, a=np.zeros(2))
    assert mode(stale) == 0o600


# ---------------------------------------------------------------- set-up mistakes: one line, documented code


def _party_run(path: Path, name: str):
    return invoke("party", "run", path, "--as", name)


def _swap_in(certs: Path, *files: tuple[str, str]) -> None:
    for source, target in files:
        shutil.copy(certs / source, certs / target)


def _from_another_ca(certs: Path) -> None:
    shutil.copy(write_bundles(certs.parent / "other", ["active"]).parties["active"]["certificate"], certs / ACTIVE_PEM)


ACTIVE_KEY, ACTIVE_PEM, ACTIVE_CA = "active/active.key", "active/active.pem", "active/ca.pem"
NOT_PEM = "bundles (active/{f}): {c}/active/{f} is not a PEM certificate"
DATA_HINT = " (make synthetic ones with `privbandits deploy data DEPLOY.toml`)"


@pytest.mark.parametrize(
    ("damage", "line"),
    [
        (lambda c: (c / ACTIVE_KEY).unlink(),
         "bundles (active/active.key): key {c}/active/active.key does not exist" + HINT),
        (lambda c: (c / ACTIVE_CA).write_text("garbage"), NOT_PEM.replace("{f}", "ca.pem")),
        (lambda c: (c / ACTIVE_PEM).write_text("garbage"), NOT_PEM.replace("{f}", "active.pem")),
        (lambda c: (c / ACTIVE_KEY).write_text("garbage"),
         "bundles (active/active.key): {c}/active/active.key is not an unencrypted PEM private key"),
        (lambda c: _swap_in(c, ("passive2/passive2.key", ACTIVE_KEY)),
         "bundles (active/active.key): {c}/active/active.key does not match the certificate {c}/active/active.pem"),
        (lambda c: _swap_in(c, ("passive2/passive2.pem", ACTIVE_PEM), ("passive2/passive2.key", ACTIVE_KEY)),
         "bundles (active/active.pem): {c}/active/active.pem is for 'passive2', not 'active'"),
        (_from_another_ca,
         "bundles (active/active.pem): {c}/active/active.pem is not signed by the CA certificate {c}/active/ca.pem"),
        (lambda c: (c.parent / "data/active.npz").unlink(),
         "parties.active.data: data file {c}/../data/active.npz does not exist" + DATA_HINT),
    ],
)  # fmt: skip
def test_a_set_up_mistake_is_one_line_naming_the_field_with_exit_2(deployment, damage, line):
    certs = (deployment.parent / "certs").resolve()
    damage(certs)
    result = _party_run(deployment, "active")
    expected = line.format(c=certs).replace(f"{certs}/../data", str(certs.parent / "data"))
    assert (result.exit_code, result.output) == (2, f"party 'active': {expected}\n")
    local = invoke("deploy", "local", deployment, "--no-progress")  # checked before any party starts
    assert (local.exit_code, local.output) == (2, f"error: {expected}\n")


def test_a_port_in_use_is_exit_5_naming_the_address(deployment):
    spec = load_deployment(deployment)
    host, port = spec.parties["mask_generator"].host_port  # it listens: the others dial it
    with socket.create_server((host, port)):
        result = _party_run(deployment, "mask_generator")
        local = invoke("deploy", "local", deployment, "--no-progress")
    message = f"parties.mask_generator.address: cannot listen on {host}:{port} (Address already in use)"
    assert (result.exit_code, result.output) == (5, f"party 'mask_generator': {message}\n")
    assert (local.exit_code, local.output) == (5, f"error: {message}\n")


@pytest.mark.parametrize(
    ("edit", "line"),
    [
        (lambda t: t.replace("deadline_s = 10", "deadline_s = inf"),
         "deadline_s: Input should be a finite number, got inf"),
        (lambda t: t.replace("connect_deadline_s = 20", "connect_deadline_s = nan"),
         "connect_deadline_s: Input should be a finite number, got nan"),
        (lambda t: t.replace("deadline_s = 10", "deadline_s = 1e9"),
         "deadline_s: Input should be less than or equal to 86400, got 1000000000.0"),
        (lambda t: re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:7999", t), "parties.active.address: 127.0.0.1:7999 is also "
         "parties.mask_generator.address; every party needs an address of its own"),
    ],
)  # fmt: skip
def test_numbers_that_cannot_work_are_refused_when_the_file_is_loaded(tmp_path, edit, line):
    path = _write(tmp_path, edit(deployment_text([7501, 7502, 7503])))
    result = _party_run(path, "active")
    assert (result.exit_code, result.output) == (2, f"error: {path}: {line}\n")


def test_port_0_is_for_deploy_local_only(tmp_path):
    path = _write(tmp_path, deployment_text([7501, 0, 7503]))
    load_deployment(path)  # deploy local resolves it
    result = _party_run(path, "mask_generator")
    assert (result.exit_code, result.output) == (
        2,
        f"error: {path}: parties.active.address: port 0 (any free port) works only with `deploy local`; give the "
        "port the party listens on (1..65535), got '127.0.0.1:0'\n",
    )


def test_the_launcher_stops_the_rest_soon_after_a_party_could_not_set_up(monkeypatch):
    monkeypatch.setattr("privbandits.deploy.local.GRACE_S", 1.0)  # the grace is a constant; 5 s would idle a worker
    grace = 1.0

    def start(code: str) -> PartyProcess:
        command = [sys.executable, "-c", code]
        return PartyProcess(code, subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    parties = [start("import sys; sys.exit(2)"), start("import time; time.sleep(60)")]
    begun = time.monotonic()
    codes = wait_parties(parties, deadline_s=30.0)
    assert time.monotonic() - begun < grace + 3  # not the deadline's 31 s
    assert list(codes.values())[0] == 2 and list(codes.values())[1] != 0
    assert parties[1].stderr == [f"stopped by the launcher {grace:g} s after 'import sys; sys.exit(2)' exited 2"]


# ---------------------------------------------------------------- deploy local's summary


def test_the_local_summary_has_a_row_per_hosts_devices_and_wire_bytes_as_their_sender_counted_them():
    results = {
        "hosta": {"traffic": [["share", "hosta devices", "shuffler", 500, 5000, 1]],
                  "wire": [["share", "hosta devices", "shuffler", 500, 20000, 1],
                           ["control", "shuffler", "hosta devices", 500, 3000, 1]]},
        "hostb": {"traffic": [["share", "hostb devices", "shuffler", 300, 3600, 1]], "wire": []},
        "shuffler": {
            "traffic": [["batch", "shuffler", "server", 1, 999, 1]],
            "wire": [["batch", "shuffler", "server", 1, 1100, 1], ["share", "hosta devices", "shuffler", 500, 1, 1]],
        },
    }  # fmt: skip
    assert link_summary(results) == [
        ("batch", "shuffler", "server", 1, 999, 1100, 1),
        ("share", "hosta devices", "shuffler", 500, 5000, 20000, 1),
        ("share", "hostb devices", "shuffler", 300, 3600, "", 1),
    ]


def test_a_bundles_or_data_folder_that_cannot_be_written_is_one_line(deployment, monkeypatch):
    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied", "/readonly/file")

    monkeypatch.setattr("privbandits.deploy.certs.write_bundles", refused)
    monkeypatch.setattr("privbandits.deploy.vertical.party.DEPLOYABLE.write_synthetic_data", refused)
    certs, data = invoke("deploy", "certs", deployment, "--force"), invoke("deploy", "data", deployment)
    assert (certs.exit_code, certs.output) == (2, "error: bundles: cannot write /readonly/file (Permission denied)\n")
    assert (data.exit_code, data.output) == (2, "error: /readonly/file: cannot write a data file (Permission denied)\n")


def test_on_a_terminal_progress_is_one_line_rewritten_in_place(monkeypatch):
    import io

    from privbandits.deploy import console as module

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    shown = module.PartyConsole("active", {"active": "h:1"}, stream, show_progress=True)
    clock = iter([1.0, 1.1, 2.0, 3.0])
    monkeypatch.setattr(module.time, "monotonic", lambda: next(clock))
    shown.started = shown.linked_at = 0.0
    for t in (1, 2, 4):  # the second comes within TERMINAL_EVERY_S of the first: not shown
        shown.round(t, 4)
    shown.done({"outcome": "done"}, Path("out/active.result.json"))
    assert stream.getvalue() == (
        "\ractive: round 1/4, 1.0 rounds/s, 0.0 kB sent, 0.0 kB received\x1b[K"
        "\ractive: round 4/4, 2.0 rounds/s, 0.0 kB sent, 0.0 kB received\x1b[K\n"
        "active: done in 3.0 s (done); result out/active.result.json\n"
    )


def test_each_shipped_deployment_has_its_own_bundles_folder_and_ports():
    shipped = sorted((SHIPPED_DEPLOYMENTS).glob("*.toml"))
    specs = [load_deployment(path) for path in shipped]
    assert len(specs) == 4
    assert len({spec.bundles for spec in specs}) == 4 and all(spec.ca is None for spec in specs)
    ports = [entry.host_port[1] for spec in specs for entry in spec.parties.values()]
    assert len(ports) == len(set(ports)) and 0 not in ports
