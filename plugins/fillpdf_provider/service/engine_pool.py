"""The parent side of PDF work: at most N children at once, a bounded queue, deadlines.

Every conversion, and every fill of a PDF the caller sent, runs in a child process (see
``isolation``); fills of stored conversions run in the server process (``templates``) but
wait for a slot here too. This module decides when: a request takes one of
``max_children`` slots, or waits in a queue of at most ``max_queue`` requests for at most
``queue_timeout_s``; past either it gets 503 with a ``Retry-After`` worked out from how long
recent jobs took. A child's deadline starts when it starts, never while the request queues,
and the child is killed when it passes, or as soon as the client hangs up.

Waiting on a child holds no thread: the event loop watches the child's pipe.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import multiprocessing
import multiprocessing.forkserver
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import anyio

from fillpdf_provider.service import fork_server_guard, isolation
from fillpdf_provider.service.errors import ApiError
from fillpdf_provider.service.isolation import EngineFailure

Receive = Callable[[], Awaitable[Mapping[str, Any]]]
#: Weight of the newest job in the running mean of job times behind ``Retry-After``.
_SMOOTHING = 0.2


class ChildStartError(RuntimeError):
    """A PDF child died or hung before it read any file: a fault of the server's set-up,
    never of a request (so it stops the server at start-up, not a request's file)."""


class ClientGone(Exception):
    """The client closed its connection; its work was stopped and nobody reads an answer."""


@dataclass
class _Child:
    process: Any
    conn: Connection


async def watch_disconnect(receive: Receive) -> None:
    """Return when the client hangs up (call once the request body has been read)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


class Hangup:
    """When the client of a request hangs up: its connection is watched from the first time
    work asks (``task``), so a request whose work never waits on a child pays nothing."""

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self._task: asyncio.Task[None] | None = None

    @property
    def task(self) -> asyncio.Task[None]:
        """A task that ends when the client hangs up (call once the body has been read)."""
        if self._task is None:
            self._task = asyncio.create_task(watch_disconnect(self._receive))
        return self._task

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()


class EnginePool:
    """The PDF work of one server process."""

    def __init__(
        self,
        *,
        max_children: int,
        max_queue: int,
        queue_timeout_s: float,
        memory_bytes: int,
        max_form_fields: int,
    ) -> None:
        self.max_children = max(1, max_children)
        self.max_form_fields = max_form_fields
        self.max_queue = max(0, max_queue)
        self.queue_timeout_s = queue_timeout_s
        self.memory_bytes = memory_bytes
        self._context: Any = None
        self._slots: asyncio.Semaphore | None = None
        self._queued = 0
        self._running = 0
        self._mean_job_s = 1.0
        self._children: set[Any] = set()

    # ------------------------------------------------------------------ admission

    @property
    def queued(self) -> int:
        return self._queued

    @property
    def running(self) -> int:
        return self._running

    def _busy(self) -> ApiError:
        ahead = self._queued + self._running
        retry = max(1, math.ceil(self._mean_job_s * ahead / self.max_children))
        return ApiError(
            "service_unavailable",
            f"The service is busy ({self._running} PDF jobs running, {self._queued} waiting); "
            f"retry after {retry} s.",
            headers={"Retry-After": str(retry)},
        )

    @contextlib.asynccontextmanager
    async def slot(self, gone: asyncio.Task[None] | None = None) -> AsyncIterator[None]:
        """Hold one of the ``max_children`` slots; 503 when the queue is full or too slow.

        A request whose client hangs up while it queues leaves the queue (``ClientGone``).
        """
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_children)
        slots = self._slots
        if not slots.locked():  # a free slot: take it now, no task to wait on
            await slots.acquire()
            async with self._running_job(slots):
                yield
            return
        if self._queued >= self.max_queue:
            raise self._busy()
        self._queued += 1
        acquire = asyncio.ensure_future(slots.acquire())
        try:
            waiting: set[asyncio.Future[Any]] = {acquire}
            if gone is not None:
                waiting.add(gone)
            await asyncio.wait(
                waiting, timeout=self.queue_timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
        except BaseException:  # cancelled while queued: never keep a slot nobody will free
            if acquire.done() and not acquire.cancelled():
                slots.release()
            else:
                acquire.cancel()  # a slot handed to it on the way is passed on
            raise
        finally:
            self._queued -= 1
        # cancel() only asks: the task ends later, so decide on what it has done by now
        if not (acquire.done() and not acquire.cancelled()):
            acquire.cancel()
            if gone is not None and gone.done():
                raise ClientGone
            raise self._busy()
        async with self._running_job(slots):
            yield

    @contextlib.asynccontextmanager
    async def _running_job(self, slots: asyncio.Semaphore) -> AsyncIterator[None]:
        """A job holding a slot: counted, timed for ``Retry-After``, and its slot freed."""
        self._running += 1
        started = time.monotonic()
        try:
            yield
        finally:
            self._running -= 1
            took = time.monotonic() - started
            self._mean_job_s += _SMOOTHING * (took - self._mean_job_s)
            slots.release()

    # ------------------------------------------------------------------ children

    def _ctx(self) -> Any:
        if self._context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(isolation.PRELOAD)
            self._context = context
        return self._context

    async def _start(self, target: Callable[..., None], *args: Any) -> _Child:
        context = self._ctx()
        parent, child = context.Pipe()
        process = context.Process(target=target, args=(child, *args), daemon=True)
        self._children.add(process)  # known before it starts: close() must find it
        try:
            await anyio.to_thread.run_sync(process.start)
        finally:
            child.close()
        return _Child(process, parent)

    async def _stop(self, child: _Child) -> None:
        child.conn.close()
        if child.process.is_alive():
            child.process.kill()
        await anyio.to_thread.run_sync(child.process.join, 5)
        self._children.discard(child.process)

    async def _receive(
        self, child: _Child, timeout: float, what: str, gone: asyncio.Task[None] | None
    ) -> tuple[Any, ...]:
        """The child's next message, waiting on its pipe in the event loop."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        fd = child.conn.fileno()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(fd, wake)
        try:
            waiting: set[asyncio.Future[Any]] = {ready}
            if gone is not None:
                waiting.add(gone)
            done, _ = await asyncio.wait(
                waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            loop.remove_reader(fd)
            ready.cancel()
        if ready not in done:
            if gone is not None and gone in done:
                raise ClientGone
            raise EngineFailure(
                "unsupported_file",
                f"{what} took longer than {timeout:g} s and was stopped; the file may be "
                "damaged or too complex. Split it or re-save it with a PDF editor.",
            )
        try:
            os.set_blocking(fd, True)  # uvloop leaves a watched fd non-blocking
            message = child.conn.recv()  # the child is writing it now: read it whole
        except (EOFError, OSError):
            await anyio.to_thread.run_sync(child.process.join, 1)
            raise EngineFailure(
                "unsupported_file",
                f"{what} stopped the PDF reader (exit {child.process.exitcode}): the file "
                "needs more than the service's limits or is damaged. Split it or re-save it "
                "with a PDF editor.",
            ) from None
        if message[0] == "error":
            raise EngineFailure(message[1], message[2], message[3])
        return tuple(message)

    # ------------------------------------------------------------------ jobs

    async def convert(
        self,
        upload: Path,
        detect: str,
        output: Path,
        *,
        reserve: Callable[[int], Awaitable[None]],
        probe_timeout: float,
        timeout: float,
        schema: str | None = None,
        gone: asyncio.Task[None] | None = None,
    ) -> dict[str, Any]:
        """Convert ``upload`` into ``output``; ``reserve(pages)`` may refuse before the work."""
        async with self.slot(gone):
            child = await self._start(
                isolation.convert_child,
                str(upload),
                detect,
                str(output),
                self.memory_bytes,
                probe_timeout + timeout,
                self.max_form_fields,
                schema,
            )
            try:
                _, pages = await self._receive(child, probe_timeout, "Opening the PDF", gone)
                await reserve(int(pages))
                child.conn.send("go")
                result = await self._receive(child, timeout, "Converting the PDF", gone)
                return dict(result[1])
            finally:
                await self._stop(child)

    async def fill_inline(
        self,
        pdf: bytes,
        values: Mapping[str, Any],
        *,
        flatten: bool,
        timeout: float,
        gone: asyncio.Task[None] | None = None,
    ) -> bytes:
        """Fill a PDF the caller sent (untrusted) in a child used once."""
        async with self.slot(gone):
            child = await self._start(
                isolation.fill_child,
                pdf,
                dict(values),
                flatten,
                self.memory_bytes,
                timeout,
                self.max_form_fields,
            )
            try:
                return bytes((await self._receive(child, timeout, "Filling the PDF", gone))[1])
            finally:
                await self._stop(child)

    async def check_children_start(self) -> None:
        """Start one child and hear it ready: a server whose children cannot start (a script
        without a main guard, a memory limit the machine refuses) says so at start-up."""
        child = await self._start(isolation.ready_child, self.memory_bytes)
        try:
            answer = await self._receive(child, 60.0, "Starting a PDF child", None)
        except EngineFailure:  # it died or hung before it read any file: the server's fault
            await anyio.to_thread.run_sync(child.process.join, 1)
            code = child.process.exitcode
            how = f"it exited with code {code}" if code is not None else "it did not answer"
            raise ChildStartError(
                f"A PDF child could not start: {how}. Its process imports the program that "
                "started the service again: under `fillpdf serve` or uvicorn that works; a "
                "script that calls create_app itself must start the service under "
                '`if __name__ == "__main__":`. The child\'s own error is on stderr.'
            ) from None
        finally:
            await self._stop(child)
        if answer[0] != "ready":
            raise ChildStartError(
                f"A PDF child could not start: {answer[1]}. It was setting its memory "
                f"limit ({self.memory_bytes:,} bytes: FILLPDF_ENGINE_MEMORY_MB) or loading "
                "the engine; check that limit against the server's own (ulimit -v)."
            )

    async def warm_up(self) -> None:
        """Start the fork server now, not on the first request, and check a child starts."""
        self.start_fork_server()
        await self.check_children_start()

    def start_fork_server(self) -> None:
        """Start the fork server from this thread, the server's main one, so that it dies
        with the server (``fork_server_guard``): Linux kills a process whose parent
        *thread* ends, and a worker thread may end any time."""
        self._ctx()
        os.environ[fork_server_guard.PARENT_VARIABLE] = str(os.getpid())
        try:
            multiprocessing.forkserver.ensure_running()
        finally:
            del os.environ[fork_server_guard.PARENT_VARIABLE]

    def close(self) -> None:
        """Stop every child at once (the service is shutting down)."""
        started = [process for process in self._children if process.pid is not None]
        for process in started:
            if process.is_alive():
                process.kill()
        for process in started:
            process.join(5)
        self._children.clear()
