"""The real Apache ZooKeeper server, from the jars inside the pyspark wheel.

The pyspark wheel already ships ZooKeeper (Spark needs it), so no download is needed:
``java -cp "<pyspark>/jars/*" org.apache.zookeeper.server.ZooKeeperServerMain zoo.cfg``.
The pyspark directory is located with ``importlib.util.find_spec`` rather than imported, so
this package never pays for (or depends on) importing Spark.

With ``tls`` (a ZkServerTls) the server listens on a secure client port only (see
zookeeper_tls.py): ``port`` is then ``secureClientPort`` and no plaintext port is opened.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from liftlog.embedded.component import Component
from liftlog.embedded.java import require_java
from liftlog.embedded.probes import four_letter_word
from liftlog.embedded.zookeeper_tls import (
    KEYSTORE_FILE_NAME,
    ZkClientAuth,
    ZkServerTls,
    node_zk_security,
    tls_four_letter_word,
)
from spark_log.errors import ProcessStartError

__all__ = [
    "ZkServerTls",
    "ZooKeeperServer",
    "node_zk_security",
    "secure_zookeeper",
    "zookeeper_jars_dir",
]

ZK_MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
# ZooKeeperServerMain ignores server.N lines (it always runs standalone); ensembles use this
ZK_QUORUM_MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
DEFAULT_ZK_HOST = "127.0.0.1"
DEFAULT_ZK_START_TIMEOUT_S = 60.0
# tickTime 500 ms: ZooKeeper's minimum session timeout is 2 ticks, so sessions from 1 s up
# are honoured (fault tests expire sessions quickly); the maximum stays generous.
DEFAULT_ZK_TICK_TIME_MS = 500
DEFAULT_ZK_MAX_SESSION_TIMEOUT_MS = 60_000
DEFAULT_ZK_HEAP_MB = 256
# The transaction log is preallocated in blocks of this many KiB (ZooKeeper's default, 64 MiB,
# is wasteful for an embedded server and for test temp dirs).
DEFAULT_ZK_PREALLOC_KB = 4096

_LOG4J2_PROPERTIES = """\
status = warn
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{1}: %m%n
rootLogger.level = warn
rootLogger.appenderRef.console.ref = console
"""


class ZooKeeperServer(Component):
    """A standalone ZooKeeper server keeping its data (and sessions) under ``data_dir``.

    Restarting on the same ``data_dir`` restores every znode and the sessions that were open:
    ephemeral znodes of a killed client survive until that session times out, as in production.
    """

    main_class = ZK_MAIN_CLASS

    def __init__(
        self,
        port: int,
        data_dir: str | Path,
        host: str = DEFAULT_ZK_HOST,
        *,
        log_path: str | Path | None = None,
        java: str | Path | None = None,
        heap_mb: int = DEFAULT_ZK_HEAP_MB,
        tls: ZkServerTls | None = None,
    ) -> None:
        super().__init__()
        self.port = port
        self.tls = tls
        self.host = host
        self.data_dir = Path(data_dir)
        self.log_path = Path(log_path) if log_path else self.data_dir / "zookeeper.log"
        self.name = f"zookeeper :{port}"
        self.start_timeout_s = DEFAULT_ZK_START_TIMEOUT_S
        self._java = java
        self._heap_mb = heap_mb

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def config_path(self) -> Path:
        return self.data_dir / "zoo.cfg"

    def is_ready(self) -> bool:
        """``ruok`` answers ``imok`` and ``srvr`` reports a mode: the server serves clients.

        ``ruok`` alone answers while the server is still loading its database, when client
        sessions are still refused ("ZooKeeperServer not running"); ``srvr`` reports the mode
        only once requests are served.
        """
        if self.four_letter_word("ruok") != "imok":
            return False
        return "Mode: " in self.four_letter_word("srvr")

    def four_letter_word(self, word: str) -> str:
        """A four-letter command on the client port (over TLS on a secure one)."""
        if self.tls is None:
            return four_letter_word(self.host, self.port, word)
        return tls_four_letter_word(self.host, self.port, word, self.tls.probe_context())

    @property
    def keystore_path(self) -> Path:
        return self.data_dir / KEYSTORE_FILE_NAME

    def _prepare(self) -> None:
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(self._zoo_cfg())
        (self.data_dir / "log4j2.properties").write_text(_LOG4J2_PROPERTIES)
        if self.tls is not None:
            self.tls.write_keystore(self.keystore_path)

    def _zoo_cfg(self) -> str:
        lines = [
            f"tickTime={DEFAULT_ZK_TICK_TIME_MS}",
            f"dataDir={(self.data_dir / 'data').resolve()}",
            *self._client_port_lines(),
            f"maxSessionTimeout={DEFAULT_ZK_MAX_SESSION_TIMEOUT_MS}",
            "admin.enableServer=false",
            "4lw.commands.whitelist=ruok,srvr",
            f"preAllocSize={DEFAULT_ZK_PREALLOC_KB}",
        ]
        return "\n".join(lines) + "\n"

    def _client_port_lines(self) -> list[str]:
        """The plaintext client port, or with TLS the secure one alone."""
        if self.tls is None:
            return [f"clientPort={self.port}", f"clientPortAddress={self.host}"]
        return [f"secureClientPort={self.port}", f"secureClientPortAddress={self.host}"]

    def _argv(self) -> list[str]:
        java = require_java(self._java)
        return [
            java,
            f"-Xmx{self._heap_mb}m",
            # an embedded ZooKeeper serves one stack's metadata: the serial collector and the
            # C1 compiler alone start it with a fraction of the CPU the defaults take
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Dzookeeper.jmx.log4j.disable=true",
            f"-Dlog4j2.configurationFile={(self.data_dir / 'log4j2.properties').resolve()}",
            *(self.tls.jvm_properties(self.keystore_path) if self.tls else []),
            "-cp",
            f"{zookeeper_jars_dir()}/*",
            self.main_class,
            str(self.config_path.resolve()),
        ]


def zookeeper_jars_dir() -> Path:
    """``<pyspark>/jars``, found without importing pyspark; it must hold zookeeper-*.jar."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise ProcessStartError(
            "pyspark is not installed: the embedded ZooKeeper runs from the jars in the "
            "pyspark wheel (pip install 'pyspark>=4.3,<4.4')"
        )
    jars = Path(next(iter(spec.submodule_search_locations))) / "jars"
    if not any(jars.glob("zookeeper-*.jar")):
        raise ProcessStartError(f"no zookeeper-*.jar in {jars}; is the pyspark install complete?")
    return jars


def secure_zookeeper(
    port: int,
    data_dir: str | Path,
    *,
    cert_file: str | Path,
    key_file: str | Path,
    ca_file: str | Path,
    host: str = DEFAULT_ZK_HOST,
    log_path: str | Path | None = None,
    client_auth: ZkClientAuth = "need",
) -> ZooKeeperServer:
    """A ZooKeeper server (not yet started) that listens on a TLS port only and, with
    ``client_auth="need"``, accepts only clients whose certificate chains to ``ca_file``.

    Its nodes' ``[zk_security]`` comes from ``node_zk_security`` (same ``ca_file``, each
    node's own certificate, one digest identity shared by the cluster).
    """
    tls = ZkServerTls(Path(cert_file), Path(key_file), Path(ca_file), client_auth)
    return ZooKeeperServer(port, data_dir, host, log_path=log_path, tls=tls)
