"""``privbandits serve`` as a process: TLS with the party's certificate, tokens, a slow client, a graceful stop."""

from __future__ import annotations

import signal
import socket
import sqlite3
import ssl
import threading
import tomllib
from pathlib import Path

import httpx
import pytest
from serve_process import add_token, start, write_reference
from typer.testing import CliRunner

from privbandits.cli import app
from privbandits.deploy.certs import issue, make_ca
from privbandits.serve.client import ServeClient, ServeError
from privbandits.serve.reference import ReferenceDecider

LEARNER = {"policy": "linucb", "n_arms": 2, "dim": 2}


@pytest.fixture
def tls_files(tmp_path):
    """A CA and the service's certificate (its DNS name: the party's name, ``reference``)."""
    ca = make_ca()
    (tmp_path / "ca.pem").write_bytes(ca.certificate_pem())
    issue(ca, "reference").write(tmp_path / "reference.pem", tmp_path / "reference.key")
    return tmp_path / "ca.pem"


def test_the_api_over_tls_refuses_strangers_and_slow_clients(tmp_path, tls_files) -> None:
    from privbandits.serve.server import make_server, open_service
    from privbandits.serve.settings import parse_reference

    service_file = write_reference(tmp_path, LEARNER, certificate="reference.pem", key="reference.key",
                                   body_timeout_s=0.5)  # fmt: skip
    token = add_token(tmp_path, LEARNER)
    parsed = parse_reference(tomllib.loads(service_file.read_text()), tmp_path)
    parsed.service.check_transport(plain_http=False)
    server, sock, url = make_server(open_service(ReferenceDecider(parsed.learner), parsed.service), parsed.service)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        with ServeClient(url, token, ca=tls_files, server_name="reference", timeout_s=10) as client:
            client.health()  # waits for the server to start
            decision = client.decide("e1", "u1", [[1.0, 0.0], [0.0, 1.0]])
            assert client.reward("e1", 1.0).model_version == 1 and decision.propensity is None
        with ServeClient(url, "pbt_wrong", ca=tls_files, server_name="reference") as stranger:
            with pytest.raises(ServeError, match="401 authorization"):
                stranger.health()
        with pytest.raises(httpx.ConnectError):  # no trust in the party's CA: no connection
            httpx.get(url + "/v1/health", timeout=10)
        assert _slow_client(url, token, tls_files).startswith("HTTP/1.1 408")
    finally:
        server.should_exit = True
        thread.join(timeout=30)
    with sqlite3.connect(tmp_path / "reference.serve.sqlite") as db:  # stopped: the learner was checkpointed
        assert db.execute("SELECT seq, model_version FROM checkpoints").fetchall() == [(2, 1)]


@pytest.mark.slow
def test_the_serve_command_announces_serves_and_stops_on_sigterm(tmp_path) -> None:
    service_file = write_reference(tmp_path, LEARNER)
    token = add_token(tmp_path, LEARNER)
    process, url = start(service_file, "--dev-plain-http")
    try:
        assert url.startswith("http://127.0.0.1:")
        with ServeClient(url, token, timeout_s=10) as client:
            client.decide("e1", "u1", [[1.0, 0.0], [0.0, 1.0]])
            assert client.reward("e1", 1.0).model_version == 1
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once stopped
    with sqlite3.connect(tmp_path / "reference.serve.sqlite") as db:  # stopped: the learner was checkpointed
        assert db.execute("SELECT seq, model_version FROM checkpoints").fetchall() == [(2, 1)]


def _slow_client(url: str, token: str, ca_path) -> str:
    """Send a request's headers and half its body, then stall: the service's answer."""
    host, port = url.removeprefix("https://").split(":")
    context = ssl.create_default_context(cafile=str(ca_path))
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="reference") as tls:
            tls.sendall(
                b"POST /v1/decide HTTP/1.1\r\nHost: reference\r\nContent-Type: application/json\r\n"
                + f"Authorization: Bearer {token}\r\nContent-Length: 100\r\n\r\n".encode()
                + b'{"event_id": "slow",'
            )
            return tls.recv(4096).decode()


