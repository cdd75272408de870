"""The ``/v1`` HTTP API as one ASGI app: the routes, the middleware around them, the OpenAPI.

Each part lives in its own module (``routes``, ``auth``, ``middleware``, ``openapi``,
``lifecycle``); this one wires them together. ``fillpdf serve`` runs ``create_app`` as
uvicorn's factory, once per worker process.
"""

from __future__ import annotations

from fastapi import FastAPI

from fillpdf_provider import __version__
from fillpdf_provider.service.apidocs import install_docs
from fillpdf_provider.service.body_deadline import BodyDeadline
from fillpdf_provider.service.error_handlers import (
    DOCS_PATH,
    OPENAPI_PATH,
    install_error_handlers,
)
from fillpdf_provider.service.lifecycle import lifespan_of
from fillpdf_provider.service.middleware import RequestEnvelope
from fillpdf_provider.service.openapi import install_openapi
from fillpdf_provider.service.routes import ROUTERS
from fillpdf_provider.service.settings import Settings
from fillpdf_provider.service.state import Service


def create_app(settings: Settings | None = None) -> FastAPI:
    """The ASGI app; without ``settings`` it reads the ``FILLPDF_*`` environment."""
    service = Service(settings or Settings.from_env())
    app = FastAPI(
        title="FillPDF API",
        version=__version__,
        description="Convert flat PDFs into fillable forms and fill them. Every request "
        "carries `Authorization: Bearer <API key>`, except signed document URLs.",
        openapi_url=OPENAPI_PATH,
        docs_url=None,  # install_docs: a page without third-party scripts
        redoc_url=None,
        redirect_slashes=False,  # its 307 would build Location from the Host header
        lifespan=lifespan_of(service),
    )
    app.state.service = service
    app.add_middleware(
        BodyDeadline,
        grace_s=service.settings.body_grace_s,
        min_rate=service.settings.body_min_rate,
    )
    app.add_middleware(RequestEnvelope)  # outermost: it sees every answer, even a 408
    install_docs(app, DOCS_PATH)
    install_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    app.openapi_schema = None
    install_openapi(app)
    return app
