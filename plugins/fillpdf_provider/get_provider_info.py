"""What Airflow's providers manager reads about this package (entry point
``apache_airflow_provider``): the hook, and the ``fillpdf`` connection form, declared as data
so the UI can draw it without importing the hook."""

from __future__ import annotations

from typing import Any

from fillpdf_provider import __version__


def get_provider_info() -> dict[str, Any]:
    return {
        "package-name": "airflow-provider-fillpdf",
        "name": "FillPDF",
        "description": "Convert flat PDFs into fillable forms and fill them in bulk from "
        "tables, on the FillPDF API or the embedded engine.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "FillPDF",
                "external-doc-url": "https://github.com/fillpdf/airflow-provider-fillpdf",
                "tags": ["software"],
            }
        ],
        "hooks": [
            {"integration-name": "FillPDF", "python-modules": ["fillpdf_provider.hooks.fillpdf"]}
        ],
        "connection-types": [
            {
                "hook-class-name": "fillpdf_provider.hooks.fillpdf.FillPdfHook",
                "hook-name": "FillPDF",
                "connection-type": "fillpdf",
                "conn-fields": {
                    "mode": {
                        "label": "Mode",
                        "description": "api: call the service at the Base URL with the API "
                        "key; embedded: run the engine in the worker (no URL or key needed). "
                        "Empty: api when the Base URL is set, embedded when it is not.",
                        "schema": {
                            "type": ["string", "null"],
                            "enum": ["api", "embedded"],
                        },
                    },
                    "timeout": {
                        "label": "Timeout (seconds)",
                        "description": "Seconds to wait for each answer of the service in api "
                        "mode, a number above 0 (empty: 120); raise it for large files on a "
                        "busy service.",
                        "schema": {
                            "type": ["number", "null"],
                            "exclusiveMinimum": 0,
                            "default": 120,
                        },
                    },
                    "conversions_uri": {
                        "label": "Embedded conversions store",
                        "description": "Folder or URI (s3://bucket/prefix) where embedded mode "
                        "keeps conversions for 24 hours (empty: $AIRFLOW_HOME/fillpdf/"
                        "conversions, or ~/.cache/fillpdf/conversions where AIRFLOW_HOME is "
                        "not set); workers on separate hosts need a shared one. The "
                        "Test button writes a small file there.",
                        "schema": {"type": ["string", "null"]},
                    },
                },
                "ui-field-behaviour": {
                    "hidden-fields": ["schema", "port", "login", "extra"],
                    "relabeling": {"host": "Base URL", "password": "API key"},
                    "placeholders": {
                        "host": "https://fillpdf.example.com (leave empty for the embedded "
                        "engine, in the worker)",
                        "password": "fpk_... from `fillpdf keys create` (api mode only)",
                        "timeout": "120",
                        "conversions_uri": "s3://bucket/fillpdf-conversions (empty: a local "
                        "folder, see the description)",
                    },
                },
            }
        ],
    }
