"""Executor side: the schema registry as the typed export's ``SchemaLookup``, one per process.

Tail records are decoded on the executors, each asking the registry for the schemas their ids
name. A schema id never changes, so parsed schemas are kept for the life of the executor's
Python process (one ``RegistryClient`` per servers and credentials), and only the subject's
latest version is read again after its short TTL. Ids of the subject's versions at planning
travel with the task; any other id is looked up once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from spark_log.client.credentials import ClientCredentials
from spark_log.client.rest import RestClient
from spark_log.client.schema_registry import RegistryClient, registry_error
from spark_log.errors import LiftlogError
from spark_log.schemas.errors import SchemaNotFoundError, SubjectNotFoundError
from spark_log.schemas.parsed import ParsedSchema

_registries: dict[tuple[str, ClientCredentials], RegistryClient] = {}
_subjects_of: dict[tuple[str, int], frozenset[str]] = {}
_lock = threading.Lock()


def process_registry(servers: str, credentials: ClientCredentials) -> RegistryClient:
    """This process's registry client for ``servers`` (its schema cache shared by tasks)."""
    key = (servers, credentials)
    with _lock:
        registry = _registries.get(key)
        if registry is None:
            registry = RegistryClient(RestClient(servers, credentials=credentials))
            _registries[key] = registry
        return registry


@dataclass(frozen=True)
class LoadedSchema:
    parsed: ParsedSchema


class RegistrySchemas:
    """``spark_log.lake.typed_values.SchemaLookup`` over the REST registry (blocking)."""

    def __init__(self, registry: RegistryClient, known_ids: frozenset[int]) -> None:
        self.registry = registry
        self.known_ids = known_ids
        """Ids registered under the subject when the query was planned."""

    def loaded(self, schema_id: int) -> LoadedSchema:
        return LoadedSchema(self.registry.parsed_by_id(schema_id))

    def latest_id(self, subject: str) -> int | None:
        try:
            return self.registry.latest(subject).schema_id
        except SubjectNotFoundError:
            return None

    def registered_under(self, subject: str, schema_id: int) -> bool:
        if schema_id in self.known_ids:
            return True
        return subject in self._subjects(schema_id)

    def _subjects(self, schema_id: int) -> frozenset[str]:
        """The subjects ``schema_id`` is registered under (Confluent's
        ``/schemas/ids/{id}/versions``), asked once per process."""
        servers = ",".join(self.registry.rest.servers)
        key = (servers, schema_id)
        with _lock:
            cached = _subjects_of.get(key)
        if cached is not None:
            return cached
        try:
            answer = self.registry.rest.request("GET", f"/schemas/ids/{schema_id}/versions")
        except LiftlogError as exc:
            if isinstance(registry_error(exc), SchemaNotFoundError):
                return frozenset()
            raise registry_error(exc) from None
        body = answer.json()
        entries = body if isinstance(body, list) else []
        found = frozenset(str(e["subject"]) for e in entries if isinstance(e, dict))
        with _lock:
            _subjects_of[key] = found
        return found
