"""What a server that died leaves behind, found and cleared by the servers still up.

Each server process registers an *instance* and writes a heartbeat. Work in progress names
its instance: page reservations, idempotency claims, uploads (in their file names). An
instance is dead when it is on this host and its process is gone (checked by pid and
process start time, so a reused pid is not mistaken for it), or when its heartbeat is older
than ``STALE_S`` (another host; heartbeats are written and judged on the database's clock,
which every host shares). The recovery pass, run at start and by the sweeper, gives back
the pages of dead instances' reservations, frees their idempotency claims, and deletes
files no conversion owns: conversions that were never recorded, half-written temporary
files, uploads. It also settles what this process owes from a database outage (pages and
claims its requests could not give back: ``db_outage``). It logs what it did.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Engine

from fillpdf_provider.service import billing, db_outage, idempotent
from fillpdf_provider.service.db import (
    conversions,
    database_now,
    idempotency,
    instances,
    reservations,
)
from fillpdf_provider.service.logs import log

HEARTBEAT_S = 5.0
STALE_S = 30.0
_CONVERSION_FILE = re.compile(r"\.?(conv_[0-9a-f]{24})\.pdf(\..*\.tmp)?")
_UPLOAD_FILE = re.compile(r"upload-(srv_[0-9a-f]{16})-.*")
_ID_BATCH = 500


@dataclass(frozen=True)
class Instance:
    """This server process, as the other ones see it."""

    id: str
    host: str
    pid: int
    process_start: str | None

    @classmethod
    def of_this_process(cls) -> Instance:
        pid = os.getpid()
        return cls("srv_" + secrets.token_hex(8), socket.gethostname(), pid, process_start_of(pid))

    def upload_prefix(self) -> str:
        return f"upload-{self.id}-"


@dataclass
class Recovered:
    """What one recovery pass cleared."""

    dead_instances: list[str] = field(default_factory=list)
    reservations: list[str] = field(default_factory=list)
    claims: int = 0
    files: list[str] = field(default_factory=list)
    uploads: list[str] = field(default_factory=list)

    def log(self, message: str) -> None:
        log(
            logging.WARNING,
            message,
            dead_instances=self.dead_instances,
            released_reservations=self.reservations,
            freed_claims=self.claims,
            deleted_files=self.files,
            deleted_uploads=self.uploads,
        )

    def __bool__(self) -> bool:
        return bool(
            self.dead_instances or self.reservations or self.claims or self.files or self.uploads
        )


def process_start_of(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), to tell pids apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _alive_here(pid: int, process_start: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # a process of another user holds the pid: not ours, unless start times match
    return process_start is None or process_start_of(pid) == process_start


def register(engine: Engine, me: Instance) -> None:
    with engine.begin() as conn:
        conn.execute(
            instances.insert().values(
                id=me.id,
                host=me.host,
                pid=me.pid,
                process_start=me.process_start,
                started_at=time.time(),
                heartbeat_at=database_now(engine),
            )
        )


def heartbeat(engine: Engine, me: Instance) -> None:
    """Say this instance is up; register again if another host took it for dead."""
    with engine.begin() as conn:
        found = conn.execute(
            update(instances)
            .where(instances.c.id == me.id)
            .values(heartbeat_at=database_now(engine))
        ).rowcount
    if not found:
        log(logging.WARNING, "this server was taken for dead; registering again", id=me.id)
        register(engine, me)


def unregister(engine: Engine, me: Instance, files_dir: Path, uploads_dir: Path) -> Recovered:
    """A stop: give back what this instance still holds, delete its files, then leave.

    Requests cancelled at the end of the grace period may never run their own clean-up
    (the event loop stops first), so this does it for them.
    """
    report = _clear(engine, {me.id})
    with engine.begin() as conn:
        conn.execute(delete(instances).where(instances.c.id == me.id))
    if report.reservations:
        report.files = _orphan_files(engine, files_dir)
    for path in uploads_dir.glob(f"{me.upload_prefix()}*"):
        path.unlink(missing_ok=True)
        report.uploads.append(path.name)
    return report


def dead_instances(engine: Engine, me: Instance) -> set[str]:
    """Other instances that are gone: on this host by the process table, elsewhere by a
    heartbeat older than ``STALE_S`` on the database's clock (hosts' own clocks differ)."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(instances, database_now(engine).label("now")).where(instances.c.id != me.id)
        ).all()
    dead = set()
    for row in rows:
        here = row.host == me.host
        if (here and not _alive_here(row.pid, row.process_start)) or (
            not here and row.heartbeat_at < row.now - STALE_S
        ):
            dead.add(row.id)
    return dead


