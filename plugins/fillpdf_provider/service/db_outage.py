"""A database the service cannot use for now: answered 503, and the clean-up it refused owed.

A restart of PostgreSQL (or a SQLite file locked past its timeout) shows up as a driver
error wherever a request touches the database. Every such error is answered
``service_unavailable`` with ``Retry-After``, never a 500; a database whose disk is full is
answered the same way with ``disk_full``'s message. What a failed request could not undo
then (pages it had reserved, an idempotency claim it held, or might have taken when the
connection dropped) is *owed*: kept in this process's memory and settled by the next
recovery pass once the database takes writes again (``recovery.recover``), so no quota
stays taken and no Idempotency-Key stays locked while this server lives. A server that dies
owing it leaves rows the other servers' recovery already clears (its instance is dead).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from weakref import WeakKeyDictionary

import psycopg
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine

from fillpdf_provider.service import disk_full
from fillpdf_provider.service.errors import ApiError
from fillpdf_provider.service.logs import log

#: Seconds a client is told to wait: a restarting PostgreSQL is usually back within them.
RETRY_AFTER_S = 5

#: The driver's own errors, where one escapes without SQLAlchemy's wrapping.
DRIVER_ERRORS: tuple[type[Exception], ...] = (psycopg.OperationalError, psycopg.InterfaceError)
_UNREACHABLE = (
    sa_exc.OperationalError,  # refused, dropped, shutting down, starting up; SQLite locked
    sa_exc.InterfaceError,  # a connection the driver already closed
    sa_exc.TimeoutError,  # no pooled connection came free within the pool's timeout
    *DRIVER_ERRORS,
)


def is_unreachable(error: BaseException) -> bool:
    """Whether ``error`` says the database could not be reached or dropped the connection
    (a full disk is told apart: ``disk_full``)."""
    if disk_full.is_disk_full(error):
        return False
    if isinstance(error, _UNREACHABLE):
        return True
    return isinstance(error, sa_exc.DBAPIError) and bool(error.connection_invalidated)


def is_passing(error: BaseException) -> bool:
    """Whether the database refused for a while only (unreachable, or its disk full): what
    it refused is owed, to be done when it takes writes again."""
    return is_unreachable(error) or disk_full.is_disk_full(error)


def engine_of(app: object) -> Engine | None:
    """The database engine of the service ``create_app`` put on ``app``, if it has one."""
    engine = getattr(getattr(getattr(app, "state", None), "service", None), "db", None)
    return engine if isinstance(engine, Engine) else None


def answer_to(error: BaseException, engine: Engine | None) -> ApiError | None:
    """The 503 for a database error that passes (``engine`` names a full database in the
    operator's log line), or ``None`` for any other error: a bug."""
    if disk_full.is_disk_full(error):
        if engine is None:
            return disk_full.out_of_space("the database")
        url = engine.url
        where = url.database if url.get_backend_name() == "sqlite" else url.render_as_string()
        return disk_full.out_of_space(where or "the database")
    if is_unreachable(error):
        return unavailable()
    return None


def unavailable() -> ApiError:
    """The answer to a request that met an unreachable database."""
    return ApiError(
        "service_unavailable",
        "The service's database is unreachable (restarting or down); send the request "
        f"again after {RETRY_AFTER_S} s. With the same Idempotency-Key a retry is never "
        "billed twice.",
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )


def note(error: BaseException, what: str, **fields: object) -> None:
    """One log line for a database that refused for a while: the cause is known, and it
    repeats while it lasts, so no traceback."""
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
    log(logging.WARNING, what, error=f"{type(error).__name__}: {first_line}", **fields)


@dataclass(frozen=True)
class Claim:
    """An idempotency claim as one request took it: only that claim is released later,
    never a newer one a retry has taken since."""

    account_id: str
    key: str
    claimed_at: float
    owner: str


@dataclass
class Owed:
    """What this process could not undo while the database refused it."""

    reservations: set[str] = field(default_factory=set)  # conversion ids
    claims: set[Claim] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.reservations or self.claims)


_lock = threading.Lock()
_owed: WeakKeyDictionary[Engine, Owed] = WeakKeyDictionary()


def owe_reservation(engine: Engine, conversion_id: str) -> None:
    """Give back the pages of ``conversion_id`` (if still reserved) at the next recovery."""
    with _lock:
        _owed.setdefault(engine, Owed()).reservations.add(conversion_id)


def owe_claim(engine: Engine, claim: Claim) -> None:
    """Release ``claim`` (if still unfinished) at the next recovery."""
    with _lock:
        _owed.setdefault(engine, Owed()).claims.add(claim)


def owed(engine: Engine) -> Owed:
    """A copy of what is owed on ``engine``; ``settled`` removes what was done."""
    with _lock:
        current = _owed.get(engine) or Owed()
        return Owed(set(current.reservations), set(current.claims))


def settled(engine: Engine, done: Owed) -> None:
    """Forget what a recovery pass has done (what was owed since stays owed)."""
    with _lock:
        current = _owed.get(engine)
        if current is not None:
            current.reservations -= done.reservations
            current.claims -= done.claims
