"""``with thing:`` for everything that starts child processes: started on entry, stopped on
exit whatever happened (an exception inside the block included), so nothing is left running."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class StartStop:
    """Mixin: subclasses define ``start() -> Self`` and ``stop()``."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> object:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
