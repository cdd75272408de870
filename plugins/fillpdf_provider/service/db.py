"""The service's tables (SQLAlchemy Core), on SQLite by default or PostgreSQL by URL.

Everything that several server processes must agree on lives here: keys, usage, rate-limit
counters, conversions and idempotent replies. Counters change in single conditional
statements (``UPDATE ... WHERE ... RETURNING``, ``INSERT ... ON CONFLICT``), so concurrent
requests can't both take the last pages or the last request of a minute.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    cast,
    create_engine,
    event,
    func,
    inspect,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.sql.elements import ColumnElement

#: Seconds to wait for PostgreSQL to accept a connection: one that is down or restarting
#: must fail a request quickly (503), never hang it.
CONNECT_TIMEOUT_S = 5
#: Seconds a request waits for a pooled connection before it is answered 503.
POOL_TIMEOUT_S = 10

metadata = MetaData()

accounts = Table(
    "accounts",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("plan", String(20), nullable=False),
    Column("created_at", Float, nullable=False),
    # Enterprise settings; null on the standard plans, whose limits are the plan table's.
    Column("pages_included", Integer),
    Column("overage_rate_usd", Float),
    Column("max_pages_per_file", Integer),
    Column("rate_limit_per_minute", Integer),
    Column("hard_stop", Boolean),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("account_id", String(40), ForeignKey("accounts.id"), nullable=False),
    Column("secret_hash", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("revoked_at", Float),
)

usage = Table(
    "usage",
    metadata,
    Column("account_id", String(40), primary_key=True),
    Column("period", String(7), primary_key=True),
    Column("pages_used", Integer, nullable=False, default=0),
)

rate_windows = Table(
    "rate_windows",
    metadata,
    Column("key_id", String(40), primary_key=True),
    Column("window_start", BigInteger, primary_key=True),
    Column("count", Integer, nullable=False),
)

conversions = Table(
    "conversions",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("account_id", String(40), nullable=False),
    Column("key_id", String(40), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    Column("pages", Integer, nullable=False),
    Column("overage_pages", Integer, nullable=False, default=0),
    Column("detect", String(20), nullable=False),
    Column("result", JSON),
    Column("deleted", Boolean, nullable=False, default=False),
    Index("ix_conversions_expires_at", "expires_at"),
)

idempotency = Table(
    "idempotency",
    metadata,
    Column("account_id", String(40), primary_key=True),
    Column("key", String(255), primary_key=True),
    Column("request_hash", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("done", Boolean, nullable=False, default=False),
    Column("status", Integer),
    Column("content_type", String(100)),
    Column("body", LargeBinary),
    Column("headers", Text),
    # The server instance working on a claim that is not done: a claim whose instance died
    # is released by the recovery pass, so a retry does the work instead of waiting.
    Column("owner", String(40)),
)

reservations = Table(
    "reservations",
    metadata,
    # Pages taken from the quota for a conversion in progress. The conversion row replaces
    # it in one transaction, or the pages go back; one left by a dead server is given back
    # by the recovery pass.
    Column("conversion_id", String(40), primary_key=True),
    Column("account_id", String(40), nullable=False),
    Column("period", String(7), nullable=False),
    Column("pages", Integer, nullable=False),
    Column("overage_pages", Integer, nullable=False),
    Column("owner", String(40), nullable=False),
    Column("created_at", Float, nullable=False),
)

instances = Table(
    "instances",
    metadata,
    # Server processes that are up: how the recovery pass tells a live owner from a dead one.
    Column("id", String(40), primary_key=True),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("process_start", String(40)),
    Column("started_at", Float, nullable=False),
    Column("heartbeat_at", Float, nullable=False),
)


def make_engine(url: str) -> Engine:
    """An engine for ``url`` with the settings concurrent server processes need."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 60, "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=60000")
            cursor.close()

        return engine
    connect_args = {"connect_timeout": CONNECT_TIMEOUT_S} if url.startswith("postgresql") else {}
    return create_engine(
        url,
        pool_pre_ping=True,  # a connection the database dropped (a restart) is replaced
        pool_size=10,
        max_overflow=20,
        pool_timeout=POOL_TIMEOUT_S,
        connect_args=connect_args,
    )


def create_schema(engine: Engine) -> None:
    """Create missing tables and columns; several processes may race here, which is harmless."""
    try:
        metadata.create_all(engine)
    except Exception:  # another worker created them between the check and the CREATE
        metadata.create_all(engine)
    _add_missing_columns(engine)


def _add_missing_columns(engine: Engine) -> None:
    """Columns added since a table was first created (databases of earlier releases)."""
    for table in metadata.sorted_tables:
        present = {column["name"] for column in inspect(engine).get_columns(table.name)}
        for column in table.columns:
            if column.name in present:
                continue
            kind = column.type.compile(dialect=engine.dialect)
            try:
                with engine.begin() as conn:
                    conn.execute(text(f"ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}"))
            except Exception:  # another process added it first
                if column.name not in {c["name"] for c in inspect(engine).get_columns(table.name)}:
                    raise


def upsert(engine: Engine, table: Table) -> postgresql.Insert | sqlite.Insert:
    """``INSERT`` in the dialect that knows ``ON CONFLICT`` (SQLite and PostgreSQL do)."""
    if engine.dialect.name == "postgresql":
        return postgresql.insert(table)
    if engine.dialect.name == "sqlite":
        return sqlite.insert(table)
    raise ValueError(
        f"Database {engine.dialect.name!r} is not supported; use SQLite or PostgreSQL."
    )


def database_now(engine: Engine) -> ColumnElement[float]:
    """The database's clock in seconds since the epoch, as a SQL expression.

    Hosts' clocks drift apart; heartbeats written and judged on the one clock every server
    shares can't make a live server look dead.
    """
    if engine.dialect.name == "postgresql":
        return cast(func.extract("epoch", func.clock_timestamp()), Float)
    return cast((func.julianday("now") - 2440587.5) * 86400.0, Float)
