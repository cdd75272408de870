"""The "FillPDF quota" page: usage per connection for ops teams, HTML for people and JSON
for scripts at the same route, behind Airflow's own authentication."""

from __future__ import annotations

import html
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from fillpdf_provider.review.app import SECURITY_HEADERS
from fillpdf_provider.ui.quota_data import quota_overview
from fillpdf_provider.ui.review_page import REVIEW_ROOT, review_path, review_router


def _authorized() -> Any:
    """Only users who may read connections may see accounts and usage."""
    from airflow.api_fastapi.core_api.security import requires_access_connection

    return Depends(requires_access_connection("GET"))


def _wants_json(request: Request) -> bool:
    return request.query_params.get("format") == "json" or "application/json" in (
        request.headers.get("accept", "")
    )


def _is_browser(request: Request) -> bool:
    return not _wants_json(request) and "text/html" in request.headers.get("accept", "")


def _login_url(request: Request) -> str:
    """The auth manager's sign-in page, coming back to this page afterwards."""
    from airflow.api_fastapi.app import get_auth_manager

    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return get_auth_manager().get_url_login(next_url=here)


def how_to_authenticate(request: Request) -> str:
    """What a caller without credentials can do: Airflow's bare "Not authenticated" leaves
    a script's author to find Airflow's token endpoint, and a person the password."""
    from airflow.api_fastapi.app import AUTH_MANAGER_FASTAPI_APP_PREFIX

    token_url = f"{AUTH_MANAGER_FASTAPI_APP_PREFIX}/token"
    return (
        f"Sign in to Airflow in a browser ({_login_url(request)}) and open this page, or get "
        f'a token: POST {token_url} with the JSON {{"username": "...", "password": "..."}} '
        'answers {"access_token": "..."}; send it as the header '
        '"Authorization: Bearer <access_token>". The user needs permission to read '
        f"connections.{_password_hint()}"
    )


