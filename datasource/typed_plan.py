"""Planning a typed read: which columns a bound stream's DataFrame has.

The columns are the lake table's layout (``spark_log.lake.typed_layout.plan_layout``, the
function the export uses), planned from the table's current columns and every live version
of the subject, so lake history and live tail come out as one schema, and a version the
export has not met yet already has its columns. The plan is made once, on the driver, and
travels to the executors inside the tasks; they decode tail records into exactly it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import pyarrow as pa

from datasource.errors import InvalidOptionError, SchemaChangedError
from datasource.options import BINARY, TYPED, SourceOptions
from spark_log.api_models import StreamDescription
from spark_log.client.rest import RestClient
from spark_log.client.schema_registry import RegisteredSchema, RegistryClient
from spark_log.json_types import JsonValue
from spark_log.lake.layout import LAKE_SCHEMA
from spark_log.lake.storage import LakeStorage
from spark_log.lake.typed_layout import (
    RAW_VALUE_FIELD,
    TYPED_BASE_SCHEMA,
    plan_layout,
)
from spark_log.schemas import parse_schema
from spark_log.schemas.arrow_types import value_arrow_type
from spark_log.schemas.errors import SubjectNotFoundError
from spark_log.schemas.evolution import evolve_struct
from spark_log.schemas.layout_errors import IncompatibleLayoutError, UnsupportedSchemaError
from spark_log.value_schema import ValueSchema


@dataclass(frozen=True)
class SchemaVersion:
    """One live version of the subject, with the value type its schema gives."""

    version: int
    schema_id: int
    value_type: pa.StructType


@dataclass(frozen=True)
class TypedRead:
    """What every task of a typed read shares: the binding, the subject's versions when the
    query was planned, and the table layout (every column of the lake table) they give."""

    subject: str
    keep_raw_value: bool
    versions: tuple[SchemaVersion, ...]
    table_schema: pa.Schema

    @property
    def schema_ids(self) -> frozenset[int]:
        return frozenset(v.schema_id for v in self.versions)


def plan_typed(opts: SourceOptions) -> TypedRead | None:
    """The typed layout of the read (None: Kafka's binary columns). Without
    ``valueFormat=binary`` it asks a node whether the stream is bound."""
    if opts.value_format == BINARY:
        return None
    rest = RestClient(opts.servers, credentials=opts.credentials)
    body = StreamDescription.from_json(rest.get_json(f"/v1/streams/{opts.stream}"))
    binding = value_binding(opts.stream, body.spec.value_schema, opts.value_format)
    if binding is None:
        return None
    versions = subject_versions(RegistryClient(rest), binding.subject)
    lake_uri = opts.lake_uri or (body.lake.uri if body.lake is not None else None)
    lake_schema = _lake_table_schema(lake_uri, dict(opts.lake_options)) if lake_uri else None
    return TypedRead(
        binding.subject,
        binding.keep_raw_value,
        versions,
        typed_table_schema(opts.stream, binding, versions, lake_schema),
    )


def value_binding(
    stream: str, bound: ValueSchema | None, value_format: str | None
) -> ValueSchema | None:
    """The binding a read types its values by: the stream's (``bound``), unless
    ``valueFormat=binary``; ``typed`` on an unbound stream is an error."""
    if value_format == BINARY:
        return None
    if bound is None:
        if value_format == TYPED:
            raise InvalidOptionError(
                f"valueFormat=typed needs a stream bound to a schema, and stream {stream} has "
                "no value_schema: bind one (value_schema at stream create or alter) or read "
                "it with valueFormat=binary"
            )
        return None
    return bound


def subject_versions(registry: RegistryClient, subject: str) -> tuple[SchemaVersion, ...]:
    """Every live version of ``subject``, oldest first (none while nothing is registered)."""
    try:
        numbers = registry.versions(subject)
    except SubjectNotFoundError:
        return ()
    return tuple(_version(registry.version(subject, number)) for number in numbers)


def _version(found: RegisteredSchema) -> SchemaVersion:
    parsed = parse_schema(found.schema_type, found.schema)
    document = cast(JsonValue, parsed.document)
    return SchemaVersion(
        found.version, found.schema_id, value_arrow_type(str(parsed.schema_type), document)
    )


def typed_table_schema(
    stream: str,
    binding: ValueSchema,
    versions: tuple[SchemaVersion, ...],
    lake_schema: pa.Schema | None,
) -> pa.Schema:
    """The lake table's columns once every version's rows are in it (``lake_schema``: the
    table's columns now; None: no table yet)."""
    if lake_schema is None:
        lake_schema = TYPED_BASE_SCHEMA
        if binding.keep_raw_value:
            lake_schema = lake_schema.append(RAW_VALUE_FIELD)
    try:
        layout = plan_layout(lake_schema, [v.value_type for v in versions], binding.keep_raw_value)
    except (IncompatibleLayoutError, UnsupportedSchemaError) as exc:
        raise SchemaChangedError(
            f"the values of stream {stream} (subject {binding.subject!r}) have no typed layout: "
            f"{exc.message}; read it with valueFormat=binary"
        ) from exc
    return _in_table_order(layout.schema)


def _in_table_order(schema: pa.Schema) -> pa.Schema:
    """The columns in one order whether or not the table exists yet: the typed base first (a
    Delta table lists its partition column where it likes), the raw value, the value's
    fields; types in their plain form."""
    first = [*TYPED_BASE_SCHEMA.names, RAW_VALUE_FIELD.name]
    ordered = [schema.field(n) for n in first if n in schema.names]
    ordered += [f for f in schema if f.name not in first]
    return pa.schema([field.with_type(plain_type(field.type)) for field in ordered])


def started_value_type(versions: tuple[SchemaVersion, ...]) -> pa.StructType:
    """The value type a set of versions gives, folded in version order."""
    value_type = pa.struct([])
    for version in sorted(versions, key=lambda v: v.version):
        value_type = evolve_struct(value_type, version.value_type)
    return value_type


def plain_type(arrow: pa.DataType) -> pa.DataType:
    """``arrow`` with the large and view variants Delta's readers report folded into the
    plain types Spark's columns convert to."""
    if pa.types.is_large_string(arrow) or pa.types.is_string_view(arrow):
        return pa.string()
    if pa.types.is_large_binary(arrow) or pa.types.is_binary_view(arrow):
        return pa.binary()
    if pa.types.is_struct(arrow):
        return pa.struct([f.with_type(plain_type(f.type)) for f in arrow])
    if pa.types.is_list(arrow) or pa.types.is_large_list(arrow):
        return pa.list_(arrow.value_field.with_type(plain_type(arrow.value_type)))
    if pa.types.is_map(arrow):
        return pa.map_(
            arrow.key_field.with_type(plain_type(arrow.key_type)),
            arrow.item_field.with_type(plain_type(arrow.item_type)),
        )
    return arrow


def binary_lake_columns(storage: LakeStorage) -> tuple[str, ...]:
    """The typed columns of a bound stream's lake table that a binary read needs to give its
    rows their value bytes (none when the table keeps the raw value, or is not typed)."""
    schema = _lake_table_schema(storage.uri, dict(storage.options))
    if schema is None or RAW_VALUE_FIELD.name in schema.names:
        return ()
    base = set(LAKE_SCHEMA.names)
    return tuple(n for n in schema.names if n not in base)


def _lake_table_schema(uri: str, options: dict[str, str]) -> pa.Schema | None:
    """The Delta table's columns now (None: no table yet)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError, TableNotFoundError

    from datasource.errors import LakeReadError

    try:
        delta_options = LakeStorage(uri, options).at(uri).delta_options()
        if not DeltaTable.is_deltatable(uri, delta_options):
            return None
        return pa.schema(DeltaTable(uri, storage_options=delta_options).schema().to_arrow())
    except TableNotFoundError:
        return None
    except (DeltaError, OSError, ValueError, pa.ArrowException) as exc:
        raise LakeReadError(f"cannot read the lake table {uri}: {exc}") from exc
