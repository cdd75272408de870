"""Shared fixtures of the engine and CLI tests: the ready-made forms, built once per session."""

from __future__ import annotations

import pytest
import viewcheck
from formkit import bench_form, sample_form


@pytest.fixture(autouse=True, scope="session")
def _quiet_pdf_logs() -> None:
    viewcheck.quiet_pdf_logs()


@pytest.fixture(scope="session")
def bench_pdf() -> bytes:
    """formkit's dense 32-field business form."""
    return bench_form()


@pytest.fixture(scope="session")
def sample_pdf() -> bytes:
    """formkit's one-page membership application with every field kind."""
    return sample_form()[0]
