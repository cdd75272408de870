"""The review editor in Airflow's UI, for the conversions in an embedded connection's store.

The FillPDF page links each conversion to ``/fillpdf/review/<conn_id>/<conversion_id>/``:
the editor ``fillpdf review`` serves, behind Airflow's sign-in instead of a token. Reading
needs permission to read that connection; saving, to edit it (the path parameter is named
``connection_id``, the name Airflow's connection check reads, so an auth manager's rules per
connection or per team apply). Save writes the reviewed schema into the store's
``reviewed/`` folder, where ``ConvertOperator(schema=...)`` reads it, and can build the
fillable PDF beside it. Errors name the connection and the conversion, never where the
store is.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from fastapi import Depends, HTTPException, Request
from fastapi.routing import APIRouter
from starlette.concurrency import run_in_threadpool

from fillpdf_provider.client import FillPdfApiError, NotFound
from fillpdf_provider.embedded import CONVERSION_ID, MAX_CONVERSION_ID, EmbeddedFillPdf
from fillpdf_provider.review import ReviewSession, review_routes

log = logging.getLogger(__name__)

#: Sessions kept rendered (a form's pictures take a moment to draw): the latest few.
KEPT_SESSIONS = 4
#: ``connection_id``: the path parameter Airflow's ``requires_access_connection`` reads.
PREFIX = "/review/{connection_id}/{conversion_id}"
#: Where every address of the editor starts, within the plugin's app.
REVIEW_ROOT = "/review/"


def review_path(conn_id: str, conversion_id: str) -> str:
    """The editor's address under the plugin's prefix (a trailing slash: its files are
    relative to it)."""
    return f"/review/{conn_id}/{conversion_id}/"


@dataclass(frozen=True)
class StoreSink:
    """Saves a review into the connection's store, beside its conversions."""

    engine: EmbeddedFillPdf
    conversion_id: str

    def save_schema(self, data: bytes) -> str:
        return self.engine.save_reviewed(self.conversion_id, ".schema.json", data)

    def save_pdf(self, data: bytes) -> str:
        return self.engine.save_reviewed(self.conversion_id, ".fillable.pdf", data)


class Sessions:
    """Review sessions by connection and conversion, the latest ``KEPT_SESSIONS`` kept."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, str], ReviewSession] = OrderedDict()
        self._lock = threading.Lock()

    async def __call__(self, request: Request) -> ReviewSession:
        key = (request.path_params["connection_id"], request.path_params["conversion_id"])
        well_formed(key[1])
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        session = await run_in_threadpool(_open, *key)
        with self._lock:
            self._kept[key] = session
            while len(self._kept) > KEPT_SESSIONS:
                self._kept.popitem(last=False)
        return session


def well_formed(conversion_id: str) -> None:
    """Refuse (404) an id no conversion has before it reaches a store: ``conv_`` and ASCII
    letters and digits, at most ``MAX_CONVERSION_ID`` characters."""
    if not CONVERSION_ID.fullmatch(conversion_id):
        shown = conversion_id if len(conversion_id) <= 40 else conversion_id[:37] + "..."
        raise HTTPException(
            404,
            f"{shown!r} is not a conversion id: one is conv_ and ASCII letters and digits, "
            f"at most {MAX_CONVERSION_ID} characters, as the FillPDF page lists them.",
        )


def _open(conn_id: str, conversion_id: str) -> ReviewSession:
    engine = embedded_engine(conn_id)
    try:
        flat, schema = engine.review_source(conversion_id)
    except NotFound as exc:
        said = exc.message
        if engine.location in said:  # where the store is is no business of the browser's
            said = (
                f"Connection {conn_id!r} keeps no conversion {conversion_id!r} (a conversion "
                "is kept 24 hours); convert the PDF again and follow its Review link."
            )
        raise HTTPException(404, said) from None
    except FillPdfApiError as exc:
        log.warning("Review of %s in connection %s: %s", conversion_id, conn_id, exc)
        raise HTTPException(
            503,
            f"The conversions store of connection {conn_id!r} could not be read; the "
            "api-server's log says what it refused (check the connection's conversions_uri).",
        ) from None
    sink = StoreSink(engine, conversion_id)
    return ReviewSession(flat, schema, sink, name=f"{conversion_id}.pdf ({conn_id})")


def embedded_engine(conn_id: str) -> EmbeddedFillPdf:
    """The embedded engine of connection ``conn_id``, whose store holds the conversions."""
    from fillpdf_provider.hooks.fillpdf import connection_settings
    from fillpdf_provider.ui.quota_data import fillpdf_connections

    conn = next((c for c in fillpdf_connections() if c.conn_id == conn_id), None)
    if conn is None:
        raise HTTPException(404, f"No fillpdf connection {conn_id!r}.")
    try:
        settings = connection_settings(conn, conn_id)
    except ValueError as exc:
        raise HTTPException(404, str(exc)) from None
    if settings["mode"] != "embedded":
        raise HTTPException(
            404,
            f"Connection {conn_id!r} converts on a FillPDF service; review its conversions "
            "with `fillpdf review` on the flat PDF.",
        )
    return EmbeddedFillPdf(settings.get("conversions_uri"))


def review_router(read: Any) -> APIRouter:
    """The editor's routes: ``read`` guards every route, saving also needs permission to
    edit connections."""
    from airflow.api_fastapi.core_api.security import requires_access_connection

    edit = Depends(requires_access_connection("PUT"))  # reads path parameter connection_id
    return review_routes(Sessions(), prefix=PREFIX, dependencies=[read], save_dependencies=[edit])
