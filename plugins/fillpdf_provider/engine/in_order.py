"""Work done on a thread of its own while the caller goes on, its results taken in order.

A batch writes each row's file while the next row fills. A write spends its time in the
kernel and in hashing, both outside the GIL, so on a second core it costs the fill next
to nothing; with one core it costs what it did. At most ``ahead`` pieces of work wait, so
memory stays that of a few files, and results come back in the order the work was given:
a manifest lists its rows in order whatever the thread does.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Generic, Self, TypeVar

T = TypeVar("T")


class InTurn(Generic[T]):
    """Results given back in the order their work was put, at most ``ahead`` waiting: what a
    batch's writes share, whether a thread or a process does them. Each waiting entry gives
    its result when called, waiting for it if need be."""

    def __init__(self, ahead: int) -> None:
        self.ahead = ahead
        self._waiting: deque[Callable[[], T]] = deque()

    def put_done(self, result: T) -> None:
        """A result there was no work for (a row that failed before its write), in its turn."""
        self._waiting.append(lambda: result)

    def ready(self) -> Iterator[T]:
        """The oldest results while more than ``ahead`` wait: the caller is never further
        ahead of the work than that."""
        while len(self._waiting) > self.ahead:
            yield self._waiting.popleft()()

    def rest(self) -> Iterator[T]:
        """Every result still to come, in order, each once its work is done."""
        while self._waiting:
            yield self._waiting.popleft()()

    def close(self) -> None:
        """Drop the results not taken."""
        self._waiting.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


class InOrder(InTurn[T]):
    """Runs work on one thread of its own, at most ``ahead`` pieces behind the caller, and
    gives back the results in the order the work was put; ``ahead=0`` runs each piece at
    once, in the caller's thread."""

    def __init__(self, ahead: int, name: str = "fillpdf-work") -> None:
        super().__init__(ahead)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=name) if ahead > 0 else None

    def put(self, work: Callable[[], T]) -> None:
        """Start ``work``; its result comes out of ``ready`` or ``rest`` after the earlier ones."""
        if self._pool is None:
            self.put_done(work())
        else:
            self._waiting.append(self._pool.submit(work).result)

    def close(self) -> None:
        """Wait for the work already begun (a file half written is finished, never cut) and
        drop the work not yet begun."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        super().close()
