"""One callback for "anything about streams changed", kept up as streams come and go.

ZooKeeper watches are per znode, so watching every stream means a children watch on
``/v1/streams``, and for each stream a data watch on its znode, a children watch on its
partitions and a data watch on each partition state; watches are added when a stream appears
and dropped when it disappears. The callback is level-triggered ("re-read, something
changed"): it is called once after the watches are in place, then after every change.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from coordinator.errors import CoordinatorError
from coordinator.zk import WatchHandle, ZkSession
from coordinator.znodes import STREAMS_PATH, partition_state_path, partitions_path, stream_path
from spark_log.json_types import JsonObject

Notify = Callable[[], None]


class StreamWatch:
    """Watches every stream under the session's root; ``cancel`` stops the callbacks."""

    def __init__(self, session: ZkSession, callback: Notify) -> None:
        self._session = session
        self._callback = callback
        self._lock = threading.Lock()
        self._streams: dict[str, _OneStreamWatch] = {}
        self._root: WatchHandle | None = None
        self._cancelled = False

    def start(self) -> None:
        """Set the watches; the first callback() comes before this returns."""
        self._session.ensure_path(STREAMS_PATH)
        self._root = self._session.watch_children(STREAMS_PATH, self._on_streams)

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            watches = list(self._streams.values())
            self._streams.clear()
        if self._root is not None:
            self._root.cancel()
        for watch in watches:
            watch.cancel()

    def _on_streams(self, names: list[str]) -> bool:
        with self._lock:
            if self._cancelled:
                return False
            for gone in set(self._streams) - set(names):
                self._streams.pop(gone).cancel()
            added = [
                _OneStreamWatch(self._session, n, self._notify)
                for n in names
                if n not in self._streams
            ]
            self._streams.update((watch.name, watch) for watch in added)
        for watch in added:
            self._start_one(watch)
        self._notify()
        return True

    def _start_one(self, watch: _OneStreamWatch) -> None:
        """Watch a new stream; if ZooKeeper fails meanwhile, retry at the next listing."""
        try:
            watch.start()
        except CoordinatorError:
            watch.cancel()
            with self._lock:
                if self._streams.get(watch.name) is watch:
                    del self._streams[watch.name]

    def _notify(self) -> None:
        if not self._cancelled:
            self._callback()


class _OneStreamWatch:
    """The watches of one stream: its znode, its partition list, each partition's state."""

    def __init__(self, session: ZkSession, name: str, notify: Notify) -> None:
        self.name = name
        self._session = session
        self._notify = notify
        self._lock = threading.Lock()
        self._partitions: set[int] = set()
        self._handles: list[WatchHandle] = []
        self._cancelled = False

    def start(self) -> None:
        self._keep(self._session.watch_data(stream_path(self.name), _after_first(self._changed)))
        self._keep(self._session.watch_children(partitions_path(self.name), self._on_partitions()))

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            handles = list(self._handles)
        for handle in handles:
            handle.cancel()

    def _keep(self, handle: WatchHandle) -> None:
        with self._lock:
            self._handles.append(handle)
            if self._cancelled:
                handle.cancel()

    def _changed(self, data: JsonObject | None, _version: int | None) -> bool:
        """A znode changed: tell the owner; stop watching a deleted znode."""
        if self._cancelled:
            return False
        self._notify()
        return data is not None

    def _on_partitions(self) -> Callable[[list[str]], bool]:
        first = True

        def on_children(children: list[str]) -> bool:
            nonlocal first
            if self._cancelled:
                return False
            with self._lock:
                added = {int(c) for c in children} - self._partitions
                self._partitions |= added
            for partition in sorted(added):
                path = partition_state_path(self.name, partition)
                self._keep(self._session.watch_data(path, _after_first(self._changed)))
            if not first:
                self._notify()
            first = False
            return True

        return on_children


def _after_first(
    on_change: Callable[[JsonObject | None, int | None], bool],
) -> Callable[[JsonObject | None, int | None], bool]:
    """Skip the call a new data watch makes at registration: it reports no change."""
    first = True

    def callback(data: JsonObject | None, version: int | None) -> bool:
        nonlocal first
        if first:
            first = False
            return data is not None  # already deleted: the stream listing reports that
        return on_change(data, version)

    return callback
