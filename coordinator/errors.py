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


class ZkNotSentError(ZkUnavailableError):
    """The request was never sent (not connected within the bound): nothing changed.

    Unlike a request that got no answer in time, whose outcome is unknown (it may have been
    applied), a caller may treat this one as certainly not applied.
    """


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


class ControllerMovedError(CoordinatorError):
    """A controller's fenced write lost its ``/v1/controller_epoch`` check.

    A newer controller was elected since this one read the epoch: the writer is a zombie and
    must resign (stop acting) instead of retrying. Kafka's ControllerMovedException.
    """

    code = "controller_moved"


class NotControllerError(CoordinatorError):
    """A controller request (controlled shutdown, unclean election) reached a non-controller.

    Only the elected controller acts; the caller must send the request to the current
    controller (``coordinator.controller_election.current_controller``).
    """

    code = "not_controller"


class ControllerBusyError(CoordinatorError, UnavailableError):
    """The controller's bounded event queue is full; retry later (HTTP 503)."""

    code = "controller_busy"


class ElectionNotNeededError(InvalidRequestError):
    """Unclean election asked for a partition that a clean election can serve.

    Kafka's ELECTION_NOT_NEEDED: a live leader or a live in-sync replica exists, so choosing an
    out-of-sync replica would throw away acknowledged records for nothing.
    """

    code = "election_not_needed"


class IneligibleReplicaError(InvalidRequestError):
    """The broker asked to lead is not a live replica of the partition (or none is live)."""

    code = "ineligible_replica"


class InvalidIsrError(InvalidRequestError):
    """A leader's ISR change is malformed: not within the replicas, or without the leader."""

    code = "invalid_isr"


class ReassignmentInProgressError(InvalidRequestError):
    """A partition already has a pending reassignment; wait for it (or cancel it) first."""

    code = "reassignment_in_progress"


class ZkAccessDeniedError(CoordinatorError):
    """ZooKeeper refused the operation: the znode's ACL does not grant it to this session's
    identity (a cluster configured with another digest user or password, or none at all)."""

    code = "zk_access_denied"
