"""Encrypted values in record batches: ciphertext on disk, plaintext for readers with the key,
a typed error (never garbage) for readers without it or for tampered bytes."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from spark_log.crypto import ENCRYPTION_OVERHEAD, ValueCipher, new_data_key
from spark_log.errors import DecryptionError, KeyUnavailableError
from spark_log.log import build_record_batch, decode_header, encode_batch, records_from_batches
from spark_log.log.batch import CRC_END, HEADER_SIZE, decode_records
from spark_log.log.fetch_table import table_from_batches
from spark_log.log.records import rows_in_range

VALUES = [b"secret-value-one", b"secret-value-two"]


def _batch(cipher: ValueCipher | None, base_offset: int = 10) -> bytes:
    rows = build_record_batch(
        [1000, 1001], [b"key-a", None], VALUES, [{"h": "clear-header"}, None], ["s.a", "s.b"]
    )
    return encode_batch(base_offset, 3, rows, cipher)


def test_values_are_encrypted_and_the_batch_is_flagged():
    cipher = ValueCipher(new_data_key())
    batch = _batch(cipher)
    assert decode_header(batch).encrypted and not decode_header(_batch(None)).encrypted
    for value in VALUES:
        assert value not in batch
    assert b"key-a" in batch and b"clear-header" in batch  # keys and headers stay clear
    stored = decode_records(batch).column("value").to_pylist()
    assert [len(v) for v in stored] == [len(v) + ENCRYPTION_OVERHEAD for v in VALUES]


def test_readers_with_the_key_get_plaintext():
    cipher = ValueCipher(new_data_key())
    batch = _batch(cipher)
    records = records_from_batches(batch, 11, 12, 10, cipher=cipher)
    assert [(r.offset, r.value) for r in records] == [(11, VALUES[1])]
    table = table_from_batches(batch, 10, 12, 10, cipher=cipher)
    assert table.column("value").to_pylist() == VALUES


def test_a_reader_without_the_key_is_refused():
    with pytest.raises(KeyUnavailableError, match="encrypted"):
        records_from_batches(_batch(ValueCipher(new_data_key())), 10, 12, 10)


def test_the_wrong_key_fails_authentication():
    batch = _batch(ValueCipher(new_data_key()))
    with pytest.raises(DecryptionError, match="offset 10"):
        records_from_batches(batch, 10, 12, 10, cipher=ValueCipher(new_data_key()))


def test_a_tampered_value_with_a_fixed_crc_fails_authentication():
    """Flip one ciphertext byte and recompute the CRC (an attacker with disk access could):
    AES-GCM still refuses it."""
    cipher = ValueCipher(new_data_key())
    batch = bytearray(_batch(cipher))
    stored = decode_records(bytes(batch)).column("value").to_pylist()[0]
    at = bytes(batch).index(stored) + len(stored) // 2
    batch[at] ^= 0x01
    struct.pack_into(">I", batch, 12, crc32c(bytes(batch[CRC_END:])))
    assert len(batch) > HEADER_SIZE
    with pytest.raises(DecryptionError):
        records_from_batches(bytes(batch), 10, 12, 10, cipher=cipher)


def test_a_value_moved_to_another_offset_fails_authentication():
    cipher = ValueCipher(new_data_key())
    sealed = cipher.encrypt(b"v", 5)
    assert cipher.decrypt(sealed, 5) == b"v"
    with pytest.raises(DecryptionError):
        cipher.decrypt(sealed, 6)


def test_the_lake_export_reads_plaintext_with_the_key_and_nothing_without_it():
    """The lake's file is encrypted as a whole (Parquet modular encryption), so the export
    reads values decrypted; without the partition's key it gets no rows at all."""
    cipher = ValueCipher(new_data_key())
    batch = _batch(cipher)
    (piece,) = rows_in_range(batch, 10, 12, 10, cipher=cipher)
    assert piece.rows.column("value").to_pylist() == VALUES
    with pytest.raises(KeyUnavailableError):
        list(rows_in_range(batch, 10, 12, 10))


def test_an_empty_value_stays_an_empty_tombstone():
    """Key compaction recognises tombstones by their empty value, encrypted stream or not."""
    cipher = ValueCipher(new_data_key())
    assert cipher.encrypt(b"", 3) == b"" and cipher.decrypt(b"", 3) == b""
    with pytest.raises(DecryptionError, match="too short"):
        cipher.decrypt(b"x" * (ENCRYPTION_OVERHEAD - 1), 3)
