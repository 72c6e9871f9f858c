"""Encryption at rest: the ``[encryption]`` table of a node config (docs/security.md).

The master key wraps every partition's data key; it never touches data itself. Each of the
current and the previous master key comes from exactly one place: inline (base64 of 32 bytes,
a secret kept out of ``repr``), a file holding that base64 text, or the name of an environment
variable holding it. The previous key exists only for a rotation: data keys wrapped by it
still unwrap until ``liftlog encryption rotate`` has re-wrapped them under the current key.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spark_log.errors import ConfigError

MASTER_KEY_BYTES = 32
"""AES-256: the master key and every data key are 32 random bytes."""


@dataclass(frozen=True)
class EncryptionConfig:
    """Where the master key that wraps every partition's data key comes from: inline
    (``master_key``, base64 of 32 bytes; secret), a file, or an environment variable. None set
    means the node cannot create, write or read encrypted streams."""

    master_key: str = field(default="", repr=False)
    master_key_file: str = ""
    master_key_env: str = ""
    previous_master_key: str = field(default="", repr=False)
    previous_master_key_file: str = ""
    previous_master_key_env: str = ""

    def __post_init__(self) -> None:
        current = _sources(self.master_key, self.master_key_file, self.master_key_env)
        previous = _sources(
            self.previous_master_key, self.previous_master_key_file, self.previous_master_key_env
        )
        if current > 1:
            raise ConfigError(
                "encryption: set at most one of master_key, master_key_file, master_key_env"
            )
        if previous > 1:
            raise ConfigError(
                "encryption: set at most one of previous_master_key, "
                "previous_master_key_file, previous_master_key_env"
            )
        if previous and not current:
            raise ConfigError("encryption: a previous master key needs a current master key")

    @property
    def enabled(self) -> bool:
        """Whether a master key is configured (it is read and checked when the node starts)."""
        return bool(self.master_key or self.master_key_file or self.master_key_env)


def _sources(*values: str) -> int:
    return sum(1 for value in values if value)