def owner_alive(engine: Engine, owner: str | None, me: Instance) -> bool:
    """Whether the instance ``owner`` is up (a claim with no owner counts as dead)."""
    if owner is None:
        return False
    if owner == me.id:
        return True
    with engine.connect() as conn:
        row = conn.execute(
            select(instances, database_now(engine).label("now")).where(instances.c.id == owner)
        ).first()
    if row is None:
        return False
    if row.host == me.host:
        return _alive_here(row.pid, row.process_start)
    return bool(row.heartbeat_at >= row.now - STALE_S)


def _clear(engine: Engine, owners: set[str]) -> Recovered:
    report = Recovered()
    report.reservations = billing.release_owned_by(engine, owners)
    with engine.begin() as conn:
        report.claims = conn.execute(
            delete(idempotency).where(
                idempotency.c.done.is_(False), idempotency.c.owner.in_(owners)
            )
        ).rowcount
    return report


def recover(
    engine: Engine, me: Instance, files_dir: Path, uploads_dir: Path, *, scan_files: bool
) -> Recovered:
    """Clear what dead instances left; with ``scan_files``, also files nothing owns."""
    dead = dead_instances(engine, me)
    report = _clear(engine, dead)
    report.dead_instances = sorted(dead)
    _settle_owed(engine, report)
    with engine.begin() as conn:
        if dead:
            conn.execute(delete(instances).where(instances.c.id.in_(dead)))
        live = select(instances.c.id)  # one statement each: a server registering now is seen
        report.claims += conn.execute(  # claims from before owners were recorded, or lost
            delete(idempotency).where(
                idempotency.c.done.is_(False),
                idempotency.c.owner.is_(None)
                | ((idempotency.c.owner != me.id) & idempotency.c.owner.not_in(live)),
            )
        ).rowcount
    # reservations whose server left no row (stopped or taken for dead mid-request)
    report.reservations += billing.release_owned_by_none_of(engine, live, me.id)
    if scan_files or report:
        report.files = _orphan_files(engine, files_dir)
        report.uploads = _orphan_uploads(engine, uploads_dir, me)
    if report:
        report.log("recovered after a server stopped mid-work")
    return report


def _settle_owed(engine: Engine, report: Recovered) -> None:
    """Give back the pages and release the claims this process's requests could not while
    the database was unreachable. Each step is a no-op if done already, so a pass that
    fails half-way is simply done again by the next one."""
    owed = db_outage.owed(engine)
    if not owed:
        return
    released = billing.release_each(engine, sorted(owed.reservations))
    claims = sum(idempotent.release_exactly(engine, claim) for claim in owed.claims)
    db_outage.settled(engine, owed)
    log(
        logging.WARNING,
        "the database takes writes again; gave back what requests left while it could not",
        released_reservations=released,
        freed_claims=claims,
    )
    report.reservations += released
    report.claims += claims


def _orphan_files(engine: Engine, files_dir: Path) -> list[str]:
    """Delete files of conversions that were never recorded and hold no reservation.

    A temporary file is kept only while its conversion is reserved (being written); a
    final one also while its conversion is recorded. Reservations are read before
    conversions: a commit moves an id from the first to the second in one transaction, so
    reading in this order never misses a live one.
    """
    found: dict[str, list[Path]] = {}
    for path in files_dir.iterdir():
        match = _CONVERSION_FILE.fullmatch(path.name)
        if match:
            found.setdefault(match.group(1), []).append(path)
    ids = list(found)
    reserved = _existing(engine, reservations.c.conversion_id, ids)
    recorded = _existing(engine, conversions.c.id, ids)
    deleted = []
    for conversion_id, paths in found.items():
        for path in paths:
            keep = reserved if path.name.endswith(".tmp") else reserved | recorded
            if conversion_id not in keep:
                path.unlink(missing_ok=True)
                deleted.append(path.name)
    return deleted


def _existing(engine: Engine, column: Any, ids: list[str]) -> set[str]:
    """Which of ``ids`` are in ``column``, asked in batches."""
    present: set[str] = set()
    with engine.connect() as conn:
        for start in range(0, len(ids), _ID_BATCH):
            batch = ids[start : start + _ID_BATCH]
            present.update(conn.execute(select(column).where(column.in_(batch))).scalars())
    return present


def _orphan_uploads(engine: Engine, uploads_dir: Path, me: Instance) -> list[str]:
    """Delete uploads whose server is gone (listed first, so a new server is seen as live)."""
    names = [path.name for path in uploads_dir.iterdir()]
    with engine.connect() as conn:
        live = {row.id for row in conn.execute(select(instances.c.id))} | {me.id}
    deleted = []
    for name in names:
        match = _UPLOAD_FILE.fullmatch(name)
        if match is None or match.group(1) not in live:
            (uploads_dir / name).unlink(missing_ok=True)
            deleted.append(name)
    return deleted
