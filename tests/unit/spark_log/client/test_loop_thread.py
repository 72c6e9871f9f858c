"""LoopThread: run/stop races, calls pending at stop, re-entry from the loop thread;
SyncClient stops its loop when building the client fails."""

from __future__ import annotations

import asyncio
import threading

import pytest

import spark_log.client.sync_client as sync_client
from spark_log.client.loop_thread import LoopReentryError, LoopThread
from spark_log.errors import UnavailableError

JOIN_TIMEOUT_S = 20.0
STUBBORN_TICK_S = 0.01


async def _value(v: int) -> int:
    return v


def test_run_returns_and_run_after_stop_is_unavailable():
    loop = LoopThread()
    assert loop.run(_value(3)) == 3
    loop.stop()
    loop.stop()  # idempotent
    assert not loop.running
    with pytest.raises(UnavailableError):
        loop.run(_value(1))


def test_a_call_waiting_when_stop_runs_fails_with_unavailable():
    loop = LoopThread()
    started = threading.Event()
    outcome: list[BaseException | object] = []

    async def forever() -> None:
        started.set()
        await asyncio.Event().wait()

    def caller() -> None:
        try:
            outcome.append(loop.run(forever()))
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
            outcome.append(exc)

    thread = threading.Thread(target=caller)
    thread.start()
    assert started.wait(JOIN_TIMEOUT_S)
    loop.stop()
    thread.join(JOIN_TIMEOUT_S)
    assert not thread.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], UnavailableError)


def test_a_call_that_ignores_cancellation_still_fails_at_stop(monkeypatch):
    monkeypatch.setattr("spark_log.client.loop_thread.LOOP_STOP_TIMEOUT_S", 0.5)
    loop = LoopThread()
    started = threading.Event()
    release = threading.Event()
    outcome: list[BaseException | object] = []

    async def stubborn() -> None:
        started.set()
        while not release.is_set():
            try:
                await asyncio.sleep(STUBBORN_TICK_S)  # work that ignores cancellation
            except asyncio.CancelledError:
                continue

    def caller() -> None:
        try:
            outcome.append(loop.run(stubborn()))
        except BaseException as exc:  # noqa: BLE001
            outcome.append(exc)

    thread = threading.Thread(target=caller)
    thread.start()
    assert started.wait(JOIN_TIMEOUT_S)
    loop.stop()
    thread.join(JOIN_TIMEOUT_S)
    release.set()
    assert len(outcome) == 1 and isinstance(outcome[0], UnavailableError)


def test_run_racing_stop_never_hangs_and_only_raises_unavailable():
    for _ in range(50):
        loop = LoopThread()
        errors: list[BaseException] = []
        first_call = threading.Event()

        def caller(
            loop: LoopThread = loop,
            errors: list[BaseException] = errors,
            first_call: threading.Event = first_call,
        ) -> None:
            while True:
                try:
                    loop.run(_value(1))
                    first_call.set()
                except UnavailableError:
                    first_call.set()
                    return
                except BaseException as exc:  # noqa: BLE001
                    errors.append(exc)
                    first_call.set()
                    return

        threads = [threading.Thread(target=caller) for _ in range(3)]
        for thread in threads:
            thread.start()
        assert first_call.wait(JOIN_TIMEOUT_S)
        loop.stop()
        for thread in threads:
            thread.join(JOIN_TIMEOUT_S)
            assert not thread.is_alive()
        assert errors == []


def test_run_from_the_loop_thread_raises_instead_of_deadlocking():
    loop = LoopThread()
    try:

        async def reenter() -> None:
            loop.run(_value(1))

        with pytest.raises(LoopReentryError):
            loop.run(reenter())

        async def stop_from_inside() -> None:
            loop.stop()

        with pytest.raises(LoopReentryError):
            loop.run(stop_from_inside())
        assert loop.run(_value(2)) == 2
    finally:
        loop.stop()


def test_sync_client_stops_its_loop_when_building_the_client_fails(monkeypatch):
    made: list[LoopThread] = []

    class RecordingLoop(LoopThread):
        def __init__(self, name: str = "t") -> None:
            super().__init__(name)
            made.append(self)

    async def failing(*_args: object) -> None:
        raise ValueError("bad servers")

    monkeypatch.setattr(sync_client, "LoopThread", RecordingLoop)
    monkeypatch.setattr(sync_client, "_make_client", failing)
    with pytest.raises(ValueError, match="bad servers"):
        sync_client.SyncClient("http://127.0.0.1:1")
    assert len(made) == 1
    assert not made[0].running
    assert not made[0]._thread.is_alive()
