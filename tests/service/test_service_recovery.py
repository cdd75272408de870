"""The recovery pass on a real database: what it takes for dead, and what it gives back."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.engine import Engine

from fillpdf_provider.service import billing, keys, recovery
from fillpdf_provider.service.db import create_schema, instances, make_engine, reservations, usage
from fillpdf_provider.service.plans import PLANS


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'fillpdf.db'}")
    create_schema(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    files, uploads = tmp_path / "files", tmp_path / "uploads"
    files.mkdir()
    uploads.mkdir()
    return files, uploads


def _caller(db: Engine) -> keys.Caller:
    account = keys.create_account(db, "pro", time.time())
    key_id = keys.create_key(db, account, time.time())[0]
    return keys.Caller(key_id=key_id, account_id=account, plan=PLANS["pro"])


def _used(db: Engine) -> int:
    with db.connect() as conn:
        return int(conn.execute(select(func.coalesce(func.sum(usage.c.pages_used), 0))).scalar())


def _stale(db: Engine, instance: recovery.Instance) -> None:
    with db.begin() as conn:
        conn.execute(
            update(instances).where(instances.c.id == instance.id).values(heartbeat_at=0.0)
        )


def test_a_live_process_on_this_host_is_not_dead_for_a_late_heartbeat(
    db: Engine, folders: tuple[Path, Path]
) -> None:
    """A server whose event loop stalled past the heartbeat limit keeps its work."""
    me = recovery.Instance.of_this_process()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        other = recovery.Instance(
            "srv_00000000000000aa", me.host, sleeper.pid, recovery.process_start_of(sleeper.pid)
        )
        recovery.register(db, other)
        _stale(db, other)
        caller = _caller(db)
        assert billing.reserve(db, caller, 5, time.time(), "conv_" + "a" * 24, other.id)
        report = recovery.recover(db, me, *folders, scan_files=True)
        assert report.reservations == [] and _used(db) == 5
        sleeper.kill()
        sleeper.wait()
        report = recovery.recover(db, me, *folders, scan_files=True)
        assert report.dead_instances == [other.id]
        assert report.reservations == ["conv_" + "a" * 24] and _used(db) == 0
    finally:
        sleeper.kill()


def test_a_reservation_whose_server_left_no_row_is_given_back(
    db: Engine, folders: tuple[Path, Path]
) -> None:
    """A reserve that committed after its server unregistered (cancelled at the grace end)."""
    me = recovery.Instance.of_this_process()
    recovery.register(db, me)
    caller = _caller(db)
    billing.reserve(db, caller, 7, time.time(), "conv_" + "b" * 24, "srv_00000000000000bb")
    billing.reserve(db, caller, 3, time.time(), "conv_" + "c" * 24, me.id)
    report = recovery.recover(db, me, *folders, scan_files=False)
    assert report.reservations == ["conv_" + "b" * 24]
    assert _used(db) == 3  # this server's own reservation is in progress: kept
    with db.connect() as conn:
        assert conn.execute(select(reservations.c.conversion_id)).scalars().all() == [
            "conv_" + "c" * 24
        ]


def test_a_server_taken_for_dead_registers_again_on_its_next_heartbeat(db: Engine) -> None:
    me = recovery.Instance.of_this_process()
    recovery.register(db, me)
    with db.begin() as conn:
        conn.execute(instances.delete().where(instances.c.id == me.id))
    recovery.heartbeat(db, me)
    with db.connect() as conn:
        assert conn.execute(select(instances.c.id)).scalars().all() == [me.id]


def test_the_idempotent_answer_is_recorded_with_the_conversion(db: Engine) -> None:
    """A crash between the commit and the answer can no longer make a retry bill again."""
    from fillpdf_provider.service import idempotent
    from fillpdf_provider.service.db import idempotency

    caller = _caller(db)
    with db.begin() as conn:
        conn.execute(
            idempotency.insert().values(
                account_id=caller.account_id, key="k", request_hash="h", created_at=0.0,
                done=False, owner="srv_x",
            )
        )  # fmt: skip
    conversion_id = "conv_" + "d" * 24
    reservation = billing.reserve(db, caller, 2, time.time(), conversion_id, "srv_x")
    assert reservation is not None
    answer = idempotent.Stored(200, "application/json", b'{"ok": true}', {})
    row = {
        "id": conversion_id, "account_id": caller.account_id, "key_id": caller.key_id,
        "created_at": 0.0, "expires_at": 1e12, "pages": 2, "overage_pages": 0,
        "detect": "fields", "result": {}, "deleted": False,
    }  # fmt: skip
    billing.commit(
        db,
        reservation,
        row,
        lambda conn: idempotent.finish_in(conn, caller.account_id, "k", answer),
    )
    idempotent.release(db, caller.account_id, "k")  # what a cancelled request does: no effect
    with db.connect() as conn:
        stored = conn.execute(select(idempotency)).one()
    assert stored.done and stored.body == b'{"ok": true}'


# --------------------------------------------------------------------------- skewed clocks


@pytest.fixture
def shared_db(database_url: str) -> Iterator[Engine]:
    """The database two hosts share (SQLite and PostgreSQL)."""
    engine = make_engine(database_url)
    create_schema(engine)
    with engine.begin() as conn:  # the module's database: each test starts with no servers
        conn.execute(instances.delete())
        conn.execute(reservations.delete())
    yield engine
    engine.dispose()


@contextmanager
def host_clock(skew: float) -> Iterator[None]:
    """This process's clock ``skew`` seconds off, as another host's may be."""
    real = time.time
    time.time = lambda: real() + skew  # type: ignore[assignment]
    try:
        yield
    finally:
        time.time = real  # type: ignore[assignment]


@pytest.mark.parametrize("skew", [-120.0, 120.0])
def test_a_live_server_on_a_host_whose_clock_is_off_is_not_taken_for_dead(
    shared_db: Engine, folders: tuple[Path, Path], skew: float
) -> None:
    """Heartbeats are written and judged on the database's clock, not each host's."""
    far = recovery.Instance("srv_00000000000000cc", "another-host", 4242, None)
    with host_clock(skew):  # the far host's clock is two minutes off
        recovery.register(shared_db, far)
        recovery.heartbeat(shared_db, far)
    me = recovery.Instance.of_this_process()
    recovery.register(shared_db, me)
    caller = _caller(shared_db)
    assert billing.reserve(shared_db, caller, 4, time.time(), "conv_" + "d" * 24, far.id)
    for clock in (0.0, -skew):  # this host judges on its own clock, right or off too
        with host_clock(clock):
            assert recovery.dead_instances(shared_db, me) == set()
            assert recovery.owner_alive(shared_db, far.id, me)
    assert recovery.recover(shared_db, me, *folders, scan_files=False).reservations == []
    # a heartbeat that really stopped is still found, whatever the clocks say
    _stale(shared_db, far)
    assert recovery.dead_instances(shared_db, me) == {far.id}
    assert not recovery.owner_alive(shared_db, far.id, me)
