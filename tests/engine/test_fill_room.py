"""A text value longer than its box could ever show is refused before any layout.

Laying out a long value takes many wraps, one per size tried; counting its characters takes
one pass. ``most_chars`` bounds what a box can show whatever the font (no visible character
narrower than a tenth of an em), so the count refuses only values the layout would refuse
too, and refuses them before anything is drawn: what the service relies on to fill stored
conversions in its own process.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from fillpdf_provider.engine import Fit, Template, TextOverflowError, appearance
from fillpdf_provider.engine.appearance import (
    Box,
    DefaultAppearance,
    TextStyle,
    TextTooLong,
    most_chars,
    text_stream,
    visible_chars,
)
from fillpdf_provider.engine.errors import FillPdfError, UnknownFieldError
from fillpdf_provider.engine.fonts import core_font
from kits.formkit import Spec, build_form

LINE = (72, 700, 272, 716)  # a 200 x 16 pt one-line box
NOTES = (72, 400, 372, 600)  # a 300 x 200 pt multiline box
#: The longest value searched on a real form's box.
SEARCHED = 20_000
WILD = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "wild" / "forms"


@pytest.fixture(scope="module")
def form() -> Template:
    return Template(
        build_form(
            [
                Spec("line", "text", LINE),
                Spec("notes", "text", NOTES, multiline=True),
                Spec("small", "text", (72, 300, 172, 312), da="/Helv 3 Tf 0 g"),
            ]
        )
    )


@contextmanager
def layout_calls() -> Iterator[list[str]]:
    """The names of ``appearance``'s functions called while the block runs."""
    calls: list[str] = []
    module = appearance.__file__

    def watch(frame: FrameType, event: str, _: Any) -> None:
        if event == "call" and frame.f_code.co_filename == module:
            calls.append(frame.f_code.co_name)

    sys.setprofile(watch)
    try:
        yield calls
    finally:
        sys.setprofile(None)


@pytest.mark.parametrize("field", ["line", "notes", "small"])
def test_a_value_over_the_bound_is_refused_before_any_layout(form: Template, field: str) -> None:
    most = form._plans[field].most_chars(Fit())
    value = "i" * (most + 1)
    with layout_calls() as calls, pytest.raises(TextOverflowError) as raised:
        form.fill({field: value})
    assert raised.value.field == field
    message = str(raised.value)
    assert f"{most + 1:,} characters" in message and f"at most {most:,}" in message
    assert "'shrink' or 'truncate'" in message
    drawn = {"text_stream", "_single", "_multiline", "wrap", "_fit_single", "_fitted_lines"}
    assert not drawn & set(calls), calls
    with pytest.raises(TextOverflowError):
        form.check({field: value})  # what fill would raise, without filling


def test_an_unknown_name_is_refused_before_any_layout(form: Template) -> None:
    with layout_calls() as calls, pytest.raises(UnknownFieldError):
        form.fill({"line": "Ada", "nots": "x"})
    assert "text_stream" not in calls


def test_a_value_under_the_bound_is_laid_out_as_before(form: Template) -> None:
    """Under the bound the layout decides: a value of wide letters is refused by it."""
    most = form._plans["line"].most_chars(Fit())
    wide = "W" * (most // 4)
    with layout_calls() as calls, pytest.raises(TextOverflowError) as raised:
        form.fill({"line": wide})
    assert "text_stream" in calls and "holds about" in str(raised.value)


def test_blanks_do_not_count(form: Template) -> None:
    """A single line shows runs of blanks as one space, so only visible characters count."""
    most = form._plans["line"].most_chars(Fit())
    assert visible_chars("a  b\n\tc\r") == 3
    filled = form.fill({"line": "Ada" + " " * (most * 2) + "Lovelace"})
    assert filled.startswith(b"%PDF-")


@pytest.mark.parametrize("policy", ["shrink", "truncate"])
def test_policies_that_cut_take_any_length(form: Template, policy: str) -> None:
    result = form.fill_result({"line": "i" * 100_000}, fit=Fit(policy))
    assert result.cut == ("line",)


BOXES = [
    pytest.param(200, 16, 0.0, False, id="line-auto"),
    pytest.param(200, 16, 10.0, False, id="line-10pt"),
    pytest.param(200, 16, 2.5, False, id="line-2.5pt"),
    pytest.param(60, 3, 0.0, False, id="line-3pt-high"),
    pytest.param(300, 200, 0.0, True, id="notes-auto"),
    pytest.param(300, 60, 9.0, True, id="notes-9pt"),
    pytest.param(8, 120, 0.0, True, id="notes-tall-thin"),
]


@pytest.mark.parametrize(("width", "height", "size", "multiline"), BOXES)
@pytest.mark.parametrize("letter", ["'", "i", ".", "i i"])
def test_the_bound_is_never_below_what_the_layout_accepts(
    width: float, height: float, size: float, multiline: bool, letter: str
) -> None:
    """The longest value of Helvetica's narrowest letters that the layout accepts has no
    more visible characters than the bound: the bound refuses nothing that fits."""
    box = Box(width, height, b"", b"", b"", 1.0)
    da = DefaultAppearance("Helv", size, b"0 g")
    style = TextStyle(b"Helv", core_font("Helvetica"), False, da, 0)
    most = most_chars(box, size, Fit(), multiline=multiline)
    longest = longest_fitting(box, style, letter, multiline, 2 * most + 2)
    assert longest <= most
    if width >= 50:  # a bound, but not a loose one (a tall, thin box's is looser)
        assert most <= 12 * longest


def longest_fitting(box: Box, style: TextStyle, letter: str, multiline: bool, cap: int) -> int:
    """The visible characters of the longest run of ``letter`` the layout accepts, searched
    up to ``cap`` characters (past it, what fits no longer matters to the bound)."""

    def fits(count: int) -> bool:
        try:
            text_stream(box, style, (letter * count)[:count], multiline=multiline)
        except TextTooLong:
            return False
        return True

    if fits(cap):
        return visible_chars((letter * cap)[:cap])
    low, high = 0, cap
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return visible_chars((letter * low)[:low])


def test_real_forms_keep_their_bound() -> None:
    """On forms of the wild corpus too, each text field's longest fitting run of the
    narrowest letter, in each of its widgets, stays within its bound."""
    files = sorted(WILD.glob("*.pdf"))[:10]
    if not files:
        pytest.skip(f"{WILD} is absent: the wild forms live in ../shared/corpus/wild/forms")
    checked = 0
    for path in files:
        try:
            template = Template(path.read_bytes())
        except FillPdfError:  # not fillable: other tests cover that
            continue
        for plan in list(template._plans.values())[:6]:
            if plan.field.kind != "text" or plan.comb or plan.field.max_length:
                continue
            most = plan.most_chars(Fit())
            for wp in plan.widgets:
                helvetica = TextStyle(b"Helv", core_font("Helvetica"), False, wp.da, 0)
                style = wp.style or helvetica
                cap = min(most + 1, SEARCHED)  # a barcode box at 0.05 pt holds millions
                assert longest_fitting(wp.box, style, "'", plan.multiline, cap) <= most
                checked += 1
    assert checked >= 10
