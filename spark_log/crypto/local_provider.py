"""The key provider backed by master keys from the node config (inline, file or env).

A data key is wrapped with AES-256-GCM under the master key: a random 12-byte nonce, the
context (stream and partition) as associated data. ``blob`` = nonce || ciphertext || tag.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from spark_log.crypto.key_provider import WrappedKey
from spark_log.crypto.master_key import MasterKey, load_key
from spark_log.encryption_config import EncryptionConfig
from spark_log.errors import DecryptionError, KeyUnavailableError

NONCE_BYTES = 12
WRAP_LABEL = b"liftlog data key v1|"


class LocalMasterKeyProvider:
    """Wraps under ``current``; unwraps under ``current`` or any of ``previous``."""

    def __init__(self, current: MasterKey, previous: tuple[MasterKey, ...] = ()) -> None:
        self._current = current
        self._keys = {key.key_id: key for key in (*previous, current)}

    @property
    def current_key_id(self) -> str:
        return self._current.key_id

    @property
    def key_ids(self) -> tuple[str, ...]:
        """Every master key id this provider can unwrap under."""
        return tuple(self._keys)

    def wrap(self, data_key: bytes, context: bytes) -> WrappedKey:
        nonce = os.urandom(NONCE_BYTES)
        sealed = AESGCM(self._current.material).encrypt(nonce, data_key, WRAP_LABEL + context)
        return WrappedKey(self._current.key_id, nonce + sealed)

    def unwrap(self, wrapped: WrappedKey, context: bytes) -> bytes:
        key = self._keys.get(wrapped.key_id)
        if key is None:
            raise KeyUnavailableError(
                f"the data key was wrapped by master key {wrapped.key_id}, which this node "
                f"does not have (it has {', '.join(sorted(self._keys))}); configure it as "
                "encryption.master_key or previous_master_key"
            )
        nonce, sealed = wrapped.blob[:NONCE_BYTES], wrapped.blob[NONCE_BYTES:]
        try:
            return AESGCM(key.material).decrypt(nonce, sealed, WRAP_LABEL + context)
        except InvalidTag as exc:
            raise DecryptionError(
                f"a data key wrapped by master key {wrapped.key_id} does not authenticate "
                "(altered, or stored for another partition)"
            ) from exc


def master_key_provider(
    config: EncryptionConfig, env: Mapping[str, str] | None = None
) -> LocalMasterKeyProvider | None:
    """The provider of a node's ``[encryption]`` table, or None when no master key is set.

    Keys are read and checked here (at node start), so a bad key fails the start, not the
    first encrypted write."""
    current = load_key(
        config.master_key, config.master_key_file, config.master_key_env, "master_key", env
    )
    if current is None:
        return None
    previous = load_key(
        config.previous_master_key,
        config.previous_master_key_file,
        config.previous_master_key_env,
        "previous_master_key",
        env,
    )
    return LocalMasterKeyProvider(current, (previous,) if previous is not None else ())
