"""A server's life: registered and recovered at start, a heartbeat and a sweeper while it
serves, its children stopped and its work given back when it stops."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager

import anyio
from fastapi import FastAPI

from fillpdf_provider.service import conversions, db_outage, parent_death, ratelimit, recovery
from fillpdf_provider.service.logs import log
from fillpdf_provider.service.settings import SERVER_PID_VARIABLE
from fillpdf_provider.service.state import Service

#: Seconds a thread may hold the interpreter while the event loop waits for it (Python's
#: default is 5 ms).
SWITCH_INTERVAL_S = 0.0005

Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[None]]


def lifespan_of(service: Service) -> Lifespan:
    """The app's ``lifespan``: ``start`` before the first request, ``stop`` after the last."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        tasks: list[asyncio.Task[None]] = []
        try:
            await start(service, tasks)
            yield
        finally:
            await _cancel(tasks)
            stop(service)

    return lifespan


async def start(service: Service, tasks: list[asyncio.Task[None]]) -> None:
    """Register this server, clear what dead ones left, and start the PDF workers.

    The heartbeat starts first: other hosts must not take a slow start for a dead server.
    """
    if os.environ.get(SERVER_PID_VARIABLE, str(os.getpid())) != str(os.getpid()):
        parent_death.die_with_parent()  # a worker of `fillpdf serve --workers N`: die with it
    await anyio.to_thread.run_sync(recovery.register, service.db, service.instance)
    tasks.append(asyncio.create_task(heartbeat_forever(service)))
    await anyio.to_thread.run_sync(lambda: _recover(service, scan_files=True))
    await service.pool.warm_up()
    tasks.append(asyncio.create_task(sweep_forever(service)))
    tasks.append(asyncio.create_task(give_back_leases_forever(service)))
    # What start-up made (modules, the app, its schema) lives as long as the process: out
    # of the collector's sight, a full collection scans only what requests make, and the
    # pauses it puts into answers stay short.
    gc.collect()  # garbage frozen now would never be freed
    gc.freeze()
    # A thread doing database or PDF work holds the interpreter for up to the switch
    # interval (5 ms) each time the event loop asks for it back: every request on the loop
    # waits that long. A shorter interval hands it back sooner.
    sys.setswitchinterval(SWITCH_INTERVAL_S)


def stop(service: Service) -> None:
    """Stop every child and give back what this server still holds."""
    service.pool.close()
    try:
        service.rates.give_back_expired(service.db, every=True)
    except Exception:
        logging.getLogger("fillpdf.service").exception("rate leases could not be given back")
    settings = service.settings
    left = recovery.unregister(
        service.db, service.instance, settings.files_dir, settings.uploads_dir
    )
    if left:
        left.log("stopped with work in progress; it was given back")


async def _cancel(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel ``tasks`` and wait until each has ended."""
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _recover(service: Service, *, scan_files: bool) -> None:
    """Take back what dead servers left (and, with ``scan_files``, files nothing owns)."""
    settings = service.settings
    recovery.recover(
        service.db,
        service.instance,
        settings.files_dir,
        settings.uploads_dir,
        scan_files=scan_files,
    )


def _failed(what: str, error: Exception) -> None:
    """Log a background task's failure: one line for a database that is unreachable or full
    (its cause is known and it repeats while that lasts), the traceback for anything else."""
    if db_outage.is_passing(error):
        db_outage.note(error, f"{what} (database unavailable)")
    else:
        logging.getLogger("fillpdf.service").exception(what)


async def heartbeat_forever(service: Service) -> None:
    """Tell the other servers this one is alive, every ``recovery.HEARTBEAT_S``; then settle
    what a database outage left owed, without waiting for the sweeper."""
    while True:
        await asyncio.sleep(recovery.HEARTBEAT_S)
        try:
            await anyio.to_thread.run_sync(recovery.heartbeat, service.db, service.instance)
            if db_outage.owed(service.db):
                await anyio.to_thread.run_sync(lambda: _recover(service, scan_files=False))
        except Exception as error:
            _failed("heartbeat failed; retrying", error)


async def give_back_leases_forever(service: Service) -> None:
    """Give back what rate leases left unused, so other processes can answer those
    requests (ratelimit.py)."""
    while True:
        await asyncio.sleep(ratelimit.LEASE_S / 2)
        try:
            await anyio.to_thread.run_sync(service.rates.give_back_expired, service.db)
        except Exception as error:
            _failed("rate leases: retrying", error)


async def sweep_forever(service: Service) -> None:
    """Sweep every ``sweep_interval_s``; a failed sweep is logged and tried again."""
    while True:
        try:
            await _sweep(service)
        except Exception as error:
            _failed("sweeper failed; retrying", error)
        await asyncio.sleep(service.settings.sweep_interval_s)


async def _sweep(service: Service) -> None:
    """Delete expired conversions and old rate windows, and recover from dead servers."""
    settings = service.settings
    now = service.now()
    swept = await anyio.to_thread.run_sync(
        conversions.sweep,
        service.db,
        settings.files_dir,
        now,
        settings.retention_seconds,
    )
    await anyio.to_thread.run_sync(ratelimit.forget_before, service.db, now)
    if swept:
        log(logging.INFO, "swept expired conversions", count=swept)
    await anyio.to_thread.run_sync(lambda: _recover(service, scan_files=False))
