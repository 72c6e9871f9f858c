"""``liftlog standalone`` (the embedded dev stack) and ``liftlog node`` (one ingest node)."""

from __future__ import annotations

import argparse

from liftlog.cli.common import Subcommands
from liftlog.embedded.port_check import (
    PORT_NATS,
    PORT_NODE_API,
    PORT_NODE_LIFTBRIDGE,
    PORT_ZOOKEEPER,
    PortInUseError,
)
from liftlog.embedded.standalone_defaults import (
    DEFAULT_STANDALONE_API_PORT,
    DEFAULT_STANDALONE_DATA_DIR,
    DEFAULT_STANDALONE_LIFTBRIDGE_PORT,
    DEFAULT_STANDALONE_NATS_PORT,
    DEFAULT_STANDALONE_NODES,
    DEFAULT_STANDALONE_ZK_PORT,
    HA_CLUSTER_SIZE,
    HA_DEFAULT_NODES,
    LAKE_CHOICES,
    LAKE_LOCAL,
    LAKE_S3,
)

DEFAULT_NODE_LOG_LEVEL = "INFO"
# The flag that moves each kind of port (the NATS monitor port is picked free, no flag).
PORT_FLAGS = {
    PORT_NATS: "--nats-port",
    PORT_ZOOKEEPER: "--zk-port",
    PORT_NODE_API: "--api-port",
    PORT_NODE_LIFTBRIDGE: "--liftbridge-port",
}


class PortsTakenError(PortInUseError):
    """PortInUseError in the CLI's words: each busy port with the flag that moves it."""

    def __init__(self, error: PortInUseError) -> None:
        super().__init__(error.busy, "")
        self.message = "; ".join(
            f"port {p.port} ({p.role}) is in use; choose another with {PORT_FLAGS[p.kind]}"
            if p.kind in PORT_FLAGS
            else f"port {p.port} ({p.role}) is in use; try again"
            for p in error.busy
        )


def add_standalone_parser(sub: Subcommands) -> None:
    p = sub.add_parser("standalone", help="run NATS, ZooKeeper and N nodes on this machine")
    p.add_argument(
        "--nodes",
        type=int,
        default=None,
        help=f"number of ingest nodes (default: {DEFAULT_STANDALONE_NODES}, "
        f"{HA_DEFAULT_NODES} with --ha)",
    )
    p.add_argument(
        "--ha",
        action="store_true",
        help=f"the HA topology: a {HA_CLUSTER_SIZE}-server NATS cluster (client ports --nats-port "
        f"+ i) and a {HA_CLUSTER_SIZE}-server ZooKeeper ensemble (--zk-port + i), the lake on "
        "an embedded SeaweedFS; node i is attached to NATS server i and lists all of them "
        "(default: off, one server of each)",
    )
    p.add_argument(
        "--data-dir",
        default=DEFAULT_STANDALONE_DATA_DIR,
        help=f"where everything is kept; a restart on it keeps all data "
        f"(default: {DEFAULT_STANDALONE_DATA_DIR})",
    )
    p.add_argument(
        "--nats-port",
        type=int,
        default=DEFAULT_STANDALONE_NATS_PORT,
        help=f"NATS client port (default: {DEFAULT_STANDALONE_NATS_PORT})",
    )
    p.add_argument(
        "--zk-port",
        type=int,
        default=DEFAULT_STANDALONE_ZK_PORT,
        help=f"ZooKeeper client port (default: {DEFAULT_STANDALONE_ZK_PORT})",
    )
    p.add_argument(
        "--api-port",
        type=int,
        default=DEFAULT_STANDALONE_API_PORT,
        help=f"the first node's REST port; node i uses this + i - 1 "
        f"(default: {DEFAULT_STANDALONE_API_PORT})",
    )
    p.add_argument(
        "--liftbridge-port",
        type=int,
        default=DEFAULT_STANDALONE_LIFTBRIDGE_PORT,
        help=f"the first node's Liftbridge gRPC port (docs/liftbridge.md); node i uses this + "
        f"i - 1, 0 serves none (default: {DEFAULT_STANDALONE_LIFTBRIDGE_PORT})",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="node settings (TOML) applied to every node; no per-node identity keys "
        "(default: none; see docs/examples/standalone.toml)",
    )
    p.add_argument(
        "--lake",
        choices=LAKE_CHOICES,
        default=LAKE_LOCAL,
        help=f"where the nodes export: {LAKE_LOCAL} (<data-dir>/lake) or {LAKE_S3} (an embedded "
        f"SeaweedFS, bucket s3://liftlog/lake; its keys printed at start and written to "
        f"<data-dir>/credentials.toml and <data-dir>/lake.env) "
        f"(default: {LAKE_LOCAL})",
    )
    p.add_argument(
        "--secure",
        action="store_true",
        help="TLS and authentication everywhere: a throwaway CA and certificates under "
        "<data-dir>/tls, HTTPS nodes (client certificates of that CA accepted), ZooKeeper "
        "over TLS with a digest ACL, NATS over TLS with users, auth on with a bootstrap admin "
        "token printed at start and <data-dir>/credentials.toml (server, token, CA) for the CLI "
        "(LIFTLOG_CREDENTIALS_FILE); with --ha, routes and quorum traffic too (default: off)",
    )
    p.set_defaults(run=_run_standalone)


