"""The leader's check of a typed stream's values, before any record gets an offset.

A bound stream (``value_schema`` in its spec) takes values in Confluent's wire format (magic
byte 0, the schema id, the payload) whose id is registered under the stream's subject, or
plain JSON checked against the subject's latest version; an empty value (a tombstone) passes.
Anything else is a ``schema_violation`` naming the field and why. Unbound streams never come
here: the write path asks only when the spec has a binding.

Schemas are parsed once per id and kept (ids never change); one the node has not seen is read
from ZooKeeper in a worker thread (``prepare``) so the writer's loop never blocks on it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Iterator

from coordinator.schemas.cache import LoadedSchema
from coordinator.schemas.registry import SchemaRegistry
from ingest.produce.request import ProduceRequest
from spark_log.errors import LiftlogError
from spark_log.schemas import SchemaViolationError, unframe
from spark_log.value_schema import ValueSchema

REFRESH_INTERVAL_S = 1.0
log = logging.getLogger("liftlog.value_check")


class ValueChecker:
    """One per node: the registry's view, shared by every partition it leads."""

    def __init__(self, registry: SchemaRegistry) -> None:
        self._registry = registry
        self._refreshed_at = -REFRESH_INTERVAL_S

    async def _refresh_soon(self) -> None:
        """Re-read the registry now unless that was done less than a second ago (invalid
        traffic must not turn into a ZooKeeper read per message)."""
        now = time.monotonic()
        if now - self._refreshed_at < REFRESH_INTERVAL_S:
            return
        self._refreshed_at = now
        try:
            await asyncio.to_thread(self._registry.cache.refresh)
        except LiftlogError as exc:  # ZooKeeper away: judge by what this node knows
            log.warning("could not re-read the schema registry: %s", exc.message)

    async def prepare(self, binding: ValueSchema, items: Iterable[ProduceRequest]) -> None:
        """Load, in a thread, the schemas ``items`` name that this node has not read yet.

        An id this node does not know under the subject, or a subject it knows no version
        of, may have been registered through another node a moment ago (the watch has not
        told this one yet): the registry is re-read once, at most every second, before such
        records are refused."""
        cache = self._registry.cache
        named = {
            framed[0]
            for req in items
            for value in _values(req)
            if (framed := unframe(value)) is not None
        }
        unknown = any(not self._registry.registered_under(binding.subject, i) for i in named)
        if unknown or self._registry.latest_id(binding.subject) is None:
            await self._refresh_soon()
        missing = {
            i
            for i in named
            if cache.cached(i) is None and self._registry.registered_under(binding.subject, i)
        }
        latest = self._registry.latest_id(binding.subject)
        if latest is not None and cache.cached(latest) is None:
            missing.add(latest)
        if missing:
            try:
                await asyncio.to_thread(lambda: [cache.schema(i) for i in sorted(missing)])
            except LiftlogError as exc:  # the records naming it are refused, to be retried
                log.warning("could not read a schema from the registry: %s", exc.message)

    def violation(self, binding: ValueSchema, req: ProduceRequest) -> LiftlogError | None:
        """Why ``req`` may not be stored (None: every value matches). A producer batch is
        refused whole for its first bad record, which the error names."""
        try:
            if req.records is None:
                self._check(binding, req.value)
                return None
            for index, value in enumerate(_values(req)):
                try:
                    self._check(binding, value)
                except SchemaViolationError as exc:
                    return SchemaViolationError(
                        exc.field, f"record {index} of the batch: {exc.reason}"
                    )
        except SchemaViolationError as exc:
            return exc
        except LiftlogError as exc:  # the registry unavailable, a schema unreadable
            return exc
        return None

    def _check(self, binding: ValueSchema, value: bytes) -> None:
        if not value:
            return  # a tombstone: a key's deletion carries no value to check
        framed = unframe(value)
        if framed is None:
            self._latest(binding).parsed.decode_json(value)
            return
        schema_id, payload = framed
        if not self._registry.registered_under(binding.subject, schema_id):
            raise SchemaViolationError(
                "", f"schema id {schema_id} is not registered under subject {binding.subject!r}"
            )
        loaded = self._loaded(schema_id)
        if loaded.stored.schema_type != binding.schema_type:
            raise SchemaViolationError(
                "",
                f"schema id {schema_id} is a {loaded.stored.schema_type} schema; the stream "
                f"takes {binding.schema_type}",
            )
        loaded.parsed.decode(payload)

    def _latest(self, binding: ValueSchema) -> LoadedSchema:
        schema_id = self._registry.latest_id(binding.subject)
        if schema_id is None:
            raise SchemaViolationError(
                "", f"subject {binding.subject!r} has no registered schema to check JSON against"
            )
        return self._loaded(schema_id)

    def _loaded(self, schema_id: int) -> LoadedSchema:
        loaded = self._registry.cache.cached(schema_id)
        if loaded is None:  # registered meanwhile: prepare did not know it yet
            raise SchemaViolationError("", f"schema id {schema_id} is not loaded yet; retry")
        return loaded


def _values(req: ProduceRequest) -> Iterator[bytes]:
    if req.records is None:
        yield req.value
        return
    for value in req.records.column("value").to_pylist():
        yield value or b""
