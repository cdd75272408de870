"""One coercion rule for ``fill`` and ``batch``: what a cell or a JSON value may say."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from fillpdf_provider.engine import FieldValueError, Template, UnknownFieldError
from fillpdf_provider.engine.batch import fill_rows
from fillpdf_provider.engine.coerce import FALSE_WORDS, TRUE_WORDS, coerce_values
from kits import formedit
from kits.cli_support import ROOT, run

SAMPLE_FORM = ROOT / "include" / "sample_form.pdf"


@pytest.fixture(scope="module")
def template() -> Template:
    return Template.open(SAMPLE_FORM)


def _schema(template: Template) -> tuple[dict[str, object], dict[str, str | None]]:
    fields = {f.name: f for f in template.fields}
    dates = {n: template.date_format(n) for n, f in fields.items() if f.type == "date"}
    return fields, dates


@pytest.mark.parametrize("word", [*sorted(TRUE_WORDS), "YES", " Yes ", "On", 1, 1.0, True])
def test_every_true_word_checks_a_checkbox(template: Template, word: object) -> None:
    fields, dates = _schema(template)
    values = coerce_values(fields, {"newsletter": word}, dates)  # type: ignore[arg-type]
    assert values == {"newsletter": True}
    assert formedit.stored_values(template.fill(values))["newsletter"] == "/Yes"


@pytest.mark.parametrize("word", [*sorted(FALSE_WORDS - {""}), "NO", "Off", 0, 0.0, False])
def test_every_false_word_clears_a_checkbox(template: Template, word: object) -> None:
    fields, dates = _schema(template)
    values = coerce_values(fields, {"newsletter": word}, dates)  # type: ignore[arg-type]
    assert values == {"newsletter": False}
    template.fill(values)


def test_the_rule_for_other_types(template: Template) -> None:
    fields, dates = _schema(template)
    given = {
        "zip": 2134,  # a JSON number for a text field
        "plan": "premium",  # an option in another case
        "country": "germany",
        "photo_consent": "",  # empty: the field is left alone
        "notes": None,
    }
    assert coerce_values(fields, given, dates) == {  # type: ignore[arg-type]
        "zip": "2134",
        "plan": "Premium",
        "country": "Germany",
    }


def test_what_the_rule_refuses(template: Template) -> None:
    fields, dates = _schema(template)
    with pytest.raises(FieldValueError, match="not a checkbox value"):
        coerce_values(fields, {"newsletter": "maybe"}, dates)  # type: ignore[arg-type]
    with pytest.raises(FieldValueError, match="not one of the options"):
        coerce_values(fields, {"plan": "Gold"}, dates)  # type: ignore[arg-type]
    # names the form lacks, and lists, are left for the fill to refuse with its own message
    passed = coerce_values(fields, {"ful_name": "x", "notes": ["a"]}, dates)  # type: ignore[arg-type]
    assert passed == {"ful_name": "x", "notes": ["a"]}
    with pytest.raises(UnknownFieldError, match="full_name"):
        template.fill(passed)
    with pytest.raises(FieldValueError, match="takes a string"):
        template.fill({"notes": ["a"]})


def test_batch_fills_what_the_rule_gives(template: Template, tmp_path: Path) -> None:
    """A batch row and ``Template.fill(coerce_values(row))`` give the same bytes."""
    row = {"full_name": "Ada", "newsletter": "yes", "photo_consent": "x", "plan": "basic"}
    with (tmp_path / "rows.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(row))
        writer.writeheader()
        writer.writerow(row)
    summary = fill_rows(template, tmp_path / "rows.csv", tmp_path / "out")
    assert summary.ok == 1, summary.errors
    fields, dates = _schema(template)
    expected = template.fill(coerce_values(fields, row, dates))  # type: ignore[arg-type]
    assert (tmp_path / "out" / "1.pdf").read_bytes() == expected


def test_cli_fill_takes_what_batch_takes(tmp_path: Path) -> None:
    values = {"full_name": "Ada", "newsletter": "yes", "photo_consent": "0", "plan": "premium"}
    (tmp_path / "v.json").write_text(json.dumps(values), encoding="utf-8")
    out = tmp_path / "out.pdf"
    done = run("fill", SAMPLE_FORM, "--values", tmp_path / "v.json", "-o", out)
    assert done.returncode == 0, done.stderr
    stored = formedit.stored_values(out.read_bytes())
    assert stored["newsletter"] == "/Yes"
    assert stored["plan"] == "/Premium"


def test_cli_fill_still_refuses_a_word_no_rule_reads(tmp_path: Path) -> None:
    (tmp_path / "v.json").write_text('{"newsletter": "maybe"}', encoding="utf-8")
    done = run("fill", SAMPLE_FORM, "--values", tmp_path / "v.json", "-o", tmp_path / "o.pdf")
    assert done.returncode == 1 and "'newsletter'" in done.stderr
    assert not (tmp_path / "o.pdf").exists()
