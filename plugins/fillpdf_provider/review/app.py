"""The review editor over HTTP: one page, its script and style, the form's pictures, save.

Everything is served from the package: no external script, font or style, and a strict
Content-Security-Policy (no inline script, no other origin) on every answer, refusals
included. Who may read and save is up to the caller's dependencies: a per-run token for
``fillpdf review``, Airflow's sign-in in its UI. ``fillpdf review`` also answers only to its
own address (``Host``) and takes writes only from its own page (``Origin``), so a web page
in the same browser can't reach it through a name that resolves to 127.0.0.1.
"""

from __future__ import annotations

import hmac
import html
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from importlib import resources
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from fillpdf_provider.engine.errors import FillPdfError, SchemaError
from fillpdf_provider.review.session import ReviewSession, in_field_names

#: Largest save accepted: the service's limit for a schema.
MAX_SAVE_BYTES = 2 * 1024 * 1024
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # the token is in the page's address
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}
_STATIC = {"editor.js": "text/javascript", "editor.css": "text/css"}
TOKEN_HEADER = "X-Review-Token"
#: Methods that change nothing: the only ones taken without an ``Origin`` check.
_READS = frozenset({"GET", "HEAD", "OPTIONS"})

SessionOf = Callable[[Request], ReviewSession | Awaitable[ReviewSession]]


def token_check(token: str, *, in_query: bool = False) -> Callable[[Request], None]:
    """A dependency letting in requests that carry ``token`` in the ``X-Review-Token``
    header, compared in constant time. ``in_query`` also takes ``?token=``: only for what a
    browser loads by its address (the page and its pictures), so the editor's reads and
    saves never carry the token in a URL."""
    expected = token.encode()

    def authorize(request: Request) -> None:
        given = request.headers.get(TOKEN_HEADER) or ""
        if not given and in_query:
            given = request.query_params.get("token") or ""
        if not hmac.compare_digest(given.encode(), expected):
            raise HTTPException(
                403, "This review needs the address `fillpdf review` printed, with its token."
            )

    return authorize


def review_routes(
    session_of: SessionOf,
    *,
    prefix: str = "",
    dependencies: Sequence[Any] = (),
    save_dependencies: Sequence[Any] = (),
    view_dependencies: Sequence[Any] | None = None,
    token: str = "",
) -> APIRouter:
    """The editor's routes for the session a request names. ``dependencies`` guard every
    route but the static files; ``view_dependencies``, where given, guard the page and its
    pictures instead (what a browser loads by address); ``save_dependencies`` guard saving
    as well. ``token`` is written into the page for its script to send back (empty where a
    sign-in cookie does)."""
    router = APIRouter(prefix=prefix)
    viewing = list(dependencies if view_dependencies is None else view_dependencies)

    async def session(request: Request) -> ReviewSession:
        found = session_of(request)
        return await found if inspect.isawaitable(found) else found

    @router.get("/", response_class=HTMLResponse, dependencies=viewing)
    async def page(request: Request) -> Response:
        return _secured(HTMLResponse(_page_html((await session(request)).name, token)))

    @router.get("/favicon.ico")
    async def favicon() -> Response:
        return Response(status_code=204)  # no icon, and no failed request in the console

    @router.get("/static/{name}")
    async def static(name: str) -> Response:
        if name not in _STATIC:
            raise HTTPException(404, "No such file.")
        body = resources.files(__package__).joinpath("static", name).read_bytes()
        return _secured(Response(body, media_type=_STATIC[name]))

    @router.get("/api/review", dependencies=list(dependencies))
    async def document(request: Request) -> Response:
        return _secured(JSONResponse((await session(request)).document()))

    @router.get("/pages/{index}.png", dependencies=viewing)
    async def picture(request: Request, index: int) -> Response:
        pages = (await session(request)).pages
        if not 0 <= index < len(pages):
            raise HTTPException(404, f"No page {index}; the form has {len(pages)}.")
        return _secured(Response(pages[index].png, media_type="image/png"))

    @router.post("/api/save", dependencies=[*dependencies, *save_dependencies])
    async def save(request: Request) -> Response:
        body = await _json_body(request)
        schema, build = body.get("schema"), body.get("build", False)
        if not isinstance(schema, list) or not isinstance(build, bool):
            raise HTTPException(400, 'Send {"schema": [entries], "build": true or false}.')
        reviewed = await session(request)
        try:
            saved = await run_in_threadpool(reviewed.save, schema, build=build)
        except SchemaError as exc:
            # The page knows fields by name, not by their place in the list it sent.
            message = in_field_names(exc.message, schema)
            error = {"message": message, "index": exc.index, "name": exc.name}
            return _secured(JSONResponse({"error": error}, status_code=400))
        except FillPdfError as exc:
            return _secured(JSONResponse({"error": {"message": str(exc)}}, status_code=400))
        answer = {"saved": saved.schema, "built": saved.pdf, "fields": saved.fields}
        return _secured(JSONResponse(answer))

    return router


