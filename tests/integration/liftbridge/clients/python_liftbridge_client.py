"""One operation of python-liftbridge (synchronous), run inside its own venv.

Usage: ``python_liftbridge_client.py ADDRESS OPERATION ARGS_JSON``; it must run with
``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python`` (its stubs predate protobuf 4). It prints one
JSON line, ``{"result": ...}`` or ``{"error": {...}}``. This client maps only NOT_FOUND,
ALREADY_EXISTS and CANCELLED to its own errors; any other status breaks its error handler, so
the status is read from the exception that was being handled.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

import grpc
from python_liftbridge import Lift, Message, Stream
from python_liftbridge import api_pb2 as pb

DEFAULT_TIMEOUT_S = 20.0
NS_PER_S = 1_000_000_000


def create(client: Lift, args: dict[str, Any]) -> str:
    client.create_stream(Stream(subject=args["subject"], name=args["name"]))
    return "created"


def delete(client: Lift, args: dict[str, Any]) -> str:
    """The client has no call of its own for it: its generated stub's DeleteStream."""
    client.stub.DeleteStream(pb.DeleteStreamRequest(name=args["name"]))
    return "deleted"


def publish(client: Lift, args: dict[str, Any]) -> int:
    for value in args["values"]:
        message = Message(value=value, stream=args["stream"], key=args.get("key"))
        if args.get("ack_policy") == "ALL":
            message.ack_policy_all()
        client.publish(message)
    return len(args["values"])


def publish_to_subject(client: Lift, args: dict[str, Any]) -> int:
    for value in args["values"]:
        client.publish_to_subject(Message(value=value, subject=args["subject"]))
    return len(args["values"])


def metadata(client: Lift, args: dict[str, Any]) -> dict[str, Any]:
    answer = client.fetch_metadata()
    return {
        "brokers": [{"id": b.id, "host": b.host, "port": b.port} for b in answer.brokers],
        "streams": {
            m.name: {"subject": m.subject, "partitions": partition_ids(m)} for m in answer.metadata
        },
    }


def partition_ids(stream: Any) -> list[int]:
    """The partition ids of a stream's metadata: on protobuf's pure-Python runtime these old
    stubs see the ``partitions`` map as its repeated entries."""
    return sorted(getattr(entry, "key", entry) for entry in stream.partitions)


def positioned(args: dict[str, Any]) -> Stream:
    """The stream to subscribe to, at the start position ``args`` name."""
    stream = Stream(subject=args.get("subject", args["stream"]), name=args["stream"])
    position = args.get("start_position", "NEW_ONLY")
    if position == "OFFSET":
        stream.start_at_offset(args["start_offset"])
    elif position == "EARLIEST":
        stream.start_at_earliest_received()
    elif position == "LATEST":
        stream.start_at_latest_received()
    elif position == "TIMESTAMP":
        # what start_at_time(date) sets (whole seconds in nanoseconds); the method itself
        # cannot be called: its debug line repeats a string a billion times (MemoryError)
        stream.start_position = pb.StartPosition.Value("TIMESTAMP")
        stream.start_offset = None
        stream.start_timestamp = int(args["start_time_s"]) * NS_PER_S
    return stream


class Reader(threading.Thread):
    """Iterates a subscription (which blocks for new messages) until ``count`` messages came.
    A Liftbridge server's first message is the empty handshake, which this client passes on
    as a message: it is noted apart from the records."""

    def __init__(self, client: Lift, stream: Stream, count: int) -> None:
        super().__init__(daemon=True)
        self.client, self.stream, self.count = client, stream, count
        self.handshake = threading.Event()
        self.done = threading.Event()
        self.messages: list[dict[str, Any]] = []
        self.first_was_handshake: bool | None = None
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            for message in self.client.subscribe(self.stream):
                if self.first_was_handshake is None:
                    # (this client hands the subject over as the message's ``stream``)
                    self.first_was_handshake = not message.value and not message.stream
                    if self.first_was_handshake:
                        self.handshake.set()
                        continue
                self.messages.append(
                    {
                        "offset": message.offset,
                        "value": message.value.decode(),
                        "key": message.key.decode() if message.key else None,
                        "timestamp": message.timestamp,
                        "subject": message.stream,
                    }
                )
                if len(self.messages) >= self.count:
                    break
        except BaseException as exc:  # noqa: BLE001  (reported by the main thread)
            self.failure = exc
        finally:
            self.handshake.set()
            self.done.set()


def subscribe(client: Lift, args: dict[str, Any]) -> dict[str, Any]:
    """The first ``count`` records from the start position; with ``publish`` values, those
    are published once the subscription stands (NEW_ONLY)."""
    reader = Reader(client, positioned(args), args["count"])
    reader.start()
    timeout = args.get("timeout", DEFAULT_TIMEOUT_S)
    if args.get("publish"):
        if not reader.handshake.wait(timeout):
            raise TimeoutError("no handshake from the subscription")
        publish(client, {"stream": args["stream"], "values": args["publish"]})
    if not reader.done.wait(timeout):
        raise TimeoutError(f"{len(reader.messages)} of {args['count']} messages: {reader.messages}")
    if reader.failure is not None:
        raise reader.failure
    return {"handshake": reader.first_was_handshake, "messages": reader.messages}


OPERATIONS = {
    "create": create,
    "delete": delete,
    "publish": publish,
    "publish_to_subject": publish_to_subject,
    "metadata": metadata,
    "subscribe": subscribe,
}


def error_out(exc: BaseException) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)[:1000]}
    status = exc if isinstance(exc, grpc.RpcError) else exc.__context__
    if isinstance(status, grpc.RpcError) and hasattr(status, "code"):
        out["code"] = status.code().name
        out["details"] = status.details()
    return out


def main(address: str, operation: str, args: dict[str, Any]) -> dict[str, Any]:
    client = Lift(ip_address=address, timeout=5)
    try:
        return {"result": OPERATIONS[operation](client, args)}
    except Exception as exc:  # noqa: BLE001  (any failure of the client is the answer)
        return {"error": error_out(exc)}
    finally:
        client.close()


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))), flush=True)
