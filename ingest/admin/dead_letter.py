"""Dead letters of typed streams: a record that does not match its stream's schema, on a
binding with ``on_invalid = "dead_letter"``, is stored in the binding's dead letter stream
instead of being refused, with the reason in ``Liftlog-Schema-Violation`` and its origin in
``Liftlog-Dead-Letter-Of``; the publisher's ack then names where it went.

The dead letter stream is an ordinary stream (its leader may be another node): the record
is appended by this node when it leads the target partition, else published over REST to
the partition's leader with the node's credentials. The partition is the key's (Kafka's
default partitioner), partition 0 without a key. Should the dead letter stream refuse the
record (missing, paused, itself bound to a schema the record fails), the publisher gets that
refusal and nothing is stored anywhere.
"""

from __future__ import annotations

import asyncio
import base64
import logging

from coordinator.isr import read_partition_state
from ingest.admin.node_view import NodeView
from ingest.peer_calls import call_peer
from ingest.produce.request import ProduceRequest, local_request
from ingest.produce.write_path import DeadLetterAnswer
from ingest.security.node_credentials import outgoing_credentials
from spark_log.api_models import DeadLetter, PublishResult
from spark_log.client.rest import RestClient
from spark_log.errors import (
    LiftlogError,
    NotLeaderError,
    SchemaViolationError,
    StreamNotFoundError,
    UnavailableError,
)
from spark_log.partitioner import partition_for_key
from spark_log.stream_spec import StreamSpec

log = logging.getLogger("liftlog.dead_letter")

HEADER_VIOLATION = "Liftlog-Schema-Violation"
HEADER_ORIGIN = "Liftlog-Dead-Letter-Of"


class DeadLetterRouter:
    """One per node: stores dead letters in the background, one task per record."""

    def __init__(self, node: NodeView) -> None:
        self._node = node
        self._tasks: set[asyncio.Task[None]] = set()

    def __call__(
        self,
        spec: StreamSpec,
        partition: int,
        req: ProduceRequest,
        violation: SchemaViolationError,
        answer: DeadLetterAnswer,
    ) -> None:
        task = asyncio.get_running_loop().create_task(
            self._deliver(spec, partition, req, violation, answer)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _deliver(
        self,
        spec: StreamSpec,
        partition: int,
        req: ProduceRequest,
        violation: SchemaViolationError,
        answer: DeadLetterAnswer,
    ) -> None:
        try:
            stored = await self._store(spec, partition, req, violation)
        except LiftlogError as exc:
            target = spec.value_schema.dead_letter_stream if spec.value_schema else None
            log.warning("dead letter of %s/%d refused by %s: %s", spec.name, partition, target, exc)
            answer(req, exc)
            return
        answer(req, stored)

    async def _store(
        self, spec: StreamSpec, partition: int, req: ProduceRequest, violation: SchemaViolationError
    ) -> DeadLetter:
        binding = spec.value_schema
        target = binding.dead_letter_stream if binding is not None else None
        view = self._node.replicas.streams.get(target) if target is not None else None
        if target is None or view is None:
            raise StreamNotFoundError(f"the dead letter stream {target!r} does not exist")
        target_spec = view.record.spec
        p = partition_for_key(req.key, target_spec.partitions) if req.key else 0
        headers = {
            **(req.headers or {}),
            HEADER_VIOLATION: violation.message,
            HEADER_ORIGIN: f"{spec.name}/{partition}",
        }
        replica = self._node.replicas.replicas.get((target, p))
        if replica is not None and replica.state.is_leader:
            request = local_request(
                target_spec.partition_subject(p),
                req.ack_policy,
                key=req.key,
                value=req.value,
                headers=headers,
            )
            (ack,) = await replica.produce([request])
            return DeadLetter(target, p, ack.offset, violation.message)
        offset = await self._publish_on_leader(target, p, req, headers)
        return DeadLetter(target, p, offset, violation.message)

    async def _publish_on_leader(
        self, stream: str, partition: int, req: ProduceRequest, headers: dict[str, str]
    ) -> int:
        url = await self._leader_url(stream, partition)
        record: dict[str, object] = {
            "value": base64.b64encode(req.value).decode(),
            "headers": headers,
        }
        if req.key is not None:
            record["key"] = base64.b64encode(req.key).decode()
        client = RestClient(url, credentials=outgoing_credentials(self._node.config))
        response = await call_peer(
            client.request,
            "POST",
            f"/v1/streams/{stream}/partitions/{partition}/records",
            params={"ack_policy": req.ack_policy},
            json_body={"records": [record]},
        )
        (offset,) = PublishResult.from_json(response.json()).offsets
        return offset

    async def _leader_url(self, stream: str, partition: int) -> str:
        """The leader's URL as ZooKeeper has it now (this node's view of another stream may
        lag a leader change by a moment)."""
        state, _version = await asyncio.to_thread(
            read_partition_state, self._node.zk, stream, partition
        )
        if state.leader < 0:
            raise NotLeaderError(f"{stream}/{partition} has no leader now")
        for broker in await self._node.live_brokers():
            if broker.broker_id == state.leader:
                return broker.api_url
        raise UnavailableError(
            f"the leader of {stream}/{partition} (broker {state.leader}) is gone"
        )
