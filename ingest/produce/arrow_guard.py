"""What a producer batch's Arrow data may not use, because it lets a small message become a huge
allocation on the node before any size check can run.

- Compressed IPC bodies (LZ4/ZSTD buffers): 8 KiB of ZSTD expands to 256 MiB, so one NATS
  message could ask for tens of GiB. Liftlog's clients never compress; compress the transport.
- Encodings that expand when cast to plain columns: dictionary and run-end encoded arrays,
  binary/string views and list views (one short index or view repeated a million times
  over one large value). Plain binary, string and list columns are as large as the bytes sent.
"""

from __future__ import annotations

import struct

import pyarrow as pa

from spark_log.errors import InvalidRequestError

_DICTIONARY_BATCH = 2
_RECORD_BATCH = 3
_U8 = struct.Struct("<B")
_U16 = struct.Struct("<H")
_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")


def refuse_compressed(data: bytes, what: str) -> None:
    """InvalidRequestError if any record or dictionary batch of the IPC stream is compressed;
    reads only the messages' metadata (no body is decompressed)."""
    try:
        for message in pa.ipc.MessageReader.open_stream(pa.py_buffer(data)):
            batch = message.type in ("record batch", "dictionary")
            if batch and _is_compressed(message.metadata.to_pybytes()):
                raise InvalidRequestError(
                    f"{what} is a compressed Arrow stream, which Liftlog does not take "
                    "(it may expand thousands of times); send it uncompressed"
                )
    except (pa.ArrowException, OSError, EOFError, struct.error, IndexError) as exc:
        raise InvalidRequestError(f"{what} is not a valid Arrow IPC stream: {exc}") from exc


def _is_compressed(meta: bytes) -> bool:
    """Whether a Message flatbuffer's RecordBatch (itself, or a DictionaryBatch's ``data``)
    has its ``compression`` field (Arrow's Message.fbs)."""
    message = _U32.unpack_from(meta, 0)[0]
    kind_at = _field(meta, message, 1)
    header_at = _field(meta, message, 2)
    if kind_at is None or header_at is None:
        return False
    kind = _U8.unpack_from(meta, kind_at)[0]
    header = header_at + _U32.unpack_from(meta, header_at)[0]
    if kind == _DICTIONARY_BATCH:
        data_at = _field(meta, header, 1)
        if data_at is None:
            return False
        header = data_at + _U32.unpack_from(meta, data_at)[0]
    elif kind != _RECORD_BATCH:
        return False
    return _field(meta, header, 3) is not None


def _field(buf: bytes, table: int, index: int) -> int | None:
    """Where field ``index`` of the flatbuffer table at ``table`` lies, None when absent."""
    vtable = table - _I32.unpack_from(buf, table)[0]
    vtable_size = _U16.unpack_from(buf, vtable)[0]
    entry = 4 + 2 * index
    if entry + 2 > vtable_size:
        return None
    offset = _U16.unpack_from(buf, vtable + entry)[0]
    return table + offset if offset else None


def check_plain_type(column: str, type_: pa.DataType) -> None:
    """InvalidRequestError unless ``type_`` is null, binary or string (plain or large), or
    lists and structs of those: the types whose cast to the record schema cannot expand."""
    if not _plain(type_):
        raise InvalidRequestError(
            f"producer batch column {column!r} has type {type_}, which may expand when decoded; "
            "use binary or string columns (headers: a list of structs of them)"
        )


def _plain(type_: pa.DataType) -> bool:
    if pa.types.is_null(type_) or pa.types.is_fixed_size_binary(type_):
        return True
    if pa.types.is_binary(type_) or pa.types.is_large_binary(type_):
        return True
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return True
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return _plain(type_.value_type)
    if pa.types.is_struct(type_):
        return all(_plain(type_.field(i).type) for i in range(type_.num_fields))
    return False
