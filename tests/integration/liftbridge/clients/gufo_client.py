"""One operation of gufo-liftbridge, run inside its own venv as an application would call it.

Usage: ``gufo_client.py BROKERS OPERATION ARGS_JSON`` (BROKERS: ``host:port,...``). It prints one
JSON line: ``{"result": ...}``, or ``{"error": {...}, "log": [...]}`` with what the client logged
(its retries name the status the server answered). Every operation has a deadline, because
this client retries some failures forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from grpc.aio import AioRpcError
from gufo.liftbridge.api_pb2 import PublishResponse
from gufo.liftbridge.client import LiftbridgeClient
from gufo.liftbridge.types import AckPolicy, Message, StartPosition

DEFAULT_TIMEOUT_S = 20.0
LOG_LINES = 30


class Recorder(logging.Handler):
    """Keeps what the client logs, to explain a failure."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.getMessage()}"[:600])


def message_out(message: Message) -> dict[str, Any]:
    return {
        "offset": message.offset,
        "value": message.value.decode(),
        "key": message.key.decode(),
        "timestamp": message.timestamp,
        "partition": message.partition,
        "subject": message.subject,
        "headers": {k: v.decode() for k, v in message.headers.items()},
    }


def response_out(response: PublishResponse) -> dict[str, Any]:
    error = response.asyncError if response.HasField("asyncError") else None
    return {
        "correlationId": response.correlationId,
        "ack": {
            "stream": response.ack.stream,
            "offset": response.ack.offset,
            "correlationId": response.ack.correlationId,
            "partitionSubject": response.ack.partitionSubject,
            "ackPolicy": response.ack.ackPolicy,
            "ackError": response.ack.ackError,
            "commitTimestamp": response.ack.commitTimestamp,
        }
        if response.HasField("ack")
        else None,
        "asyncError": {"code": error.code, "message": error.message} if error else None,
    }


async def create(client: LiftbridgeClient, args: dict[str, Any]) -> str:
    await client.create_stream(
        args["name"],
        subject=args.get("subject"),
        partitions=args.get("partitions", 1),
        replication_factor=args.get("replication_factor", 1),
        minisr=args.get("minisr", 0),
        wait_for_stream=True,
    )
    return "created"


async def delete(client: LiftbridgeClient, args: dict[str, Any]) -> str:
    await client.delete_stream(args["name"])
    return "deleted"


async def metadata(client: LiftbridgeClient, args: dict[str, Any]) -> dict[str, Any]:
    answer = await client.get_metadata(args.get("stream"))
    return {
        "brokers": [vars(b) for b in answer.brokers],
        "streams": {
            m.name: {
                "subject": m.subject,
                "partitions": {str(p): vars(pm) for p, pm in m.partitions.items()},
            }
            for m in answer.metadata
        },
        "leaders": {f"{s}/{p}": broker for (s, p), broker in client.leaders.items()},
    }


async def partition_metadata(client: LiftbridgeClient, args: dict[str, Any]) -> dict[str, Any]:
    answer = await client.get_partition_metadata(args["stream"], args.get("partition", 0))
    return vars(answer)


async def publish(client: LiftbridgeClient, args: dict[str, Any]) -> int:
    """Unary Publish of each record (the client sets no deadline: no ack comes back)."""
    for record in args["records"]:
        await client.publish(
            record["value"].encode(),
            stream=args["stream"],
            key=record["key"].encode() if record.get("key") else None,
            partition=record.get("partition"),
            headers={k: v.encode() for k, v in record.get("headers", {}).items()},
            ack_policy=AckPolicy[args.get("ack_policy", "LEADER")],
        )
    return len(args["records"])


async def publish_bulk(client: LiftbridgeClient, args: dict[str, Any]) -> list[dict[str, Any]]:
    """PublishAsync of every record, each with its correlation id; the responses in order."""
    policy = AckPolicy[args.get("ack_policy", "LEADER")]
    requests = [
        client.get_publish_request(
            record["value"].encode(),
            stream=args["stream"],
            partition=record.get("partition"),
            correlation_id=record["correlationId"],
            ack_policy=policy,
        )
        for record in args["records"]
    ]
    return [response_out(r) async for r in client.publish_bulk(requests)]  # type: ignore[arg-type]


