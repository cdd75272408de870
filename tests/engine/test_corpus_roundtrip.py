"""Fill every real form of the corpus and check what a person would see.

For each form in ``../shared/corpus/forms`` (or ``$FILLPDF_CORPUS``):

1. ``inspect`` must list every field that has a visible widget (checked against an
   independent walk of the pages' ``/Annots`` with pypdf, see ``viewcheck.visible_widgets``).
2. Every writable field gets a value of its type (non-ASCII text, digits for combs and short
   ``max_length``, dates in the field's format, ticked and unticked boxes, a radio option
   other than the first, a choice option) and the form is filled by our engine.
3. The output must reopen in pypdf (whose ``get_fields`` must show the values) and pdfplumber.
4. Only existing appearance streams count: PDFium's flattener bakes them into the pages
   (the form must be gone afterwards), then
   - every text value must be readable inside its widgets (>= 99 % over the corpus),
   - every ticked box / chosen radio button must gain ink over the blank form and every
     unticked box / other radio button must not (100 %).
"""

from __future__ import annotations

import functools
import io
import os
import re
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pdfplumber
import pytest
from pdfminer.pdftypes import resolve1

from kits import viewcheck
from kits.viewcheck import Widget, squash

CORPUS = Path(
    os.environ.get("FILLPDF_CORPUS")
    or Path(__file__).resolve().parents[3] / "shared" / "corpus" / "forms"
)

if not CORPUS.is_dir():
    pytest.skip(
        f"corpus of real forms not found at {CORPUS} (set FILLPDF_CORPUS to its forms folder)",
        allow_module_level=True,
    )

pytestmark = pytest.mark.corpus

FORMS = sorted(path.name for path in CORPUS.glob("*.pdf"))

#: Share of text values that must be readable from the appearance streams, corpus-wide.
MIN_READABLE_SHARE = 0.99
#: Buttons are rendered at this scale (216 dpi): the dot of a small radio button is
#: about 25 dark pixels here (10 at scale 2, too close to any sensible threshold).
RENDER_SCALE = 3.0
#: Dark pixels a ticked box / chosen radio button must gain, at least, over the blank form
#: (about 7 at scale 2; the smallest real mark in the corpus gains 22).
INK_GAIN = 16
#: Dark pixels an unticked box / other radio button may gain at most (the corpus: 0).
INK_STRAY = 8
#: Read only the glyphs a widget's own appearance draws (``viewcheck.chars_in_rect``).
OWN_GLYPHS = True

TEXT_SAMPLES = ("Zoë Ångström", "Ελληνικά", "Кириллица", "José 42")
FALLBACK_TEXTS = ("José", "Zoë", "42", "7")
DIGITS = "1234567890"

TEXT_LIKE = ("text", "date", "signature")

InspectFn = Callable[[bytes], Sequence[Any]]
FillFn = Callable[[bytes, dict[str, object]], bytes]


# --------------------------------------------------------------------------- values


