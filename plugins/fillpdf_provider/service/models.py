"""The shapes of requests and answers, for ``/v1/openapi.json`` and for checking fill bodies."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr

FieldTypeName = Literal["text", "date", "checkbox", "radio", "choice", "signature"]


class ErrorDetail(BaseModel):
    type: str = Field(description="Machine-readable error type, e.g. `quota_exceeded`.")
    message: str = Field(description="One sentence a person can act on.")
    param: str | None = Field(description="The request field concerned, if any.")


class ErrorBody(BaseModel):
    error: ErrorDetail


class OptionWidget(BaseModel):
    export: str = Field(description="The option this button sets.")
    page: int = Field(ge=0)
    rect: list[float] = Field(min_length=4, max_length=4)


class SchemaEntry(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    type: FieldTypeName
    page: int = Field(ge=0)
    rect: list[float] = Field(min_length=4, max_length=4)
    label: str | None = None
    confidence: float = Field(ge=0, le=1)
    required: bool = False
    multiline: bool = False
    max_length: int | None = None
    options: list[str] | None = None
    read_only: bool = False
    comb: bool = False
    widgets: list[OptionWidget] | None = Field(
        default=None,
        description="Radio groups of several buttons only: each button's option and place.",
    )


class ConversionResult(BaseModel):
    status: Literal["converted"]
    document_url: str = Field(description="Signed URL of the fillable PDF, valid until expires_at.")
    conversion_id: str
    fields: int
    confidence: float = Field(ge=0, le=1)
    pages: int
    ms: int
    schema_: list[SchemaEntry] = Field(alias="schema")
    expires_at: str = Field(description="When the conversion and its file are deleted (UTC).")


# The published schema of ``fillpdf_provider.account.Account`` (what ``/v1/account`` answers
# with): the same fields in the same order, narrowed where the service always knows more (the
# plan's name, the period). tests/client/test_account_model.py fails if the two diverge. No
# docstring: it would become the schema's description.
class Account(BaseModel):
    plan: Literal["developer", "pro", "scale", "enterprise"]
    period_start: str
    period_end: str
    pages_included: int | None
    pages_used: int
    pages_remaining: int | None
    overage_pages: int | None
    overage_rate_usd: float | None
    overage_cost_usd: float | None
    max_pages_per_file: int | None
    rate_limit_per_minute: int | None
    hard_stop: bool


class FillFieldIn(BaseModel):
    """A schema entry as a fill request gives it: ``name`` and ``type`` are what count."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)
    type: FieldTypeName


class FillRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    conversion_id: StrictStr | None = Field(default=None, description="A conversion to fill.")
    pdf_base64: StrictStr | None = Field(default=None, description="A fillable PDF, base64.")
    fields: list[FillFieldIn] | None = Field(
        default=None, description="The schema of pdf_base64 (required with it)."
    )
    values: dict[str, Any] = Field(
        description="Field name to value: strings for text, date, signature, radio and "
        "choice (one of its options); booleans for checkboxes; null leaves a field empty."
    )
    flatten: StrictBool = Field(default=False, description="Draw the values into the pages.")


CONVERT_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "additionalProperties": False,  # another part is a 400 naming these
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        "detect": {
                            "type": "string",
                            "enum": ["fields", "fields_fast"],
                            "default": "fields",
                        },
                        "schema": {
                            "type": "string",
                            "description": "Build the form from this schema (JSON text, at "
                            "most 2 MB and 5,000 widgets) instead of detecting it: the "
                            "`schema` list of a conversion result, edited, or that whole "
                            "result. Entries need `name`, `type`, `page` and `rect`; a radio "
                            "group places each option with `widgets`. `detect` is then unused. "
                            "A bad entry is a 400 that names it.",
                        },
                    },
                }
            }
        },
    }
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    described = {
        400: "Malformed request, a value its field refuses, or a schema that cannot be built",
        401: "API key missing, malformed, unknown or revoked",
        402: "Free plan: the file's pages do not fit in what is left this month",
        403: "The document URL's signature does not verify",
        404: "No such conversion for this account",
        408: "The request body arrived too slowly (under 4 KiB/s on average after 5 s)",
        410: "Expired: conversions and their files live 24 hours",
        413: "Fill request body over 25 MB",
        415: "Not a PDF, over 25 MB, too many pages for the plan, encrypted, damaged, or "
        "over the engine's limits",
        429: "Over the plan's requests per minute",
        500: "A bug on our side (logged with the request id)",
        502: "The engine failed unexpectedly on the PDF (logged); damaged files are 415",
        503: "The service is busy or restarting, or its database is unreachable; retry "
        "after Retry-After seconds",
    }
    return {code: {"model": ErrorBody, "description": described[code]} for code in sorted(codes)}
