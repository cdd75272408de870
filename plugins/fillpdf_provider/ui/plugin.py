"""The Airflow plugin behind the "FillPDF quota" item in the navigation (entry point
``airflow.plugins``)."""

from __future__ import annotations

from typing import Any

from airflow.plugins_manager import AirflowPlugin

from fillpdf_provider.ui.quota_page import create_quota_app

URL_PREFIX = "/fillpdf"


class FillPdfQuotaPlugin(AirflowPlugin):
    """The quota page and its navigation entry (Browse > FillPDF quota)."""

    name = "fillpdf_quota"
    # AirflowPlugin declares these as plain attributes (list[Any]), not ClassVars: an
    # override annotated ClassVar is a type error, so ruff's ClassVar rule is waived here.
    fastapi_apps: list[Any] = [  # noqa: RUF012
        {"app": create_quota_app(), "url_prefix": URL_PREFIX, "name": "FillPDF quota"}
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