def _digits(count: int) -> str:
    return (DIGITS * (count // len(DIGITS) + 1))[: max(1, count)]


def _em(text: str) -> float:
    """Rough width of ``text`` in em: 0.6 a letter, 1 for East Asian wide characters."""
    return sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.6 for c in text)


def fits(text: str, widgets: Sequence[Widget], multiline: bool) -> bool:
    """Whether ``text`` sensibly fits the smallest widget of a field at its font size."""
    for widget in widgets:
        x0, y0, x1, y1 = widget.rect
        width, height = x1 - x0 - 4, y1 - y0
        size = widget.font_size or 0
        if size <= 0:  # auto size: the engine shrinks the text, within reason
            size = min(12.0, max(6.0, height * 0.6))
        lines = max(1, int((height - 2) // (size * 1.2))) if multiline else 1
        if _em(text) * size > width * lines:
            return False
    return True


_DATE_TOKENS = {"yyyy": "2024", "yy": "24", "mm": "03", "dd": "15", "m": "3", "d": "15"}


def _date_value(widgets: Sequence[Widget], limit: int | None) -> str:
    pattern = "mm/dd/yyyy"
    for widget in widgets:
        match = re.search(r'AFDate_Format(?:Ex)?\(\s*"([^"]+)"', widget.format_js or "")
        if match:
            pattern = match.group(1)
            break
    value = re.sub(r"yyyy|yy|mm|dd|m|d", lambda m: _DATE_TOKENS[m.group(0)], pattern)
    if limit is not None and len(value) > limit:
        return _digits(limit)
    return value


def _is_numeric(widgets: Sequence[Widget]) -> bool:
    return any(
        re.search(r"AFNumber_Format|AFSpecial_Format", widget.format_js or "") for widget in widgets
    )


def text_value(field_: Any, widgets: Sequence[Widget], counter: int) -> str:
    """A sensible value for a text-like field: fits ``max_length``, the comb and the box."""
    limit = field_.max_length
    if field_.type == "date":
        return _date_value(widgets, limit)
    if field_.comb:
        return _digits(min(limit or 4, 12))
    if limit is not None and limit < 8:
        return _digits(limit)
    multiline = bool(field_.multiline)
    start = counter % len(TEXT_SAMPLES)
    candidates = (*TEXT_SAMPLES[start:], *TEXT_SAMPLES[:start], *FALLBACK_TEXTS)
    if _is_numeric(widgets):
        candidates = ("1234", "123", "12", "1")
    for candidate in candidates:
        if len(candidate) <= (limit or 10_000) and fits(candidate, widgets, multiline):
            return candidate
    return candidates[-1]


def _not_first(options: Sequence[str], counter: int) -> str:
    """One of the options, never the first (the usual default) when there are several."""
    if len(options) == 1:
        return options[0]
    return options[1 + counter % (len(options) - 1)]


def _choice_options(options: Sequence[str], widgets: Sequence[Widget]) -> list[str]:
    """Options whose display text is not blank and fits the box (if any does)."""
    shown = [o for o in options if squash(viewcheck.display_text(widgets, o))] or list(options)
    fitting = [o for o in shown if fits(viewcheck.display_text(widgets, o), widgets, False)]
    return fitting or sorted(shown, key=lambda o: _em(viewcheck.display_text(widgets, o)))[:1]


def build_values(fields: Sequence[Any], widgets: Mapping[str, list[Widget]]) -> dict[str, object]:
    """One value of the right type for every writable field."""
    values: dict[str, object] = {}
    for counter, field_ in enumerate(fields):
        if field_.read_only:
            continue
        own = widgets.get(field_.name, [])
        options = list(field_.options or ())
        if field_.type in TEXT_LIKE:
            values[field_.name] = text_value(field_, own, counter)
        elif field_.type == "checkbox":
            values[field_.name] = counter % 4 != 3
        elif field_.type == "radio" and options:
            seen = [o for o in options if any(w.on_page and _radio_matches(w, o) for w in own)]
            values[field_.name] = _not_first(seen or options, counter)
        elif field_.type == "choice" and options:
            values[field_.name] = _not_first(_choice_options(options, own), counter)
    return values


# --------------------------------------------------------------------------- checking


@dataclass
class FormResult:
    """What the round trip of one form found."""

    form: str
    visible_names: int = 0
    missing_names: list[str] = field(default_factory=list)
    values: dict[str, object] = field(default_factory=dict)
    stored_errors: list[str] = field(default_factory=list)
    flatten_errors: list[str] = field(default_factory=list)
    text_checked: int = 0
    text_failures: list[str] = field(default_factory=list)
    buttons_checked: int = 0
    button_failures: list[str] = field(default_factory=list)
    ink_on: list[int] = field(default_factory=list)
    """Ink gained by each widget that should be on (dark px at ``RENDER_SCALE``)."""
    ink_off: list[int] = field(default_factory=list)
    """Ink gained by each widget that should stay off."""
    error: BaseException | None = None
    seconds: float = 0.0


def _name_value(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text[1:] if text.startswith("/") else text


def _radio_matches(widget: Widget, option: str) -> bool:
    if option in widget.on_states:
        return True
    if widget.opt and widget.kid_index is not None and widget.kid_index < len(widget.opt):
        return widget.opt[widget.kid_index][0] == option
    return False


def _check_stored(
    result: FormResult,
    kinds: Mapping[str, str],
    stored: Mapping[str, Any],
    widgets: Mapping[str, list[Widget]],
) -> None:
    """pypdf's ``get_fields`` must show every value we gave."""
    for name, value in result.values.items():
        kind = kinds[name]
        if kind == "signature":  # a signature's /V is a signature dictionary, never text
            continue
        if name not in stored:
            result.stored_errors.append(f"{name}: not among pypdf's fields of the output")
            continue
        got = stored[name].get("/V")
        if kind in ("text", "date"):
            ok = got is not None and str(got) == value
        elif kind == "checkbox":
            state = _name_value(got)
            ok = (state not in (None, "Off")) if value else state in (None, "Off", "")
        elif kind == "radio":
            state = _name_value(got)
            ok = state is not None and (
                state == value
                or any(
                    state in w.on_states and _radio_matches(w, str(value))
                    for w in widgets.get(name, [])
                )
            )
        else:  # choice
            ok = got is not None and (
                str(got) == value or (isinstance(got, list) and value in [str(g) for g in got])
            )
        if not ok:
            result.stored_errors.append(f"{name} ({kind}): gave {value!r}, /V is {got!r}")


def _check_text(
    result: FormResult,
    kinds: Mapping[str, str],
    widgets: Mapping[str, list[Widget]],
    flat: pdfplumber.PDF,
) -> None:
    """Every text-like value must read, whitespace aside, from the chars in each of its widgets.

    Only the chars that the widget's own appearance draws inside its box count (see
    ``viewcheck.chars_in_rect``): glyphs a viewer clips away, or a neighbour's, are not read.
    """
    for name, value in result.values.items():
        kind = kinds[name]
        own = widgets.get(name, [])
        if kind not in (*TEXT_LIKE, "choice") or not own:
            continue
        result.text_checked += 1
        shown = viewcheck.display_text(own, str(value)) if kind == "choice" else str(value)
        want = squash(shown)
        # A drop-down whose every option is far wider than its box shows the start of it.
        clipped = kind == "choice" and not fits(shown, own, multiline=False)
        for widget in own:
            got = viewcheck.text_in_rect(flat, widget.page, widget.rect, drawn_by_widget=OWN_GLYPHS)
            if kind == "choice" and not widget.is_combo:
                ok = want in got  # a list box shows its options; the chosen one must be there
            elif clipped:
                ok = len(got) >= min(len(want), 3) and want.startswith(got)
            else:
                ok = got == want
            if not ok:
                result.text_failures.append(
                    f"{name} ({kind}, page {widget.page + 1}): want {want!r}, read {got!r}"
                )
                break


def _check_buttons(
    result: FormResult,
    kinds: Mapping[str, str],
    states: Mapping[str, str | None],
    widgets: Mapping[str, list[Widget]],
    blank: viewcheck.Raster,
    filled: viewcheck.Raster,
) -> None:
    """Ticked boxes and chosen radio buttons gain ink over the blank form; others do not.

    Which widgets are "on" follows the field's ``/V`` in the output where a value has
    several widgets (kids sharing an on-state all turn on, as in any viewer).
    """
    for name, value in result.values.items():
        kind = kinds[name]
        own = [w for w in widgets.get(name, []) if w.is_button]
        if kind not in ("checkbox", "radio") or not any(w.on_page for w in own):
            continue
        result.buttons_checked += 1
        state = states.get(name)
        if kind == "checkbox" and not value:
            expected: list[Widget] = []
        elif kind == "checkbox":
            expected = [w for w in own if state in w.on_states]
        else:
            candidates = [w for w in own if _radio_matches(w, str(value))]
            expected = [w for w in candidates if state in w.on_states] or candidates
        if (value or kind == "radio") and not expected:
            result.button_failures.append(
                f"{name} ({kind}={value!r}): /V is {state!r}, which no widget of it can show"
            )
            continue
        for widget in own:
            if not widget.on_page:
                continue
            gain = filled.ink(widget.page, widget.rect) - blank.ink(widget.page, widget.rect)
            should = widget in expected
            (result.ink_on if should else result.ink_off).append(gain)
            if should and gain < INK_GAIN:
                result.button_failures.append(
                    f"{name} ({kind}={value!r}, page {widget.page + 1}): on, but gained "
                    f"only {gain} dark px"
                )
            elif not should and gain >= INK_STRAY:
                result.button_failures.append(
                    f"{name} ({kind}={value!r}, page {widget.page + 1}): off, but gained "
                    f"{gain} dark px"
                )


def check_form(path: Path, inspect_fn: InspectFn, fill_fn: FillFn) -> FormResult:
    """Run the whole round trip on one form with the given engine functions."""
    started = time.perf_counter()
    result = FormResult(form=path.name)
    template = path.read_bytes()

    template_pdf = viewcheck.open_pdf(template)
    all_widgets = viewcheck.visible_widgets(template_pdf)
    widgets = viewcheck.widgets_by_name(all_widgets)
    result.visible_names = len(widgets)
    # What can be seen at all: widgets parked outside the page are listed, but not looked at.
    on_page = viewcheck.widgets_by_name(w for w in all_widgets if w.on_page)

    fields = list(inspect_fn(template))
    names = {f.name for f in fields}
    result.missing_names = sorted(set(widgets) - names)

    result.values = build_values(fields, widgets)
    kinds = {f.name: f.type for f in fields}
    output = fill_fn(template, result.values)

    reader = viewcheck.open_pdf(output)
    stored = reader.get_fields() or {}
    _check_stored(result, kinds, stored, widgets)
    with pdfplumber.open(io.BytesIO(output)) as plumber:
        for page in plumber.pages:  # every page and its annotations resolve
            _ = page.bbox
            for annot in resolve1(page.page_obj.annots) or []:
                _ = resolve1(annot)
    states = {w.name: w.value for w in viewcheck.visible_widgets(reader)}

    flat = viewcheck.flatten_with_pdfium(output, drop_page_content=True)
    has_form, left = viewcheck.count_widgets(flat)
    if has_form and left:
        result.flatten_errors.append(f"/AcroForm and {left} widgets remain after flattening")
    with pdfplumber.open(io.BytesIO(flat)) as plumber:
        _check_text(result, kinds, on_page, plumber)

    if any(kinds.get(name) in ("checkbox", "radio") for name in result.values):
        # Only the buttons' appearances: text fields overlapping a box must not add ink to it.
        buttons = viewcheck.rects_by_page(w for w in all_widgets if w.is_button and w.on_page)
        blank = viewcheck.flatten_with_pdfium(
            viewcheck.buttons_off(template, reader=template_pdf),
            drop_page_content=True,
            keep_only=buttons,
        )
        flat = viewcheck.flatten_with_pdfium(output, drop_page_content=True, keep_only=buttons)
        with (
            viewcheck.Raster(blank, scale=RENDER_SCALE) as before,
            viewcheck.Raster(flat, scale=RENDER_SCALE) as after,
        ):
            _check_buttons(result, kinds, states, widgets, before, after)

    result.seconds = time.perf_counter() - started
    return result


# --------------------------------------------------------------------------- tests


#: The sample values are chosen for the boxes only roughly, and some boxes are a few points
#: wide: text may shrink to 1 pt here (the default refuses text that needs under 4 pt).
SMALLEST = 1.0


def _engine() -> tuple[InspectFn, FillFn]:
    from fillpdf_provider.engine import Fit, Template, inspect

    return inspect, lambda pdf, values: Template(pdf).fill(values, fit=Fit(min_size=SMALLEST))


@functools.cache
def roundtrip(form: str) -> FormResult:
    """The round trip of one corpus form through our engine (computed once per session)."""
    viewcheck.quiet_pdf_logs()
    inspect_fn, fill_fn = _engine()
    try:
        return check_form(CORPUS / form, inspect_fn, fill_fn)
    except Exception as exc:  # reported by every test of the form
        return FormResult(form=form, error=exc)


def _result(form: str) -> FormResult:
    result = roundtrip(form)
    if result.error is not None:
        raise result.error
    return result


def _listing(lines: Sequence[str], limit: int = 25) -> str:
    shown = "\n  ".join(lines[:limit])
    more = f"\n  ... and {len(lines) - limit} more" if len(lines) > limit else ""
    return f"\n  {shown}{more}"


def test_corpus_has_forms() -> None:
    assert FORMS, f"no *.pdf in {CORPUS}"


@pytest.mark.parametrize("form", FORMS)
def test_inspect_finds_every_visible_field(form: str) -> None:
    result = _result(form)
    assert not result.missing_names, (
        f"inspect misses {len(result.missing_names)} of {result.visible_names} fields with a "
        f"visible widget:" + _listing(result.missing_names)
    )


@pytest.mark.parametrize("form", FORMS)
def test_filled_form_reopens_with_values(form: str) -> None:
    result = _result(form)
    assert result.values, "no writable field got a value"
    assert not result.stored_errors, "pypdf does not read back the values:" + _listing(
        result.stored_errors
    )
    assert not result.flatten_errors, "PDFium's flattening left the form in place:" + _listing(
        result.flatten_errors
    )


@pytest.mark.parametrize("form", FORMS)
def test_buttons_show_their_state(form: str) -> None:
    result = _result(form)
    if not result.buttons_checked:
        pytest.skip("no checkbox or radio button with a visible widget")
    assert not result.button_failures, (
        f"{len(result.button_failures)} of {result.buttons_checked} checkboxes/radio groups "
        f"do not look the way they were filled:" + _listing(result.button_failures)
    )


def test_text_values_readable_from_appearance_streams() -> None:
    checked = failed = 0
    report: list[str] = []
    errors: list[str] = []
    for form in FORMS:
        result = roundtrip(form)
        if result.error is not None:
            errors.append(f"{form}: {type(result.error).__name__}: {result.error}")
            continue
        checked += result.text_checked
        failed += len(result.text_failures)
        if result.text_failures:
            report.append(
                f"{form}: {len(result.text_failures)}/{result.text_checked} unreadable"
                + _listing(result.text_failures, limit=8).replace("\n", "\n  ")
            )
    share = (checked - failed) / checked if checked else 0.0
    summary = f"{checked - failed}/{checked} text values readable ({share:.2%})"
    print(summary)
    for line in report:
        print(line)
    assert not errors, "forms that could not be filled:" + _listing(errors)
    assert share >= MIN_READABLE_SHARE, summary + "\n" + "\n".join(report)
