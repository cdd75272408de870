"""A bare FastAPI app: the floor that ``service_bench.py`` measures the service against.

It answers the two requests the service benchmark times, with no database, no auth and no
middleware, so its throughput on the same uvicorn settings is what the web stack alone gives
on this machine; the service's figures divided by its figures show what the service itself
costs. ``POST /v1/fill`` parses the JSON body (the service must too) and returns the filled
PDF the service returned for the benchmark's values, read once at start-up from the file
named by ``BARE_APP_PDF``, so both answer with the same bytes. ``GET /v1/account`` returns
a dict of the service's account fields, about the size of its answer.

Started by the benchmark as ``uvicorn.run("benchmarks.bare_app:create_app", factory=True,
...)``; not meant for anything else.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

#: The environment variable naming the PDF that ``POST /v1/fill`` returns.
PDF_VARIABLE = "BARE_APP_PDF"


def account_view() -> dict[str, object]:
    """The service's ``GET /v1/account`` fields, with fixed values (a new dict each time,
    as the service builds one per request)."""
    return {
        "plan": "enterprise",
        "period_start": "2025-01-01T00:00:00Z",
        "period_end": "2025-02-01T00:00:00Z",
        "pages_included": 100000,
        "pages_used": 4321,
        "pages_remaining": 95679,
        "overage_pages": 0,
        "overage_rate_usd": 0.5,
        "overage_cost_usd": 0.0,
        "max_pages_per_file": 100,
        "rate_limit_per_minute": 100000000,
        "hard_stop": False,
    }


def create_app() -> FastAPI:
    """The app; each uvicorn worker calls this once and reads the PDF then."""
    pdf_bytes = Path(os.environ[PDF_VARIABLE]).read_bytes()
    app = FastAPI(title="bare FastAPI endpoint (service benchmark floor)")

    @app.post("/v1/fill")
    async def fill(request: Request) -> Response:
        json.loads(await request.body())
        return Response(pdf_bytes, media_type="application/pdf")

    @app.get("/v1/account")
    async def account() -> JSONResponse:
        return JSONResponse(account_view())

    return app
