"""Text layout stays linear in the value's length and never changes what it draws.

An unbroken word of thousands of characters, or a megabyte of words, used to take minutes
per field (each line break re-measured every shorter prefix; every font size re-wrapped the
whole text). The checks count the characters measured, not seconds; the lines are compared
with the plain algorithm they replace; a value no box can show is refused by name.
"""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from fillpdf_provider.engine import appearance
from fillpdf_provider.engine.appearance import wrap
from fillpdf_provider.engine.errors import FieldValueError
from fillpdf_provider.engine.filler import Template
from fillpdf_provider.engine.fonts import core_font

HELVETICA = core_font("Helvetica")


def reference_wrap(text: str, font, size: float, room: float) -> list[str]:
    """The layout as the strictest reading of it goes: every prefix measured from scratch."""

    def measure(s: str) -> float:
        codes = font.encode(s)
        return font.width(codes) if codes else 0.0

    lines: list[str] = []
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            candidate = f"{line} {word}" if line else word
            if measure(candidate) * size <= room or not line:
                line = candidate
            else:
                lines.append(line)
                line = word
            while measure(line) * size > room and len(line) > 1:
                cut = len(line) - 1
                while cut > 1 and measure(line[:cut]) * size > room:
                    cut -= 1
                lines.append(line[:cut])
                line = line[cut:]
        lines.append(line)
    return lines


class CountingFont:
    """Helvetica that counts how many characters it was asked to encode."""

    def __init__(self) -> None:
        self.measured = 0

    def encode(self, text: str) -> bytes | None:
        self.measured += len(text)
        return HELVETICA.encode(text)

    def width(self, codes: bytes) -> float:
        return HELVETICA.width(codes)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    text=st.text(alphabet="WiMl .,-\n\t", max_size=400),
    size=st.sampled_from([1.0, 4.5, 9.0, 12.0]),
    room=st.floats(min_value=3, max_value=400),
)
def test_lines_are_the_same_as_the_plain_algorithm(text: str, size: float, room: float) -> None:
    assert wrap(text, HELVETICA, size, room) == reference_wrap(text, HELVETICA, size, room)


@pytest.mark.parametrize("text", ["W" * 3000, "word " * 2000, ("x" * 500 + " ") * 20])
def test_wrapping_measures_each_character_a_bounded_number_of_times(text: str) -> None:
    font = CountingFont()
    lines = wrap(text, font, 12.0, 200.0)  # type: ignore[arg-type]
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")
    # a line is at most ~40 characters here: each word is measured with the line before it
    assert font.measured <= 60 * len(text), font.measured


@pytest.fixture(scope="module")
def form() -> Template:
    from pathlib import Path

    include = Path(__file__).resolve().parents[2] / "include"
    return Template((include / "sample_form.pdf").read_bytes())


def test_a_long_multiline_value_is_laid_out_once_per_size_that_can_fit(
    form: Template, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[float] = []
    original = appearance.wrap

    def counting(text, font, size, room):
        calls.append(size)
        return original(text, font, size, room)

    monkeypatch.setattr(appearance, "wrap", counting)
    form.fill({"notes": "word " * 1000})  # most of what the box holds at 4 pt
    # sizes too large for the text's ink are skipped without wrapping it
    assert len(calls) <= 3, calls


@pytest.mark.parametrize("value", ["W" * 100_000, "word " * 200_000])
def test_a_value_no_box_can_show_is_refused_naming_the_field_and_the_room(
    form: Template, value: str
) -> None:
    with pytest.raises(FieldValueError) as raised:
        form.fill({"notes": value})
    message = str(raised.value)
    assert "'notes'" in message and f"{len(value):,} characters" in message
    # refused by its length before any layout (test_fill_room.py), with the box's bound
    assert "holds at most" in message and "shorten the value" in message
