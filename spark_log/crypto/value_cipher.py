"""AES-256-GCM over record values: one subkey per window of 2^31 offsets, one random nonce
per value.

Stored value = nonce (12 bytes) || ciphertext || tag (16 bytes); the record's offset is the
associated data, so a value moved to another offset fails authentication.

Why random nonces and not nonces derived from offsets: a truncation (a follower cutting its
log back to the leader's epoch boundary, an unclean election) reuses offsets with different
values under the same key, and a repeated (key, nonce) pair breaks GCM.

Why subkeys: with random 96-bit nonces NIST SP 800-38D allows 2^32 encryptions per key, and a
partition taking 100k values/s passes that within a day. The partition's data key (the one
wrapped in ZooKeeper) therefore never encrypts a value itself: the value at offset ``o`` is
sealed under ``HKDF-SHA256(data_key, salt=None, info=VALUE_KEY_INFO || (o >> 31) as 8
big-endian bytes)``, so each subkey seals at most 2^31 values (plus the few a truncation
makes it seal again), and a reader recomputes the subkey from the offset it already has.

An empty value stays empty: it is a tombstone to key compaction, which must still recognise
it, and a ciphertext's length (plaintext + 28) already tells that a value is empty. The price:
emptying a stored value is not detected, as the removal of a whole batch is not either (the
CRC is no defence against someone who can rewrite segment files).
"""

from __future__ import annotations

import os
import struct

import pyarrow as pa
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from spark_log.crypto.parquet_kms import PartitionFileCrypto
from spark_log.errors import DecryptionError

DATA_KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
ENCRYPTION_OVERHEAD = NONCE_BYTES + TAG_BYTES
"""Bytes an encrypted value takes beyond its plaintext."""
WINDOW_BITS = 31
"""Offsets ``[w << 31, (w + 1) << 31)`` share one subkey: 2^31 values, half the GCM bound."""
VALUE_KEY_INFO = b"liftlog value key"
"""HKDF ``info`` prefix of a value subkey (followed by the window as 8 big-endian bytes)."""
_OFFSET = struct.Struct(">q")
_WINDOW = struct.Struct(">Q")


def new_data_key() -> bytes:
    """A fresh random data key for one partition."""
    return AESGCM.generate_key(bit_length=DATA_KEY_BYTES * 8)


def value_subkey(data_key: bytes, offset: int) -> bytes:
    """The AES-256 key that seals the value at ``offset``: HKDF-SHA256 of the data key, bound
    to the offset's window (the module docstring says why)."""
    info = VALUE_KEY_INFO + _WINDOW.pack(offset >> WINDOW_BITS)
    return HKDF(algorithm=hashes.SHA256(), length=DATA_KEY_BYTES, salt=None, info=info).derive(
        data_key
    )


class ValueCipher:
    """Encrypts and decrypts one partition's values (the data key stays inside).

    Subkeys are derived on first use of a window and kept: a partition has a handful of
    windows (one per 2^31 offsets), and HKDF per value would cost more than the AES-GCM."""

    __slots__ = ("_aeads", "_data_key")

    def __init__(self, data_key: bytes) -> None:
        self._data_key = data_key
        self._aeads: dict[int, AESGCM] = {}

    def __repr__(self) -> str:
        return "ValueCipher(<data key>)"

    def file_crypto(self, stream: str, partition: int) -> PartitionFileCrypto:
        """Parquet modular encryption of this partition's lake files under the same data key
        (the lake holds values decrypted from the segments and re-encrypted by Parquet), so
        the key never leaves the crypto package."""
        return PartitionFileCrypto(stream, partition, self._data_key)

    def _aead(self, offset: int) -> AESGCM:
        """The AES-GCM instance under the subkey of ``offset``'s window."""
        window = offset >> WINDOW_BITS
        aead = self._aeads.get(window)
        if aead is None:
            if offset < 0:
                raise DecryptionError(f"no value key for negative offset {offset}")
            aead = AESGCM(value_subkey(self._data_key, offset))
            self._aeads[window] = aead
        return aead

    def encrypt(self, value: bytes, offset: int) -> bytes:
        if not value:
            return b""
        nonce = os.urandom(NONCE_BYTES)
        return nonce + self._aead(offset).encrypt(nonce, value, _OFFSET.pack(offset))

    def decrypt(self, stored: bytes, offset: int) -> bytes:
        if not stored:
            return b""
        if len(stored) < ENCRYPTION_OVERHEAD:
            raise DecryptionError(f"encrypted value at offset {offset} is too short")
        aead = self._aead(offset)
        try:
            return aead.decrypt(stored[:NONCE_BYTES], stored[NONCE_BYTES:], _OFFSET.pack(offset))
        except InvalidTag as exc:
            raise DecryptionError(
                f"the value at offset {offset} does not authenticate (altered, or the wrong key)"
            ) from exc

    def encrypt_values(self, values: pa.Array, first_offset: int) -> pa.Array:
        """A binary column of values numbered densely from ``first_offset``, encrypted (a
        batch that straddles a window boundary uses both windows' subkeys)."""
        plain = values.to_pylist()
        nonces = os.urandom(NONCE_BYTES * len(plain))  # one system call for the whole batch
        pack = _OFFSET.pack
        sealed = []
        for i, value in enumerate(plain):
            if not value:
                sealed.append(b"")
                continue
            offset = first_offset + i
            nonce = nonces[i * NONCE_BYTES : (i + 1) * NONCE_BYTES]
            sealed.append(nonce + self._aead(offset).encrypt(nonce, value, pack(offset)))
        return pa.array(sealed, pa.binary())

    def decrypt_values(self, values: pa.Array, first_offset: int) -> pa.Array:
        """The inverse of ``encrypt_values``; DecryptionError names the first bad offset."""
        stored = values.to_pylist()
        plain = [self.decrypt(v, first_offset + i) for i, v in enumerate(stored)]
        return pa.array(plain, pa.binary())
