"""Deployment files, development certificates and the deploy/party command groups (no processes here)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cryptography import x509
from project_paths import SHIPPED_DEPLOYMENTS
from typer.testing import CliRunner

from privbandits.deploy.certs import make_ca, write_development_pki
from privbandits.deploy.cli import standalone
from privbandits.deploy.deployment import DeploymentError, load_deployment, parse_deployment
from privbandits.deploy.local import BACKGROUND_NICE, _place, available_cpus, background, placement

PARTIES = """
[parties.mask_generator]
role = "mask_generator"
address = "127.0.0.1:0"
certificate = "certs/mask_generator.pem"
key = "certs/mask_generator.key"

[parties.active]
role = "active"
address = "127.0.0.1:0"
certificate = "certs/active.pem"
key = "certs/active.key"
data = "data/active.npz"

[parties.passive2]
role = "passive"
address = "127.0.0.1:0"
certificate = "certs/passive2.pem"
key = "certs/passive2.key"
data = "data/passive2.npz"
"""

HEAD = """
name = "try"
ca = "certs/ca.pem"
deadline_s = 5

[protocol]
name = "vertical-o3m"
partition = [3, 2]
n_arms = 4
rounds = 20
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "deploy.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_deployment_file_loads_with_paths_resolved_against_its_folder(tmp_path):
    spec = load_deployment(write(tmp_path, HEAD + PARTIES))
    assert list(spec.parties) == ["mask_generator", "active", "passive2"]
    assert spec.ca == (tmp_path / "certs/ca.pem").resolve()
    assert spec.parties["passive2"].data == (tmp_path / "data/passive2.npz").resolve()
    assert spec.output == (tmp_path / "out").resolve()
    assert spec.names("passive") == ["passive2"] and spec.protocol.dim == 5
    assert spec.addresses()["active"] == ("127.0.0.1", 0)
    # the digest is what both ends of a link compare: it changes with any parameter
    other = load_deployment(write(tmp_path, HEAD.replace("rounds = 20", "rounds = 21") + PARTIES))
    assert other.digest() != spec.digest()
    # the resolved TOML round-trips (deploy local hands it to the party processes)
    again = parse_deployment(__import__("tomllib").loads(spec.to_toml()))
    assert again.digest() == spec.digest()


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        (lambda t: t.replace('address = "127.0.0.1:0"', 'address = "localhost"', 1), "address must be host:port"),
        (lambda t: t.replace('role = "passive"', 'role = "spectator"'), "parties.passive2.role: must be one of"),
        (lambda t: t.replace("partition = [3, 2]", "partition = [3, 2, 2]"), "needs 2 passive parties; found 1"),
        (lambda t: t.replace('data = "data/passive2.npz"\n', ""), "parties.passive2.data: the passive party needs"),
        (lambda t: t.replace("[parties.active]", "[parties.Active]"), "party name 'Active' must be lower-case"),
        (lambda t: t.replace("rounds = 20", "rounds = 0"), "protocol.rounds: Input should be greater than or equal"),
        (lambda t: t.replace("rounds = 20", "rounds = 20\nprefetch = 0"), "protocol.prefetch: Input should be greater"),
        (lambda t: t.replace("rounds = 20", "rounds = 20\nprefetch = 2000"), "protocol.prefetch: Input should be less"),
        (lambda t: t.replace("rounds = 20", "rounds = 20\nrouns = 3"), "protocol.rouns: Extra inputs"),
        (lambda t: t.replace('name = "vertical-o3m"', 'name = "xy"'), "protocol.name: Input should be 'vertical-o3m'"),
        (
            lambda t: t.replace("partition = [3, 2]", "partition = [3, 2]\nsecure_aggregation = true"),
            "at least 2 passive",
        ),
        (lambda t: t + "[parties.extra]\n", "parties.extra.role: Field required"),
        (lambda t: t.replace("[3, 2]", "[3, 1]"), r"passive block\(s\) \[2\] hold one feature.*allow_single_feature"),
    ],
)
def test_a_bad_deployment_file_names_the_field(tmp_path, edit, error):
    with pytest.raises(DeploymentError, match=error):
        load_deployment(write(tmp_path, edit(HEAD + PARTIES)))


def test_a_missing_or_broken_deployment_file_is_named(tmp_path):
    with pytest.raises(DeploymentError, match="deployment file .*nope.toml does not exist"):
        load_deployment(tmp_path / "nope.toml")
    with pytest.raises(DeploymentError, match="not valid TOML"):
        load_deployment(write(tmp_path, "name = "))


def test_development_certificates_carry_the_party_name_and_chain_to_the_ca(tmp_path):
    ca_path, files = write_development_pki(tmp_path, ["active", "passive2"])
    ca = x509.load_pem_x509_certificate(ca_path.read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for name, written in files.items():
        cert = x509.load_pem_x509_certificate(written.certificate.read_bytes())
        cert.verify_directly_issued_by(ca)
        assert cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.DNSName
        ) == [name]
        assert stat.S_IMODE(written.key.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "ca.key").stat().st_mode) == 0o600
    other = make_ca("another CA")
    with pytest.raises(ValueError):
        x509.load_pem_x509_certificate(files["active"].certificate.read_bytes()).verify_directly_issued_by(
            other.certificate
        )


