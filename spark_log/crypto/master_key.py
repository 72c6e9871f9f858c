"""A master key: 32 secret bytes and the public id that names it in wrapped data keys.

The id is an HMAC of a fixed label under the key, so it names the key without revealing it
and two nodes configured with the same key agree on its id without any registry.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from spark_log.encryption_config import MASTER_KEY_BYTES
from spark_log.errors import ConfigError

KEY_ID_LABEL = b"liftlog master key id v1"
KEY_ID_HEX_CHARS = 16


@dataclass(frozen=True)
class MasterKey:
    """A master key; ``material`` is secret and never in ``repr``."""

    key_id: str
    material: bytes = field(repr=False)

    @classmethod
    def of(cls, material: bytes) -> MasterKey:
        if len(material) != MASTER_KEY_BYTES:
            raise ConfigError(f"a master key must be {MASTER_KEY_BYTES} bytes, got {len(material)}")
        digest = hmac.new(material, KEY_ID_LABEL, hashlib.sha256).hexdigest()
        return cls(digest[:KEY_ID_HEX_CHARS], material)


def decode_key(text: str, where: str) -> MasterKey:
    """A master key from its base64 text; ConfigError naming ``where`` (never the text)."""
    try:
        material = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ConfigError(f"{where}: not valid base64") from exc
    try:
        return MasterKey.of(material)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc.message}") from exc


def load_key(
    inline: str, file: str, env_name: str, what: str, env: Mapping[str, str] | None = None
) -> MasterKey | None:
    """The key from whichever source is set (None when none is)."""
    environ = os.environ if env is None else env
    if inline:
        return decode_key(inline, f"encryption.{what}")
    if file:
        try:
            text = Path(file).read_text()
        except OSError as exc:
            raise ConfigError(f"encryption.{what}_file: cannot read {file}: {exc}") from exc
        return decode_key(text, f"encryption.{what}_file {file}")
    if env_name:
        variable = environ.get(env_name)
        if not variable:
            raise ConfigError(f"encryption.{what}_env: environment variable {env_name} is not set")
        return decode_key(variable, f"encryption.{what}_env {env_name}")
    return None
