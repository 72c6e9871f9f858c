"""Liftbridge's NATS envelope: a publish or an ack as a protobuf behind an 8-byte header.

``B9 0E 43 B4`` (the magic number, invalid UTF-8 on purpose), the version (0), the header
length (8, or 12 with the CRC), the flags (bit 0: a CRC-32C of the payload follows) and the
message type (0 Publish, 1 Ack). A payload that does not start with the magic number is a
plain NATS message and never reaches this module; one that does is decoded in full or
refused with ``EnvelopeError``, never stored half-read.
"""

from __future__ import annotations

import struct

import crc32c
from google.protobuf.message import DecodeError

from spark_log.errors import InvalidRequestError
from spark_log.liftbridge import api_pb2 as pb

MAGIC = b"\xb9\x0e\x43\xb4"
VERSION = 0
MIN_HEADER_LEN = 8
CRC_HEADER_LEN = 12
FLAG_CRC = 0x01
TYPE_PUBLISH = 0
TYPE_ACK = 1
_TYPE_NAMES = {TYPE_PUBLISH: "Publish", TYPE_ACK: "Ack"}


class EnvelopeError(InvalidRequestError):
    """A payload with Liftbridge's magic number that is no valid envelope of the expected
    type (truncated, an unknown version, a wrong CRC, an undecodable protobuf)."""


def is_envelope(data: bytes) -> bool:
    return data[:4] == MAGIC


def encode_publish(message: pb.Message, *, crc: bool = False) -> bytes:
    """A ``Message`` as a Publish envelope (what a Liftbridge client puts on NATS)."""
    return _encode(message.SerializeToString(), TYPE_PUBLISH, crc)


def encode_ack(ack: pb.Ack, *, crc: bool = False) -> bytes:
    """An ``Ack`` as an Ack envelope (what the leader sends to an enveloped ack inbox)."""
    return _encode(ack.SerializeToString(), TYPE_ACK, crc)


def decode_publish(data: bytes) -> pb.Message:
    message = pb.Message()
    _parse(message, _payload(data, TYPE_PUBLISH))
    return message


def decode_ack(data: bytes) -> pb.Ack:
    ack = pb.Ack()
    _parse(ack, _payload(data, TYPE_ACK))
    return ack


def _encode(payload: bytes, msg_type: int, crc: bool) -> bytes:
    if not crc:
        return MAGIC + bytes((VERSION, MIN_HEADER_LEN, 0, msg_type)) + payload
    header = MAGIC + bytes((VERSION, CRC_HEADER_LEN, FLAG_CRC, msg_type))
    return header + struct.pack(">I", crc32c.crc32c(payload)) + payload


def _payload(data: bytes, expected_type: int) -> bytes:
    """The envelope's payload after every header check."""
    what = f"Liftbridge {_TYPE_NAMES[expected_type]} envelope"
    if not is_envelope(data):
        raise EnvelopeError(f"{what}: no magic number")
    if len(data) < MIN_HEADER_LEN:
        raise EnvelopeError(f"{what}: truncated header ({len(data)} bytes)")
    version, header_len, flags, msg_type = data[4], data[5], data[6], data[7]
    if version != VERSION:
        raise EnvelopeError(f"{what}: unknown version {version} (only {VERSION} is known)")
    if msg_type != expected_type:
        raise EnvelopeError(f"{what}: message type {msg_type}, expected {expected_type}")
    with_crc = bool(flags & FLAG_CRC)
    # the header length is where the payload starts; with the CRC flag it must hold the CRC
    bad_len = header_len != CRC_HEADER_LEN if with_crc else header_len < MIN_HEADER_LEN
    if bad_len or len(data) < header_len:
        raise EnvelopeError(
            f"{what}: header length {header_len} for flags {flags:#04x} in {len(data)} bytes"
        )
    payload = data[header_len:]
    if with_crc:
        (declared,) = struct.unpack(">I", data[MIN_HEADER_LEN:CRC_HEADER_LEN])
        if crc32c.crc32c(payload) != declared:
            raise EnvelopeError(f"{what}: CRC-32C mismatch (the payload is corrupt)")
    return payload


def _parse(message: pb.Message | pb.Ack, payload: bytes) -> None:
    try:
        message.ParseFromString(payload)
    except DecodeError as exc:
        raise EnvelopeError(f"Liftbridge envelope: undecodable protobuf: {exc}") from exc
