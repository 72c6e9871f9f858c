"""``POST /v1/streams/{stream}/elect-preferred``: answered by the controller, forwarded by
every other node (like the other controller requests).

The controller moves each partition's leadership back to its preferred replica (the first of
``replicas``) when that replica is live and in the ISR; see docs/replication.md.
"""

from __future__ import annotations

from coordinator.preferred_leader import PreferredOutcome, preferred_replica
from ingest.admin.node_view import NodeView
from ingest.peer_calls import call_peer
from ingest.security.node_credentials import outgoing_credentials
from spark_log.api_models import PreferredElection, PreferredLeader
from spark_log.client.rest import RestClient
from spark_log.errors import UnavailableError


async def elect_preferred(node: NodeView, stream: str, partition: int | None) -> PreferredElection:
    """Run the election on the controller (this node) or forward it to the controller."""
    if node.controller.is_controller:
        outcomes = await node.controller.elect_preferred(stream, partition)
        await node.reconcile_now()  # take this node's new role at once
        return PreferredElection(stream, tuple(_leader_view(o) for o in outcomes))
    url = await node.controller_api_url()
    if url is None:
        raise UnavailableError("no controller is elected")
    params = {} if partition is None else {"partition": partition}
    response = await call_peer(
        RestClient(url, credentials=outgoing_credentials(node.config)).request,
        "POST",
        f"/v1/streams/{stream}/elect-preferred",
        params=params,
    )
    return PreferredElection.from_json(response.json())


def _leader_view(outcome: PreferredOutcome) -> PreferredLeader:
    state = outcome.state
    return PreferredLeader(
        partition=outcome.partition,
        preferred=preferred_replica(state),
        leader=state.leader,
        leader_epoch=state.leader_epoch,
        isr=tuple(state.isr),
        elected=outcome.elected,
        reason=outcome.reason,
    )
