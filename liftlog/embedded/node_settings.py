"""``liftlog standalone --config FILE``: node settings shared by every node of the stack.

The file is a node config (the same TOML, the same typed loader as ``liftlog node --config``,
unknown keys rejected) without the per-node identity: the launcher gives each node its broker
id, ports, data directory and the NATS/ZooKeeper addresses. A file that sets one of those is
refused, naming the flag that sets it instead: silently overriding it would leave the user
wondering why the setting did nothing, and applying it would make every node collide.
"""

from __future__ import annotations

from pathlib import Path

from spark_log.config import NodeConfig
from spark_log.errors import ConfigError
from spark_log.json_types import JsonObject
from spark_log.toml_file import read_toml
from spark_log.typed_config import from_mapping

# Identity fields the launcher sets per node, and what to use instead.
LAUNCHER_OWNED_KEYS: dict[str, str] = {
    "broker_id": "nodes are numbered 1..--nodes",
    "data_dir": "use --data-dir (node i keeps its log in <data-dir>/node-<i>)",
    "api_host": "the stack listens on 127.0.0.1",
    "api_port": "use --api-port (the first node's; the others follow)",
    "liftbridge_port": "use --liftbridge-port (the first node's; the others follow)",
    "nats_url": "use --nats-port",
    "nats_servers": "use --nats-port (with --ha, node i lists server i first)",
    "nats_advertised_url": "the stack advertises the NATS server each node is attached to",
    "api_advertised_url": "the stack advertises each node's own API URL",
    "zk_connect": "use --zk-port",
}
# Placeholder identity used only to check the rest of the file with the real loader.
_CHECK_IDENTITY = {"broker_id": 1, "data_dir": "/"}


def load_node_settings(path: str | Path) -> JsonObject:
    """The file's settings as a mapping for ``Standalone(node_overrides=...)``, checked."""
    data = read_toml(path)
    owned = sorted(set(data) & set(LAUNCHER_OWNED_KEYS))
    if owned:
        reasons = "; ".join(f"{k}: {LAUNCHER_OWNED_KEYS[k]}" for k in owned)
        raise ConfigError(
            f"{path}: {', '.join(owned)} cannot be set in a standalone config, the launcher "
            f"sets them per node ({reasons}); remove them, or run each node with "
            "`liftlog node --config`"
        )
    try:
        from_mapping(NodeConfig, {**data, **_CHECK_IDENTITY})
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc.message}") from exc
    return data
