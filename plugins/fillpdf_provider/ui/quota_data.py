"""What the quota page shows: every fillpdf connection's account, and recent billed runs."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import time
from typing import Any

from fillpdf_provider.account import (
    Account,
    projected_month_pages,
    projected_overage_usd,
    runs_out_at,
)
from fillpdf_provider.client import FillPdfApiError, RetryPolicy
from fillpdf_provider.embedded import EmbeddedFillPdf, default_store
from fillpdf_provider.hooks.fillpdf import FillPdfHook, backend_for, connection_settings

RECENT_RUNS = 20


def fillpdf_connections() -> list[Any]:
    """Connections of type ``fillpdf``: from the metadata database and from the environment."""
    from airflow.models.connection import Connection
    from airflow.utils.session import create_session
    from sqlalchemy import select

    found: dict[str, Any] = {}
    with create_session() as session:
        for conn in session.scalars(select(Connection).where(Connection.conn_type == "fillpdf")):
            session.expunge(conn)
            found[conn.conn_id] = conn
    for name, value in os.environ.items():
        if not name.startswith("AIRFLOW_CONN_"):
            continue
        conn_id = name[len("AIRFLOW_CONN_") :].lower()
        try:
            if value.lstrip().startswith("{"):
                conn = Connection.from_json(value, conn_id=conn_id)
            else:
                conn = Connection(conn_id=conn_id, uri=value)
        except (ValueError, TypeError):
            continue
        if conn.conn_type == "fillpdf":
            found.setdefault(conn_id, conn)
    return [found[k] for k in sorted(found)]


def account_row(conn_id: str, conn: Any, now: float) -> dict[str, Any]:
    """One connection's plan and usage, or why they could not be read."""
    row: dict[str, Any] = {"conn_id": conn_id, "configured": True}
    try:
        settings = connection_settings(conn, conn_id)
        row["mode"] = settings["mode"]
        row["base_url"] = settings.get("base_url") or None
        if settings["mode"] == "embedded":
            row["conversions_kept_in"] = str(settings.get("conversions_uri") or default_store())
        retry = RetryPolicy(max_retries=1, max_rate_limit_wait_s=0)
        with contextlib.closing(backend_for(settings, timeout=10, retry=retry)) as backend:
            account = backend.get_account()
            billed = backend.has_quota
            if isinstance(backend, EmbeddedFillPdf):
                row["conversions"] = backend.recent_conversions()
    except (FillPdfApiError, ValueError) as exc:
        row["error"] = str(exc)
        return row
    row.update(account_fields(account, now, billed=billed))
    return row


def unconfigured_row(conn_id: str) -> dict[str, Any]:
    """The default connection when it does not exist: nothing to read, and tasks that name no
    connection run the embedded engine in their worker (usage on a worker's disk is not this
    server's to count)."""
    return {
        "conn_id": conn_id,
        "configured": False,
        "mode": "embedded",
        "base_url": None,
        "error": None,
    }


def account_fields(account: Account, now: float, *, billed: bool) -> dict[str, Any]:
    """What the page shows of an account. ``billed`` is False for the embedded engine: its
    ``pages_used`` are pages converted locally, which no plan counts and no run bills."""
    return {
        "billed": billed,
        "plan": account.plan,
        "pages_used": account.pages_used,
        "pages_included": account.pages_included,
        "pages_remaining": account.pages_remaining,
        "overage_pages": account.overage_pages,
        "overage_rate_usd": account.overage_rate_usd,
        "overage_cost_usd": account.overage_cost_usd,
        "projected_pages": projected_month_pages(account, now),
        "quota_runs_out_at": quota_runs_out_at(account, now),
        "projected_overage_usd": projected_overage_usd(account, now),
        "period_start": account.period_start,
        "resets_at": account.period_end,
        "rate_limit_per_minute": account.rate_limit_per_minute,
        "hard_stop": account.hard_stop,
        "error": None,
    }


def quota_runs_out_at(account: Account, now: float) -> str | None:
    """On a hard-stop plan: when the quota runs out at this period's rate so far (now, if it
    already has), or None if it lasts to the period's end. None on plans without a hard stop."""
    moment = runs_out_at(account, now)
    return None if moment is None else _iso(moment)


def _iso(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def recent_runs(limit: int = RECENT_RUNS) -> list[dict[str, Any]]:
    """The latest billed conversion runs with the pages they billed (ConvertOperator records
    them for connections to a service; runs on the embedded engine bill nothing)."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from fillpdf_provider.operators.convert import BILLING_XCOM_KEY

    runs = []
    with create_session() as session:
        query = (
            select(
                XComModel.dag_id,
                XComModel.run_id,
                XComModel.task_id,
                XComModel.value,
                XComModel.timestamp,
            )
            .where(XComModel.key == BILLING_XCOM_KEY)
            .order_by(XComModel.timestamp.desc())
            .limit(limit)
        )
        for dag_id, run_id, task_id, value, timestamp in session.execute(query):
            data = json.loads(value) if isinstance(value, str) else value or {}
            runs.append(
                {
                    "dag_id": dag_id,
                    "run_id": run_id,
                    "task_id": task_id,
                    "conn_id": data.get("conn_id"),
                    "pages": data.get("pages"),
                    "at": timestamp.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            )
    return runs


def quota_overview(now: float | None = None) -> dict[str, Any]:
    """Everything the page shows, as JSON for scripts."""
    current = time.time() if now is None else now
    connections = {conn.conn_id: conn for conn in fillpdf_connections()}
    default = FillPdfHook.default_conn_name
    rows = [account_row(conn_id, conn, current) for conn_id, conn in connections.items()]
    if default not in connections:
        rows.append(unconfigured_row(default))
    return {
        "generated_at": _iso(current),
        "connections": rows,
        "recent_runs": recent_runs(),
    }