def _run_standalone(args: argparse.Namespace) -> int:
    from liftlog.embedded.node_settings import load_node_settings
    from liftlog.embedded.standalone import Standalone

    settings = load_node_settings(args.config) if args.config else {}
    if args.nodes is None:
        args.nodes = HA_DEFAULT_NODES if args.ha else DEFAULT_STANDALONE_NODES
    stack = Standalone(
        nodes=args.nodes,
        data_dir=args.data_dir,
        nats_port=args.nats_port,
        zk_port=args.zk_port,
        api_port=args.api_port,
        liftbridge_port=args.liftbridge_port,
        node_overrides=settings,
        report=_say,
        lake=args.lake,
        ha=args.ha,
        secure=args.secure,
    )
    stack.check_data_dir_free()  # before the ports: a running stack holds both
    try:
        stack.check_ports()
    except PortInUseError as exc:
        raise PortsTakenError(exc) from None
    config = f", settings from {args.config}" if args.config else ""
    topology = ", HA: 3 NATS servers, 3 ZooKeeper servers, S3 lake" if args.ha else ""
    topology += ", secured: TLS and auth" if args.secure else ""
    _say(
        f"starting Liftlog standalone ({args.nodes} node(s){topology}, data in "
        f"{stack.data_dir}{config}) ..."
    )
    stack.start()  # a failed or interrupted (Ctrl-C) start stops what did start and unlocks
    for name, url in [*stack.endpoints(), *stack.credential_lines()]:
        _say(f"{name:<14} {url}")
    if stack.nodes and not stack.nodes[0].config.auth.enabled:
        _say(f"{'auth':<14} disabled: anyone may do anything (--secure turns it on)")
    stack.run_forever(on_ready=lambda: _say("ready; Ctrl-C stops everything"))
    return 0


def _say(line: str) -> None:
    print(line, flush=True)


def add_node_parser(sub: Subcommands) -> None:
    p = sub.add_parser("node", help="run one ingest node against existing NATS and ZooKeeper")
    p.add_argument(
        "--config",
        required=True,
        metavar="FILE",
        help="node config file (TOML, required; see docs/examples/node.toml)",
    )
    p.add_argument(
        "--log-level",
        default=DEFAULT_NODE_LOG_LEVEL,
        help=f"Python logging level (default: {DEFAULT_NODE_LOG_LEVEL})",
    )
    p.set_defaults(run=_run_node)


def _run_node(args: argparse.Namespace) -> int:
    from ingest.__main__ import main as ingest_main

    return int(ingest_main(["--config", args.config, "--log-level", args.log_level]))