def _password_hint() -> str:
    """Where Airflow's simple auth manager (Airflow 3's default) keeps the passwords it made;
    other auth managers keep their users elsewhere."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

    if not isinstance(get_auth_manager(), SimpleAuthManager):
        return ""
    return (
        " With Airflow's simple auth manager the users are [core] simple_auth_manager_users "
        "(by default admin); airflow api-server prints the password it makes for each "
        "(\"Password for user 'admin': ...\") and keeps them in the file named by [core] "
        "simple_auth_manager_passwords_file (by default "
        "$AIRFLOW_HOME/simple_auth_manager_passwords.json.generated)."
    )


def create_quota_app() -> FastAPI:
    app = FastAPI(title="FillPDF quota", docs_url=None, redoc_url=None, openapi_url=None)

    @app.exception_handler(StarletteHTTPException)
    async def refused(request: Request, exc: StarletteHTTPException) -> Response:
        """Scripts get Airflow's JSON refusal, a 401 with how to authenticate; a person in a
        browser gets the sign-in page (no login yet, or it expired) or a page saying what is
        missing (signed in, not allowed)."""
        if not _is_browser(request):
            if exc.status_code != 401:
                return await http_exception_handler(request, exc)
            detail = f"{str(exc.detail).rstrip('.')}. {how_to_authenticate(request)}"
            return JSONResponse({"detail": detail}, status_code=401, headers=exc.headers)
        if exc.status_code == 401:
            return RedirectResponse(_login_url(request), status_code=303)
        if exc.status_code == 403:
            return HTMLResponse(_forbidden_page(_login_url(request)), status_code=403)
        return await http_exception_handler(request, exc)

    @app.middleware("http")
    async def secured_review(request: Request, call_next: Any) -> Response:
        """The review editor's answers carry its security headers, refusals (401, 403, 404,
        405, 422) as well as its pages."""
        response: Response = await call_next(request)
        path = request.url.path.removeprefix(request.scope.get("root_path", ""))
        if path.startswith(REVIEW_ROOT):
            for name, value in SECURITY_HEADERS.items():
                response.headers.setdefault(name, value)
        return response

    app.include_router(review_router(_authorized()))

    @app.get("/quota", dependencies=[_authorized()])
    async def quota(request: Request) -> Any:
        overview = await run_in_threadpool(quota_overview)
        if _wants_json(request):
            return JSONResponse(overview)
        return HTMLResponse(render(overview))

    return app


def _forbidden_page(login_url: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        "<title>FillPDF quota</title></head>"
        '<body style="font-family: system-ui, sans-serif; margin: 2rem">'
        "<h1>FillPDF quota</h1><p>This page shows the FillPDF accounts behind Airflow's "
        "connections, so it needs permission to read connections, which this user lacks.</p>"
        f'<p><a href="{html.escape(login_url)}">Sign in as another user</a></p></body></html>'
    )


def _number(value: Any, suffix: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.2f}{suffix}"
    return f"{value:,}{suffix}"


def _usd(value: Any) -> str:
    return "—" if value is None else f"${value:,.2f}"


def _day(iso: str | None, with_time: bool = False) -> str:
    """``2025-06-21T14:03:00Z`` as ``2025-06-21`` (or ``2025-06-21 14:03 UTC``)."""
    if not iso:
        return "—"
    return f"{iso[:10]} {iso[11:16]} UTC" if with_time else iso[:10]


def _projection(row: dict[str, Any]) -> str:
    """The month-end projection; a hard-stop plan never goes past its quota, so there it says
    when the quota runs out at this rate and that conversions are refused until the reset."""
    included = row["pages_included"]
    if not row.get("hard_stop") or included is None:
        return _number(row["projected_pages"])
    reset = _day(row["resets_at"], with_time=True)
    if row["pages_used"] >= included:
        return f"The quota is used up; conversions are refused until {reset}."
    if row.get("quota_runs_out_at"):
        return (
            f"At this rate the quota runs out on {_day(row['quota_runs_out_at'])}; after that, "
            f"conversions are refused until {reset}."
        )
    return f"{_number(row['projected_pages'])} of {included:,}"


def _card(row: dict[str, Any]) -> str:
    e = html.escape
    conn_id = e(str(row["conn_id"]))
    if row.get("error"):
        return (
            f'<section class="card" data-conn="{conn_id}"><h2>{conn_id}</h2>'
            f'<p class="error">{e(row["error"])}</p></section>'
        )
    if not row["configured"]:
        return _unconfigured_card(row)
    if not row["billed"]:
        return _embedded_card(row)
    used, included = row["pages_used"], row["pages_included"]
    facts = [
        ("Plan", row["plan"]),
        ("Pages used", _number(used) if included is None else f"{_number(used)} of {included:,}"),
        ("Remaining", _number(row["pages_remaining"])),
        ("Projected at month end", _projection(row)),
        *_overage_facts(row),
        ("Resets", row["resets_at"] or "—"),
        ("Rate limit", _number(row["rate_limit_per_minute"], " / min")),
        ("Service", row["base_url"]),
    ]
    return (
        f'<section class="card" data-conn="{conn_id}"><h2>{conn_id}</h2>{_bar(used, included)}'
        f"<dl>{_facts(facts)}</dl></section>"
    )


def _facts(facts: list[tuple[str, str]]) -> str:
    e = html.escape
    return "".join(
        f'<dt>{e(k)}</dt><dd data-field="{e(k.lower().replace(" ", "_"))}">{e(str(v))}</dd>'
        for k, v in facts
    )


def _unconfigured_card(row: dict[str, Any]) -> str:
    """The default connection when it does not exist: what tasks do without it, and how to
    set it up; no numbers, since there is no account to read."""
    e = html.escape
    conn_id = str(row["conn_id"])
    return (
        f'<section class="card unconfigured" data-conn="{e(conn_id)}" data-configured="false">'
        f'<h2>{e(conn_id)} <span class="muted">(not configured)</span></h2>'
        f'<p class="note">No connection {e(conn_id)} is defined (in the metadata database '
        "or in this server's AIRFLOW_CONN_ variables), so tasks that name no connection run "
        "the embedded engine in their worker: no plan, no quota, nothing billed. To use a "
        f"FillPDF service, add a connection {e(conn_id)} of type FillPDF (Admin &gt; "
        "Connections) with the service's URL as its host and an API key as its "
        "password.</p></section>"
    )


def _embedded_card(row: dict[str, Any]) -> str:
    """A connection to the embedded engine: pages it converted, which no plan counts and no
    run bills (so they are not among the billed runs below)."""
    e = html.escape
    conn_id = e(str(row["conn_id"]))
    facts = [
        ("Plan", "embedded: no plan, no quota, nothing billed"),
        ("Pages converted", f"{_pages(row['pages_used'])} (not billed)"),
        ("Conversions kept in", row.get("conversions_kept_in") or "—"),
        ("Service", "embedded engine"),
    ]
    return (
        f'<section class="card" data-conn="{conn_id}"><h2>{conn_id}</h2>'
        '<p class="muted">Pages converted: those of the conversions in its store made this '
        f"month (a conversion is kept 24 hours).</p><dl>{_facts(facts)}</dl>"
        f"{_conversions(str(row['conn_id']), row.get('conversions') or [])}</section>"
    )


def _conversions(conn_id: str, conversions: list[dict[str, Any]]) -> str:
    """The store's latest conversions, each with a link to review its fields."""
    if not conversions:
        return ""
    e = html.escape
    items = "".join(
        f'<li data-conversion="{e(c["conversion_id"])}"><code>{e(c["conversion_id"])}</code> '
        f"{_pages(c['pages'])}, {c['fields']:,} fields, {_day(_iso(c['created_at']), True)} "
        f'<a href="{e(review_path(conn_id, c["conversion_id"]).lstrip("/"))}" data-review>'
        "Review</a></li>"
        for c in conversions
    )
    return f'<h3>Conversions</h3><ul class="conversions">{items}</ul>'