def create_review_app(session: ReviewSession, token: str, *, host: str) -> FastAPI:
    """The editor of one session, for ``fillpdf review``: every request needs ``token`` and
    the ``Host`` the server listens at (``127.0.0.1:PORT``); a write from a page of another
    origin is refused."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    origin = f"http://{host}"

    @app.middleware("http")
    async def locked(request: Request, call_next: Callable[..., Any]) -> Response:
        """Refuse another ``Host`` (a rebound DNS name) and a write from another origin;
        every answer, a 404 or 405 included, carries the security headers."""
        refusal = _wrong_address(request, host, origin)
        if refusal:
            return _secured(_error(403, refusal))
        return _secured(await call_next(request))

    @app.exception_handler(StarletteHTTPException)
    async def refused(request: Request, exc: StarletteHTTPException) -> Response:
        return _secured(_error(exc.status_code, str(exc.detail), exc.headers))

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, exc: RequestValidationError) -> Response:
        where = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}"
            for e in exc.errors()
        )
        return _secured(_error(422, f"The request's address or body is not valid ({where})."))

    guard = [Depends(token_check(token))]
    viewing = [Depends(token_check(token, in_query=True))]
    routes = review_routes(
        lambda request: session, dependencies=guard, view_dependencies=viewing, token=token
    )
    app.include_router(routes)
    return app


def _wrong_address(request: Request, host: str, origin: str) -> str | None:
    """Why a request is not for this editor, or None: another ``Host``, or a write sent
    from a page of another origin."""
    given = request.headers.get("host", "")
    if given != host:
        return (
            f"This editor answers only at http://{host}/ (the address `fillpdf review` "
            "printed), not at another name for this machine."
        )
    sender = request.headers.get("origin")
    if request.method not in _READS and sender is not None and sender != origin:
        return f"The editor takes saves only from its own page at {origin}/."
    return None


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message}}, status_code=status, headers=headers)


def _secured(response: Response) -> Response:
    response.headers.update(SECURITY_HEADERS)
    return response


async def _json_body(request: Request) -> dict[str, Any]:
    """The JSON object a save sends; only as JSON (a cross-site form can't send that without
    asking first) and at most ``MAX_SAVE_BYTES``."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise HTTPException(415, "Send the schema as application/json.")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_SAVE_BYTES:
            raise HTTPException(413, f"A save is at most {MAX_SAVE_BYTES:,} bytes.")
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise HTTPException(400, "The save is not valid JSON.") from None
    if not isinstance(data, dict):
        raise HTTPException(400, 'Send {"schema": [entries], "build": true or false}.')
    return data


def _page_html(name: str, token: str) -> str:
    title = html.escape(f"Review {name}")
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="fillpdf-review-token" content="{html.escape(token)}">
<title>{title} - FillPDF</title>
<link rel="stylesheet" href="static/editor.css">
<script src="static/editor.js" defer></script>
</head>
<body>
<header class="bar">
  <h1>{title}</h1>
  <div class="tools" role="toolbar" aria-label="Editor tools">
    <button type="button" data-action="draw" aria-pressed="false">Draw a field</button>
    <button type="button" data-action="group" disabled>Group as radio</button>
    <button type="button" data-action="delete" disabled>Delete</button>
    <button type="button" data-action="undo" disabled>Undo</button>
    <button type="button" data-action="save">Save</button>
    <button type="button" data-action="build">Save and build PDF</button>
  </div>
  <p class="status" data-status role="status" aria-live="polite">Loading...</p>
</header>
<main class="workspace">
  <div class="pages" data-pages></div>
  <aside class="inspector" data-inspector aria-label="Selected field">
    <p class="hint" data-hint>Select a field to edit it: click a box, or draw a new one.
      Arrow keys move it by 1 pt (Shift: 10 pt), Delete removes it, Ctrl+Z undoes.</p>
    <form class="props" data-props hidden>
      <label>Name <input data-prop="name" autocomplete="off" spellcheck="false"
        aria-describedby="name-problem"></label>
      <p class="problem" id="name-problem" data-name-problem aria-live="polite" hidden></p>
      <label>Type <select data-prop="type"></select></label>
      <label>Label <input data-prop="label" autocomplete="off"></label>
      <label data-for="radio">Option <input data-prop="export" autocomplete="off"></label>
      <label data-for="choice">Options (comma-separated)
        <input data-prop="options" autocomplete="off"></label>
      <label data-for="text date">Most characters
        <input data-prop="max_length" type="number" min="1" step="1"></label>
      <label data-for="date">Date format <input data-prop="date_format" placeholder="mm/dd/yyyy"
        autocomplete="off"></label>
      <label data-for="text" class="check"><input type="checkbox" data-prop="multiline">
        Several lines</label>
      <label class="check"><input type="checkbox" data-prop="required"> Required</label>
      <label class="check"><input type="checkbox" data-prop="read_only"> Read-only</label>
      <p class="where" data-where></p>
    </form>
    <form class="props" data-group-props hidden>
      <label>Radio group name <input data-prop="group" autocomplete="off"
        aria-describedby="group-problem"></label>
      <p class="problem" id="group-problem" data-name-problem aria-live="polite" hidden></p>
      <p class="hint">The selected boxes become one question's options.</p>
    </form>
    <details class="legend"><summary>Colours</summary><ul data-legend></ul></details>
  </aside>
</main>
</body>
</html>
"""
