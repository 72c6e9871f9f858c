"""Blocking calls to other nodes, on threads of their own: never in the loop's default executor.

The default executor does this node's storage work: leader appends and fsyncs, follower
appends, reads. A call to another node can wait on that very work. A cursor commit forwarded
to the leader of its ``__cursors`` partition is answered once every ISR member holds it, and
this node's follower of that partition appends in the default executor. With as many forwards
in flight as that executor has threads (six on two cores), the follower's appends queued
behind forwards that were waiting for them: commits crawled until the leader dropped this
node from the ISR and fenced itself (``bench/cursor_commits.py``: 16 concurrent writers
committed 22 cursors a second, and the ISRs of ``__cursors`` shrank every ten seconds). Calls
that wait on other nodes queue among themselves here, so storage never waits behind them.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

PEER_CALL_THREADS = 32
"""Calls to other nodes in flight at once; more wait for a thread (storage never does)."""

P = ParamSpec("P")
T = TypeVar("T")

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    """The process's pool, made on first use (importing the module starts no thread)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(PEER_CALL_THREADS, thread_name_prefix="liftlog-peer")
        return _pool


async def call_peer(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run a blocking call to another node (a ``RestClient`` request) off the loop."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_executor(), functools.partial(call, *args, **kwargs))
