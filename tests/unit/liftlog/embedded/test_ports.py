"""Ports handed to child processes: never the same one twice to two servers of one stack."""

from __future__ import annotations

import pytest

from liftlog.bench.jetstream.cluster import ClusterPorts
from liftlog.embedded.ports import PORT_RANGE_ENV, free_port, free_port_block
from spark_log.errors import ConfigError


def test_free_port_does_not_hand_out_a_port_twice():
    """The OS may offer a just-closed port again; two servers started together would then
    collide ("address already in use"). 500 calls make a repeat by the OS very likely."""
    ports = [free_port() for _ in range(500)]
    assert len(set(ports)) == len(ports)


def test_cluster_ports_are_distinct_and_in_one_block():
    ports = ClusterPorts(base=20_000, size=3)
    every = [f(i) for i in range(3) for f in (ports.client, ports.monitor, ports.route)]
    assert len(set(every)) == 9
    assert sorted(every) == list(range(20_000, 20_009))


def test_one_port_is_free_for_the_stack_check_the_port_blocks_and_the_doc_tests():
    import socket

    import liftlog.embedded.port_check as port_check
    import liftlog.embedded.ports as ports
    import tests.support.docs.session as session

    assert port_check.port_is_free is ports.port_is_free
    assert session.port_is_free is ports.port_is_free
    assert not hasattr(ports, "_bindable") and not hasattr(session, "_port_free")
    with socket.create_server(("127.0.0.1", 0)) as server:
        taken = server.getsockname()[1]
        assert not ports.port_is_free("127.0.0.1", taken)
    assert ports.port_is_free("127.0.0.1", taken)


def test_blocks_and_single_ports_never_overlap_within_a_process():
    """A stack picks its NATS route block, its nodes' API block and single ports before it
    binds any: one port handed out twice made a node's API port a NATS route port."""
    handed: list[int] = []
    for size in (3, 6, 8, 1, 3, 6, 8):
        for _ in range(30):
            base = free_port_block(size)
            handed += range(base, base + size)
            handed.append(free_port())
    assert len(set(handed)) == len(handed)


def test_a_named_range_holds_every_pick(monkeypatch: pytest.MonkeyPatch):
    """Parallel test workers each pick from a range of their own (LIFTLOG_PORT_RANGE). The
    range here lies below every worker's (they share 20000 up to the ephemeral range), so no
    stack of a parallel test holds its ports."""
    monkeypatch.setenv(PORT_RANGE_ENV, "15000-15099")
    singles = [free_port() for _ in range(20)]
    blocks = [free_port_block(3) for _ in range(5)]
    assert all(15_000 <= p <= 15_099 for p in singles)
    assert all(b >= 15_000 and b + 2 <= 15_099 for b in blocks)


@pytest.mark.parametrize("named", ["23000", "a-b", "30000-20000", "80-90"])
def test_a_malformed_range_is_refused(monkeypatch: pytest.MonkeyPatch, named: str):
    monkeypatch.setenv(PORT_RANGE_ENV, named)
    with pytest.raises(ConfigError, match=PORT_RANGE_ENV):
        free_port()


def test_a_crowded_range_still_yields_its_last_free_block(monkeypatch: pytest.MonkeyPatch):
    """A worker's range filled with ports handed out lately once made random picks miss the
    few free blocks left ("found no 8 consecutive free ports"): every block is tried."""
    import liftlog.embedded.ports as ports

    monkeypatch.setenv(PORT_RANGE_ENV, "16000-16999")
    monkeypatch.setattr(ports, "_handed_out", {})
    ports._claim([p for p in range(16_000, 17_000) if not 16_500 <= p < 16_508])
    assert free_port_block(8) == 16_500


def test_a_full_range_forgets_its_oldest_picks(monkeypatch: pytest.MonkeyPatch):
    """When every port of the range was handed out lately, the oldest picks are given again:
    their stacks bound them long ago, and failing a start would be worse."""
    import liftlog.embedded.ports as ports

    monkeypatch.setenv(PORT_RANGE_ENV, "17400-17419")
    # handed out in port order, one second apart: the lower half is the oldest
    monkeypatch.setattr(ports, "_handed_out", {p: 1e9 + p for p in range(17_400, 17_420)})
    again = free_port_block(4)
    assert again >= 17_400 and again + 3 < 17_410


def test_reserved_ports_are_never_picked(monkeypatch: pytest.MonkeyPatch):
    """A launcher told its ports on the command line reserves them before it picks blocks
    for its other servers, which would otherwise take one of them (SeaweedFS's block took a
    node's API port, bound only later)."""
    import liftlog.embedded.ports as ports

    monkeypatch.setenv(PORT_RANGE_ENV, "17500-17519")
    monkeypatch.setattr(ports, "_handed_out", {})
    ports.reserve(range(17_500, 17_512))
    base = free_port_block(8)
    assert base >= 17_512
