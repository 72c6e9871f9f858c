"""The record-batch wire format: a CRC-framed Arrow IPC record batch.

The same bytes are written to segments, copied byte-for-byte by followers and shipped by
fetches, so a batch is encoded exactly once (on the leader) and verified by everyone else.

Frame (big-endian, ``HEADER_SIZE`` = 43 bytes, Kafka's v2 layout minus producer fields)::

    base_offset        int64   first offset in the batch (records have dense offsets base+i)
    batch_length       int32   bytes AFTER this field (crc .. end of payload)
    crc                uint32  CRC-32C (Castagnoli, as Kafka) of every byte after the crc field
    magic              int8    = MAGIC
    attributes         int16   bit 0: values are encrypted (ATTRIBUTE_ENCRYPTED); others 0
    leader_epoch       int32
    record_count       int32
    first_timestamp_ms int64
    max_timestamp_ms   int64
    payload            Arrow IPC record-batch message (no schema message) in RECORD_SCHEMA
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from crc32c import crc32c

from spark_log.errors import CorruptRecordError, InvalidRequestError, RecordTooLargeError

if TYPE_CHECKING:
    from spark_log.crypto.value_cipher import ValueCipher

HEADER = struct.Struct(">qiIbhiiqq")
HEADER_SIZE = HEADER.size
LOG_OVERHEAD = 12
"""Bytes of ``base_offset`` + ``batch_length``: the part of a batch ``batch_length`` omits."""
CRC_END = 16
"""The CRC covers ``batch[CRC_END:]`` (everything after the crc field)."""
MAGIC = 1
ATTRIBUTES_NONE = 0
ATTRIBUTE_ENCRYPTED = 0x1
"""The batch's ``value`` column holds AES-GCM ciphertexts (spark_log.crypto.value_cipher):
readers must decrypt with the partition's data key (through its per-offset-window subkeys) and
never hand such values out as they are."""
VALUE_COLUMN = 2
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
MAX_BATCH_LENGTH = 2**31 - 1
NO_TIMESTAMP = -1

_PREFIX = struct.Struct(">qiI")
_TAIL = struct.Struct(">bhiiqq")

HEADER_FIELD = pa.struct([("key", pa.string()), ("value", pa.binary())])
HEADERS_TYPE = pa.list_(HEADER_FIELD)
RECORD_SCHEMA = pa.schema(
    [
        ("timestamp", pa.int64()),  # ms since epoch UTC, leader append time
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("headers", HEADERS_TYPE),
        ("subject", pa.string()),
    ]
)
_NON_NULL_COLUMNS = ("timestamp", "value", "subject")
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError)

HeadersInput = Mapping[str, str | bytes] | Sequence[tuple[str, bytes | str]] | None


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fixed-size frame header of one batch."""

    base_offset: int
    batch_length: int
    crc: int
    magic: int
    attributes: int
    leader_epoch: int
    record_count: int
    first_timestamp_ms: int
    max_timestamp_ms: int

    @property
    def size(self) -> int:
        """Total bytes of the batch on disk and on the wire."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def encrypted(self) -> bool:
        """Whether the values are ciphertexts (keys, headers and subjects never are)."""
        return bool(self.attributes & ATTRIBUTE_ENCRYPTED)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.record_count - 1

    @property
    def next_offset(self) -> int:
        """The offset the batch after this one must start at."""
        return self.base_offset + self.record_count


# ------------------------------------------------------------------------------ building


def build_record_batch(
    timestamps: Sequence[int],
    keys: Sequence[bytes | None],
    values: Sequence[bytes],
    headers: Sequence[HeadersInput],
    subjects: Sequence[str],
) -> pa.RecordBatch:
    """Columns of one batch in RECORD_SCHEMA, each converted by Arrow in a single call.

    Building per column (not per row) is what keeps the leader's append path cheap at 10k
    records per batch.
    """
    count = len(values)
    if not len(timestamps) == len(keys) == len(headers) == len(subjects) == count:
        raise InvalidRequestError("record columns have different lengths")
    try:
        arrays = [
            pa.array(timestamps, pa.int64()),
            pa.array(keys, pa.binary()),
            pa.array(values, pa.binary()),
            _headers_array(headers),
            pa.array(subjects, pa.string()),
        ]
    except (*_ARROW_ERRORS, TypeError, ValueError, OverflowError) as exc:
        raise InvalidRequestError(f"cannot build a record batch: {exc}") from exc
    return pa.RecordBatch.from_arrays(arrays, schema=RECORD_SCHEMA)


def _headers_array(headers: Sequence[HeadersInput]) -> pa.Array:
    """A list<struct<key, value>> column; ``None`` rows become null lists."""
    if all(h is None for h in headers):
        return pa.nulls(len(headers), HEADERS_TYPE)
    offsets = [0]
    names: list[str] = []
    values: list[bytes] = []
    nulls: list[bool] = []
    for row in headers:
        nulls.append(row is None)
        items = row.items() if isinstance(row, Mapping) else (row or ())
        for name, value in items:
            names.append(name)
            values.append(value.encode() if isinstance(value, str) else value)
        offsets.append(len(names))
    entries = pa.StructArray.from_arrays(
        [pa.array(names, pa.string()), pa.array(values, pa.binary())], fields=list(HEADER_FIELD)
    )
    mask = pa.array(nulls, pa.bool_()) if any(nulls) else None
    return pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()), entries, type=HEADERS_TYPE, mask=mask
    )


def conform_records(records: pa.RecordBatch) -> pa.RecordBatch:
    """``records`` in exactly RECORD_SCHEMA (cast if only types differ), non-null where required."""
    if not isinstance(records, pa.RecordBatch):
        raise InvalidRequestError(f"expected a pyarrow.RecordBatch, got {type(records).__name__}")
    if not records.schema.equals(RECORD_SCHEMA):
        if records.schema.names != RECORD_SCHEMA.names:
            raise InvalidRequestError(
                f"record columns must be {RECORD_SCHEMA.names}, got {records.schema.names}"
            )
        try:
            records = records.cast(RECORD_SCHEMA)
        except _ARROW_ERRORS as exc:
            raise InvalidRequestError(f"records do not fit the record schema: {exc}") from exc
    for name in _NON_NULL_COLUMNS:
        if records.column(name).null_count:
            raise InvalidRequestError(f"record column {name!r} must not contain nulls")
    return records


def encode_batch(
    base_offset: int,
    leader_epoch: int,
    records: pa.RecordBatch,
    cipher: ValueCipher | None = None,
) -> bytes:
    """Frame ``records`` as one batch starting at ``base_offset``; the CRC is computed once.

    With ``cipher`` (an encrypted stream) every value is encrypted first and the batch is
    flagged ATTRIBUTE_ENCRYPTED; the CRC then covers the ciphertexts."""
    if base_offset < 0 or leader_epoch < 0:
        raise InvalidRequestError("base_offset and leader_epoch must be >= 0")
    records = conform_records(records)
    count = records.num_rows
    if count == 0:
        raise InvalidRequestError("a batch needs at least one record")
    timestamps = records.column(0)
    first_ts = timestamps[0].as_py()
    max_ts = pc.max(timestamps).as_py()
    attributes = ATTRIBUTES_NONE
    if cipher is not None:
        sealed = cipher.encrypt_values(records.column(VALUE_COLUMN), base_offset)
        records = records.set_column(VALUE_COLUMN, RECORD_SCHEMA.field(VALUE_COLUMN), sealed)
        attributes |= ATTRIBUTE_ENCRYPTED
    payload = records.serialize()
    tail = _TAIL.pack(MAGIC, attributes, leader_epoch, count, first_ts, max_ts)
    batch_length = CRC_END - LOG_OVERHEAD + len(tail) + payload.size
    if batch_length > MAX_BATCH_LENGTH:
        raise RecordTooLargeError(f"batch of {batch_length} bytes exceeds {MAX_BATCH_LENGTH}")
    crc = crc32c(payload, crc32c(tail))
    return b"".join((_PREFIX.pack(base_offset, batch_length, crc), tail, payload))


# ------------------------------------------------------------------------------ decoding


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """The header at ``pos``, checking only what the header alone can tell (not the payload)."""
    if pos < 0 or len(buf) - pos < HEADER_SIZE:
        raise CorruptRecordError(f"short batch header at position {pos}")
    fields = HEADER.unpack_from(buf, pos)
    header = BatchHeader(*fields)
    if header.magic != MAGIC:
        raise CorruptRecordError(f"bad magic {header.magic} at position {pos}")
    if header.batch_length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(f"bad batch length {header.batch_length} at position {pos}")
    if header.record_count <= 0 or header.base_offset < 0:
        raise CorruptRecordError(
            f"bad batch offsets (base {header.base_offset}, count {header.record_count}) "
            f"at position {pos}"
        )
    return header


def decode_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """The header at ``pos`` of a batch that must lie wholly inside ``buf`` (else torn)."""
    header = parse_header(buf, pos)
    if len(buf) - pos < header.size:
        raise CorruptRecordError(
            f"torn batch at position {pos}: {header.size} bytes framed, {len(buf) - pos} present"
        )
    return header


def verify_batch(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """``decode_header`` plus the CRC check over the whole batch."""
    header = decode_header(buf, pos)
    view = memoryview(buf)[pos + CRC_END : pos + header.size]
    actual = crc32c(view)
    if actual != header.crc:
        raise CorruptRecordError(
            f"crc mismatch in batch at offset {header.base_offset} (position {pos}): "
            f"stored {header.crc:#010x}, computed {actual:#010x}"
        )
    return header


def decode_records(batch: bytes | bytearray | memoryview) -> pa.RecordBatch:
    """The Arrow records of one whole batch (zero-copy over ``batch``; the CRC is not checked)."""
    header = decode_header(batch)
    payload = pa.py_buffer(memoryview(batch)[HEADER_SIZE : header.size])
    try:
        records = pa.ipc.read_record_batch(payload, RECORD_SCHEMA)
        records.validate(full=True)
    except (pa.ArrowException, OSError, EOFError) as exc:  # EOFError: an empty payload
        raise CorruptRecordError(
            f"batch at offset {header.base_offset} has an unreadable payload: {exc}"
        ) from exc
    if records.num_rows != header.record_count:
        raise CorruptRecordError(
            f"batch at offset {header.base_offset} frames {header.record_count} records "
            f"but holds {records.num_rows}"
        )
    return records


def iter_batches(
    buf: bytes | bytearray | memoryview, verify: bool = True
) -> Iterator[tuple[BatchHeader, memoryview]]:
    """Each whole batch in ``buf`` as (header, view); CorruptRecordError on a bad or torn one."""
    view = memoryview(buf)
    if view.format != "B":
        view = view.cast("B")
    check = verify_batch if verify else decode_header
    pos = 0
    end = len(view)
    while pos < end:
        header = check(view, pos)
        yield header, view[pos : pos + header.size]
        pos += header.size
