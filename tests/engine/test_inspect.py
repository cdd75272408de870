"""``inspect`` lists the fields a person can fill, as the contract's schema entries."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from pypdf.generic import NameObject, NumberObject, TextStringObject

from fillpdf_provider.engine import Field, Template, fill, inspect
from kits import formedit
from kits.contract import CONTRACT_KEYS, DATE_FORMAT_KEY, SCHEMA_KEYS, WIDGETS_KEY
from kits.formkit import FF_READ_ONLY, Spec, build_form

#: One field of every kind formkit builds, nested names and a second page included.
KIND_SPECS = [
    Spec("billing.street", "text", (40, 700, 290, 716), max_length=50),
    Spec("billing.city", "text", (322, 700, 572, 716)),
    Spec("notes", "text", (40, 600, 290, 680), multiline=True),
    Spec("zip", "text", (322, 660, 422, 676), comb=5),
    Spec("form_id", "text", (452, 660, 572, 676), read_only=True),
    Spec("email", "text", (322, 630, 572, 646), required=True, max_length=60),
    Spec("agree", "checkbox", (40, 560, 52, 572), on_state="Ja", with_appearance=True),
    Spec("plain_box", "checkbox", (80, 560, 92, 572)),
    Spec(
        "shipping",
        "radio",
        (40, 520, 290, 532),
        options=["standard", "express", "overnight"],
        with_appearance=True,
    ),
    Spec(
        "size",
        "radio",
        (322, 520, 572, 532),
        options=["S", "M", "L"],
        radio_use_opt=True,
        with_appearance=True,
    ),
    Spec(
        "currency",
        "combo",
        (40, 470, 160, 486),
        options=[("EUR", "Euro"), ("USD", "US dollar"), ("SEK", "Swedish krona")],
    ),
    Spec("language", "listbox", (322, 430, 572, 490), options=["English", "Deutsch", "Ελληνικά"]),
    Spec("signature", "signature", (40, 380, 290, 410)),
    Spec("page_two.remarks", "text", (40, 700, 290, 716), page=1),
]
KIND_TYPES = {
    "text": "text",
    "checkbox": "checkbox",
    "radio": "radio",
    "combo": "choice",
    "listbox": "choice",
    "signature": "signature",
}


@pytest.fixture(scope="module")
def kinds_pdf() -> bytes:
    return build_form(KIND_SPECS, pages=2)


@pytest.fixture(scope="module")
def kinds(kinds_pdf: bytes) -> dict[str, Field]:
    return {f.name: f for f in inspect(kinds_pdf)}


def test_lists_every_field_in_page_order(kinds_pdf: bytes) -> None:
    assert [f.name for f in inspect(kinds_pdf)] == [s.name for s in KIND_SPECS]


@pytest.mark.parametrize("spec", KIND_SPECS, ids=lambda s: s.name)
def test_type_page_and_rect(kinds: dict[str, Field], spec: Spec) -> None:
    field = kinds[spec.name]
    assert field.type == KIND_TYPES[spec.kind]
    assert field.page == spec.page
    expected = spec.kid_rects[0] if spec.kind == "radio" else spec.rect
    assert field.rect == pytest.approx(expected)


def test_names_are_fully_qualified(kinds: dict[str, Field], bench_pdf: bytes) -> None:
    assert {"billing.street", "billing.city", "page_two.remarks"} <= set(kinds)
    assert "street" not in kinds and "billing" not in kinds
    bench = {f.name for f in inspect(bench_pdf)}
    assert {"billing.street", "billing.city", "billing.state", "contact.email"} <= bench


def test_text_flags(kinds: dict[str, Field]) -> None:
    assert kinds["notes"].multiline and not kinds["billing.street"].multiline
    assert kinds["form_id"].read_only and not kinds["email"].read_only
    assert kinds["email"].required and not kinds["billing.city"].required
    assert kinds["billing.street"].max_length == 50
    assert kinds["billing.city"].max_length is None


def test_comb_field_has_its_cell_count_as_max_length(kinds: dict[str, Field]) -> None:
    assert kinds["zip"].comb is True
    assert kinds["zip"].max_length == 5
    assert kinds["billing.street"].comb is False


def test_radio_options_are_the_export_values(kinds: dict[str, Field]) -> None:
    assert kinds["shipping"].options == ("standard", "express", "overnight")


def test_radio_with_opt_lists_opt_exports_not_state_names(kinds: dict[str, Field]) -> None:
    # the kids' appearance states are /0 /1 /2; /Opt holds what a person would type
    assert kinds["size"].options == ("S", "M", "L")


@pytest.mark.parametrize("name", ["shipping", "size"])
def test_radio_groups_list_each_button_with_its_option_and_rect(
    kinds: dict[str, Field], name: str
) -> None:
    spec = next(s for s in KIND_SPECS if s.name == name)
    field = kinds[name]
    assert field.widgets is not None
    assert [w.export for w in field.widgets] == list(field.options or ())
    for widget, rect in zip(field.widgets, spec.kid_rects, strict=True):
        assert widget.rect == pytest.approx(rect, abs=0.01)
    assert {w.page for w in field.widgets} == {spec.page}
    assert field.rect == field.widgets[0].rect
    entry = field.to_dict()["widgets"]
    assert entry[0] == {"export": field.options[0], "page": spec.page,
                        "rect": list(field.widgets[0].rect)}  # fmt: skip


def test_only_radio_groups_of_several_buttons_list_widgets(kinds: dict[str, Field]) -> None:
    for field in kinds.values():
        if field.type != "radio":
            assert field.widgets is None and "widgets" not in field.to_dict(), field.name


def test_choice_options_are_export_values_not_display_texts(kinds: dict[str, Field]) -> None:
    assert kinds["currency"].options == ("EUR", "USD", "SEK")
    assert kinds["language"].options == ("English", "Deutsch", "Ελληνικά")


def test_options_only_on_radio_and_choice(kinds: dict[str, Field]) -> None:
    for name in ("billing.street", "agree", "plain_box", "signature"):
        assert kinds[name].options is None, name
    for name in ("agree", "shipping", "currency", "language"):
        assert kinds[name].max_length is None, name


def test_checkboxes_with_any_on_state_are_checkboxes(kinds: dict[str, Field]) -> None:
    assert kinds["agree"].type == "checkbox"  # on-state /Ja
    assert kinds["plain_box"].type == "checkbox"  # no /AP at all


def test_attributes_inherited_from_an_ancestor() -> None:
    spec = Spec(
        "person.contact.name",
        "text",
        (40, 700, 290, 716),
        max_length=12,
        multiline=True,
        required=True,
        da="/Helv 9 Tf 0 g",
    )
    pdf = formedit.hoist(build_form([spec]), spec.name, ("/FT", "/Ff", "/DA", "/MaxLen"), 2)
    top = formedit.reader(pdf).trailer["/Root"]["/AcroForm"]["/Fields"][0].get_object()
    assert top["/FT"] == "/Tx" and "/MaxLen" in top  # the edit did what it says
    (field,) = inspect(pdf)
    assert field.name == "person.contact.name"
    assert field.type == "text"
    assert field.max_length == 12
    assert field.multiline and field.required


def test_radio_kids_inherit_type_and_flags_from_their_parent(kinds: dict[str, Field]) -> None:
    # formkit's radio kids are pure widgets: /FT and /Ff live on the parent only
    assert kinds["shipping"].type == "radio"


def test_widgets_missing_from_stale_fields_are_found() -> None:
    specs = [
        Spec("listed", "text", (40, 700, 290, 716)),
        Spec("group.unlisted", "text", (40, 660, 290, 676)),
    ]
    pdf = build_form(specs, stale_fields=True)
    fields = formedit.acroform(pdf)["/Fields"]
    assert len(fields) == 1  # only "listed" is in /AcroForm /Fields
    assert [f.name for f in inspect(pdf)] == ["listed", "group.unlisted"]


def test_field_missing_from_stale_fields_is_listed_in_the_output() -> None:
    specs = [
        Spec("listed", "text", (40, 700, 290, 716)),
        Spec("unlisted", "text", (40, 660, 290, 676)),
    ]
    out = fill(build_form(specs, stale_fields=True), {"unlisted": "found"})
    assert formedit.stored_values(out).get("unlisted") == "found"


def test_hidden_fields_are_not_listed(bench_pdf: bytes) -> None:
    names = {f.name for f in inspect(bench_pdf)}
    assert "internal_ref" not in names
    assert "first_name" in names


def test_hidden_fields_can_still_be_filled_by_name(bench_pdf: bytes) -> None:
    out = fill(bench_pdf, {"internal_ref": "IR-42"})
    assert formedit.stored_values(out)["internal_ref"] == "IR-42"


def test_pushbuttons_are_not_listed() -> None:
    specs = [Spec("a", "text", (40, 700, 290, 716)), Spec("go", "checkbox", (40, 660, 52, 672))]
    pdf = formedit.set_entries(build_form(specs), "go", {"/Ff": NumberObject(1 << 16)})
    assert [f.name for f in inspect(pdf)] == ["a"]


def test_flat_pdf_gives_no_fields() -> None:
    assert inspect(formedit.flat_pdf()) == []


def test_form_with_only_hidden_fields_gives_no_fields() -> None:
    pdf = build_form([Spec("secret", "text", (40, 700, 290, 716), hidden=True)])
    assert inspect(pdf) == []


def test_tooltip_becomes_the_label() -> None:
    pdf = build_form([Spec("fn", "text", (40, 700, 290, 716))])
    pdf = formedit.set_entries(pdf, "fn", {"/TU": TextStringObject("First name")})
    assert inspect(pdf)[0].label == "First name"


def test_date_scripts_make_a_date_field() -> None:
    pdf = build_form(
        [Spec("born", "text", (40, 700, 290, 716)), Spec("x", "text", (40, 660, 290, 676))]
    )
    pdf = formedit.add_date_script(pdf, "born", "dd.mm.yyyy")
    fields = {f.name: f for f in inspect(pdf)}
    assert fields["born"].type == "date"
    assert fields["x"].type == "text"
    assert Template(pdf).date_format("born") == "dd.mm.yyyy"
    # the schema says it too, so a schema read back builds the same date field
    assert fields["born"].to_dict()["date_format"] == "dd.mm.yyyy"
    assert "date_format" not in fields["x"].to_dict()
    assert Field.from_dict(fields["born"].to_dict()) == fields["born"]


def test_read_only_flag_inherited_from_parent() -> None:
    pdf = build_form([Spec("locked.value", "text", (40, 700, 290, 716))])

    def lock(writer: object) -> None:
        widget = formedit.widgets(writer)["locked.value"][0]  # type: ignore[arg-type]
        widget["/Parent"].get_object()[NameObject("/Ff")] = NumberObject(FF_READ_ONLY)

    (field,) = inspect(formedit.edit(pdf, lock))
    assert field.read_only


def test_field_with_two_widgets_is_listed_once() -> None:
    pdf = build_form([Spec("total", "text", (40, 700, 290, 716))])
    pdf = formedit.split_widget(pdf, "total", (40, 600, 290, 616))
    assert len(formedit.widgets(formedit.reader(pdf))["total"]) == 2
    (field,) = inspect(pdf)
    assert field.name == "total"
    assert field.rect == pytest.approx((40, 700, 290, 716))


def test_to_dict_has_the_contract_keys(kinds: dict[str, Field]) -> None:
    for field in kinds.values():
        entry = field.to_dict()
        assert set(entry) >= CONTRACT_KEYS, field.name
        several = field.type == "radio" and len(field.widgets or ()) > 1
        expected = set(SCHEMA_KEYS)
        expected |= {WIDGETS_KEY} if several else set()
        expected |= {DATE_FORMAT_KEY} if field.type == "date" else set()
        assert set(entry) == expected, field.name
        assert entry["type"] in ("text", "date", "checkbox", "radio", "choice", "signature")
        assert isinstance(entry["page"], int)
        assert len(entry["rect"]) == 4 and all(isinstance(v, float) for v in entry["rect"])
        assert 0 <= entry["confidence"] <= 1
        assert isinstance(entry["required"], bool) and isinstance(entry["multiline"], bool)
        assert entry["max_length"] is None or isinstance(entry["max_length"], int)
        assert entry["options"] is None or all(isinstance(o, str) for o in entry["options"])
        json.dumps(entry)


def test_to_dict_values(kinds: dict[str, Field]) -> None:
    assert kinds["size"].to_dict()["options"] == ["S", "M", "L"]
    assert kinds["zip"].to_dict()["max_length"] == 5
    assert kinds["billing.street"].to_dict()["rect"] == [40.0, 700.0, 290.0, 716.0]


def test_from_dict_reads_to_dict_back(kinds: dict[str, Field]) -> None:
    for field in kinds.values():
        assert Field.from_dict(field.to_dict()) == field


def test_accepts_bytes_path_string_and_file_object(kinds_pdf: bytes, tmp_path: Path) -> None:
    path = tmp_path / "form.pdf"
    path.write_bytes(kinds_pdf)
    expected = inspect(kinds_pdf)
    assert inspect(path) == expected
    assert inspect(str(path)) == expected
    assert inspect(io.BytesIO(kinds_pdf)) == expected
    with path.open("rb") as handle:
        assert inspect(handle) == expected


def test_template_fields_equal_inspect(kinds_pdf: bytes) -> None:
    assert Template(kinds_pdf).fields == inspect(kinds_pdf)
    assert Template(kinds_pdf).page_count == 2


def test_inspect_of_a_filled_output_is_unchanged(kinds_pdf: bytes) -> None:
    out = fill(kinds_pdf, {"billing.street": "12 Baker Street", "agree": True, "size": "M"})
    assert inspect(out) == inspect(kinds_pdf)
