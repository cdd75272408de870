"""The spellings a table uses for yes and no, on every path.

A flat form with a Yes/No grid (two questions) and a tick box is converted, by the engine and
by the service, into radio groups with the options ``yes``/``no`` and a checkbox. Five rows
spell the same answers five ways; every path (``fillpdf fill``, ``fillpdf batch``, the input
check, ``FillOperator``, ``/v1/fill`` by ``conversion_id`` and by ``pdf_base64``) accepts them,
turns on the same buttons, and gives byte-identical PDFs."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fillpdf_provider.engine import FieldValueError, Template
from fillpdf_provider.engine.convert import convert
from kits import viewcheck
from kits.cli_support import run
from kits.flatkit import FlatPage, Rect, one_page
from kits.servicekit import Server, start_server
from kits.tables import write_csv

QUESTIONS = ["Do you smoke?", "Are you over 65?"]
#: Each row: the first question's answer, the second's, the tick box: yes, no, ticked.
SPELLINGS = [
    ("Yes", "No", "X"),
    ("Y", "N", "yes"),
    ("true", "false", "true"),
    ("yes", "no", "Yes"),
    ("YES", "n", "1"),
]
NAMES = ("do_you_smoke", "are_you_over_65", "i_agree_to_the_terms")


def yes_no_form() -> tuple[bytes, list[list[Rect]], Rect]:
    """The flat form, the squares of its grid (a row per question) and its tick box."""
    page = FlatPage()
    page.text(72, 740, "Health questions", size=14)
    page.text(400, 714, "Yes")
    page.text(440, 714, "No")
    squares = []
    for row, question in enumerate(QUESTIONS):
        y = 700 - 20 * row
        page.text(72, y, question)
        squares.append([(402 + 40 * n, y - 1, 412 + 40 * n, y + 9) for n in range(2)])
        for square in squares[-1]:
            page.box(square)
    tick: Rect = (72, 600, 82, 610)
    page.box(tick)
    page.text(88, 601, "I agree to the terms")
    return one_page(page), squares, tick


@pytest.fixture(scope="module")
def flat() -> tuple[bytes, list[list[Rect]], Rect]:
    return yes_no_form()


@pytest.fixture(scope="module")
def fillable(flat: tuple[bytes, list[list[Rect]], Rect]) -> bytes:
    pdf = convert(flat[0]).pdf
    fields = {f.name: f for f in Template(pdf).fields}
    assert sorted(fields) == sorted(NAMES), sorted(fields)
    assert fields["do_you_smoke"].options == ("yes", "no")
    assert fields["are_you_over_65"].options == ("yes", "no")
    assert fields["i_agree_to_the_terms"].type == "checkbox"
    return pdf


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(tmp_path_factory.mktemp("yes-no"))
    yield running
    running.stop()


def as_values(spelling: tuple[str, str, str]) -> dict[str, str]:
    return dict(zip(NAMES, spelling, strict=True))


def test_every_path_reads_every_spelling_alike(
    flat: tuple[bytes, list[list[Rect]], Rect],
    fillable: bytes,
    service: Server,
    tmp_path: Path,
) -> None:
    form = tmp_path / "form.pdf"
    form.write_bytes(fillable)
    outputs: dict[str, bytes] = {}

    for n, spelling in enumerate(SPELLINGS):
        values = tmp_path / f"values-{n}.json"
        values.write_text(json.dumps(as_values(spelling)), encoding="utf-8")
        out = tmp_path / f"fill-{n}.pdf"
        done = run("fill", form, "--values", values, "-o", out)
        assert done.returncode == 0, done.stderr
        outputs[f"fillpdf fill {spelling}"] = out.read_bytes()

    rows = write_csv(tmp_path / "rows.csv", [as_values(s) for s in SPELLINGS])
    done = run("batch", form, rows, "--out-dir", tmp_path / "batch", "--no-progress")
    assert done.returncode == 0, done.stderr
    for n, spelling in enumerate(SPELLINGS, start=1):
        outputs[f"fillpdf batch {spelling}"] = (tmp_path / "batch" / f"{n}.pdf").read_bytes()

    key = service.create_key("pro")
    with service.client(key) as client:
        converted = client.post("/v1/convert", files={"file": ("flat.pdf", flat[0])})
        assert converted.status_code == 200, converted.text
        conversion_id = converted.json()["conversion_id"]
        fields = converted.json()["schema"]
        assert client.get(converted.json()["document_url"]).content == fillable
        inline = {"pdf_base64": base64.b64encode(fillable).decode(), "fields": fields}
        for spelling in SPELLINGS:
            for path, body in (("conversion_id", {"conversion_id": conversion_id}),
                               ("pdf_base64", inline)):  # fmt: skip
                answer = client.post("/v1/fill", json={**body, "values": as_values(spelling)})
                assert answer.status_code == 200, answer.text
                outputs[f"/v1/fill by {path} {spelling}"] = answer.content

    reference = Template(fillable).fill({NAMES[0]: "yes", NAMES[1]: "no", NAMES[2]: True})
    different = [name for name, pdf in outputs.items() if pdf != reference]
    assert not different, f"not byte-identical to the fill with the options: {different}"
    assert len(outputs) == 4 * len(SPELLINGS)

    # what a person sees: Yes for the first question, No for the second, the box ticked
    _, squares, tick = flat
    shown = viewcheck.flatten_with_pdfium(reference, drop_page_content=True)
    with viewcheck.Raster(shown) as raster:
        on = [[raster.ink(0, square) > 20 for square in row] for row in squares]
        ticked = raster.ink(0, tick) > 20
    assert on == [[True, False], [False, True]] and ticked


def test_the_input_check_and_the_operator_take_them_too(fillable: bytes, tmp_path: Path) -> None:
    from fillpdf_provider.operators import FillOperator
    from fillpdf_provider.quality.checks import input_rows_check

    rows = write_csv(tmp_path / "rows.csv", [as_values(s) for s in SPELLINGS])
    report = input_rows_check(rows, Template(fillable))
    assert not report.failures, report.failures
    bad = write_csv(tmp_path / "bad.csv", [as_values(("maybe", "No", "X"))])
    assert [f.column for f in input_rows_check(bad, Template(fillable)).failures] == [NAMES[0]]

    form = tmp_path / "form.pdf"
    form.write_bytes(fillable)
    reference = Template(fillable).fill({NAMES[0]: "yes", NAMES[1]: "no", NAMES[2]: True})
    for n, spelling in enumerate(SPELLINGS):
        out = tmp_path / f"op-{n}.pdf"
        FillOperator(
            task_id="fill", template=str(form), values=as_values(spelling), output_path=str(out)
        ).execute({})  # type: ignore[arg-type]
        assert out.read_bytes() == reference, spelling


@pytest.mark.parametrize(
    ("values", "needles"),
    [
        ({NAMES[0]: "maybe"}, ("Field 'do_you_smoke': 'maybe' is not one of the options: "
                               "'yes', 'no'", "true, yes, y, on, 1, x or checked choose 'yes'",
                               "false, no, n, off or 0 'no'")),
        ({NAMES[2]: "perhaps"}, ("Field 'i_agree_to_the_terms': 'perhaps' is not a checkbox "
                                 "value", "true, yes, y, on, 1, x or checked tick it")),
        ({NAMES[2]: 2}, ("2 (an int) is not a checkbox value",)),
    ],
)  # fmt: skip
def test_anything_else_names_the_field_the_value_and_the_spellings(
    fillable: bytes, values: dict[str, object], needles: tuple[str, ...]
) -> None:
    with pytest.raises(FieldValueError) as raised:
        Template(fillable).fill(values)
    for needle in needles:
        assert needle in str(raised.value), str(raised.value)


def test_the_api_answers_anything_else_with_a_400_naming_it(
    fillable: bytes, service: Server
) -> None:
    key = service.create_key("pro")
    inline = {
        "pdf_base64": base64.b64encode(fillable).decode(),
        "fields": [f.to_dict() for f in Template(fillable).fields],
    }
    with service.client(key) as client:
        answer = client.post("/v1/fill", json={**inline, "values": {NAMES[1]: "nope"}})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["param"] == NAMES[1]
    assert "'nope' is not one of the options: 'yes', 'no'" in error["message"]
    assert "choose 'yes'" in error["message"]
