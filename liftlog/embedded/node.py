"""One ingest node (``python -m ingest --config FILE``) as a child process.

The node's contract: it serves HTTP (HTTPS with ``[api_tls]``) on ``config.api_url``,
``GET /readyz`` answers 200 once it is ready, and SIGTERM means a clean shutdown.
"""

from __future__ import annotations

import os
import ssl
import sys
from pathlib import Path

from liftlog.embedded.component import Component
from liftlog.embedded.probes import http_ok, tls_client_context
from spark_log.config import NodeConfig, dump_node_config

DEFAULT_NODE_START_TIMEOUT_S = 60.0
CONFIG_FILE_MODE = 0o600
"""Node config files are readable by their owner only: they may carry object-store secrets."""
# The directory holding the spark_log, coordinator and ingest packages, so the child finds
# them even when the project is run from a checkout rather than installed.
_SOURCE_ROOT = Path(__file__).resolve().parents[2]


class NodeProcess(Component):
    """An ingest node started from ``config``, written to ``config_path`` before each start."""

    def __init__(
        self, config: NodeConfig, config_path: str | Path, *, log_path: str | Path | None = None
    ) -> None:
        super().__init__()
        self.config = config
        self.config_path = Path(config_path)
        self.log_path = Path(log_path) if log_path else self.config_path.with_suffix(".log")
        self.name = f"node-{config.broker_id}"
        self.start_timeout_s = DEFAULT_NODE_START_TIMEOUT_S
        self._tls_context: ssl.SSLContext | None = None

    @property
    def broker_id(self) -> int:
        return self.config.broker_id

    @property
    def label(self) -> str:
        """``node <id>``: operators know nodes by broker id."""
        return f"node {self.broker_id}"

    @property
    def api_url(self) -> str:
        return self.config.api_url

    def is_ready(self) -> bool:
        return http_ok(f"{self.api_url}/readyz", context=self._probe_context())

    def _probe_context(self) -> ssl.SSLContext | None:
        """Over HTTPS the probe trusts the node's CA, and presents the node's own
        certificate when the node demands one."""
        tls = self.config.api_tls
        if not tls.enabled:
            return None
        if self._tls_context is None:
            client = (tls.cert_file, tls.key_file) if tls.require_client_cert else ("", "")
            self._tls_context = tls_client_context(tls.ca_file, *client)
        return self._tls_context

    def _prepare(self) -> None:
        self.config_path.parent.mkdir(parents=True, exist_ok=True)
        Path(self.config.data_dir).mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(dump_node_config(self.config))
        self.config_path.chmod(CONFIG_FILE_MODE)  # the lake's storage options hold secrets

    def _argv(self) -> list[str]:
        return [sys.executable, "-m", "ingest", "--config", str(self.config_path)]

    def _extra_env(self) -> dict[str, str]:
        python_path = os.environ.get("PYTHONPATH")
        joined = f"{_SOURCE_ROOT}{os.pathsep}{python_path}" if python_path else str(_SOURCE_ROOT)
        return {"PYTHONPATH": joined, "PYTHONUNBUFFERED": "1"}
