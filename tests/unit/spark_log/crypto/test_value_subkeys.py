"""Values are sealed under a subkey per window of 2^31 offsets, never under the data key
itself, so no AES-GCM key passes NIST's 2^32 random-nonce bound however long a partition
lives; the derivation is a stored format (every segment written keeps it)."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from spark_log.crypto import ValueCipher, new_data_key
from spark_log.crypto.value_cipher import NONCE_BYTES, value_subkey
from spark_log.errors import DecryptionError

BOUNDARY = 2**31


def _documented_subkey(data_key: bytes, offset: int) -> bytes:
    """The derivation as docs/security.md states it, written out independently."""
    info = b"liftlog value key" + (offset >> 31).to_bytes(8, "big")
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(data_key)


def _open(key: bytes, stored: bytes, offset: int) -> bytes:
    return AESGCM(key).decrypt(
        stored[:NONCE_BYTES], stored[NONCE_BYTES:], struct.pack(">q", offset)
    )


@pytest.mark.parametrize("offset", [0, BOUNDARY - 1, BOUNDARY, 5 * BOUNDARY + 7])
def test_a_value_is_sealed_under_its_windows_documented_subkey(offset):
    data_key = new_data_key()
    stored = ValueCipher(data_key).encrypt(b"secret", offset)
    assert value_subkey(data_key, offset) == _documented_subkey(data_key, offset)
    assert _open(_documented_subkey(data_key, offset), stored, offset) == b"secret"
    with pytest.raises(InvalidTag):
        _open(data_key, stored, offset)  # the data key never seals a value itself


def test_adjacent_windows_have_different_subkeys():
    data_key = new_data_key()
    assert value_subkey(data_key, BOUNDARY - 1) == value_subkey(data_key, 0)
    assert value_subkey(data_key, BOUNDARY - 1) != value_subkey(data_key, BOUNDARY)


def test_a_batch_straddling_a_window_boundary_round_trips():
    data_key = new_data_key()
    cipher = ValueCipher(data_key)
    first = BOUNDARY - 2
    plain = pa.array([b"a", b"b", b"", b"d"], pa.binary())
    sealed = cipher.encrypt_values(plain, first)
    assert cipher.decrypt_values(sealed, first).to_pylist() == plain.to_pylist()
    last = sealed.to_pylist()[3]
    assert _open(_documented_subkey(data_key, first + 3), last, first + 3) == b"d"
    fresh = ValueCipher(data_key)  # a reader recomputes the subkeys from offsets alone
    assert fresh.decrypt_values(sealed, first).to_pylist() == plain.to_pylist()


def test_a_negative_offset_is_refused():
    with pytest.raises(DecryptionError, match="negative offset"):
        ValueCipher(new_data_key()).encrypt(b"v", -1)
