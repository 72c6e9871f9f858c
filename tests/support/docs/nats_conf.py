"""nats-server's own verdict on a documented config (``nats-server -t``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from liftlog.embedded.nats import find_nats_server

NATS_CHECK_TIMEOUT_S = 30


def nats_conf_errors(text: str, directory: Path) -> str:
    """What ``nats-server -t`` says is wrong with ``text`` ("" when it accepts it)."""
    path = directory / "nats-server.conf"
    path.write_text(text)
    checked = subprocess.run(
        [find_nats_server(), "-t", "-c", str(path)],
        capture_output=True,
        text=True,
        timeout=NATS_CHECK_TIMEOUT_S,
        check=False,
    )
    return "" if checked.returncode == 0 else checked.stderr or checked.stdout or "refused"
