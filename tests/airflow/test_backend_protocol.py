"""Both backends are a ``Backend`` and both forms a ``Form``: the hook and the operators
call them without asking which they hold.

The assignments to Protocol-typed names are checked by mypy
(``mypy tests/airflow/test_backend_protocol.py``; the package's own ``backend_for`` and
``open_form`` return the Protocols too); at run time each Protocol member is checked to exist
on both, with a signature that takes the Protocol's parameters.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

from fillpdf_provider.backend import Backend, Form
from fillpdf_provider.client import FillPdfClient
from fillpdf_provider.embedded import EmbeddedFillPdf
from fillpdf_provider.engine.filler import Template
from fillpdf_provider.hooks.fillpdf import FillPdfHook
from fillpdf_provider.operators.forms import ApiForm
from kits.formkit import sample_form


def _members(protocol: type) -> list[str]:
    return [
        name
        for name, value in vars(protocol).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    ]


def _takes(implementation: object, protocol: type, name: str) -> None:
    """``implementation.name`` accepts every parameter the Protocol's ``name`` declares."""
    wanted = inspect.signature(getattr(protocol, name))
    given = inspect.signature(getattr(implementation, name))
    for parameter in list(wanted.parameters.values())[1:]:  # past self
        assert parameter.name in given.parameters, (type(implementation).__name__, name)
        got = given.parameters[parameter.name]
        assert got.kind == parameter.kind, (type(implementation).__name__, name, got)
        if parameter.default is not inspect.Parameter.empty:
            assert got.default is not inspect.Parameter.empty, (name, parameter.name)


@pytest.fixture
def backends(tmp_path: Path) -> Iterator[list[Backend]]:
    client: Backend = FillPdfClient("https://fillpdf.example.com", "fpk_test")
    embedded: Backend = EmbeddedFillPdf(tmp_path)
    yield [client, embedded]
    for backend in (client, embedded):
        backend.close()


def test_both_backends_are_a_backend(backends: list[Backend]) -> None:
    for backend in backends:
        assert isinstance(backend, Backend)
        for name in _members(Backend):
            if callable(getattr(Backend, name)):
                _takes(backend, Backend, name)
    assert [(b.remote, b.has_quota) for b in backends] == [(True, True), (False, False)]


def test_both_forms_are_a_form(tmp_path: Path) -> None:
    template: Form = Template(sample_form()[0])
    remote: Form = ApiForm(FillPdfHook(), list(template.fields), template.page_count,
                           conversion_id="conv_" + "0" * 24)  # fmt: skip
    for form in (template, remote):
        assert isinstance(form, Form)
        for name in _members(Form):
            if callable(getattr(Form, name)):
                _takes(form, Form, name)


def test_a_form_the_service_fills_refuses_the_engines_overflow_policy() -> None:
    from fillpdf_provider.engine.appearance import Fit

    form = ApiForm(FillPdfHook(), [], 1, conversion_id="conv_" + "0" * 24)
    with pytest.raises(ValueError, match="overflow policy"):
        form.fill_result({}, fit=Fit())
