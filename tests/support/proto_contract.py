"""Compare two descriptors of Liftbridge's ``api.proto`` the way the wire sees them.

A client's generated code is the contract as its authors compiled it: every message, field
number, type and label, every enum value and every method's types and streaming flags must
be ours too. Descriptors are flattened into one entry per message, field, enum value and
method, keyed by full name, so a difference reads as one sentence naming what differs.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2

Entries = dict[str, dict[str, Any]]
FieldProto = descriptor_pb2.FieldDescriptorProto


def field_entry(field: FieldProto) -> dict[str, Any]:
    """What a field is on the wire and to the generated code: number, label, type, the
    message or enum it refers to, its oneof, default, JSON name and options (jstype)."""
    return {
        "number": field.number,
        "label": FieldProto.Label.Name(field.label),
        "type": FieldProto.Type.Name(field.type),
        "type_name": field.type_name,
        "oneof_index": field.oneof_index if field.HasField("oneof_index") else None,
        "proto3_optional": field.proto3_optional,
        "default_value": field.default_value,
        "json_name": field.json_name,
        "options": str(field.options),
    }


def message_entries(message: descriptor_pb2.DescriptorProto, scope: str) -> Entries:
    """The message (its map-entry flag, oneofs, fields by name, in order) and everything
    nested in it."""
    name = f"{scope}.{message.name}"
    entries: Entries = {
        name: {
            "map_entry": message.options.map_entry,
            "fields": [f.name for f in message.field],
            "oneofs": [o.name for o in message.oneof_decl],
        }
    }
    for field in message.field:
        entries[f"{name}.{field.name}"] = field_entry(field)
    for nested in message.nested_type:
        entries.update(message_entries(nested, name))
    for enum in message.enum_type:
        entries.update(enum_entries(enum, name))
    return entries


def enum_entries(enum: descriptor_pb2.EnumDescriptorProto, scope: str) -> Entries:
    name = f"{scope}.{enum.name}"
    entries: Entries = {name: {"values": [v.name for v in enum.value]}}
    for value in enum.value:
        entries[f"{name}.{value.name}"] = {"number": value.number}
    return entries


def method_entries(service: descriptor_pb2.ServiceDescriptorProto, scope: str) -> Entries:
    name = f"{scope}.{service.name}"
    entries: Entries = {name: {"methods": [m.name for m in service.method]}}
    for method in service.method:
        entries[f"{name}.{method.name}"] = {
            "input_type": method.input_type,
            "output_type": method.output_type,
            "client_streaming": method.client_streaming,
            "server_streaming": method.server_streaming,
        }
    return entries


def contract_entries(file: descriptor_pb2.FileDescriptorProto) -> Entries:
    """Every message, field, enum value and method of ``file`` by full name (``.proto.X``)."""
    scope = f".{file.package}"
    entries: Entries = {scope: {"syntax": file.syntax, "options": str(file.options)}}
    for message in file.message_type:
        entries.update(message_entries(message, scope))
    for enum in file.enum_type:
        entries.update(enum_entries(enum, scope))
    for service in file.service:
        entries.update(method_entries(service, scope))
    return entries


def contract_differences(
    ours: descriptor_pb2.FileDescriptorProto, theirs: descriptor_pb2.FileDescriptorProto
) -> list[str]:
    """Every entry that is missing, extra or different in ``ours``, as one sentence each."""
    mine, other = contract_entries(ours), contract_entries(theirs)
    differences = [f"{name} is missing from ours" for name in other if name not in mine]
    differences += [f"{name} is ours only" for name in mine if name not in other]
    differences += [
        f"{name}: ours {mine[name]} != theirs {other[name]}"
        for name in other
        if name in mine and mine[name] != other[name]
    ]
    return differences


def wire_differences(
    ours: descriptor_pb2.FileDescriptorProto, older: descriptor_pb2.FileDescriptorProto
) -> list[str]:
    """What an older generation of the contract (``older``) would misread from ours: each of
    its messages, fields (by number: a renamed field reads the same), enum values and methods
    must be in ours with the same wire meaning; what it lacks, it skips as unknown fields."""
    mine = _by_number(contract_entries(ours))
    differences = []
    for name, entry in _by_number(contract_entries(older)).items():
        if name not in mine:
            differences.append(f"{name} is missing from ours")
        elif entry != mine[name]:
            differences.append(f"{name}: ours {mine[name]} != theirs {entry}")
    return differences


WIRE_KEYS = frozenset({"label", "type", "type_name"})  # a field's
WIRE_KEYS |= {"input_type", "output_type", "client_streaming", "server_streaming"}  # a method's


def _by_number(entries: Entries) -> Entries:
    """Fields keyed by ``message#number``, enum values by name, methods by name; each with
    only what the wire carries (no names, JSON names or options)."""
    out: Entries = {}
    for name, entry in entries.items():
        if "type" in entry:  # a field
            message = name.rsplit(".", 1)[0]
            out[f"{message}#{entry['number']}"] = {k: v for k, v in entry.items() if k in WIRE_KEYS}
        elif "number" in entry or "input_type" in entry:  # an enum value, a method
            out[name] = {k: v for k, v in entry.items() if k == "number" or k in WIRE_KEYS}
    return out
