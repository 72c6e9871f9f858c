"""Typed errors of the coordinator (everything ZooKeeper).

kazoo's exceptions never leave ``coordinator.zk``: they are converted there into these, so the
rest of Liftlog (the ingest node, the REST layer) handles one family of errors with stable codes.
Stream semantics use the core's errors (``StreamNotFoundError``, ``StreamExistsError``).
"""

from __future__ import annotations

from spark_log.errors import InvalidRequestError, LiftlogError, UnavailableError


class CoordinatorError(LiftlogError):
    """Base of every coordinator error."""

    code = "coordinator_error"


class ZkUnavailableError(CoordinatorError, UnavailableError):
    """ZooKeeper cannot be reached right now (connection loss, timeout); retry later.

    Also an ``UnavailableError`` so the REST layer answers 503 without knowing about ZooKeeper.
    """

    code = "unavailable"


class ZkSessionExpiredError(ZkUnavailableError):
    """The ZooKeeper session expired: its ephemeral znodes (broker registration) are gone.

    Anything this process asserted through the old session (leadership, registration) must be
    considered lost and re-established on a new session.
    """


class ZNodeNotFoundError(CoordinatorError):
    """A znode the operation needs does not exist."""

    code = "znode_not_found"


class ZNodeExistsError(CoordinatorError):
    """A create found the znode already there."""

    code = "znode_exists"


class ZNodeNotEmptyError(CoordinatorError):
    """A delete found children under the znode."""

    code = "znode_not_empty"


class VersionConflictError(CoordinatorError):
    """A conditional write lost: the znode changed since the version the writer read.

    This is the fencing signal: the writer's view is stale (another controller or leader acted),
    so it must re-read instead of retrying blindly.
    """

    code = "version_conflict"


class ZNodeFormatError(CoordinatorError):
    """A znode holds JSON this Liftlog cannot read (unknown schema version, bad field)."""

    code = "corrupt_znode"


class BrokerIdInUseError(CoordinatorError):
    """Another live session holds this broker id's registration."""

    code = "broker_id_in_use"


class InvalidReplicationFactorError(InvalidRequestError):
    """Kafka's InvalidReplicationFactorException: more replicas asked than live brokers."""
