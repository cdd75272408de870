"""The Airflow plugin behind the "FillPDF quota" item in the navigation (entry point
``airflow.plugins``)."""

from __future__ import annotations

from typing import Any, ClassVar

from airflow.plugins_manager import AirflowPlugin

from fillpdf_provider.ui.quota_page import create_quota_app

URL_PREFIX = "/fillpdf"


class FillPdfQuotaPlugin(AirflowPlugin):
    name = "fillpdf_quota"
    fastapi_apps: ClassVar[list[dict[str, Any]]] = [
        {"app": create_quota_app(), "url_prefix": URL_PREFIX, "name": "FillPDF quota"}
    ]
    external_views: ClassVar[list[dict[str, Any]]] = [
        {
            "name": "FillPDF quota",
            "href": f"{URL_PREFIX}/quota",
            "destination": "nav",
            "category": "browse",
            "url_route": "fillpdf-quota",
        }
    ]
