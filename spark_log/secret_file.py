"""A secret kept in a file of its own (a token, a seed): read once, at start."""

from __future__ import annotations

from pathlib import Path

from spark_log.errors import ConfigError


def read_secret_file(path: str, key: str) -> str:
    """The file's text without surrounding whitespace; ConfigError naming the config ``key``
    when it cannot be read, so a typo stops a node at start rather than at first use."""
    try:
        return Path(path).read_text().strip()
    except OSError as exc:
        raise ConfigError(f"{key} {path}: {exc.strerror}") from exc
