"""Bad input gets a typed ``FillPdfError`` that says what to do, and leaves nothing behind."""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import random
import re
from pathlib import Path

import pytest

from fillpdf_provider.engine import (
    DamagedPdfError,
    EncryptedPdfError,
    FieldValueError,
    FillPdfError,
    NoFormError,
    NotAPdfError,
    Template,
    UnknownFieldError,
    fill,
    inspect,
)
from kits import formedit
from kits.formkit import Spec, build_form
from kits.hostile import many_fields

SPECS = [
    Spec("first_name", "text", (40, 700, 290, 716), max_length=10),
    Spec("last_name", "text", (322, 700, 572, 716)),
    Spec("zip", "text", (40, 660, 140, 676), comb=5),
    Spec("newsletter", "checkbox", (40, 620, 52, 632), on_state="Ja", with_appearance=True),
    Spec("plan", "radio", (40, 580, 290, 592), options=["basic", "pro"], with_appearance=True),
    Spec("currency", "combo", (40, 540, 160, 556), options=[("EUR", "Euro"), ("USD", "Dollar")]),
    Spec("colour", "listbox", (322, 500, 572, 560), options=["red", "green"]),
]
#: What a message must not show: object addresses and library exception classes.
INTERNALS = re.compile(r"0x[0-9a-fA-F]{4,}|\b[A-Z][A-Za-z]+(Error|Exception|Warning)\b")


@pytest.fixture(scope="module")
def form() -> bytes:
    return build_form(SPECS)


@pytest.fixture(scope="module")
def template(form: bytes) -> Template:
    return Template(form)


# --------------------------------------------------------------------------- unknown fields


def test_unknown_field_is_named_with_close_suggestions(template: Template) -> None:
    with pytest.raises(UnknownFieldError) as caught:
        template.fill({"frist_name": "Zoë"})
    error = caught.value
    assert error.param == "frist_name"
    assert error.suggestions[0] == "first_name"
    assert "'frist_name'" in error.message and "'first_name'" in error.message


def test_unknown_field_suggests_qualified_names(bench_pdf: bytes) -> None:
    with pytest.raises(UnknownFieldError) as caught:
        fill(bench_pdf, {"billing.stret": "x"})
    assert caught.value.suggestions[0] == "billing.street"


def test_unknown_field_without_close_names_points_to_inspect(template: Template) -> None:
    with pytest.raises(UnknownFieldError) as caught:
        template.fill({"qqqqqqqq": "x"})
    assert caught.value.suggestions == []
    assert "fillpdf inspect" in caught.value.message


def test_unknown_field_is_reported_even_beside_valid_values(template: Template) -> None:
    with pytest.raises(UnknownFieldError):
        template.fill({"first_name": "Zoë", "nope": "x"})


# --------------------------------------------------------------------------- bad values


@pytest.mark.parametrize(
    ("name", "value", "hint"),
    [
        ("first_name", 42, "string"),
        ("first_name", 4.2, "string"),
        ("first_name", True, "string"),
        ("first_name", ["a"], "string"),
        ("newsletter", "Ja", "not a checkbox value"),
        ("newsletter", 2, "2 (an int) is not a checkbox value"),
        ("plan", 1, "1 (an int) is not one of the options"),
        ("currency", ["EUR"], "(a list) is not one of the options"),
    ],
)
def test_wrong_type_names_the_field(
    template: Template, name: str, value: object, hint: str
) -> None:
    with pytest.raises(FieldValueError) as caught:
        template.fill({name: value})
    assert caught.value.param == name
    assert repr(name) in caught.value.message
    assert hint in caught.value.message


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("plan", "gold"),
        ("plan", "Basic x"),  # the option but for case and spaces is taken, not more
        ("currency", "JPY"),
        ("currency", "Euro"),  # the display text is not an option
        ("colour", "blue"),
    ],
)
def test_value_not_among_options(template: Template, name: str, value: str) -> None:
    with pytest.raises(FieldValueError) as caught:
        template.fill({name: value})
    assert caught.value.param == name
    assert repr(value) in caught.value.message
    options = next(f.options for f in template.fields if f.name == name)
    assert all(repr(o) in caught.value.message for o in options or ())


