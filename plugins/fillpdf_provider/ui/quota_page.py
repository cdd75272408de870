"""The "FillPDF quota" page: usage per connection for ops teams, HTML for people and JSON
for scripts at the same route, behind Airflow's own authentication."""

from __future__ import annotations

import html
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.concurrency import run_in_threadpool

from fillpdf_provider.ui.quota_data import quota_overview


def _authorized() -> Any:
    """Only users who may read connections may see accounts and usage."""
    from airflow.api_fastapi.core_api.security import requires_access_connection

    return Depends(requires_access_connection("GET"))


def create_quota_app() -> FastAPI:
    app = FastAPI(title="FillPDF quota", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/quota", dependencies=[_authorized()])
    async def quota(request: Request, format: str | None = None) -> Any:
        overview = await run_in_threadpool(quota_overview)
        wants_json = format == "json" or "application/json" in request.headers.get("accept", "")
        if wants_json:
            return JSONResponse(overview)
        return HTMLResponse(render(overview))

    return app


def _number(value: Any, suffix: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.2f}{suffix}"
    return f"{value:,}{suffix}"


def _usd(value: Any) -> str:
    return "—" if value is None else f"${value:,.2f}"


def _card(row: dict[str, Any]) -> str:
    e = html.escape
    conn_id = e(str(row["conn_id"]))
    if row.get("error"):
        return (
            f'<section class="card" data-conn="{conn_id}"><h2>{conn_id}</h2>'
            f'<p class="error">{e(row["error"])}</p></section>'
        )
    used, included = row["pages_used"], row["pages_included"]
    share = min(100.0, 100.0 * used / included) if included else 0.0
    bar_class = "bar over" if included is not None and used >= included else "bar"
    bar = (
        f'<div class="{bar_class}" role="progressbar" aria-valuenow="{used}" '
        f'aria-valuemax="{included}"><span style="width:{share:.1f}%"></span></div>'
        if included is not None
        else '<p class="muted">No page quota (embedded engine)</p>'
    )
    facts = [
        ("Plan", row["plan"]),
        ("Pages used", f"{_number(used)} of {_number(included)}"),
        ("Remaining", _number(row["pages_remaining"])),
        ("Projected at month end", _number(row["projected_pages"])),
        (
            "Overage so far",
            f"{_number(row['overage_pages'])} pages, {_usd(row['overage_cost_usd'])}",
        ),
        ("Projected overage cost", _usd(row["projected_overage_usd"])),
        ("Resets", row["resets_at"] or "—"),
        ("Rate limit", _number(row["rate_limit_per_minute"], " / min")),
        ("Service", row["base_url"] or "embedded engine"),
    ]
    items = "".join(
        f'<dt>{e(k)}</dt><dd data-field="{e(k.lower().replace(" ", "_"))}">{e(str(v))}</dd>'
        for k, v in facts
    )
    return (
        f'<section class="card" data-conn="{conn_id}"><h2>{conn_id}</h2>{bar}'
        f"<dl>{items}</dl></section>"
    )


def render(overview: dict[str, Any]) -> str:
    e = html.escape
    cards = "".join(_card(row) for row in overview["connections"])
    runs = (
        "".join(
            f"<tr><td>{e(r['at'])}</td><td>{e(r['dag_id'])}</td><td>{e(r['run_id'])}</td>"
            f"<td>{e(str(r['conn_id']))}</td><td class=num>{_number(r['pages'])}</td></tr>"
            for r in overview["recent_runs"]
        )
        or '<tr><td colspan="5" class="muted">No conversion runs yet.</td></tr>'
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>FillPDF quota</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; color: #1f2933; }}
.cards {{ display: flex; flex-wrap: wrap; gap: 1rem; }}
.card {{ border: 1px solid #d9e2ec; border-radius: 8px; padding: 1rem 1.25rem; min-width: 22rem; }}
.bar {{ background: #e4e7eb; border-radius: 4px; height: 14px; overflow: hidden; }}
.bar span {{ display: block; height: 100%; background: #2680c2; }}
.bar.over span {{ background: #d64545; }}
dl {{ display: grid; grid-template-columns: auto 1fr; gap: .25rem 1rem; }}
dt {{ color: #52606d; }} dd {{ margin: 0; font-variant-numeric: tabular-nums; }}
table {{ border-collapse: collapse; margin-top: .5rem; }}
td, th {{ border-bottom: 1px solid #e4e7eb; padding: .3rem .75rem; text-align: left; }}
.num {{ text-align: right; }} .muted {{ color: #7b8794; }} .error {{ color: #d64545; }}
</style></head>
<body><h1>FillPDF quota</h1>
<p class="muted">As of {e(overview["generated_at"])} ·
JSON: <a href="?format=json">?format=json</a></p>
<div class="cards">{cards}</div>
<h2>Recent conversion runs</h2>
<table><thead><tr><th>When</th><th>DAG</th><th>Run</th><th>Connection</th>
<th class=num>Pages billed</th></tr></thead>
<tbody>{runs}</tbody></table>
</body></html>"""
