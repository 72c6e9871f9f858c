"""Reading a TOML file as a mapping, every failure a ConfigError naming the file (the node
config loader and ``liftlog standalone --config`` share it)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from spark_log.errors import ConfigError
from spark_log.json_types import JsonObject


def read_toml(path: str | Path) -> JsonObject:
    """The file's top-level table; ConfigError when it cannot be read or is not TOML."""
    try:
        return tomllib.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from exc
