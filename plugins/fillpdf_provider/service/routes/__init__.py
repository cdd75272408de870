"""The ``/v1`` endpoints, one router per resource, in the order of the OpenAPI document.

Order of checks on every authenticated route: the key (401), the rate limit (429), the
request's shape (400/413/415), plan limits and quota (415/402), then the work. Nothing is
billed or stored for a request that fails.
"""

from __future__ import annotations

from fastapi import APIRouter

from fillpdf_provider.service.routes import account, conversions, convert, files, fill

ROUTERS: tuple[APIRouter, ...] = (
    convert.router,
    fill.router,
    account.router,
    conversions.router,
    files.router,
)
