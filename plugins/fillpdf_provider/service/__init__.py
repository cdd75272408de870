"""The FillPDF HTTP API (``/v1``): the embedded engine behind keys, plans, quota and storage.

Run it with ``fillpdf serve``; build the ASGI app with ``create_app(Settings(...))``.
"""

from fillpdf_provider.service.settings import Settings

__all__ = ["Settings", "create_app"]


def __getattr__(name: str) -> object:
    if name == "create_app":  # FastAPI is imported only when the app is built
        from fillpdf_provider.service.app import create_app

        return create_app
    raise AttributeError(name)