async def subscribe(client: LiftbridgeClient, args: dict[str, Any]) -> list[dict[str, Any]]:
    """The first ``count`` messages of a subscription from the start position asked for."""
    timestamp_ns = args.get("start_timestamp_ns")
    subscription = client.subscribe(
        args["stream"],
        partition=args.get("partition", 0),
        start_position=StartPosition[args.get("start_position", "NEW_ONLY")],
        start_offset=args.get("start_offset"),
        start_timestamp=timestamp_ns / 1e9 if timestamp_ns is not None else None,
        cursor_id=args.get("cursor_id"),
    )
    got: list[dict[str, Any]] = []
    async with contextlib.aclosing(subscription):
        async for message in subscription:
            got.append(message_out(message))
            if len(got) >= args["count"]:
                break
    return got


async def subscribe_new(client: LiftbridgeClient, args: dict[str, Any]) -> dict[str, Any]:
    """NEW_ONLY: subscribe, then publish numbered probes until ``count`` have arrived. The
    client does not say when its subscription stands, so probes go out until one comes back;
    those sent before are not delivered, which is what NEW_ONLY means."""
    stream, partition = args["stream"], args.get("partition", 0)
    reader = asyncio.ensure_future(
        subscribe(client, {"stream": stream, "partition": partition, "count": args["count"]})
    )
    sent: list[str] = []
    while not reader.done():
        value = f"{args['prefix']}-{len(sent)}"
        await client.publish(value.encode(), stream=stream, partition=partition)
        sent.append(value)
        await asyncio.wait([reader], timeout=0.1)  # the next probe if none arrived by then
    return {"sent": sent, "messages": reader.result()}


async def set_cursor(client: LiftbridgeClient, args: dict[str, Any]) -> str:
    await client.set_cursor(args["stream"], args["partition"], args["cursor_id"], args["offset"])
    return "set"


async def get_cursor(client: LiftbridgeClient, args: dict[str, Any]) -> int:
    return await client.get_cursor(args["stream"], args["partition"], args["cursor_id"])


OPERATIONS: dict[str, Callable[[LiftbridgeClient, dict[str, Any]], Awaitable[Any]]] = {
    "create": create,
    "delete": delete,
    "metadata": metadata,
    "partition_metadata": partition_metadata,
    "publish": publish,
    "publish_bulk": publish_bulk,
    "subscribe": subscribe,
    "subscribe_new": subscribe_new,
    "set_cursor": set_cursor,
    "get_cursor": get_cursor,
}


def error_out(exc: BaseException) -> dict[str, Any]:
    cause = exc if isinstance(exc, AioRpcError) else exc.__cause__ or exc.__context__
    out: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)[:1000]}
    if isinstance(cause, AioRpcError):
        out["code"] = cause.code().name
        out["details"] = cause.details()
    return out


async def main(brokers: list[str], operation: str, args: dict[str, Any]) -> dict[str, Any]:
    recorder = Recorder()
    logger = logging.getLogger("gufo.liftbridge")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(recorder)
    client = LiftbridgeClient(brokers, metadata_leader_timeout=0.3, metadata_leader_dev=0.1)
    try:
        timeout = args.get("timeout", DEFAULT_TIMEOUT_S)
        result = await asyncio.wait_for(OPERATIONS[operation](client, args), timeout)
        return {"result": result}
    except TimeoutError as exc:
        return {
            "error": {"type": "timeout", "message": str(exc)},
            "log": recorder.lines[-LOG_LINES:],
        }
    except Exception as exc:  # noqa: BLE001  (any failure of the client is the answer)
        return {"error": error_out(exc), "log": recorder.lines[-LOG_LINES:]}
    finally:
        await client.close()


if __name__ == "__main__":
    answer = asyncio.run(main(sys.argv[1].split(","), sys.argv[2], json.loads(sys.argv[3])))
    print(json.dumps(answer))
