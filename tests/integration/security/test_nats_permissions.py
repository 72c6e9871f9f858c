"""A secured nats-server (TLS + users with subject permissions) against real clients and a real
ingest node: node credentials of every kind connect; a publisher can neither read nor answer
the replication traffic, nor ack in a node's name, and its publish on a subject it may not use
never reaches a stream.

"Never received" is shown without waiting for time to pass: the server answers a refused
operation with ``-ERR 'Permissions Violation ...'`` only after it has dropped it, and messages
from one connection reach a subscriber in order, so once the refusal is in, a barrier message
sent afterwards must be the first thing the subscriber sees.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import nats
import nats.errors
import nkeys
import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from ingest.nats_connect import intake_settings, nats_connect_options
from ingest.produce.intake import IntakeConnection
from ingest.produce.intake_handshake import IntakeConnectError
from ingest.produce.nats_frames import InboundMessage
from liftlog.embedded.certs import StackCerts, generate_stack_certs
from liftlog.embedded.nats import NatsServer
from liftlog.embedded.nats_auth import (
    NatsServerSecurity,
    NatsServerTls,
    NatsUser,
    SecureNats,
    generated_password,
    node_permissions,
    secure_nats,
    with_client_cert,
)
from liftlog.embedded.nats_cluster import NatsCluster
from liftlog.embedded.ports import free_port
from spark_log.auth_config import AuthConfig
from spark_log.client import Client
from spark_log.config import NodeConfig
from spark_log.fetch_wire import HEADER_FETCH_META, FetchMeta, fetch_subject
from spark_log.nats_config import NatsCredentials
from spark_log.nats_options import nats_auth_options
from tests.integration.conftest import NodeFactory, _node_factory, create_stream
from tests.support.stacks import plain_stack_only
from tests.support.waiting import DEFAULT_WAIT_INTERVAL_S, wait_for_async

pytestmark = plain_stack_only(
    "starts its own nats-server with the node and publisher users and its own nodes, which "
    "reach the session's ZooKeeper without TLS; the module is the secured NATS test already"
)

ALLOWED_PREFIX = "secure-ok"
DENIED_PREFIX = "secure-no"
PUBLISHER_SUBJECTS = (f"{ALLOWED_PREFIX}.>",)
CONNECT_TIMEOUT_S = 5
# how long a message or refusal that must come may take: generous, since a loaded machine (two
# cores running the whole suite) delays delivery; negative checks use barriers, never timeouts
REQUEST_TIMEOUT_S = 30.0
CLI_TIMEOUT_S = 60
LIFTLOG = str(Path(sys.executable).parent / "liftlog")
PERMISSIONS_VIOLATION = "permissions violation"


@dataclasses.dataclass(frozen=True)
class Secured:
    """The module's secured server (mTLS + users) and what clients need to reach it."""

    server: NatsServer
    setup: SecureNats
    certs: StackCerts
    nkey_seed_file: str

    @property
    def node(self) -> NatsCredentials:
        return with_client_cert(self.setup.node, *_pair(self.certs.nodes[1]))

    @property
    def publisher(self) -> NatsCredentials:
        return with_client_cert(self.setup.publisher, *_pair(self.certs.admin))


