"""What filling needs of a form, whoever holds it.

The engine's ``Template`` is one; the provider's form that sends each fill to the service
is another. A mail-merge (``batch.fill_rows``) takes either, so the engine says here what it
asks of a form instead of naming its own class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from fillpdf_provider.engine.appearance import Fit
    from fillpdf_provider.engine.filler import Filled
    from fillpdf_provider.engine.schema import Field


@runtime_checkable
class Form(Protocol):
    """What filling needs of a form: its fields, and a fill that says which text it cut."""

    @property
    def fields(self) -> list[Field]: ...

    @property
    def page_count(self) -> int: ...

    def date_format(self, field_name: str) -> str | None: ...

    def fill(self, values: Mapping[str, object], *, flatten: bool = ...) -> bytes: ...

    def fill_result(
        self, values: Mapping[str, object], *, flatten: bool = ..., fit: Fit | None = ...
    ) -> Filled:
        """``fit`` is the engine's overflow policy; ``None`` leaves the filler's own."""
        ...


def date_formats(form: Form) -> dict[str, str | None]:
    """Each date field of ``form`` and its format (None where the form names none)."""
    return {f.name: form.date_format(f.name) for f in form.fields if f.type == "date"}