def test_plain_http_needs_the_flag_and_a_loopback_address(tmp_path) -> None:
    runner = CliRunner()
    service_file = write_reference(tmp_path, LEARNER)
    result = runner.invoke(app, ["serve", str(service_file)])
    assert result.exit_code == 2 and "service.certificate and service.key are missing" in result.output
    public = write_reference(tmp_path, LEARNER, host="0.0.0.0")
    result = runner.invoke(app, ["serve", str(public), "--dev-plain-http"])
    assert result.exit_code == 2 and "serves only a loopback address, not service.host = '0.0.0.0'" in result.output


def test_a_deployment_without_a_serving_role_is_one_line(tmp_path, monkeypatch) -> None:
    from privbandits.deploy.registry import PROTOCOLS

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(PROTOCOLS.get("vertical-o3m"), "serving", None)  # a protocol with no serving role (yet)
    result = CliRunner().invoke(app, ["serve", "vertical-vfucb", "--as", "active"])
    assert result.exit_code == 2
    assert "error: protocol 'vertical-o3m' has no serving role yet (party 'active')" in result.output


def test_a_damaged_store_is_one_line_and_exit_2(tmp_path) -> None:
    service_file = write_reference(tmp_path, LEARNER)
    (tmp_path / "reference.serve.sqlite").write_bytes(b"garbage" * 1000)
    result = CliRunner().invoke(app, ["serve", str(service_file), "--dev-plain-http"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and f"event store {tmp_path / 'reference.serve.sqlite'} cannot be used" in lines[0]


def test_serve_token_prints_a_token_the_store_keeps_hashed(tmp_path) -> None:
    service_file = write_reference(tmp_path, LEARNER)
    result = CliRunner().invoke(app, ["serve-token", str(service_file), "--client", "shop"])
    assert result.exit_code == 0
    token = result.stdout.strip().splitlines()[-1]
    assert token.startswith("pbt_")
    with sqlite3.connect(tmp_path / "reference.serve.sqlite") as db:
        assert db.execute("SELECT client FROM tokens").fetchall() == [("shop",)]
    bad = CliRunner().invoke(app, ["serve-token", str(service_file), "--client", "no spaces"])
    assert bad.exit_code == 2 and "--client: client name must be" in bad.output


def test_a_serve_table_must_name_a_party(tmp_path, monkeypatch) -> None:
    from privbandits.deploy.cli import _load

    monkeypatch.chdir(tmp_path)
    shipped = _load(Path("vertical-vfucb"))
    text = Path("vertical-vfucb.toml").read_text()
    assert shipped.serve == {}
    Path("named.toml").write_text(text + '\n[serve.active]\nport = 8761\nreward_timeout_s = 30\n')
    named = _load(Path("named.toml"))
    assert (named.serve["active"].port, named.serve["active"].reward_timeout_s) == (8761, 30.0)
    Path("wrong.toml").write_text(text + "\n[serve.nobody]\nport = 8761\n")
    result = CliRunner().invoke(app, ["serve", "wrong.toml", "--as", "active"])
    assert result.exit_code == 2 and "serve.nobody: no party is named 'nobody'" in result.output


def test_the_listening_socket_is_tcp_so_answers_are_not_held_back(tmp_path) -> None:
    """asyncio sets TCP_NODELAY only on connections of an IPPROTO_TCP socket; without it each answer waited ~40 ms."""
    from privbandits.serve.reference import ReferenceDecider, ReferenceLearner
    from privbandits.serve.server import make_server, open_service
    from privbandits.serve.settings import ServiceSettings

    settings = ServiceSettings(port=0, store=tmp_path / "s.sqlite")
    service = open_service(ReferenceDecider(ReferenceLearner(**LEARNER)), settings)
    _, sock, url = make_server(service, settings)
    assert sock.proto == socket.IPPROTO_TCP and url.startswith("http://127.0.0.1:")
    sock.close()
    service.close()