@pytest.mark.parametrize(("name", "limit"), [("first_name", 10), ("zip", 5)])
def test_text_longer_than_max_length(template: Template, name: str, limit: int) -> None:
    with pytest.raises(FieldValueError) as caught:
        template.fill({name: "9" * (limit + 1)})
    assert caught.value.param == name
    assert str(limit) in caught.value.message
    template.fill({name: "9" * limit})  # exactly at the limit is fine


def test_max_length_counts_characters_not_bytes(template: Template) -> None:
    template.fill({"first_name": "Ωμέγαωμέγα"})  # 10 characters, 20 bytes in UTF-8


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("emoji 🙂", "U+1F642"),
        ("שלום 🙂", "U+1F642"),  # a right-to-left value too: the emoji is what no font has
        ("ᚠᚢᚦ", "U+16A0"),  # runes
    ],
)
def test_characters_no_font_draws(template: Template, value: str, why: str) -> None:
    with pytest.raises(FieldValueError) as caught:
        template.fill({"last_name": value})
    assert caught.value.param == "last_name"
    assert why in caught.value.message
    assert "FILLPDF_FONTS" in caught.value.message


def test_a_failed_fill_leaves_the_template_usable(form: bytes) -> None:
    template = Template(form)
    for bad in ({"last_name": "emoji 🙂"}, {"nope": "x"}, {"plan": "gold"}):
        with pytest.raises(FieldValueError if "nope" not in bad else UnknownFieldError):
            template.fill(bad)
    values = {"last_name": "Ελληνικά", "plan": "pro"}
    assert template.fill(values) == Template(form).fill(values)


def test_check_raises_what_fill_would(template: Template) -> None:
    with pytest.raises(FieldValueError):
        template.check({"plan": "gold"})
    template.check({"plan": "pro", "newsletter": True})


def test_none_leaves_a_field_alone(template: Template) -> None:
    assert template.fill({"first_name": None}) == template.fill({})


# --------------------------------------------------------------------------- bad files


@pytest.mark.parametrize(
    "data",
    [b"hello", b"\x89PNG\r\n\x1a\n" + bytes(200), b"", b"GIF89a" + bytes(50), b"PK\x03\x04zip"],
    ids=["text", "png", "empty", "gif", "zip"],
)
def test_not_a_pdf(data: bytes) -> None:
    with pytest.raises(NotAPdfError) as caught:
        Template(data)
    assert "PDF" in caught.value.message
    with pytest.raises(NotAPdfError):
        inspect(data)
    with pytest.raises(NotAPdfError):
        fill(data, {})


def test_missing_file_is_a_fill_pdf_error(tmp_path: Path) -> None:
    with pytest.raises(FillPdfError) as caught:
        inspect(tmp_path / "missing.pdf")
    assert "missing.pdf" in caught.value.message


def test_folder_is_a_fill_pdf_error(tmp_path: Path) -> None:
    with pytest.raises(FillPdfError):
        Template.open(tmp_path)


@pytest.mark.parametrize("fraction", [0.1, 0.25, 0.5, 0.75, 0.9, 0.98])
def test_truncated_pdf_is_damaged(form: bytes, fraction: float) -> None:
    with pytest.raises(DamagedPdfError) as caught:
        Template(form[: int(len(form) * fraction)])
    assert "re-save" in caught.value.message
    assert not INTERNALS.search(caught.value.message), caught.value.message
    assert caught.value.error_type == "unsupported_file"


def _repairable_or_damaged(data: bytes) -> None:
    """The engine either repairs ``data`` (and the fill reads back) or calls it damaged."""
    try:
        out = fill(data, {"first_name": "Repaired"})
    except DamagedPdfError:
        return
    assert formedit.stored_values(out)["first_name"] == "Repaired"


def test_shifted_offsets_are_repaired(form: bytes) -> None:
    cut = form.index(b"\n") + 1
    shifted = form[:cut] + b"% twenty-two bytes ..\n" + form[cut:]
    out = fill(shifted, {"first_name": "Repaired"})
    assert formedit.stored_values(out)["first_name"] == "Repaired"
    formedit.reader(out, strict=True)


