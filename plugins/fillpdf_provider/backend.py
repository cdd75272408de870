"""What the Airflow side asks of a backend and of a form, whichever mode a connection is in.

``FillPdfHook`` holds a ``Backend``: the service's client (``FillPdfClient``) or the embedded
engine (``EmbeddedFillPdf``). Both give the same calls, types and errors, so the hook, the
operators and the quota code never ask which one they hold; where the modes really differ
(a quota to respect, a service that can fill by conversion id) they ask the backend
(``has_quota``, ``remote``). Likewise an operator fills a ``Form``: the engine's
``Template`` on the worker, or ``ApiForm`` that sends each fill to the service.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from fillpdf_provider.engine.fillable import Form

__all__ = ["Backend", "Converted", "Form"]

if TYPE_CHECKING:
    from fillpdf_provider.account import Account
    from fillpdf_provider.client import ConversionRef, PdfSource, SchemaSource
    from fillpdf_provider.engine.schema import Field


class Converted(Protocol):
    """A conversion as a backend returns it: the client's ``Conversion`` (the PDF is
    downloaded apart) or the engine's ``ConversionResult`` (the PDF in hand)."""

    @property
    def conversion_id(self) -> str | None: ...

    @property
    def status(self) -> str: ...

    @property
    def pages(self) -> int: ...

    @property
    def ms(self) -> int: ...

    @property
    def schema(self) -> list[Field]: ...

    @property
    def document_url(self) -> str | None: ...


@runtime_checkable
class Backend(Protocol):
    """The calls ``FillPdfHook`` makes, served by the FillPDF service or in this process."""

    @property
    def remote(self) -> bool:
        """True when calls go to a FillPDF service, which can also fill by conversion id."""
        ...

    @property
    def has_quota(self) -> bool:
        """True when conversions are billed against a plan: check the quota first."""
        ...

    def convert(
        self, pdf: PdfSource, *, detect: str = ..., schema: SchemaSource | None = ...
    ) -> Converted: ...

    def get_conversion(self, conversion_id: str) -> Converted: ...

    def download(self, conversion: str | ConversionRef) -> bytes:
        """The fillable PDF of a conversion (cheap when the backend has it in hand)."""
        ...

    def fill(
        self,
        target: str | bytes,
        values: Mapping[str, Any],
        *,
        fields: Sequence[Field | Mapping[str, Any]] | None = ...,
        flatten: bool = ...,
    ) -> bytes: ...

    def get_account(self) -> Account: ...

    def check(self) -> None:
        """Raise if calls can't work for a reason no call has shown yet (the embedded
        engine's store refusing a write); what the connection's Test button runs."""
        ...

    def close(self) -> None: ...
