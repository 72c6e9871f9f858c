"""The cluster's lake record in ZooKeeper: claimed once, by the first broker that exports.

Every node names its lake in its own config, and nothing in a path tells two machines' disks
apart: ``/var/lib/liftlog/lake`` on three hosts is three lakes. The record pins the lake's
identity (a random id the lake's identity file holds, see ``spark_log.lake.identity``) so a
node pointed at another lake is refused before it writes there.
"""

from __future__ import annotations

import contextlib

from coordinator.errors import ZNodeExistsError, ZNodeNotFoundError
from coordinator.zk import ZkSession
from coordinator.znodes import LAKE_PATH, LakeRecord


def lake_record(session: ZkSession) -> LakeRecord | None:
    """The claimed record, or None while no broker has exported yet."""
    try:
        data, _version = session.get_json(LAKE_PATH)
    except ZNodeNotFoundError:
        return None
    return LakeRecord.from_json(data)


def claim_lake(session: ZkSession, proposal: LakeRecord) -> LakeRecord:
    """Create the record from ``proposal`` unless one exists; returns the one that holds."""
    with contextlib.suppress(ZNodeExistsError):
        session.create_json(LAKE_PATH, proposal.to_json())
    record = lake_record(session)
    if record is None:  # deleted between the two calls: an operator resetting the lake
        raise ZNodeNotFoundError(f"{LAKE_PATH} vanished while it was being claimed")
    return record
