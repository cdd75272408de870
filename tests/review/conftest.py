"""What the review editor's tests share: the flat form they review."""

from __future__ import annotations

from pathlib import Path

import pytest

from kits.flatkit import flat_form


@pytest.fixture
def flat(tmp_path: Path) -> Path:
    """A two-page flat form on disk, as a user passes it to ``fillpdf review``."""
    path = tmp_path / "form.pdf"
    path.write_bytes(flat_form(2))
    return path