def _iso(epoch: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pages(count: int) -> str:
    return f"{count:,} page" if count == 1 else f"{count:,} pages"


def _bar(used: int, included: int | None) -> str:
    """The share of the quota used, red once it is all used; a note where there is none."""
    if included is None:
        return '<p class="muted">No page quota on this plan</p>'
    share = min(100.0, 100.0 * used / included) if included else 0.0
    bar_class = "bar over" if used >= included else "bar"
    return (
        f'<div class="{bar_class}" role="progressbar" aria-valuenow="{used}" '
        f'aria-valuemax="{included}"><span style="width:{share:.1f}%"></span></div>'
    )


def _overage_facts(row: dict[str, Any]) -> list[tuple[str, str]]:
    """The overage so far and the projected one, in words where a plan has none: without a
    quota there is nothing to go over, a hard-stop plan refuses pages instead, and a plan
    without an overage rate has no price for them."""
    if row["pages_included"] is None:
        none = "none: the plan has no page quota"
        return [("Overage so far", none), ("Projected overage cost", none)]
    if row.get("hard_stop"):
        none = "none: the plan stops at its quota"
        return [("Overage so far", none), ("Projected overage cost", none)]
    pages = _pages(row["overage_pages"] or 0)
    if row["overage_rate_usd"] is None:
        unpriced = "no overage rate on this plan"
        return [("Overage so far", f"{pages} ({unpriced})"), ("Projected overage cost", unpriced)]
    so_far = f"{pages}, {_usd(row['overage_cost_usd'] or 0.0)}"
    return [
        ("Overage so far", so_far),
        ("Projected overage cost", _usd(row["projected_overage_usd"])),
    ]


def render(overview: dict[str, Any]) -> str:
    e = html.escape
    cards = "".join(_card(row) for row in overview["connections"])
    runs = (
        "".join(
            f"<tr><td>{e(r['at'])}</td><td>{e(r['dag_id'])}</td><td>{e(r['run_id'])}</td>"
            f"<td>{e(str(r['conn_id']))}</td><td class=num>{_number(r['pages'])}</td></tr>"
            for r in overview["recent_runs"]
        )
        or '<tr><td colspan="5" class="muted">No billed conversion runs yet.</td></tr>'
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
<h2>Recent billed conversion runs</h2>
<p class="muted">The pages each ConvertOperator run billed on a FillPDF service. Conversions
on the embedded engine bill nothing and are not listed.</p>
<table><thead><tr><th>When</th><th>DAG</th><th>Run</th><th>Connection</th>
<th class=num>Pages billed</th></tr></thead>
<tbody>{runs}</tbody></table>
</body></html>"""
