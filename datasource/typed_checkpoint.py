"""A typed streaming query keeps the schema it started with.

Its columns are planned when it starts, from the subject's versions then. Every offset the
query checkpoints records those versions (beside the partitions' offsets, under a key no
stream name can take), so a restart can tell what the query was started with. A version
registered since that would change the columns (a new field, a wider type: what
``widening_changes`` lists) fails the restart with the subject, the version and the changes,
rather than handing a sink columns it has never seen; a version that changes no column is
taken silently. While a query runs, records of a newer version are read into the columns it
has.
"""

from __future__ import annotations

from typing import cast

import pyarrow as pa

from datasource.errors import SchemaChangedError
from datasource.offsets import StreamOffset
from datasource.typed_plan import SchemaVersion, TypedRead, started_value_type
from spark_log.client.schema_registry import RegistryClient
from spark_log.json_types import JsonMapping, JsonValue
from spark_log.schemas.arrow_types import value_arrow_type
from spark_log.schemas.evolution import widening_changes

SCHEMA_KEY = "$valueSchema"
"""The offset's key for the versions a typed query started with (``$`` is no stream name's)."""


def with_schema(offset: StreamOffset, typed: TypedRead | None) -> dict[str, object]:
    """``offset`` with the query's versions recorded (as it is for a binary read)."""
    if typed is None:
        return dict(offset)
    versions = [{"version": v.version, "id": v.schema_id} for v in typed.versions]
    return {**offset, SCHEMA_KEY: {"subject": typed.subject, "versions": versions}}


def started_ids(offset: JsonMapping) -> frozenset[int] | None:
    """The schema ids a checkpointed offset records (None: none recorded)."""
    record = offset.get(SCHEMA_KEY)
    if not isinstance(record, dict):
        return None
    entries = record.get("versions")
    if not isinstance(entries, list):
        return None
    return frozenset(int(cast(int, e["id"])) for e in entries if isinstance(e, dict))


def check_started_schema(
    stream: str, offset: JsonMapping, typed: TypedRead | None, registry: RegistryClient
) -> None:
    """SchemaChangedError when versions registered since the query started would change the
    columns it started with (the checkpointed ``offset`` says which versions those were)."""
    ids = started_ids(offset)
    if typed is None or ids is None:
        return
    new = [v for v in typed.versions if v.schema_id not in ids]
    if not new:
        return
    started = _started_versions(ids, typed, registry)
    changes = widening_changes(started_value_type(started), started_value_type((*started, *new)))
    if not changes:
        return
    named = ", ".join(f"version {v.version} (schema id {v.schema_id})" for v in new)
    raise SchemaChangedError(
        f"stream {stream}: subject {typed.subject!r} has {named} since this streaming query "
        f"started, which would change its columns: {'; '.join(changes)}. A streaming query "
        "keeps the schema it started with: to read the new columns start it again with a new "
        "checkpoint location (choosing its startingOffsets), or read the stream with "
        "valueFormat=binary"
    )


def _started_versions(
    ids: frozenset[int], typed: TypedRead, registry: RegistryClient
) -> tuple[SchemaVersion, ...]:
    """The versions the query started with: those still live from the plan, the others (a
    version deleted since) by their id."""
    known = {v.schema_id: v for v in typed.versions}
    versions = [known[i] for i in sorted(ids) if i in known]
    for schema_id in sorted(ids - known.keys()):
        parsed = registry.parsed_by_id(schema_id)
        document = cast(JsonValue, parsed.document)
        value_type: pa.StructType = value_arrow_type(str(parsed.schema_type), document)
        versions.append(SchemaVersion(0, schema_id, value_type))
    return tuple(versions)