def test_wrong_startxref_is_repaired(form: bytes) -> None:
    match = list(re.finditer(rb"startxref\s+(\d+)", form))[-1]
    broken = form[: match.start(1)] + b"99999" + form[match.end(1) :]
    out = fill(broken, {"first_name": "Repaired"})
    assert formedit.stored_values(out)["first_name"] == "Repaired"


def _corrupt_object(pdf: bytes, marker: bytes, replacement: bytes) -> bytes:
    """``pdf`` with the ``<<`` opening the object that holds ``marker`` replaced (same length)."""
    at = pdf.index(marker)
    start = pdf.rindex(b" obj", 0, at)
    opening = pdf.index(b"<<", start)
    assert len(replacement) == 2
    return pdf[:opening] + replacement + pdf[opening + 2 :]


def test_garbled_widget_object(form: bytes) -> None:
    _repairable_or_damaged(_corrupt_object(form, b"/Subtype /Widget", b"B<"))


def test_garbled_font_object(form: bytes) -> None:
    _repairable_or_damaged(_corrupt_object(form, b"/BaseFont /Helvetica", b"<\xda"))


def test_garbled_acroform_object(form: bytes) -> None:
    _repairable_or_damaged(_corrupt_object(form, b"/Fields", b"(("))


@pytest.mark.parametrize("seed", range(40))
def test_randomly_garbled_pdf_raises_only_fill_pdf_errors(form: bytes, seed: int) -> None:
    rng = random.Random(seed)
    data = bytearray(form)
    for _ in range(20):
        data[rng.randrange(len(data))] = rng.randrange(256)
    try:
        template = Template(bytes(data))
        template.fill({f.name: None for f in template.fields})
    except FillPdfError as exc:
        assert not INTERNALS.search(exc.message), exc.message


# --------------------------------------------------------------------------- encryption


def test_encrypted_with_empty_user_password_works() -> None:
    pdf = build_form(SPECS, encrypt_empty_password=True)
    assert formedit.reader(pdf).is_encrypted
    assert [f.name for f in inspect(pdf)] == [s.name for s in SPECS]
    out = fill(pdf, {"first_name": "Zoë", "newsletter": True})
    reader = formedit.reader(out)
    assert not reader.is_encrypted  # documented: the output is not encrypted
    fields = reader.get_fields() or {}
    assert fields["first_name"]["/V"] == "Zoë"
    assert fields["newsletter"]["/V"] == "/Ja"


def test_encrypted_with_a_user_password_is_refused() -> None:
    pdf = build_form(SPECS, encrypt_user_password="s3cret")
    for call in (lambda: inspect(pdf), lambda: Template(pdf), lambda: fill(pdf, {})):
        with pytest.raises(EncryptedPdfError) as caught:
            call()
        assert "password" in caught.value.message


# --------------------------------------------------------------------------- no form


def test_pdf_without_fields_has_no_form() -> None:
    flat = formedit.flat_pdf(pages=2)
    with pytest.raises(NoFormError) as caught:
        Template(flat)
    assert "no fillable fields" in caught.value.message
    with pytest.raises(NoFormError):
        fill(flat, {})
    assert inspect(flat) == []


def test_pdf_with_only_hidden_fields_has_no_form() -> None:
    with pytest.raises(NoFormError):
        Template(build_form([Spec("secret", "text", (40, 700, 290, 716), hidden=True)]))


# --------------------------------------------------------------------------- writing


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_write_with_bad_values_leaves_nothing(template: Template, tmp_path: Path) -> None:
    target = tmp_path / "new" / "out.pdf"
    with pytest.raises(FieldValueError):
        template.write(target, {"plan": "gold"})
    assert _leftovers(tmp_path) == []


def test_write_with_bad_values_keeps_an_existing_file(template: Template, tmp_path: Path) -> None:
    target = tmp_path / "out.pdf"
    target.write_bytes(b"previous")
    with pytest.raises(UnknownFieldError):
        template.write(target, {"nope": "x"})
    assert target.read_bytes() == b"previous"
    assert _leftovers(tmp_path) == ["out.pdf"]


