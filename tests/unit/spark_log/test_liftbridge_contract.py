"""Our ``api.proto`` is Liftbridge's published contract, as the clients written by others
compiled it.

gufo-liftbridge 0.2.0 ships stubs generated from Liftbridge's api.proto v1.9.0: every message,
field (name, number, type, label, type name, JSON name, options), map entry, enum value and
method (types, streaming flags) must be ours exactly. python-liftbridge 0.0.7 ships an older
generation of the contract: what it has must mean the same on the wire (fields renamed since,
such as ``FetchMetadataResponse.metadata``, now ``streamMetadata``, read the same by number).
The descriptors come from each client's own venv (tests/support/client_venvs.py, made once per
machine and then reused), dumped by tests/integration/liftbridge/clients/dump_descriptor.py.
"""

from __future__ import annotations

import base64

import pytest
from google.protobuf import descriptor_pb2

from spark_log.liftbridge import api_pb2
from tests.support.client_scripts import run_client_script
from tests.support.client_venvs import GUFO_LIFTBRIDGE, PYTHON_LIFTBRIDGE, ClientVenvSpec
from tests.support.proto_contract import contract_differences, field_entry, wire_differences

FileProto = descriptor_pb2.FileDescriptorProto


def ours() -> FileProto:
    proto = FileProto()
    api_pb2.DESCRIPTOR.CopyToProto(proto)
    return proto


def shipped_descriptor(spec: ClientVenvSpec, module: str) -> FileProto:
    answer = run_client_script(spec, "dump_descriptor.py", module)
    return FileProto.FromString(base64.b64decode(answer["result"]["descriptor"]))


@pytest.fixture(scope="module")
def gufo_contract() -> FileProto:
    return shipped_descriptor(GUFO_LIFTBRIDGE, "gufo.liftbridge.api_pb2")


@pytest.fixture(scope="module")
def python_liftbridge_contract() -> FileProto:
    return shipped_descriptor(PYTHON_LIFTBRIDGE, "python_liftbridge.api_pb2")


def test_our_contract_is_the_one_gufo_liftbridge_ships(gufo_contract: FileProto) -> None:
    assert gufo_contract.package == "proto"
    assert len(gufo_contract.service[0].method) == 16  # the whole file, not an empty dump
    assert contract_differences(ours(), gufo_contract) == []


def test_python_liftbridge_reads_our_contract_on_the_wire(
    python_liftbridge_contract: FileProto,
) -> None:
    assert [s.name for s in python_liftbridge_contract.service] == ["API"]
    assert wire_differences(ours(), python_liftbridge_contract) == []


def test_a_field_number_that_differs_is_named() -> None:
    changed = ours()
    publish = next(m for m in changed.message_type if m.name == "PublishRequest")
    next(f for f in publish.field if f.name == "expectedOffset").number = 10
    assert contract_differences(changed, ours()) == [
        ".proto.PublishRequest.expectedOffset: ours "
        + str({**_field(changed, "PublishRequest", "expectedOffset"), "number": 10})
        + " != theirs "
        + str(_field(ours(), "PublishRequest", "expectedOffset"))
    ]
    assert wire_differences(changed, ours()) == [".proto.PublishRequest#9 is missing from ours"]


def test_an_enum_value_a_streaming_flag_and_a_message_that_differ_are_named() -> None:
    changed = ours()
    start = next(e for e in changed.enum_type if e.name == "StartPosition")
    next(v for v in start.value if v.name == "TIMESTAMP").number = 5
    next(m for m in changed.service[0].method if m.name == "Subscribe").server_streaming = False
    changed.message_type.remove(next(m for m in changed.message_type if m.name == "Ack"))
    found = contract_differences(changed, ours())
    assert any(d.startswith(".proto.StartPosition.TIMESTAMP:") for d in found)
    assert any(d.startswith(".proto.API.Subscribe:") for d in found)
    assert ".proto.Ack is missing from ours" in found
    assert ".proto.Ack.offset is missing from ours" in found


def _field(file: FileProto, message: str, field: str) -> dict[str, object]:
    proto = next(m for m in file.message_type if m.name == message)
    return field_entry(next(f for f in proto.field if f.name == field))
