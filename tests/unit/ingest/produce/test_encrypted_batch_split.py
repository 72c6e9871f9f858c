"""Producer batches of an encrypted stream are split with the ciphertext growth counted, so an
encrypted stored batch is no larger than a clear one would be (and still fits in one NATS
message when followers fetch it)."""

from __future__ import annotations

from ingest.produce.sequencer import MAX_STORED_BATCH_BYTES, _split
from spark_log.crypto import ENCRYPTION_OVERHEAD, ValueCipher, new_data_key
from spark_log.log import build_record_batch, encode_batch

ROWS = 40_000


def _stored_sizes(pieces, cipher=None) -> list[int]:
    sizes, base = [], 0
    for piece in pieces:
        sizes.append(len(encode_batch(base, 0, piece, cipher)))
        base += piece.num_rows
    return sizes


def test_tiny_encrypted_values_make_more_batches_none_larger_than_clear_ones():
    rows = build_record_batch([1] * ROWS, [None] * ROWS, [b"v"] * ROWS, [None] * ROWS, ["s"] * ROWS)
    clear = _split(rows, MAX_STORED_BATCH_BYTES)
    encrypted = _split(rows, MAX_STORED_BATCH_BYTES, ENCRYPTION_OVERHEAD)
    assert len(encrypted) > len(clear)
    assert sum(p.num_rows for p in encrypted) == ROWS
    sealed = _stored_sizes(encrypted, ValueCipher(new_data_key()))
    assert max(sealed) <= max(_stored_sizes(clear))
