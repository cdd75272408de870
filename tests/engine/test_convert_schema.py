"""The review loop of a conversion: edit the schema, rebuild the form exactly from it.

A person reviews a conversion's schema, adds, drops, moves, renames or retypes fields and
moves radio options between groups, then converts again with ``schema=``: detection is
skipped and the form is written as the schema says. Each edit is checked on the PDF itself
(pypdf reads the widgets) and by filling the rebuilt form and looking at what shows.
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from pypdf import PdfReader

from fillpdf_provider.engine import Field, SchemaError, Template
from fillpdf_provider.engine.convert import convert
from fillpdf_provider.engine.rebuild import MAX_WIDGETS, schema_digest
from fillpdf_provider.operators import ConvertOperator
from kits import cli_support, viewcheck
from kits.flatkit import flat_form, flat_form_schema
from kits.servicekit import Server
from tests.engine.detect.test_detect_cues import every_cue
from tests.service.test_service_api import convert as api_convert
from tests.service.test_service_api import error_of, pages_used

FF_READ_ONLY = 1 << 0
FF_REQUIRED = 1 << 1
FF_MULTILINE = 1 << 12

#: A hand-made schema for ``flat_form(2)``: minimal entries, every kind, two radio groups.
BASE = flat_form_schema()
SIGNED_ON = {"name": "signed_on", "type": "date", "page": 1, "rect": [150, 615, 450, 635]}

run = partial(cli_support.run, timeout=120)
assert_clean_error = partial(
    cli_support.assert_clean_error, prefix="fillpdf convert: error: ", only_line=True
)


@pytest.fixture(scope="module")
def flat() -> bytes:
    return flat_form(2)


def rebuilt(flat: bytes, schema: Any) -> bytes:
    return convert(flat, schema=schema).pdf


def widgets(pdf: bytes) -> dict[str, list[viewcheck.Widget]]:
    return viewcheck.widgets_by_name(viewcheck.visible_widgets(pdf))


def edit(change: Callable[[list[dict[str, Any]]], None]) -> list[dict[str, Any]]:
    schema = copy.deepcopy(BASE)
    change(schema)
    return schema


def entry(schema: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(e for e in schema if e["name"] == name)


def shown(pdf: bytes, values: dict[str, object]) -> bytes:
    """The filled form as a viewer shows it: appearance streams only, no page content."""
    return viewcheck.flatten_with_pdfium(Template(pdf).fill(values), drop_page_content=True)


def assert_rect(widget: viewcheck.Widget, rect: list[float]) -> None:
    assert widget.rect == pytest.approx(tuple(rect), abs=0.01), widget.name


# --------------------------------------------------------------------------- building


def test_minimal_entries_build_exactly_that_form(flat: bytes) -> None:
    result = convert(flat, schema=BASE)
    found = widgets(result.pdf)
    assert list(found) == [e["name"] for e in BASE]
    for spec in BASE:
        kids = found[spec["name"]]
        places = spec.get("widgets") or [{"rect": spec["rect"]}]
        assert len(kids) == len(places), spec["name"]
        for kid, place in zip(kids, places, strict=True):
            assert kid.page == spec["page"]
            assert_rect(kid, place["rect"])
    assert {n: w[0].field_type for n, w in found.items()} == {
        "full_name": "Tx", "email": "Tx", "city": "Tx", "member": "Btn",
        "plan": "Btn", "size": "Btn", "country": "Ch",
    }  # fmt: skip
    assert [w.on_states for w in found["plan"]] == [("basic",), ("gold",)]
    assert found["country"][0].opt == (("SE", "SE"), ("NO", "NO"))
    schema = {f.name: f for f in result.schema}
    assert all(f.confidence == 1.0 for f in schema.values())
    assert schema["plan"].options == ("basic", "gold")
    assert [w.rect for w in schema["plan"].widgets or ()] == [(300, 539, 312, 551),
                                                              (360, 539, 372, 551)]  # fmt: skip
    assert result.pages == 2 and result.fields == len(BASE)


def test_the_rebuilt_form_fills_and_shows_its_values(flat: bytes) -> None:
    pdf = rebuilt(flat, BASE)
    values = {"full_name": "Ada Lovelace", "city": "London", "member": True, "plan": "gold",
              "size": "s", "country": "NO"}  # fmt: skip
    page = shown(pdf, values)
    assert viewcheck.text_in_rect(page, 0, (150, 655, 450, 675)) == "AdaLovelace"
    assert viewcheck.text_in_rect(page, 0, (150, 578, 450, 592)) == "London"
    assert viewcheck.text_in_rect(page, 1, (150, 655, 300, 675)) == "NO"
    with viewcheck.Raster(page) as raster:
        assert raster.ink(0, (71, 539, 83, 551)) > 20
        assert raster.ink(0, (360, 539, 372, 551)) > 20
        assert raster.ink(0, (300, 539, 312, 551)) == 0
        assert raster.ink(1, (300, 539, 312, 551)) > 20


def test_labels_flags_and_lengths_are_written(flat: bytes) -> None:
    def change(schema: list[dict[str, Any]]) -> None:
        entry(schema, "full_name").update(label="Full name", required=True, max_length=30)
        entry(schema, "email").update(read_only=True)
        entry(schema, "city").update(comb=True, max_length=6)
        entry(schema, "member").update(required=True)
        schema.append({"name": "notes", "type": "text", "page": 1, "rect": [72, 400, 450, 500],
                       "multiline": True})  # fmt: skip

    result = convert(flat, schema=edit(change))
    found = widgets(result.pdf)
    assert found["full_name"][0].field_flags == FF_REQUIRED
    assert found["email"][0].field_flags == FF_READ_ONLY
    assert found["member"][0].field_flags == FF_REQUIRED
    assert found["notes"][0].field_flags == FF_MULTILINE
    fields = {f.name: f for f in result.schema}
    assert fields["full_name"].label == "Full name" and fields["full_name"].max_length == 30
    assert fields["full_name"].required and fields["email"].read_only
    assert fields["city"].comb and fields["city"].max_length == 6
    assert fields["notes"].multiline


# --------------------------------------------------------------------------- each edit


def test_add_a_field(flat: bytes) -> None:
    schema = edit(lambda s: s.append({"name": "phone", "type": "text", "page": 1,
                                      "rect": [150, 615, 450, 635]}))  # fmt: skip
    found = widgets(rebuilt(flat, schema))
    assert found["phone"][0].page == 1
    assert_rect(found["phone"][0], [150, 615, 450, 635])
    page = shown(rebuilt(flat, schema), {"phone": "555 0100"})
    assert viewcheck.text_in_rect(page, 1, (150, 615, 450, 635)) == "5550100"


def test_drop_a_field(flat: bytes) -> None:
    schema = edit(lambda s: s.remove(entry(s, "email")))
    pdf = rebuilt(flat, schema)
    assert "email" not in widgets(pdf)
    assert [f.name for f in Template(pdf).fields] == [e["name"] for e in schema]


def test_move_a_field(flat: bytes) -> None:
    schema = edit(lambda s: entry(s, "city").update(rect=[150, 440, 400, 460], page=1))
    pdf = rebuilt(flat, schema)
    (city,) = widgets(pdf)["city"]
    assert city.page == 1
    assert_rect(city, [150, 440, 400, 460])
    page = shown(pdf, {"city": "Oslo"})
    assert viewcheck.text_in_rect(page, 1, (150, 440, 400, 460)) == "Oslo"
    assert viewcheck.text_in_rect(page, 0, (150, 578, 450, 592)) == ""


def test_rename_a_field(flat: bytes) -> None:
    schema = edit(lambda s: entry(s, "full_name").update(name="applicant_name"))
    pdf = rebuilt(flat, schema)
    assert "full_name" not in widgets(pdf)
    assert_rect(widgets(pdf)["applicant_name"][0], [150, 655, 450, 675])
    page = shown(pdf, {"applicant_name": "Grace"})
    assert viewcheck.text_in_rect(page, 0, (150, 655, 450, 675)) == "Grace"


def test_retype_fields(flat: bytes) -> None:
    def change(schema: list[dict[str, Any]]) -> None:
        entry(schema, "email")["type"] = "date"
        entry(schema, "city")["type"] = "checkbox"
        entry(schema, "member")["type"] = "text"

    pdf = rebuilt(flat, edit(change))
    found = widgets(pdf)
    assert found["email"][0].field_type == "Tx" and "AFDate_FormatEx" in (
        found["email"][0].format_js or ""
    )
    assert found["city"][0].field_type == "Btn" and found["city"][0].on_states == ("Yes",)
    assert found["member"][0].field_type == "Tx"
    types = {f.name: f.type for f in Template(pdf).fields}
    assert (types["email"], types["city"], types["member"]) == ("date", "checkbox", "text")
    page = shown(pdf, {"email": "07/14/1990", "city": True, "member": "Y"})
    assert viewcheck.text_in_rect(page, 0, (150, 615, 450, 635)) == "07/14/1990"
    assert viewcheck.text_in_rect(page, 0, (71, 539, 83, 551)) == "Y"
    assert viewcheck.ink_in_rect(page, 0, (150, 578, 450, 592)) > 20


def test_regroup_radio_options(flat: bytes) -> None:
    """'gold' moves from plan to size, plan is renamed tier and gains a 'silver' button."""
    silver = [420, 539, 432, 551]

    def change(schema: list[dict[str, Any]]) -> None:
        plan, size = entry(schema, "plan"), entry(schema, "size")
        gold = plan["widgets"].pop()
        size["widgets"].append({**gold, "page": 0})
        plan["widgets"].append({"export": "silver", "rect": silver})
        plan["name"] = "tier"

    pdf = rebuilt(flat, edit(change))
    found = widgets(pdf)
    assert "plan" not in found
    tier = sorted(found["tier"], key=lambda w: w.kid_index or 0)
    assert [w.on_states for w in tier] == [("basic",), ("silver",)]
    kids = sorted(found["size"], key=lambda w: w.kid_index or 0)  # the group's own order
    assert [(w.page, w.on_states) for w in kids] == [(1, ("s",)), (1, ("m",)), (0, ("gold",))]
    assert all(w.is_radio for w in found["size"] + found["tier"])
    assert_rect(kids[2], [360, 539, 372, 551])
    assert_rect(tier[1], silver)
    fields = {f.name: f for f in Template(pdf).fields}
    assert fields["size"].options == ("gold", "s", "m")  # in page order, as the form reads
    assert fields["tier"].options == ("basic", "silver")
    with viewcheck.Raster(shown(pdf, {"size": "gold", "tier": "basic"})) as raster:
        assert raster.ink(0, (360, 539, 372, 551)) > 20
        assert raster.ink(0, (300, 539, 312, 551)) > 20
        assert raster.ink(0, tuple(silver)) == 0
        assert raster.ink(1, (300, 539, 312, 551)) == 0


def test_radio_entries_sharing_a_name_are_one_group(flat: bytes) -> None:
    """One entry per button (``options`` of one) is the other way to write a group."""
    schema = [
        {"name": "tier", "type": "radio", "page": 0, "rect": [300, 539, 312, 551],
         "options": ["basic"]},
        {"name": "tier", "type": "radio", "page": 0, "rect": [360, 539, 372, 551],
         "options": ["gold"]},
    ]  # fmt: skip
    (field,) = convert(flat, schema=schema).schema
    assert field.options == ("basic", "gold") and len(field.widgets or ()) == 2


# --------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("mode", ["fields", "fields_fast"])
def test_convert_then_rebuild_from_its_schema_is_the_same_form(mode: str) -> None:
    flat, _ = every_cue()
    first = convert(flat, mode)
    assert any(f.type == "radio" for f in first.schema), "the page has a radio group"
    for schema in (
        first.to_dict()["schema"],
        first.to_dict(),
        json.dumps(first.to_dict()),
        first.schema,
    ):
        again = convert(flat, schema=schema)
        assert again.pdf == first.pdf
        assert [f.to_dict() | {"confidence": 1.0} for f in first.schema] == [
            f.to_dict() for f in again.schema
        ]


def test_round_trip_keeps_names_types_rects_flags_and_options() -> None:
    """Compared widget by widget, whatever detection found on the page."""
    flat, _ = every_cue()
    first = convert(flat)
    again = convert(flat, schema=first.to_dict()["schema"])
    before, after = viewcheck.visible_widgets(first.pdf), viewcheck.visible_widgets(again.pdf)
    assert len(before) == len(after)
    for a, b in zip(before, after, strict=True):
        assert (a.name, a.page, a.field_type, a.field_flags) == (
            b.name, b.page, b.field_type, b.field_flags)  # fmt: skip
        assert (a.on_states, a.opt, a.format_js) == (b.on_states, b.opt, b.format_js)
        assert a.rect == pytest.approx(b.rect, abs=0.01)


def test_a_date_format_is_written_into_the_date_field(flat: bytes) -> None:
    pdf = rebuilt(flat, [*BASE, {**SIGNED_ON, "date_format": "dd.mm.yyyy"}])
    form = Template(pdf)
    assert form.date_format("signed_on") == "dd.mm.yyyy"
    filled = PdfReader(io.BytesIO(form.fill({"signed_on": "2025-03-05"}))).get_fields() or {}
    assert filled["signed_on"].get("/V") == "05.03.2025"  # ISO in, the form's format out
    assert Template(rebuilt(flat, [*BASE, SIGNED_ON])).date_format("signed_on") == "mm/dd/yyyy"


def test_same_schema_gives_the_same_bytes(flat: bytes) -> None:
    assert rebuilt(flat, BASE) == rebuilt(flat, copy.deepcopy(BASE))


@pytest.mark.parametrize("empty", [[], {"schema": []}, "[]", '{"fields": []}'])
def test_an_empty_schema_is_refused(flat: bytes, empty: Any) -> None:
    with pytest.raises(SchemaError, match="no entries"):
        convert(flat, schema=empty)


def test_schema_digest_ignores_order_confidence_and_extra_decimals() -> None:
    shuffled = list(reversed(copy.deepcopy(BASE)))
    shuffled[0]["rect"] = [v + 0.0001 for v in shuffled[0]["rect"]]
    shuffled[1]["confidence"] = 0.3
    assert schema_digest(shuffled) == schema_digest(BASE)
    moved = edit(lambda s: entry(s, "city").update(rect=[150, 440, 400, 460]))
    assert schema_digest(moved) != schema_digest(BASE)


# --------------------------------------------------------------------------- bad entries


def _set(target: str, /, **changes: Any) -> Callable[[list[dict[str, Any]]], None]:
    return lambda schema: entry(schema, target).update(changes)


def _drop(name: str, key: str) -> Callable[[list[dict[str, Any]]], None]:
    return lambda schema: entry(schema, name).pop(key)


BAD: list[tuple[str, Callable[[list[dict[str, Any]]], None], tuple[str, ...]]] = [
    ("no name", _drop("email", "name"), ("schema[1]", "needs a 'name'")),
    ("no type", _drop("email", "type"), ("schema[1] ('email')", "needs a 'type'", "checkbox")),
    ("no page", _drop("email", "page"), ("schema[1] ('email')", "needs a 'page'")),
    ("no rect", _drop("email", "rect"), ("schema[1] ('email')", "needs a 'rect'")),
    ("unknown type", _set("email", type="phone"),
     ("schema[1] ('email')", '"phone"', "text, date, checkbox, radio, choice, signature")),
    ("page out of range", _set("email", page=2),
     ("schema[1] ('email')", "page 2", "it has 2 pages")),
    ("negative page", _set("email", page=-1), ("schema[1] ('email')", "page must be")),
    ("three numbers", _set("email", rect=[1, 2, 3]), ("schema[1] ('email')", "4 numbers")),
    ("text in rect", _set("email", rect=[1, 2, "x", 4]), ("schema[1] ('email')", "4 numbers")),
    ("zero size", _set("email", rect=[150, 615, 150, 635]), ("schema[1] ('email')", "no area")),
    ("negative size", _set("email", rect=[450, 615, 150, 635]),
     ("schema[1] ('email')", "x1 > x0")),
    ("off the page", _set("email", rect=[700, 615, 800, 635]),
     ("schema[1] ('email')", "outside page 0", "612")),
    ("duplicate name", _set("email", name="full_name"),
     ("schema[1] ('full_name')", "schema[0] has the same name")),
    ("radio without options", lambda s: entry(s, "plan").pop("widgets"),
     ("schema[4] ('plan')", "needs its options", "widgets")),
    ("radio, options and one rect", lambda s: entry(s, "plan").update(
        widgets=None, options=["a", "b"], rect=[300, 539, 312, 551]),
     ("schema[4] ('plan')", "2 options but has one rect")),
    ("repeated option", lambda s: entry(s, "plan")["widgets"][1].update(export="basic"),
     ("schema[4] ('plan')", "repeat an option")),
    ("options disagree", _set("plan", options=["basic", "platinum"]),
     ("schema[4] ('plan')", "differ")),
    ("widget off the page", lambda s: entry(s, "size")["widgets"][1].update(page=7),
     ("schema[5] ('size')", "widgets[1]", "page 7")),
    ("choice without options", _drop("country", "options"),
     ("schema[6] ('country')", "needs 'options'")),
    ("max_length zero", _set("email", max_length=0), ("schema[1] ('email')", "positive")),
    ("max_length text", _set("email", max_length="9"), ("schema[1] ('email')", "positive")),
    ("comb without length", _set("email", comb=True), ("schema[1] ('email')", "comb")),
    ("flag not boolean", _set("email", required="yes"), ("schema[1] ('email')", "true or false")),
    ("dotted name", _set("email", name="contact.email"), ("schema[1]", "'.'")),
    ("entry not an object", lambda s: s.__setitem__(2, "city"), ("schema[2]", "an object")),
    ("misspelt key", _set("city", multi_line=True),
     ("schema[2] ('city')", "unknown key \"multi_line\"", "did you mean 'multiline'?")),
    ("unknown key", _set("email", colour="red"),
     ("schema[1] ('email')", "unknown key \"colour\"", "an entry takes name, type")),
    ("misspelt widget key", lambda s: entry(s, "plan")["widgets"][0].update(exprot="x"),
     ("schema[4] ('plan')", "widgets[0]", "did you mean 'export'?")),
    ("partly off the page", _set("email", rect=[500, 615, 640, 635]),
     ("schema[1] ('email')", "runs past the edge of page 0", "612")),
    ("below the page", _set("email", rect=[150, -5, 450, 15]),
     ("schema[1] ('email')", "runs past the edge")),
    ("radio of one option", lambda s: entry(s, "plan")["widgets"].pop(),
     ("schema[4] ('plan')", "one option", "checkbox")),
    ("radio entries of one option", lambda s: s.append(
        {"name": "agree", "type": "radio", "page": 0, "rect": [20, 20, 30, 30], "options": ["y"]}),
     ("schema[7] ('agree')", "one option")),
    ("not a date format", lambda s: s.append({**SIGNED_ON, "date_format": "soon"}),
     ("schema[7] ('signed_on')", "not a date format", "mm/dd/yyyy")),
    ("date format on text", _set("email", date_format="mm/dd/yyyy"),
     ("schema[1] ('email')", "date_format is for date fields")),
]  # fmt: skip


@pytest.mark.parametrize("change, needles", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_bad_entry_is_named_with_what_to_do(
    flat: bytes, change: Callable[[list[dict[str, Any]]], None], needles: tuple[str, ...]
) -> None:
    with pytest.raises(SchemaError) as caught:
        convert(flat, schema=edit(change))
    assert caught.value.param == "schema"
    for needle in needles:
        assert needle in caught.value.message, (needle, caught.value.message)


@pytest.mark.parametrize(
    "schema, needle",
    [
        ("{not json", "not valid JSON"),
        (b"\xff\xfe", "UTF-8"),
        ("[" * 100_000 + "]" * 100_000, "not valid JSON"),
        ('{"status": "converted"}', "needs a 'schema' list"),
        ("42", "must be a list of entries"),
        ({"schema": "nope"}, "must be a list of entries"),
        ([{}] * (MAX_WIDGETS + 1), f"at most {MAX_WIDGETS}"),
    ],
    ids=["broken", "not utf-8", "deep", "no schema key", "number", "string", "too many"],
)
def test_input_that_is_no_schema_is_refused(flat: bytes, schema: Any, needle: str) -> None:
    with pytest.raises(SchemaError) as caught:
        convert(flat, schema=schema)
    assert needle in caught.value.message


def test_a_name_the_pdf_already_has_is_refused(flat: bytes) -> None:
    once = rebuilt(flat, BASE[:1])
    with pytest.raises(SchemaError, match=r"schema\[0\] \('full_name'\): the PDF already has"):
        convert(once, schema=BASE[:1])


def test_field_objects_and_inspect_output_are_accepted(flat: bytes) -> None:
    pdf = rebuilt(flat, BASE)
    fields = Template(pdf).fields
    assert all(isinstance(f, Field) for f in fields)
    assert rebuilt(flat, fields) == pdf
    assert rebuilt(flat, {"fields": [f.to_dict() for f in fields]}) == pdf


# --------------------------------------------------------------------------- the command line


@pytest.fixture
def flat_file(tmp_path: Path, flat: bytes) -> Path:
    path = tmp_path / "flat.pdf"
    path.write_bytes(flat)
    return path


def test_cli_builds_from_a_schema_file(flat_file: Path, tmp_path: Path) -> None:
    first = run("convert", flat_file, "-o", tmp_path / "detected.pdf", "--json")
    assert first.returncode == 0, first.stderr
    result = json.loads(first.stdout)
    result["schema"] = [e for e in result["schema"] if e["name"] != "email"]
    result["schema"][0]["name"] = "applicant"
    corrected = tmp_path / "corrected.json"
    corrected.write_text(json.dumps(result))
    out = tmp_path / "out.pdf"
    done = run("convert", flat_file, "--schema", corrected, "-o", out, "--json",
               "--preview", tmp_path / "preview")  # fmt: skip
    assert done.returncode == 0, done.stderr
    names = [e["name"] for e in json.loads(done.stdout)["schema"]]
    assert names == [e["name"] for e in result["schema"]]
    assert [f.name for f in Template(out.read_bytes()).fields] == names
    assert len(list((tmp_path / "preview").glob("*.png"))) == 2
    plain = run("convert", flat_file, "--schema", corrected, "-o", tmp_path / "plain.pdf")
    assert plain.returncode == 0 and "built from" in plain.stdout
    assert (tmp_path / "plain.pdf").read_bytes() == out.read_bytes()


#: The strict rules, each as the JSON a person might save: through the CLI and the service.
STRICT = [
    (json.dumps(edit(_set("city", multi_line=True))),
     ("schema[2] ('city')", 'unknown key "multi_line"', "did you mean 'multiline'?")),
    (json.dumps(edit(_set("email", rect=[500, 615, 640, 635]))),
     ("schema[1] ('email')", "runs past the edge of page 0")),
    ("[]", ("no entries",)),
    (json.dumps(edit(lambda s: entry(s, "plan")["widgets"].pop())),
     ("schema[4] ('plan')", "one option")),
    (json.dumps(edit(_set("email", name="full_name"))),
     ("schema[1] ('full_name')", "same name")),
]  # fmt: skip
STRICT_IDS = ["unknown key", "partly off page", "no entries", "one-option radio", "same name"]


@pytest.mark.parametrize(
    "content, needles",
    [
        (None, ("No such schema file",)),
        ("{not json", ("not valid JSON",)),
        (json.dumps(edit(_set("email", type="phone"))), ("schema[1] ('email')", "phone")),
        (json.dumps(edit(_set("email", page=5))), ("schema[1] ('email')", "it has 2 pages")),
        *STRICT,
    ],
    ids=["missing", "invalid json", "unknown type", "page out of range", *STRICT_IDS],
)
def test_cli_bad_schema_is_one_clean_line_and_no_output(
    flat_file: Path, tmp_path: Path, content: str | None, needles: tuple[str, ...]
) -> None:
    schema = tmp_path / "schema.json"
    if content is not None:
        schema.write_text(content)
    out = tmp_path / "out.pdf"
    done = run("convert", flat_file, "--schema", schema, "-o", out)
    assert_clean_error(done, *needles)
    assert not out.exists()


def test_cli_help_explains_the_schema_option() -> None:
    done = run("convert", "--help")
    assert done.returncode == 0 and "--schema" in done.stdout and "widgets" in done.stdout


# --------------------------------------------------------------------------- the service


def test_service_builds_exactly_the_schema_and_bills_its_pages(server: Server, flat: bytes) -> None:
    key = server.create_key("pro")
    with server.client(key) as client:
        before = pages_used(client)
        response = api_convert(client, flat, schema=json.dumps(BASE), detect="fields_fast")
        assert response.status_code == 200, response.text
        result = response.json()
        assert pages_used(client) == before + 2
        assert result["pages"] == 2 and result["fields"] == len(BASE)
        assert [e["name"] for e in result["schema"]] == [e["name"] for e in BASE]
        assert all(e["confidence"] == 1.0 for e in result["schema"])
        plan = next(e for e in result["schema"] if e["name"] == "plan")
        assert plan["widgets"] == [
            {"export": "basic", "page": 0, "rect": [300.0, 539.0, 312.0, 551.0]},
            {"export": "gold", "page": 0, "rect": [360.0, 539.0, 372.0, 551.0]},
        ]
        pdf = httpx.get(result["document_url"], timeout=60).content
        again = client.get(f"/v1/conversions/{result['conversion_id']}").json()
    assert pdf == convert(flat, schema=BASE).pdf  # the engine's own bytes
    assert again["schema"] == result["schema"]


BAD_REQUESTS = [
    ("{not json", ("not valid JSON",)),
    ("", ("schema is empty",)),
    (json.dumps(edit(_set("email", type="phone"))), ("schema[1] ('email')", "phone")),
    (json.dumps(edit(_set("email", page=3))), ("schema[1] ('email')", "it has 2 pages")),
    (json.dumps(edit(_set("email", rect=[900, 0, 950, 20]))), ("schema[1]", "outside page 0")),
    (json.dumps([{"name": "a", "type": "text", "page": 0, "rect": [0, 0, 1, 1]}] * 2),
     ("schema[1] ('a')", "same name")),
    ("x" * (2 * 1024 * 1024 + 1), ("over 2,097,152 bytes",)),
    *STRICT,
]  # fmt: skip


@pytest.mark.parametrize(
    "schema, needles",
    BAD_REQUESTS,
    ids=["invalid json", "empty", "unknown type", "page", "off page", "duplicate", "too big",
         *STRICT_IDS],
)  # fmt: skip
def test_service_bad_schema_is_400_and_bills_nothing(
    server: Server, flat: bytes, schema: str, needles: tuple[str, ...]
) -> None:
    key = server.create_key("pro")
    with server.client(key) as client:
        error = error_of(api_convert(client, flat, schema=schema), 400, "invalid_request")
        assert error["param"] == "schema"
        for needle in needles:
            assert needle in error["message"], (needle, error["message"])
        assert pages_used(client) == 0


def test_service_schema_conversions_meet_the_quota_like_any_other(
    server: Server, flat: bytes
) -> None:
    """Developer plan: 25 pages. Schema builds are counted and stopped like detections."""
    key = server.create_key("developer")
    one = json.dumps(BASE[:1])
    with server.client(key) as client:
        for pages in (10, 10, 4):
            response = api_convert(client, flat_form(pages), schema=one)
            assert response.status_code == 200, response.text
        assert pages_used(client) == 24
        error_of(api_convert(client, flat, schema=one), 402, "quota_exceeded")
        assert pages_used(client) == 24


def test_service_idempotency_key_covers_the_schema(server: Server, flat: bytes) -> None:
    key = server.create_key("pro")
    other = json.dumps(edit(_set("city", rect=[150, 440, 400, 460])))
    with server.client(key) as client:
        headers = {"Idempotency-Key": "review-1"}
        files = {"file": ("form.pdf", flat, "application/pdf")}
        first = client.post("/v1/convert", files=files, data={"schema": json.dumps(BASE)},
                            headers=headers)  # fmt: skip
        again = client.post("/v1/convert", files=files, data={"schema": json.dumps(BASE)},
                            headers=headers)  # fmt: skip
        assert first.status_code == again.status_code == 200
        assert again.headers.get("idempotent-replayed") == "true"
        assert again.json()["conversion_id"] == first.json()["conversion_id"]
        changed = client.post("/v1/convert", files=files, data={"schema": other}, headers=headers)
        assert error_of(changed, 400, "invalid_request")["param"] == "Idempotency-Key"
        detected = client.post("/v1/convert", files=files, headers=headers)
        assert error_of(detected, 400, "invalid_request")["param"] == "Idempotency-Key"
        assert pages_used(client) == 2


def test_openapi_documents_the_schema_field(server: Server) -> None:
    document = httpx.get(f"{server.base_url}/v1/openapi.json", timeout=30).json()
    body = document["paths"]["/v1/convert"]["post"]["requestBody"]["content"]
    field = body["multipart/form-data"]["schema"]["properties"]["schema"]
    assert field["type"] == "string" and "widgets" in field["description"]
    entry = document["components"]["schemas"]["SchemaEntry"]["properties"]
    assert "widgets" in entry


def test_convert_operator_rebuilds_on_the_service_and_resumes_by_schema(
    server: Server, flat: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = server.create_key("pro")
    conn = {"conn_type": "fillpdf", "host": server.base_url, "password": key}
    monkeypatch.setenv("AIRFLOW_CONN_FILLPDF_DEFAULT", json.dumps(conn))
    source = tmp_path / "form.pdf"
    source.write_bytes(flat)
    out = tmp_path / "out"

    def run_operator(schema: object) -> dict[str, Any]:
        operator = ConvertOperator(task_id="c", pdfs=str(source), output_dir=str(out),
                                   schema=schema)  # fmt: skip
        (result,) = operator.execute(context={})  # type: ignore[arg-type]
        return result

    with server.client(key) as client:
        first = run_operator(BASE)
        assert pages_used(client) == 2
        assert [e["name"] for e in first["schema"]] == [e["name"] for e in BASE]
        assert run_operator(copy.deepcopy(BASE)) == first  # already built from this schema
        assert pages_used(client) == 2
        moved = run_operator(edit(_set("city", rect=[150, 440, 400, 460], page=1)))
        assert pages_used(client) == 4
    (city,) = widgets((out / "form.fillable.pdf").read_bytes())["city"]
    assert city.page == 1 and moved["conversion_id"] != first["conversion_id"]