def test_the_certs_command_writes_one_bundle_per_party(tmp_path):
    path = write(tmp_path, HEAD.replace('ca = "certs/ca.pem"', 'bundles = "certs"') + PARTIES)
    path.write_text(
        "\n".join(line for line in path.read_text().splitlines() if not line.startswith(("certificate", "key")))
    )
    result = CliRunner().invoke(standalone, ["deploy", "certs", str(path)])
    assert result.exit_code == 0, result.output
    for name in ("mask_generator", "active", "passive2"):
        assert sorted(p.name for p in (tmp_path / "certs" / name).iterdir()) == sorted(
            ["ca.pem", f"{name}.key", f"{name}.pem"]
        )
    assert result.output.splitlines()[-1] == f"the CA's key, for no party's host: {tmp_path / 'certs' / 'ca.key'}"


def test_party_run_refuses_an_unknown_party_or_missing_certificates(tmp_path):
    ports = iter(range(7601, 7604))
    path = write(tmp_path, HEAD + PARTIES.replace('address = "127.0.0.1:0"', "ADDRESS"))
    path.write_text(__import__("re").sub("ADDRESS", lambda _: f'address = "127.0.0.1:{next(ports)}"', path.read_text()))
    result = CliRunner().invoke(standalone, ["party", "run", str(path), "--as", "nobody"])
    assert result.exit_code == 2 and "no party named 'nobody'" in result.output
    result = CliRunner().invoke(standalone, ["party", "run", str(path), "--as", "active"])
    assert (
        result.exit_code == 2 and "ca: CA certificate" in result.output and "privbandits deploy certs" in result.output
    )


def test_the_command_groups_import_without_numba_or_matplotlib():
    code = (
        "import sys, privbandits.deploy.cli as c; "
        "print(c.deploy_app.info.name, c.party_app.info.name); "
        "print(sorted(m for m in ('numba', 'matplotlib', 'numpy', 'cryptography') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.splitlines()[-1] == "[]"


def test_a_deployment_file_parses_without_the_protocols_or_numpy():
    """The file's fields read the declarations' light snapshot (privbandits.declared), so importing the parser and
    parsing a vertical or P2B file imports no protocol, numpy or numba (0.64 s when the fields read the protocol
    classes). FCLUB's and MPC's files check their options through the protocol's config class, so they load it."""
    example = SHIPPED_DEPLOYMENTS
    files = [str(example / name) for name in ("vertical-vfucb.toml", "p2b.toml")]
    code = (
        "import sys; from privbandits.deploy.deployment import load_deployment; "
        f"[load_deployment(p) for p in {files!r}]; "
        "heavy = ('numba', 'numpy', 'privbandits.protocols', 'privbandits.linear'); "
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.splitlines()[-1] == "[]"


def test_the_shipped_vertical_example_is_a_valid_deployment():
    example = SHIPPED_DEPLOYMENTS / "vertical-vfucb.toml"
    spec = load_deployment(example)
    assert spec.protocol.partition == [40, 25, 35] and spec.names("passive") == ["passive2", "passive3"]
    assert spec.parties["mask_generator"].data is not None  # the mask seed is the mask generator's own


def test_deploy_local_places_online_parties_first_and_lowers_the_dealer():
    """``deploy local``: the MPC dealer (its material runs ahead) is the one background party;
    pinning puts the parties that answer each other every round on cores of their own first."""
    configs = SHIPPED_DEPLOYMENTS
    mpc = load_deployment(configs / "mpc-epsilon-greedy.toml")
    assert list(mpc.parties) == ["dealer", "bank", "shop", "environment"]
    assert background(mpc) == ["dealer"]
    assert placement(mpc, [0, 1]) == {"bank": 0, "shop": 1, "environment": 0, "dealer": 1}
    assert placement(mpc, [2, 5, 7, 9]) == {"bank": 2, "shop": 5, "environment": 7, "dealer": 9}
    assert background(load_deployment(configs / "vertical-vfucb.toml")) == []
    with pytest.raises(DeploymentError, match="no CPU to pin the parties to"):
        placement(mpc, [])


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pinning needs os.sched_setaffinity (Linux)")
def test_a_placed_process_runs_on_its_core_at_lower_priority():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        core = available_cpus()[-1]
        _place(child.pid, core, BACKGROUND_NICE)
        assert os.sched_getaffinity(child.pid) == {core}
        lowest = 19  # Linux caps niceness there: a runner already at nice >= 10 gives 19, not its own + 10
        assert os.getpriority(os.PRIO_PROCESS, child.pid) == min(
            lowest, os.getpriority(os.PRIO_PROCESS, 0) + BACKGROUND_NICE
        )
    finally:
        child.kill()
        child.wait()
    _place(child.pid, core, BACKGROUND_NICE)  # a process that already ended is left to its exit code


def test_pinning_where_the_platform_cannot_is_refused_before_any_party_starts(monkeypatch):
    configs = SHIPPED_DEPLOYMENTS
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    started = []
    monkeypatch.setattr(subprocess, "Popen", lambda *args, **kwargs: started.append(args))
    result = CliRunner().invoke(
        standalone, ["deploy", "local", str(configs / "mpc-epsilon-greedy.toml"), "--no-progress", "--pin-cpus"]
    )
    assert result.exit_code == 2, result.output
    assert "pinning parties to cores needs os.sched_setaffinity (Linux); run without pin_cpus" in result.output
    assert started == []
