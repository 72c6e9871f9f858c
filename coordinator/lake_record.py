"""The cluster's lake record in ZooKeeper: claimed once, by the first broker that exports.

Every node names its lake in its own config, and nothing in a path tells two machines' disks
apart: ``/var/lib/liftlog/lake`` on three hosts is three lakes. The record pins the lake's
identity (a random id the lake's identity file holds, see ``spark_log.lake.identity``) so a
node pointed at another lake is refused before it writes there.
"""

from __future__ import annotations

import contextlib
import dataclasses

from coordinator.errors import ZNodeExistsError, ZNodeNotFoundError
from coordinator.zk import ZkSession
from coordinator.znodes import LAKE_PATH, LakeRecord


def lake_record(session: ZkSession) -> tuple[LakeRecord, int] | None:
    """The claimed record and its znode version, or None while nobody has claimed the lake."""
    try:
        data, version = session.get_json(LAKE_PATH)
    except ZNodeNotFoundError:
        return None
    return LakeRecord.from_json(data), version


def claim_lake(session: ZkSession, proposal: LakeRecord) -> tuple[LakeRecord, int] | None:
    """Create the record from ``proposal`` unless one exists; the record that holds (None if
    it was deleted again in between, by an operator resetting the lake)."""
    with contextlib.suppress(ZNodeExistsError):
        session.create_json(LAKE_PATH, proposal.to_json())
    return lake_record(session)


def confirm_file_written(session: ZkSession, record: LakeRecord, version: int) -> LakeRecord:
    """Mark the claim complete and return the record as written; conditional on the version
    read (VersionConflictError if the record changed, e.g. an operator reset it meanwhile)."""
    confirmed = dataclasses.replace(record, file_written=True)
    session.set_json(LAKE_PATH, confirmed.to_json(), version)
    return confirmed
