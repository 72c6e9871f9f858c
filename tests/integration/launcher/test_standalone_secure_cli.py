"""``liftlog standalone --secure`` as a user runs it: HTTPS only, a token or a client
certificate required, the printed admin token and the credentials file work with the CLI."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from liftlog.embedded.certs import generate_stack_certs
from liftlog.embedded.parent_death import popen_dying_with_parent
from liftlog.embedded.ports import free_port_block
from liftlog.embedded.probes import http_status, tls_client_context
from spark_log.client.nats_connect import DEFAULT_NATS_CONNECT_TIMEOUT_S
from tests.support.stacks import plain_stack_only
from tests.support.waiting import wait_for

pytestmark = plain_stack_only(
    "runs its own `liftlog standalone --secure` stack with its own credentials"
)

STARTUP_TIMEOUT_S = 120
CLI_TIMEOUT_S = 60
STOP_TIMEOUT_S = 60
REQUEST_TIMEOUT_S = 10
LIFTLOG = str(Path(sys.executable).parent / "liftlog")


class SecureStandalone:
    """``liftlog standalone --secure`` as a child that dies with the test; a thread collects
    its output."""

    def __init__(
        self, data_dir: Path, nodes: int, *extra: str, reuse_ports: SecureStandalone | None = None
    ) -> None:
        self.data_dir = data_dir
        self.api_port: int = reuse_ports.api_port if reuse_ports else free_port_block(nodes)
        self.nats_port: int = reuse_ports.nats_port if reuse_ports else free_port_block(3)
        self.zk_port: int = reuse_ports.zk_port if reuse_ports else free_port_block(3)
        self.liftbridge_port: int = (
            reuse_ports.liftbridge_port if reuse_ports else free_port_block(nodes)
        )
        argv = [
            LIFTLOG, "standalone", "--secure", "--nodes", str(nodes), "--data-dir", str(data_dir),
            "--nats-port", str(self.nats_port), "--zk-port", str(self.zk_port),
            "--api-port", str(self.api_port), "--liftbridge-port", str(self.liftbridge_port),
            *extra,
        ]  # fmt: skip
        self.lines: list[str] = []
        self.proc = popen_dying_with_parent(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(str(line).rstrip())

    def value(self, name: str) -> str:
        """The value printed on the endpoint line ``name`` (waits until it is printed)."""
        pattern = rf"^{re.escape(name)}\s+(\S+)"

        def found() -> str | None:
            for line in list(self.lines):
                if match := re.match(pattern, line):
                    return match.group(1)
            if self.proc.poll() is not None and not self._reader.is_alive():
                pytest.fail("standalone exited:\n" + "\n".join(self.lines))
            return None

        return wait_for(found, STARTUP_TIMEOUT_S, message=f"the {name!r} line")

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(timeout=STOP_TIMEOUT_S)
        self._reader.join(timeout=10)
        return code


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline:
            pids.append(int(entry.name))
    return pids


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "secure-data"
    for pid in _processes_mentioning(str(tmp_path)):
        os.kill(pid, signal.SIGKILL)


def _get(url: str, context: object, token: str = "") -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S, context=context) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _cli(*args: str, server: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LIFTLOG, *args, "--server", server],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
        env=env,
    )


def _env_without_credentials() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("LIFTLOG_")}


def _env_file(path: Path) -> dict[str, str]:
    """``export NAME=value`` lines, as a shell that sources the file would see them."""
    lines = path.read_text().splitlines()
    pairs = [line.removeprefix("export ").split("=", 1) for line in lines if line]
    return {name: value for name, value in pairs}


def test_secure_standalone_serves_https_with_auth(data_dir: Path) -> None:
    stack = SecureStandalone(data_dir, nodes=2)
    try:
        server = stack.value("node-1 api")
        second = stack.value("node-2 api")
        token = stack.value("admin token")
        credentials = stack.value("credentials")
        ca_file = stack.value("ca")
        stack.value("ready;")
        assert server == f"https://127.0.0.1:{stack.api_port}"
        assert second == f"https://127.0.0.1:{stack.api_port + 1}"
        assert token.startswith("llt_")
        tls_dir = data_dir / "tls"
        assert (tls_dir / "admin.token").read_text().strip() == token
        for secret in (tls_dir / "admin.token", Path(credentials), tls_dir / "admin.key"):
            assert stat.S_IMODE(secret.stat().st_mode) == 0o600

        # HTTPS only: plain HTTP gets no answer, nor does a client not trusting the CA
        assert http_status(f"http://127.0.0.1:{stack.api_port}/readyz") is None
        assert http_status(f"{server}/readyz") is None
        trusting = tls_client_context(ca_file)
        assert http_status(f"{server}/readyz", context=trusting) == 200

        # no credentials, a wrong token: 401 with a JSON error
        status, body = _get(f"{server}/v1/streams", trusting)
        assert status == 401 and body["error"]["code"] == "unauthenticated"
        status, _ = _get(f"{server}/v1/streams", trusting, token + "x")
        assert status == 401
        # the printed admin token, and the admin client certificate
        assert _get(f"{server}/v1/streams", trusting, token) == (200, {"streams": []})
        admin = tls_client_context(ca_file, str(tls_dir / "admin.pem"), str(tls_dir / "admin.key"))
        assert _get(f"{server}/v1/streams", admin) == (200, {"streams": []})

        # the CLI with the credentials file
        env = _env_without_credentials()
        refused = _cli("stream", "list", server=server, env=env)
        assert refused.returncode != 0
        env["LIFTLOG_CREDENTIALS_FILE"] = credentials
        servers = f"{server},{second}"
        created = _cli(
            "stream", "create", "orders", "--subject", "orders.in", "--partitions", "2",
            "--replication-factor", "2", server=servers, env=env,
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        listed = _cli("stream", "list", server=servers, env=env)
        assert listed.returncode == 0, listed.stderr
        assert "orders" in listed.stdout

        # publish over NATS (TLS, the publisher user), flush through the partitions' leaders
        # (node-to-node calls), read back over HTTPS
        env.update(_env_file(Path(stack.value("nats publisher"))))
        published = subprocess.run(
            [LIFTLOG, "publish", "orders", "--partition", "1", "--server", servers],
            input="one\ntwo\n",
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_S,
            check=False,
            env=env,
        )
        assert published.returncode == 0, published.stderr
        assert "orders/1 offset=1" in published.stdout
        flushed = _cli("stream", "flush", "orders", server=servers, env=env)
        assert flushed.returncode == 0, flushed.stderr
        tail = _cli("tail", "orders", "--partition", "1", server=second, env=env)
        assert [line.split("\t")[-1] for line in tail.stdout.splitlines()] == ["one", "two"]

        # the token is printed once and never reaches a log
        assert sum(token in line for line in stack.lines) == 1
        for log in (data_dir / "logs").glob("*.log"):
            assert token not in log.read_text(errors="replace"), log
        assert stack.stop() == 0
        wait_for(
            lambda: not _processes_mentioning(str(data_dir)),
            30,
            message="no process of the stack left",
        )

        # a restart keeps the CA, the token and access to ZooKeeper's protected znodes
        stack = SecureStandalone(data_dir, 2)
        assert stack.value("admin token") == token
        stack.value("ready;")
        listed = _cli("stream", "list", server=stack.value("node-2 api"), env=env)
        assert listed.returncode == 0, listed.stderr
        assert "orders" in listed.stdout
        assert stack.stop() == 0
    finally:
        if stack.proc.poll() is None:
            stack.stop()


@pytest.mark.slow
def test_secure_ha_stack(data_dir: Path) -> None:
    """Three NATS servers, three ZooKeeper servers and three nodes, all on TLS."""
    stack = SecureStandalone(data_dir, 3, "--ha")
    try:
        servers = [stack.value(f"node-{i} api") for i in (1, 2, 3)]
        stack.value("ready;")
        assert all(url.startswith("https://") for url in servers)
        env = _env_without_credentials()
        env["LIFTLOG_CREDENTIALS_FILE"] = stack.value("credentials")
        created = _cli(
            "stream", "create", "audit", "--subject", "audit.in", "--replication-factor", "3",
            server=",".join(servers), env=env,
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        tls_dir = data_dir / "tls"
        admin = tls_client_context(
            stack.value("ca"), str(tls_dir / "admin.pem"), str(tls_dir / "admin.key")
        )

        def in_sync() -> bool:
            status, body = _get(f"{servers[2]}/v1/streams/audit", admin)
            return status == 200 and len(body["partitions"][0]["isr"]) == 3

        wait_for(in_sync, 60, message="three in-sync replicas")
        assert stack.stop() == 0
        wait_for(
            lambda: not _processes_mentioning(str(data_dir)),
            30,
            message="no process of the stack left",
        )
    finally:
        if stack.proc.poll() is None:
            stack.stop()


def _liftlog(*args: str, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float]:
    """``liftlog args`` (no ``--server``: the credentials file's) and how long it took."""
    started = time.monotonic()
    done = subprocess.run(
        [LIFTLOG, *args], capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False,
        env=env,
    )  # fmt: skip
    return done, time.monotonic() - started


def _one_error_line(done: subprocess.CompletedProcess[str], start: str) -> str:
    """The single stderr line of a refused command (no traceback, no warning around it)."""
    assert done.returncode == 1, done
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(start), done.stderr
    return lines[0]


def test_the_credentials_file_is_all_a_tool_needs_and_refusals_are_one_line(
    data_dir: Path,
) -> None:
    stack = SecureStandalone(data_dir, nodes=1)
    try:
        server = stack.value("node-1 api")
        credentials = Path(stack.value("credentials"))
        stack.value("ready;")
        written = credentials.read_text()
        assert f'server = "{server}"' in written
        env = _env_without_credentials()
        env["LIFTLOG_CREDENTIALS_FILE"] = str(credentials)

        created, _ = _liftlog("stream", "create", "orders", "--subject", "orders.in", env=env)
        assert created.returncode == 0 and created.stderr == "", created
        # the credentials file alone: its token is the NATS login, its CA verifies NATS too
        for plain in ([], ["--plain"]):
            published, _ = _liftlog("publish", "orders", "zero", *plain, env=env)
            assert published.returncode == 0 and published.stderr == "", published
        publisher = {**env, **_env_file(data_dir / "tls" / "nats-publisher.env")}
        for plain in ([], ["--plain"]):
            published, _ = _liftlog("publish", "orders", "one", *plain, env=publisher)
            assert published.returncode == 0, published
            assert published.stderr == "", published.stderr  # no eof_received warning

        # a refused NATS login: at once, one line saying where the credentials are
        stranger = {**env, "LIFTLOG_NATS_USER": "nobody", "LIFTLOG_NATS_PASSWORD": "wrong"}
        for plain in ([], ["--plain"]):
            refused, took_s = _liftlog("publish", "orders", "two", *plain, env=stranger)
            line = _one_error_line(refused, "liftlog: unauthenticated: NATS at nats://")
            assert "refused the login of user 'nobody'" in line
            assert "LIFTLOG_NATS_*" in line and "LIFTLOG_CREDENTIALS_FILE" in line
            assert took_s < DEFAULT_NATS_CONNECT_TIMEOUT_S
        # a CA that did not sign the NATS server's certificate
        other_ca = generate_stack_certs(data_dir.parent / "other-ca", [1]).ca_file
        untrusting = {**publisher, "LIFTLOG_NATS_CA_FILE": other_ca}
        refused, took_s = _liftlog("publish", "orders", "three", env=untrusting)
        line = _one_error_line(refused, "liftlog: nats_unavailable: NATS at nats://")
        assert "does not trust" in line and "LIFTLOG_NATS_CA_FILE" in line
        assert took_s < DEFAULT_NATS_CONNECT_TIMEOUT_S

        # plain HTTP against the HTTPS port says which scheme to use
        plain_url = server.replace("https://", "http://")
        wrong_scheme, _ = _liftlog("stream", "list", "--server", plain_url, env=env)
        line = _one_error_line(wrong_scheme, "liftlog: unavailable: ")
        assert f"use {server}" in line

        tail, _ = _liftlog("tail", "orders", env=env)
        values = [row.split("\t")[-1] for row in tail.stdout.splitlines()]
        assert values == ["zero", "zero", "one", "one"]
        assert stack.stop() == 0
        wait_for(
            lambda: not _processes_mentioning(str(data_dir)),
            30,
            message="no process of the stack left",
        )

        # a restart on the same ports writes the same file: nothing to re-source
        stack = SecureStandalone(data_dir, 1, reuse_ports=stack)
        stack.value("ready;")
        assert credentials.read_text() == written
        listed, _ = _liftlog("stream", "list", env=env)
        assert listed.returncode == 0 and "orders" in listed.stdout, listed
        assert stack.stop() == 0
    finally:
        if stack.proc.poll() is None:
            stack.stop()
