"""The Airflow plugin behind the "FillPDF quota" item in the navigation (entry point
``airflow.plugins``).

Airflow loads plugins in every process that runs a task, not only in the API server, so
the page's app (FastAPI, Airflow's security, the review editor) is built on its first
request rather than when the plugin is imported: a task pays nothing for a page it never
serves.
"""

from __future__ import annotations

from typing import Any

from airflow.plugins_manager import AirflowPlugin

URL_PREFIX = "/fillpdf"


class QuotaPageApp:
    """The quota page as an ASGI app, built on its first request."""

    def __init__(self) -> None:
        self._app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self._app is None:
            from fillpdf_provider.ui.quota_page import create_quota_app

            self._app = create_quota_app()
        await self._app(scope, receive, send)


class FillPdfQuotaPlugin(AirflowPlugin):
    """The quota page and its navigation entry (Browse > FillPDF quota)."""

    name = "fillpdf_quota"
    # AirflowPlugin declares these as plain attributes (list[Any]), not ClassVars: an
    # override annotated ClassVar is a type error, so ruff's ClassVar rule is waived here.
    fastapi_apps: list[Any] = [  # noqa: RUF012
        {"app": QuotaPageApp(), "url_prefix": URL_PREFIX, "name": "FillPDF quota"}
    ]
    external_views: list[Any] = [  # noqa: RUF012
        {
            "name": "FillPDF quota",
            "href": f"{URL_PREFIX}/quota",
            "destination": "nav",
            "category": "browse",
            "url_route": "fillpdf-quota",
        }
    ]
