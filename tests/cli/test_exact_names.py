"""Every name a form offers round-trips exactly: what ``inspect`` lists, ``fill`` and
``batch`` take as it is, and the filled form holds it.

Real forms name things oddly: a radio button whose on-state ends with a space, an option
holding ``#`` (written ``#23`` inside a PDF name), accents, names longer than a line. For
each kind a form is built with a radio group, a choice field and a text field named that
way; the values come from ``fillpdf inspect --json`` and go back through ``fillpdf fill``
and ``fillpdf batch`` unchanged.
"""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest
from pypdf.generic import NameObject, TextStringObject

from fillpdf_provider.engine import Template
from fillpdf_provider.engine.coerce import coerce_values
from kits import formedit
from kits.cli_support import run
from kits.formkit import Spec, build_form

#: (field name, radio options, choice options) of each kind of odd name.
KINDS: dict[str, tuple[str, list[str], list[str]]] = {
    "spaces": (" Full name ", ["Yes ", " No", " Maybe "], [" a", "b ", " c "]),
    "hash escapes": ("Case#1", ["N/A#1", "#", "50#25"], ["#x", "a#20b", "100%"]),
    "non-ASCII": ("Ärende", ["Müller", "Ørsted", "日本"], ["Ö", "ç", "Ω"]),
    "very long": ("n" * 90, ["y" * 100, "z" * 100], ["c" * 100, "d" * 100]),
}


def odd_form(kind: str) -> bytes:
    text, radio, choice = KINDS[kind]
    return build_form(
        [
            Spec(text, "text", (40, 700, 300, 716)),
            Spec("answer", "radio", (40, 650, 200, 666), options=radio, with_appearance=True),
            Spec("pick", "combo", (40, 600, 300, 616), options=choice),
        ]
    )


def odd_form_file(kind: str, folder: Path) -> Path:
    """``odd_form(kind)`` written to ``folder``, for the CLI."""
    pdf = folder / "form.pdf"
    pdf.write_bytes(odd_form(kind))
    return pdf


def fill(pdf: Path, values: dict[str, str], out: Path) -> subprocess.CompletedProcess[str]:
    """``fillpdf fill`` with ``values`` as its JSON file."""
    path = out.with_name("values.json")
    path.write_text(json.dumps(values), encoding="utf-8")
    return run("fill", pdf, "--values", path, "-o", out)


def inspected(pdf: Path) -> dict[str, dict[str, object]]:
    done = run("inspect", pdf, "--json")
    assert done.returncode == 0, done.stderr
    return {entry["name"]: entry for entry in json.loads(done.stdout)["fields"]}


@pytest.mark.parametrize("kind", KINDS)
def test_inspect_lists_the_names_as_the_form_has_them(kind: str, tmp_path: Path) -> None:
    text, radio, choice = KINDS[kind]
    pdf = odd_form_file(kind, tmp_path)
    fields = inspected(pdf)
    assert set(fields) == {text, "answer", "pick"}
    assert fields["answer"]["options"] == radio
    assert fields["pick"]["options"] == choice


@pytest.mark.parametrize("kind", KINDS)
def test_fill_takes_every_option_inspect_offers(kind: str, tmp_path: Path) -> None:
    text, radio, choice = KINDS[kind]
    pdf = odd_form_file(kind, tmp_path)
    fields = inspected(pdf)
    for radio_option, choice_option in zip(radio, choice, strict=False):
        out = tmp_path / "filled.pdf"
        done = fill(pdf, {text: "Ada", "answer": radio_option, "pick": choice_option}, out)
        assert done.returncode == 0, (radio_option, done.stderr)
        stored = formedit.stored_values(out.read_bytes())
        assert stored["answer"] == NameObject("/" + radio_option)
        assert stored["pick"] == TextStringObject(choice_option)
        assert stored[text] == "Ada"
        (kid,) = [i for i, o in enumerate(fields["answer"]["options"]) if o == radio_option]
        on = ["Off"] * len(radio)
        on[kid] = radio_option
        assert formedit.states(out.read_bytes(), "answer") == on


@pytest.mark.parametrize("kind", KINDS)
def test_batch_takes_every_option_from_a_csv(kind: str, tmp_path: Path) -> None:
    text, radio, choice = KINDS[kind]
    pdf = odd_form_file(kind, tmp_path)
    rows = tmp_path / "rows.csv"
    with rows.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL)  # a cell keeps its spaces
        writer.writerow([text, "answer", "pick"])
        writer.writerows(
            [f"row {i}", r, c] for i, (r, c) in enumerate(zip(radio, choice, strict=False))
        )
    out = tmp_path / "out"
    done = run("batch", pdf, rows, "--out-dir", out, "--name-template", "{row}.pdf")
    assert done.returncode == 0, done.stderr
    for i, (radio_option, choice_option) in enumerate(zip(radio, choice, strict=False)):
        stored = formedit.stored_values((out / f"{i + 1}.pdf").read_bytes())
        assert stored["answer"] == NameObject("/" + radio_option), i
        assert stored["pick"] == TextStringObject(choice_option), i


def test_a_value_that_is_an_option_but_for_spaces_still_fills() -> None:
    """A hand-typed cell may lose a trailing space: the one option it names is chosen."""
    form = Template(odd_form("spaces"))
    values = coerce_values({f.name: f for f in form.fields}, {"answer": "yes", "pick": "b"})
    stored = formedit.stored_values(form.fill(values))
    assert (stored["answer"], stored["pick"]) == (NameObject("/Yes "), TextStringObject("b "))


def test_a_value_two_options_could_be_is_refused_naming_both(tmp_path: Path) -> None:
    pdf = tmp_path / "form.pdf"
    pdf.write_bytes(
        build_form(
            [Spec("answer", "radio", (40, 650, 200, 666), options=["Yes", "Yes "],
                  with_appearance=True)]
        )
    )  # fmt: skip
    for exact in ("Yes", "Yes "):
        done = fill(pdf, {"answer": exact}, tmp_path / "o.pdf")
        assert done.returncode == 0, done.stderr
        assert formedit.stored_values((tmp_path / "o.pdf").read_bytes())["answer"] == (
            NameObject("/" + exact)
        )
    done = fill(pdf, {"answer": " yes"}, tmp_path / "o.pdf")
    assert done.returncode == 1
    assert "could be any of 'Yes', 'Yes '" in done.stderr