def _pair(paths: Any) -> tuple[str, str]:
    return paths.cert_file, paths.key_file


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    """nats-server demanding TLS client certificates, with a node user, a publisher user
    limited to ``secure-ok.>`` and a node user known only by its NKey."""
    root = tmp_path_factory.mktemp("secured-nats")
    certs = generate_stack_certs(root / "tls", [1])
    tls = NatsServerTls(certs.nats.cert_file, certs.nats.key_file, certs.ca_file, verify=True)
    setup = secure_nats(tls, PUBLISHER_SUBJECTS)
    seed_file, public_key = _nkey_user(root)
    users = (*setup.security.users, NatsUser(node_permissions(), nkey=public_key))
    security = dataclasses.replace(setup.security, users=users)
    server = NatsServer(free_port(), root / "nats", security=security)
    server.start()
    try:
        yield Secured(server, setup, certs, seed_file)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def token_server(secured: Secured, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """nats-server in single-token mode over TLS (server certificate only)."""
    root = tmp_path_factory.mktemp("token-nats")
    certs = secured.certs
    token = generated_password()
    tls = NatsServerTls(certs.nats.cert_file, certs.nats.key_file, certs.ca_file)
    server = NatsServer(free_port(), root, security=NatsServerSecurity(tls=tls, token=token))
    server.start()
    try:
        yield server, NatsCredentials(token=token, tls_ca_file=certs.ca_file)
    finally:
        server.stop()


def _nkey_user(root: Path) -> tuple[str, str]:
    """A fresh NKey user: its seed in a private file, and its public key for the server."""
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    path = root / "node.nk"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(seed)
    return str(path), nkeys.from_seed(bytearray(seed)).public_key.decode()


class Connection:
    """A NATS connection that keeps the errors the server sent it."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.nc: NatsClient | None = None

    async def open(self, url: str, credentials: NatsCredentials) -> NatsClient:
        self.nc = await nats.connect(
            url,
            error_cb=self._on_error,
            connect_timeout=CONNECT_TIMEOUT_S,
            allow_reconnect=False,  # a refused login fails at once (0 attempts = unlimited)
            **nats_auth_options(credentials),
        )
        return self.nc

    async def _on_error(self, exc: Exception) -> None:
        self.errors.append(str(exc))

    async def refused(self, operation: str, subject: str) -> str:
        """Wait for the server's refusal of ``operation`` ("publish" or "subscription") on
        ``subject`` and return it."""
        wanted = f'{PERMISSIONS_VIOLATION} for {operation} to "{subject.lower()}"'
        found = await wait_for_async(
            lambda: [e for e in self.errors if wanted in e.lower()],
            REQUEST_TIMEOUT_S,
            message=wanted,
        )
        return found[0]


@pytest.fixture
async def connect() -> AsyncIterator[Callable[..., Awaitable[Connection]]]:
    """Open connections to a server; all closed after the test."""
    opened: list[Connection] = []

    async def make(url: str, credentials: NatsCredentials) -> Connection:
        conn = Connection()
        opened.append(conn)
        await conn.open(url, credentials)
        return conn

    yield make
    for conn in opened:
        if conn.nc is not None and not conn.nc.is_closed:
            await conn.nc.close()


class Inbox:
    """Messages received on one subscription, in order."""

    def __init__(self) -> None:
        self.messages: list[Msg] = []

    async def on_message(self, msg: Msg) -> None:
        self.messages.append(msg)

    async def first(self) -> Msg:
        await wait_for_async(lambda: self.messages, REQUEST_TIMEOUT_S, message="a message")
        return self.messages[0]


def _monitor(server: NatsServer, endpoint: str) -> dict[str, Any]:
    """One of the server's monitoring documents (``varz``, ``connz?...``)."""
    url = f"{server.monitor_url}/{endpoint}"
    with urllib.request.urlopen(url, timeout=REQUEST_TIMEOUT_S) as response:
        return dict(json.load(response))


def _connz(server: NatsServer, cid: int) -> dict[str, Any]:
    """The server's view of connection ``cid`` (user and TLS version included)."""
    return dict(_monitor(server, f"connz?cid={cid}&auth=1")["connections"][0])


# ------------------------------------------------------------------------------ node credentials


@pytest.mark.parametrize("kind", ["user_password", "nkey_seed", "token"])
async def test_a_node_connects_with_each_kind_of_credentials(
    kind: str, secured: Secured, token_server: Any, temp_dir: Path
) -> None:
    """The options a node builds from its ``[nats]`` table log in over TLS, and the node may
    serve a fetch subject and answer on the requester's inbox."""
    server, credentials = {
        "user_password": (secured.server, secured.node),
        "nkey_seed": (
            secured.server,
            dataclasses.replace(
                secured.node, user="", password="", nkey_seed_file=secured.nkey_seed_file
            ),
        ),
        "token": token_server,
    }[kind]
    config = NodeConfig(broker_id=1, data_dir=str(temp_dir), nats_url=server.url, nats=credentials)
    nc = await nats.connect(**nats_connect_options(config))
    try:
        subject = fetch_subject("c0ffee", "orders", 0, 1)

        async def serve(msg: Msg) -> None:
            await msg.respond(b"served")

        await nc.subscribe(subject, cb=serve)
        reply = await nc.request(subject, b"fetch", timeout=REQUEST_TIMEOUT_S)
        assert reply.data == b"served"
        seen = _connz(server, nc.client_id)
        assert seen["tls_version"].startswith("1.")
        if kind == "user_password":
            assert seen["authorized_user"] == "liftlog-node"
        await _intake_round_trip(config, nc)
    finally:
        await nc.close()


async def _intake_round_trip(config: NodeConfig, nc: NatsClient) -> None:
    """The intake logs in with the same credentials over TLS: it receives what is published
    to its subscription and its acks reach the publisher's inbox."""
    intake = IntakeConnection(intake_settings(config))
    await intake.connect()
    try:
        inbox = f"_INBOX.intake-{uuid.uuid4().hex}"
        acks: asyncio.Queue[bytes] = asyncio.Queue()

        async def on_ack(msg: Msg) -> None:
            acks.put_nowait(msg.data)

        await nc.subscribe(f"{inbox}.acks", cb=on_ack)
        await nc.flush()

        def answer(messages: list[InboundMessage]) -> None:
            for message in messages:
                intake.publish(message.reply, b"ack:" + message.data)

        intake.subscribe(f"{inbox}.in", "", answer)
        await intake.flush(REQUEST_TIMEOUT_S)
        await nc.publish(f"{inbox}.in", b"one", reply=f"{inbox}.acks")
        assert await asyncio.wait_for(acks.get(), REQUEST_TIMEOUT_S) == b"ack:one"
    finally:
        await intake.close()


@pytest.mark.parametrize(
    "change",
    [
        {"password": "not-the-password"},
        {"user": "", "password": ""},  # anonymous
        {"tls_cert_file": "", "tls_key_file": ""},  # no client certificate for a verify server
    ],
    ids=["wrong-password", "anonymous", "no-client-certificate"],
)
async def test_a_client_without_valid_credentials_is_refused(
    change: dict[str, str], secured: Secured
) -> None:
    credentials = dataclasses.replace(secured.node, **change)
    with pytest.raises((nats.errors.Error, OSError)):
        await Connection().open(secured.server.url, credentials)
    config = NodeConfig(
        broker_id=1, data_dir="unused", nats_url=secured.server.url, nats=credentials
    )
    intake = IntakeConnection(intake_settings(config))
    with pytest.raises(IntakeConnectError):
        await intake.connect()
    await intake.close()


# ------------------------------------------------------------------------- publisher permissions


async def test_a_publisher_cannot_subscribe_to_fetch_traffic(secured: Secured, connect) -> None:
    node = await connect(secured.server.url, secured.node)
    publisher = await connect(secured.server.url, secured.publisher)
    stolen, barrier = Inbox(), Inbox()
    subject = fetch_subject("c0ffee", "orders", 0, 1)
    await publisher.nc.subscribe("_LIFTLOG.>", cb=stolen.on_message)
    await publisher.nc.subscribe(subject, cb=stolen.on_message)
    await publisher.refused("subscription", "_LIFTLOG.>")
    await publisher.refused("subscription", subject)
    barrier_inbox = publisher.nc.new_inbox()
    await publisher.nc.subscribe(barrier_inbox, cb=barrier.on_message)
    await publisher.nc.flush()

    await node.nc.publish(subject, b"a follower's fetch request")
    await node.nc.publish(barrier_inbox, b"barrier")
    assert (await barrier.first()).data == b"barrier"
    assert stolen.messages == []


async def test_a_publisher_cannot_answer_or_forge_a_fetch(secured: Secured, connect) -> None:
    leader = await connect(secured.server.url, secured.node)
    follower = await connect(secured.server.url, secured.node)
    publisher = await connect(secured.server.url, secured.publisher)
    requests, responses = Inbox(), Inbox()
    subject = fetch_subject("c0ffee", "orders", 0, 1)
    truth = FetchMeta(leader_epoch=3, high_watermark=10, log_start_offset=0, log_end_offset=10)

    async def serve(msg: Msg) -> None:
        await requests.on_message(msg)
        await leader.nc.publish(
            msg.reply, b"leader bytes", headers={HEADER_FETCH_META: truth.encode()}
        )

    await leader.nc.subscribe(subject, cb=serve)
    reply_inbox = follower.nc.new_inbox()
    await follower.nc.subscribe(reply_inbox, cb=responses.on_message)
    await follower.nc.flush()

    # a forged fetch request (it would move the leader's view of a follower's LEO, so its HW)
    await publisher.nc.publish(subject, b"forged fetch", reply=publisher.nc.new_inbox())
    # a forged response on the follower's reply inbox, as if the leader had answered
    forged = dataclasses.replace(truth, high_watermark=10_000)
    await publisher.nc.publish(
        reply_inbox, b"forged bytes", headers={HEADER_FETCH_META: forged.encode()}
    )
    await publisher.refused("publish", subject)
    await publisher.refused("publish", reply_inbox)

    await follower.nc.publish(subject, b"real fetch", reply=reply_inbox)
    first = await responses.first()
    assert first.data == b"leader bytes"
    assert FetchMeta.decode(first.headers[HEADER_FETCH_META]) == truth
    assert [m.data for m in requests.messages] == [b"real fetch"]


async def test_a_publisher_cannot_ack_in_a_nodes_name(secured: Secured, connect) -> None:
    node = await connect(secured.server.url, secured.node)
    victim = await connect(secured.server.url, secured.publisher)
    attacker = await connect(secured.server.url, secured.publisher)
    acks = Inbox()
    inbox = victim.nc.new_inbox()
    await victim.nc.subscribe(f"{inbox}.*", cb=acks.on_message)
    await victim.nc.flush()

    forged = json.dumps({"stream": "orders", "partition": 0, "offset": 41}).encode()
    await attacker.nc.publish(f"{inbox}.1", forged)
    await attacker.refused("publish", f"{inbox}.1")

    genuine = json.dumps({"stream": "orders", "partition": 0, "offset": 0}).encode()
    await node.nc.publish(f"{inbox}.1", genuine)
    assert (await acks.first()).data == genuine
    assert len(acks.messages) == 1


# --------------------------------------------------------------------------- with a real node


@pytest.fixture
def make_secured_node(
    zookeeper: Any, secured: Secured, tmp_path: Path
) -> Iterator[Callable[..., Any]]:
    """Ingest nodes attached to the secured server as the node user (over mTLS)."""
    factory: Iterator[NodeFactory] = _node_factory(
        zookeeper, secured.server, tmp_path, f"/liftlog-{uuid.uuid4().hex[:12]}"
    )
    make = next(factory)

    def start(broker_id: int = 1) -> Any:
        return make(broker_id, nats=secured.node, auth=AuthConfig(enabled=False))

    yield start
    next(factory, None)


def _offsets(api: httpx.Client, stream: str) -> tuple[int, int]:
    partition = api.get(f"/v1/streams/{stream}").json()["partitions"][0]
    return partition["high_watermark"], partition["log_end_offset"]


async def test_a_publish_without_permission_never_reaches_a_stream(
    secured: Secured, make_secured_node, connect, stream_name: str
) -> None:
    node = make_secured_node()
    denied, allowed = f"{stream_name}-no", f"{stream_name}-ok"
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        create_stream(api, denied, f"{DENIED_PREFIX}.{stream_name}")
        create_stream(api, allowed, f"{ALLOWED_PREFIX}.{stream_name}")

        raw = await connect(secured.server.url, secured.publisher)
        acks = Inbox()
        reply = raw.nc.new_inbox()
        await raw.nc.subscribe(reply, cb=acks.on_message)
        await raw.nc.publish(f"{DENIED_PREFIX}.{stream_name}", b"forbidden", reply=reply)
        await raw.refused("publish", f"{DENIED_PREFIX}.{stream_name}")

        async with Client(
            node.api_url, nats_url=secured.server.url, nats_credentials=secured.publisher
        ) as client:
            ack = await client.publish(allowed, b"permitted")
        assert (ack.stream, ack.offset) == (allowed, 0)
        assert _offsets(api, allowed) == (1, 1)
        records = api.get(
            f"/v1/streams/{allowed}/partitions/0/records", params={"encoding": "utf-8"}
        ).json()["records"]
        assert [r["value"] for r in records] == ["permitted"]
        assert _offsets(api, denied) == (0, 0)
        assert acks.messages == []


def _follower_high_watermark(node: Any, stream: str) -> int:
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        resp = api.get(
            f"/v1/streams/{stream}/partitions/0/records",
            params={"encoding": "utf-8", "from_follower": "true"},
        )
    return int(resp.json()["high_watermark"])


async def test_a_publisher_never_sees_replication_traffic(
    secured: Secured, make_secured_node, connect, stream_name: str
) -> None:
    """While a real follower catches up from a real leader, a publisher listening on every
    inbox (``_INBOX.>``; ``>`` is refused) receives acks only: fetch responses, which carry
    the stream's records, arrive under the nodes' inbox prefix, where a node user sees them."""
    nodes = [make_secured_node(broker_id) for broker_id in (1, 2)]
    sniffer = await connect(secured.server.url, secured.publisher)
    spy = await connect(secured.server.url, secured.node)
    sniffed, everything, replication = Inbox(), Inbox(), Inbox()
    await sniffer.nc.subscribe("_INBOX.>", cb=sniffed.on_message)
    await sniffer.nc.subscribe(">", cb=everything.on_message)
    await sniffer.refused("subscription", ">")
    await spy.nc.subscribe("_LIFTLOG.*.inbox.>", cb=replication.on_message)
    await sniffer.nc.flush()
    await spy.nc.flush()
    with httpx.Client(base_url=nodes[0].api_url, timeout=30) as api:
        created = create_stream(
            api, stream_name, f"{ALLOWED_PREFIX}.{stream_name}", replication_factor=2
        )
    state = created["partitions"][0]
    assert sorted(state["isr"]) == [1, 2]
    leader = next(n for n in nodes if n.broker_id == state["leader"])
    follower = next(n for n in nodes if n.broker_id != state["leader"])

    async with Client(
        leader.api_url, nats_url=secured.server.url, nats_credentials=secured.publisher
    ) as client:
        acks = [await client.publish(stream_name, f"secret-{i}") for i in range(5)]
    assert [a.offset for a in acks] == list(range(5))
    # the follower learns the HW from a fetch response: the responses were delivered
    await wait_for_async(
        lambda: _follower_high_watermark(follower, stream_name) == 5,
        30,
        message="the follower caught up",
    )
    barrier = Inbox()
    barrier_inbox = sniffer.nc.new_inbox()
    await sniffer.nc.subscribe(barrier_inbox, cb=barrier.on_message)
    await sniffer.nc.flush()
    await spy.nc.publish(barrier_inbox, b"barrier")
    assert (await barrier.first()).data == b"barrier"

    assert everything.messages == []
    heard = [m for m in sniffed.messages if m.subject != barrier_inbox]
    assert not [m for m in heard if HEADER_FETCH_META in (m.headers or {})]
    assert not [m for m in heard if b"secret-" in m.data]
    # what remains is the acks of the publisher's own requests (see docs/security.md)
    assert sorted(json.loads(m.data)["offset"] for m in heard) == list(range(5))
    fetched = [m for m in replication.messages if HEADER_FETCH_META in (m.headers or {})]
    assert fetched, "the follower fetched under the nodes' inbox prefix"


@pytest.mark.parametrize(
    "reply",
    ["_LIFTLOG.c0ffee.fetch.orders.0.1", "$JS.API.STREAM.DELETE.orders"],
    ids=["replication-wire", "server-api"],
)
async def test_a_publish_naming_an_internal_reply_subject_is_dropped(
    reply: str, secured: Secured, make_secured_node, connect, stream_name: str
) -> None:
    """A publisher cannot make a node publish an ack in Liftlog's namespace or the server's:
    the node neither answers nor stores such a message, and serves the next one normally."""
    node = make_secured_node()
    subject = f"{ALLOWED_PREFIX}.{stream_name}"
    spy = await connect(secured.server.url, secured.node)
    forged_acks = await spy.nc.subscribe(reply)
    await spy.nc.flush()
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        create_stream(api, stream_name, subject)
        publisher = await connect(secured.server.url, secured.publisher)
        acks = Inbox()
        inbox = publisher.nc.new_inbox()
        await publisher.nc.subscribe(inbox, cb=acks.on_message)
        await publisher.nc.publish(subject, b"forged", reply=reply)
        await publisher.nc.publish(subject, b"genuine", reply=inbox)

        ack = json.loads((await acks.first()).data)
        assert (ack["stream"], ack["offset"]) == (stream_name, 0)
        # a forged ack would have left the node before the genuine one: it is in by now
        await spy.nc.flush()
        assert forged_acks.pending_msgs == 0
        records = api.get(
            f"/v1/streams/{stream_name}/partitions/0/records", params={"encoding": "utf-8"}
        ).json()["records"]
        assert [r["value"] for r in records] == ["genuine"]


async def test_the_cli_publishes_with_credentials_from_the_environment(
    secured: Secured, make_secured_node, stream_name: str
) -> None:
    """``liftlog publish --plain`` (any NATS client's message) with LIFTLOG_NATS_* set; the
    password appears nowhere in its output."""
    node = make_secured_node()
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        create_stream(api, stream_name, f"{ALLOWED_PREFIX}.{stream_name}")
    creds = secured.publisher
    env = {
        **os.environ,
        "LIFTLOG_NATS_USER": creds.user,
        "LIFTLOG_NATS_PASSWORD": creds.password,
        "LIFTLOG_NATS_CA_FILE": creds.tls_ca_file,
        "LIFTLOG_NATS_CERT_FILE": creds.tls_cert_file,
        "LIFTLOG_NATS_KEY_FILE": creds.tls_key_file,
    }
    argv = [LIFTLOG, "publish", stream_name, "hello", "--server", node.api_url]
    argv += ["--nats-url", secured.server.url]
    for extra in ([], ["--plain"]):
        done = await asyncio.to_thread(
            subprocess.run,
            argv + extra,
            env=env,
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_S,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert creds.password not in done.stdout + done.stderr
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        assert _offsets(api, stream_name) == (2, 2)


# ------------------------------------------------------------------------------- a NATS cluster


async def test_a_secured_cluster_routes_over_tls_and_keeps_the_permissions(
    secured: Secured, connect, temp_dir: Path
) -> None:
    """``--ha --secure``: routes form over mutual TLS, a node's fetch crosses servers, and a
    publisher on another server is refused just the same."""
    tls = NatsServerTls(
        secured.certs.nats.cert_file, secured.certs.nats.key_file, secured.certs.ca_file
    )
    setup = secure_nats(tls, PUBLISHER_SUBJECTS)
    cluster = NatsCluster(temp_dir, 2, security=setup.security).start()
    try:
        for server in cluster.servers:
            routes = _monitor(server, "varz")["cluster"]
            assert routes["tls_required"] and routes["tls_verify"]
        leader = await connect(cluster.urls[0], setup.node)
        follower = await connect(cluster.urls[1], setup.node)
        publisher = await connect(cluster.urls[1], setup.publisher)
        subject = fetch_subject("c0ffee", "orders", 0, 1)

        async def serve(msg: Msg) -> None:
            await msg.respond(b"leader bytes")

        await leader.nc.subscribe(subject, cb=serve)
        await leader.nc.flush()
        reply = await _request_until_served(follower.nc, subject)
        assert reply.data == b"leader bytes"
        await publisher.nc.subscribe("_LIFTLOG.>")
        await publisher.refused("subscription", "_LIFTLOG.>")
    finally:
        cluster.stop()


async def _request_until_served(nc: NatsClient, subject: str) -> Msg:
    """A request, repeated while the responder's interest has not crossed the route yet."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + REQUEST_TIMEOUT_S
    while True:
        try:
            return await nc.request(subject, b"fetch", timeout=REQUEST_TIMEOUT_S)
        except nats.errors.NoRespondersError:
            if loop.time() >= deadline:
                raise
            await asyncio.sleep(DEFAULT_WAIT_INTERVAL_S)
