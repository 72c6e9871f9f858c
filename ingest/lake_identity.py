"""Before a node's first export: is its lake the cluster's lake?

The first broker to export claims the lake in ZooKeeper (``/v1/lake``) with the id of the
lake's identity file, writing the file first if the lake has none (an existing lake keeps the
id it has). Every later exporter compares its own lake's file with the record: missing or
different means this node's ``lake.uri`` points at other storage (a per-node default path, a
different bucket), and it must not export there, or the stream's history would be split over
two lakes and a reader would miss whatever the other one holds. The node then keeps its log
(retention stays bounded by the lake offset it cannot advance) and says why at ERROR, until
the config is fixed. A match is remembered for the life of the process.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

from coordinator.lake_record import claim_lake, lake_record
from coordinator.zk import ZkSession
from coordinator.znodes import LAKE_PATH, LakeRecord
from spark_log.lake.errors import LakeIdentityError, UnsupportedLakeSchemeError
from spark_log.lake.identity import identity_path, read_lake_id, write_lake_id

log = logging.getLogger("liftlog.lake")


class LakeIdentity:
    """Checks this node's lake against the cluster's record; thread-safe, verified once."""

    def __init__(self, session: ZkSession, lake_uri: str, broker_id: int) -> None:
        self._session = session
        self._uri = lake_uri
        self._broker_id = broker_id
        self._lock = threading.Lock()
        self._verified = False

    @property
    def verified(self) -> bool:
        return self._verified

    def verify(self) -> None:
        """Return if this node may export to its lake; LakeIdentityError if it may not
        (LakeError or a coordinator error if the lake or ZooKeeper cannot be reached)."""
        with self._lock:
            if self._verified:
                return
            try:
                self._check()
            except UnsupportedLakeSchemeError as exc:
                log.warning("the lake's identity is not checked: %s", exc)
            self._verified = True

    def _check(self) -> None:
        record = lake_record(self._session) or self._claim()
        found = read_lake_id(self._uri)
        if found is None and self._claimed_here(record):
            write_lake_id(self._uri, record.lake_id)  # the claim's own file, not yet written
            found = read_lake_id(self._uri)
        if found != record.lake_id:
            error = LakeIdentityError(self._mismatch(record, found))
            log.error("%s", error)
            raise error

    def _claimed_here(self, record: LakeRecord) -> bool:
        """This broker claimed this very lake URI and may have crashed before its file."""
        return record.claimed_by == self._broker_id and record.uri == self._uri

    def _claim(self) -> LakeRecord:
        existing = read_lake_id(self._uri)
        proposal = LakeRecord(
            lake_id=existing or uuid.uuid4().hex,
            uri=self._uri,
            claimed_by=self._broker_id,
            claimed_at_ms=int(time.time() * 1000),
        )
        record = claim_lake(self._session, proposal)
        if record == proposal and existing is None:
            write_lake_id(self._uri, proposal.lake_id)
        return record

    def _mismatch(self, record: LakeRecord, found: str | None) -> str:
        what = (
            f"has no identity file ({identity_path(self._uri)})"
            if found is None
            else f"has the identity {found}"
        )
        return (
            f"broker {self._broker_id} will not export: its lake {self._uri} {what}, but the "
            f"cluster's lake (claimed by broker {record.claimed_by} at {record.uri}) has the "
            f"identity {record.lake_id}. Every node must export to the same lake: set lake.uri "
            "to the shared location (an object store or a shared filesystem) and restart. To "
            f"move the whole cluster to a new lake, stop every node and delete {LAKE_PATH}."
        )