def test_write_good_values(template: Template, tmp_path: Path) -> None:
    target = tmp_path / "sub" / "out.pdf"
    values = {"first_name": "Zoë", "plan": "pro"}
    assert template.write(target, values) == target
    assert target.read_bytes() == template.fill(values)
    assert _leftovers(target.parent) == ["out.pdf"]


def test_write_replaces_atomically(
    template: Template, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.pdf"
    target.write_bytes(b"previous")
    renames: list[tuple[str, str]] = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        renames.append((str(src), str(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    template.write(target, {"first_name": "Zoë"})
    (source, destination), *_ = renames
    assert Path(destination) == target
    assert Path(source).parent == tmp_path and Path(source) != target
    assert _leftovers(tmp_path) == ["out.pdf"]


def test_write_failing_at_rename_leaves_old_file_and_no_temp(
    template: Template, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.pdf"
    target.write_bytes(b"previous")

    def fail(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        template.write(target, {"first_name": "Zoë"})
    assert target.read_bytes() == b"previous"
    assert _leftovers(tmp_path) == ["out.pdf"]


# --------------------------------------------------------------------------- the contract


def _raise(call: object) -> FillPdfError:
    with pytest.raises(FillPdfError) as caught:
        call()  # type: ignore[operator]
    return caught.value


def test_every_error_is_typed_and_actionable(form: bytes) -> None:
    cases = {
        "unknown": (lambda: fill(form, {"nope": 1}), "invalid_request", "inspect"),
        "type": (lambda: fill(form, {"newsletter": "Ja"}), "invalid_request", "yes, y, on"),
        "option": (lambda: fill(form, {"plan": "x"}), "invalid_request", "one of the options"),
        "length": (lambda: fill(form, {"zip": "123456"}), "invalid_request", "limit"),
        "script": (lambda: fill(form, {"last_name": "ᚠ"}), "invalid_request", "transliterate"),
        "not_pdf": (lambda: fill(b"hello", {}), "unsupported_file", "PDF"),
        "encrypted": (
            lambda: fill(build_form(SPECS, encrypt_user_password="pw"), {}),
            "unsupported_file",
            "password",
        ),
        "damaged": (lambda: fill(form[: len(form) // 2], {}), "unsupported_file", "re-save"),
        "no_form": (lambda: fill(formedit.flat_pdf(), {}), None, "no fillable fields"),
    }
    for case, (call, error_type, hint) in cases.items():
        error = _raise(call)
        assert error.message and str(error) == error.message, case
        assert error.message.rstrip().endswith((".", "?", ")")), case
        assert hint in error.message, case
        if error_type is not None:
            assert error.error_type == error_type, case
        assert "Traceback" not in error.message
        assert not INTERNALS.search(error.message), case


def test_file_object_in_text_mode_is_explained(form: bytes) -> None:
    with pytest.raises(NotAPdfError) as caught:
        inspect(io.StringIO("%PDF-1.7"))
    assert "'rb'" in caught.value.message


# --------------------------------------------------------------------------- scale


def _calls(pdf: bytes, values: dict[str, object]) -> int:
    """Function calls (Python and built-in) made to compile ``pdf`` and fill ``values``: a
    count of the work that does not depend on the machine or its load."""
    profile = cProfile.Profile()
    profile.enable()
    Template(pdf).fill(values)
    profile.disable()
    return pstats.Stats(profile).total_calls  # type: ignore[attr-defined]


@pytest.mark.parametrize("radio", [False, True], ids=["text_fields", "radio_kids"])
def test_compiling_a_form_is_linear_in_its_fields(radio: bool) -> None:
    """Ten times the fields (or one radio group's kids) cost ten times the work, not a
    hundred: a list searched per widget made 60,000 radio kids take minutes."""
    _calls(many_fields(20, per_page=10, radio=10 if radio else 0), {"f0": "x"})  # warm caches
    counts = []
    for count in (600, 6_000):
        values: dict[str, object] = {"choice": "o1"} if radio else {"f0": "x"}
        counts.append(_calls(many_fields(count, radio=count if radio else 0), values))
    assert counts[1] / counts[0] < 13, counts
