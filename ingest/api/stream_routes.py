"""``/v1/streams``: the stream admin routes (create, list, describe, alter, delete, pause,
read-only, flush) and the moves of leaders and replicas (elections, reassignments).

Each route is one call into ``ingest.admin``, where the ZooKeeper writes and the forwarding to
the controller or to a partition's leader live.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Query, Request, Response

from ingest.admin import preferred_election, reassign
from ingest.admin import streams as admin
from ingest.admin.node_view import NodeView
from ingest.api.auth import principal_of
from ingest.api.models import ReassignPlan, StreamAlter, StreamCreate
from spark_log.api_models import (
    FlushResult,
    PartitionFlush,
    PreferredElection,
    ReassignmentStatus,
    ReplicaView,
    StreamDeleted,
    StreamDescription,
    StreamList,
    UncleanElection,
)
from spark_log.auth import Action, stream_resource
from spark_log.stream_spec import StreamSpec


def install_stream_routes(app: FastAPI, node: NodeView) -> None:
    @app.post(
        "/v1/streams",
        status_code=201,
        tags=["streams"],
        response_model=StreamDescription,
        responses={200: {"model": StreamDescription, "description": "identical stream exists"}},
    )
    async def create_stream(body: StreamCreate, response: Response) -> StreamDescription:
        """Create a stream; an identical spec answers 200, a conflicting one 409."""
        spec = StreamSpec.from_json(body.model_dump())
        created, described = await admin.create_stream(node, spec)
        response.status_code = 201 if created else 200
        return described

    @app.get("/v1/streams", tags=["streams"], response_model=StreamList)
    async def list_streams(request: Request, internal: bool = False) -> StreamList:
        """The streams the caller may describe (all of them for a super user); the nodes'
        own streams (``__cursors``) only with ``?internal=true``."""
        principal = principal_of(request)
        return StreamList(
            tuple(
                s
                for s in await admin.list_streams(node)
                if (internal or not s.internal)
                and node.auth.allows(principal, Action.DESCRIBE, stream_resource(s.name))
            )
        )

    @app.get("/v1/streams/{stream}", tags=["streams"], response_model=StreamDescription)
    async def describe_stream(stream: str) -> StreamDescription:
        return await admin.describe_stream(node, stream)

    @app.post(
        "/v1/streams/{stream}/partitions/{partition}/unclean-election",
        tags=["streams"],
        response_model=UncleanElection,
    )
    async def unclean_election(
        stream: str,
        partition: int,
        broker_id: Annotated[int | None, Query(description="the replica to elect")] = None,
        confirm: Annotated[bool, Query(description="really elect; otherwise a dry run")] = False,
    ) -> UncleanElection:
        """Elect a replica outside the ISR. Shows the offsets that may be lost; acts only with
        confirm=true. Committed records above the new leader's LEO are lost."""
        return await admin.unclean_election(node, stream, partition, broker_id, confirm)

    @app.post(
        "/v1/streams/{stream}/elect-preferred",
        tags=["streams"],
        response_model=PreferredElection,
    )
    async def elect_preferred(
        stream: str,
        partition: Annotated[int | None, Query(description="one partition (default: all)")] = None,
    ) -> PreferredElection:
        """Move leadership back to the preferred replica (the first of ``replicas``) where it
        is live and in the ISR; answered by the controller (other nodes forward)."""
        return await preferred_election.elect_preferred(node, stream, partition)

    @app.post("/v1/streams/{stream}/reassign", tags=["streams"], response_model=ReassignmentStatus)
    async def reassign_partitions(stream: str, body: ReassignPlan) -> ReassignmentStatus:
        """Move partitions' replicas to the target brokers: new replicas catch up and join the
        ISR before the old ones are dropped (carried out by the controller)."""
        targets = reassign.plan_targets([(t.partition, t.replicas) for t in body.partitions])
        return await reassign.submit(node, stream, targets)

    @app.get("/v1/streams/{stream}/reassign", tags=["streams"], response_model=ReassignmentStatus)
    async def reassignment_progress(stream: str) -> ReassignmentStatus:
        """The stream's pending reassignments and the phase each is in."""
        return await reassign.progress(node, stream)

    @app.delete(
        "/v1/streams/{stream}/reassign", tags=["streams"], response_model=ReassignmentStatus
    )
    async def cancel_reassignment(
        stream: str,
        partition: Annotated[
            int | None, Query(ge=0, description="one partition (default: every pending one)")
        ] = None,
    ) -> ReassignmentStatus:
        """Cancel pending reassignments (Kafka's ``--cancel``): each partition goes back to its
        original replicas, leadership to an original replica in the ISR; the replicas being
        added delete their data. 404 ``no_reassignment`` when nothing is pending."""
        return await reassign.cancel(node, stream, partition)

    @app.get(
        "/v1/streams/{stream}/partitions/{partition}", tags=["streams"], response_model=ReplicaView
    )
    async def partition_view(stream: str, partition: int) -> ReplicaView:
        """This broker's own view of its replica (role, epoch, HW, LEO; followers' LEOs on
        the leader)."""
        return admin.local_partition_view(node, stream, partition)

    @app.delete("/v1/streams/{stream}", tags=["streams"], response_model=StreamDeleted)
    async def delete_stream(stream: str) -> StreamDeleted:
        await admin.delete_stream(node, stream)
        return StreamDeleted(stream)

    @app.post("/v1/streams/{stream}/pause", tags=["streams"], response_model=StreamDescription)
    async def pause_stream(stream: str) -> StreamDescription:
        """Stop recording the stream's subject; records stay readable."""
        return await admin.set_paused(node, stream, True)

    @app.post("/v1/streams/{stream}/resume", tags=["streams"], response_model=StreamDescription)
    async def resume_stream(stream: str) -> StreamDescription:
        return await admin.set_paused(node, stream, False)

    @app.patch("/v1/streams/{stream}", tags=["streams"], response_model=StreamDescription)
    async def alter_stream(stream: str, body: StreamAlter) -> StreamDescription:
        """Change retention, default ack policy, min ISR, max record size or compaction
        settings; only the fields sent change. Every node applies them without a restart.
        Immutable fields with another value: 409 ``immutable_field``."""
        return await admin.alter_stream(node, stream, body.model_dump(exclude_unset=True))

    @app.post("/v1/streams/{stream}/readonly", tags=["streams"], response_model=StreamDescription)
    async def set_stream_read_only(stream: str) -> StreamDescription:
        """Refuse every publish with ``stream_readonly`` (nothing is stored); fetches and
        subscriptions go on."""
        return await admin.set_read_only(node, stream, True)

    @app.post("/v1/streams/{stream}/readwrite", tags=["streams"], response_model=StreamDescription)
    async def set_stream_read_write(stream: str) -> StreamDescription:
        """Accept publishes again after ``readonly``."""
        return await admin.set_read_only(node, stream, False)

    @app.post("/v1/streams/{stream}/flush", tags=["streams"], response_model=FlushResult)
    async def flush_stream(stream: str) -> FlushResult:
        """Seal (roll the active segment), fsync and export to the lake every partition of
        the stream, each on its leader; answers once the lake holds everything committed now,
        with each partition's `lake_offset` (null when the lake is disabled)."""
        return await admin.flush_stream(node, stream)

    @app.post(
        "/v1/streams/{stream}/partitions/{partition}/flush",
        tags=["streams"],
        response_model=PartitionFlush,
    )
    async def flush_partition(stream: str, partition: int) -> PartitionFlush:
        """Seal, fsync and export one partition; only its leader answers (421 elsewhere)."""
        return await admin.flush_partition(node, stream, partition)
