"""Before a node exports: is its lake the cluster's lake?

The first broker to export claims the lake in ZooKeeper (``/v1/lake``) with the id of the
lake's identity file, writing the file if the lake has none (an existing lake keeps its id),
then marks the claim ``file_written``. Every exporter compares its own lake's file with the
record before each leadership's first round: a different id, or no file once the claim is
complete, means this node's ``lake.uri`` points at other storage (a per-node default path, an
unmounted share, a different bucket). It must not export there, or the stream's history would
be split over two lakes and retention would free records the real lake never received. The
node keeps its log and says why at ERROR (once per reason) until the config is fixed.

The claimant alone may write a missing file, and only until it marked the claim complete (a
crash in between): afterwards it is as bound by the file as everyone else, so a restart on
an empty disk at the same path is refused too. Others who find no file while the claim is
incomplete wait (a transient ``LakeError``), they do not guess.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

from coordinator.errors import CoordinatorError
from coordinator.lake_record import claim_lake, confirm_file_written, lake_record
from coordinator.zk import ZkSession
from coordinator.znodes import LAKE_PATH, LakeRecord
from ingest.clock import SYSTEM_CLOCK, Clock
from ingest.lake.commit_safety import LakeSafety
from spark_log.errors import LakeError
from spark_log.lake.errors import LakeIdentityError, UnsupportedLakeSchemeError
from spark_log.lake.identity import identity_path, read_lake_id, write_lake_id
from spark_log.lake.storage import LakeStorage

log = logging.getLogger("liftlog.lake")

CLAIM_WAIT_S = 10.0
"""How long a broker waits for another's claim to complete before reporting it."""
CLAIM_POLL_S = 0.05
FAILURE_MEMORY_S = 5.0
"""A failed check is answered from memory this long: every partition's exporter retries it,
and each retry would otherwise hold the lake threads for a ZooKeeper and a lake read."""


class LakeIdentity:
    """Checks this node's lake against the cluster's record (thread-safe)."""

    def __init__(
        self,
        session: ZkSession,
        lake: str | LakeStorage,
        broker_id: int,
        clock: Clock = SYSTEM_CLOCK,
        *,
        safety: LakeSafety | None = None,
    ) -> None:
        """``safety``: the store's commit-safety verdict, required first: a lake whose store
        cannot make Delta commits atomic is not exported to, whoever's it is."""
        self._session = session
        self._clock = clock
        self._storage = LakeStorage(lake) if isinstance(lake, str) else lake
        self._uri = self._storage.uri
        self._safety = safety
        self._broker_id = broker_id
        self._lock = threading.Lock()
        self._record: LakeRecord | None = None  # once the claim is complete
        self._unchecked = False
        self._failure: tuple[float, LakeError] | None = None
        self._logged: str | None = None

    def verify(self) -> None:
        """Return if this node may export to its lake now; LakeIdentityError if it may not,
        LakeError while that cannot be told yet (lake or ZooKeeper unreachable, claim under
        way). The file is read on every call: storage can go away under a running node."""
        if self._safety is not None:
            self._safety.verify()
        with self._lock:
            if self._unchecked:
                return
            failure = self._failure
            if failure is not None and self._clock.monotonic_s() - failure[0] < FAILURE_MEMORY_S:
                raise failure[1]
            try:
                self._check()
            except UnsupportedLakeSchemeError as exc:
                log.warning("the lake's identity is not checked: %s", exc)
                self._unchecked = True
            except LakeError as exc:
                self._fail(exc)
            except CoordinatorError as exc:
                self._fail(LakeError(f"cannot read the cluster's lake record: {exc}"))
            else:
                self._failure = None
                self._logged = None

    def _fail(self, exc: LakeError) -> None:
        self._failure = (self._clock.monotonic_s(), exc)
        if str(exc) != self._logged:
            self._logged = str(exc)
            level = logging.ERROR if isinstance(exc, LakeIdentityError) else logging.WARNING
            log.log(level, "%s", exc)
        raise exc

    def _check(self) -> None:
        record, version = self._current()
        found = read_lake_id(self._storage)
        if record.file_written:
            self._require(record, found)
            self._record = record
            return
        if not self._claimed_here(record):
            if found is None:
                record, found = self._await_claimant(record)
            self._require(record, found)
            return
        if found is None:
            write_lake_id(self._storage, record.lake_id)
            found = read_lake_id(self._storage)
        self._require(record, found)
        self._record = confirm_file_written(self._session, record, version)

    def _await_claimant(self, record: LakeRecord) -> tuple[LakeRecord, str | None]:
        """Another broker claimed the lake and has not written its file yet: nodes starting
        together meet this for the few milliseconds between its claim and its file, so wait
        that out (polling, bounded) rather than fail a flush; a claimant that never finishes
        is reported, not guessed about. A real wait for another process, so it sleeps on
        real time, not on the injectable clock."""
        deadline = time.monotonic() + CLAIM_WAIT_S
        while time.monotonic() < deadline:
            time.sleep(CLAIM_POLL_S)
            found = read_lake_id(self._storage)
            current = lake_record(self._session)
            record = current[0] if current is not None else record
            if found is not None or record.file_written:
                return record, found
        raise LakeError(
            f"waiting for broker {record.claimed_by} to write the lake's identity file "
            f"({identity_path(record.uri)}); if that broker is gone for good, stop every node "
            f"and delete {self._session.absolute(LAKE_PATH)}"
        )

    def _current(self) -> tuple[LakeRecord, int]:
        if self._record is not None:
            return self._record, -1  # complete: its version is never written again
        current = lake_record(self._session) or claim_lake(self._session, self._proposal())
        if current is None:
            raise LakeError(f"{self._session.absolute(LAKE_PATH)} vanished while being claimed")
        return current

    def _proposal(self) -> LakeRecord:
        return LakeRecord(
            lake_id=read_lake_id(self._storage) or uuid.uuid4().hex,
            uri=self._uri,
            claimed_by=self._broker_id,
            claimed_at_ms=self._clock.now_ms(),
        )

    def _claimed_here(self, record: LakeRecord) -> bool:
        return record.claimed_by == self._broker_id and record.uri == self._uri

    def _require(self, record: LakeRecord, found: str | None) -> None:
        if found == record.lake_id:
            return
        what = (
            f"has no identity file ({identity_path(self._uri)})"
            if found is None
            else f"has the identity {found}"
        )
        raise LakeIdentityError(
            f"broker {self._broker_id} will not export: its lake {self._uri} {what}, but the "
            f"cluster's lake (claimed by broker {record.claimed_by} at {record.uri}) has the "
            f"identity {record.lake_id}. Every node must export to the same lake: set lake.uri "
            "to the shared location (an object store or a shared filesystem) and restart. To "
            "move the whole cluster to a new lake, stop every node and delete "
            f"{self._session.absolute(LAKE_PATH)}."
        )
