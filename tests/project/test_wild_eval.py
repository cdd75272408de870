"""Self-tests of ``benchmarks/wild_eval.py``: its measure must see a fill, and must be able to fail.

Three forms of ``../shared/corpus/wild/forms`` (text, multiline, list, combo, checkbox and radio
fields; radio ``/Opt`` export values; a light mark on a dark radio button). Runs in the normal
environment: the harness imports PyMuPDF and pikepdf only for their fillers and the qpdf check.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

wild_eval = pytest.importorskip(
    "benchmarks.wild_eval", reason="the harness needs pypdf, pdfplumber and pypdfium2"
)

FORMS = ("pdfbox__acroform.pdf", "pdf.js__opt_demo.pdf", "pdfium__click_form.pdf")


def wild_forms() -> list[Path]:
    """The three forms, or a skip when the corpus is not checked out next to the repository."""
    folder = wild_eval.DEFAULT_FORMS
    paths = [folder / name for name in FORMS]
    missing = [p.name for p in paths if not p.exists()]
    if missing:
        pytest.skip(f"{folder} lacks {', '.join(missing)}: the wild forms live in ../shared")
    return paths


def run(filler: Any) -> list[Any]:
    """The harness's measure for ``filler`` on the three forms."""
    results = []
    for path in wild_forms():
        results.extend(wild_eval.evaluate_form(path, [filler]))
    return results


def seen(results: Sequence[Any], bucket: str) -> tuple[int, int]:
    """``(values seen, values checked)`` of ``bucket`` over all results."""
    return (
        sum(r.seen.get(bucket, 0) for r in results),
        sum(r.totals.get(bucket, 0) for r in results),
    )


def untouched(template: bytes, values: dict[str, Any]) -> bytes:
    """A filler that fills nothing: the template back."""
    return template


def all_buttons_on(template: bytes, values: dict[str, Any]) -> bytes:
    """A careless filler: every checkbox and radio button shows its on-state."""
    from pypdf import PdfWriter
    from pypdf.generic import NameObject

    writer = PdfWriter(clone_from=wild_eval.vc.open_pdf(template))
    for page in writer.pages:
        for ref in page.get("/Annots") or []:
            annot = ref.get_object()
            ap = annot.get("/AP")
            normal = ap.get_object().get("/N") if ap is not None else None
            states = [k for k in (normal.get_object() if normal is not None else {}) if k != "/Off"]
            if annot.get("/Subtype") == "/Widget" and states:
                annot[NameObject("/AS")] = NameObject(states[0])
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_ours_fills_the_forms_and_is_measured() -> None:
    """Our engine fills all three forms with the values its own inspect offers."""
    results = run(wild_eval.FILLERS["ours"])
    assert [r.refused for r in results] == [None, None, None]
    for bucket in ("text", "choice", "buttons"):
        assert seen(results, bucket)[1] > 0, bucket
    assert not [f for r in results for f in r.failures if "inspect" in f.reason]


def test_an_untouched_form_scores_nothing() -> None:
    """The template itself shows none of the values: the check can fail.

    Every option is picked unlike what the form already holds, so only a checkbox the form
    already ticks may count.
    """
    filler = wild_eval.Filler(
        "untouched", "untouched", "pypdf", wild_eval.reference_plan("names"), untouched
    )
    results = run(filler)
    assert all(r.refused is None for r in results)
    assert seen(results, "text")[0] == 0
    assert seen(results, "choice")[0] == 0
    buttons_seen, buttons = seen(results, "buttons")
    assert buttons >= 6 and buttons_seen <= 1
    reasons = [f.reason for r in results for f in r.failures]
    assert any(reason.startswith("not visible") for reason in reasons)
    assert any("shows no ink" in reason for reason in reasons)


def test_every_button_on_is_the_wrong_state() -> None:
    """A radio group with every button lit fails: the other buttons must stay off."""
    filler = wild_eval.Filler(
        "all-on", "all buttons on", "pypdf", wild_eval.reference_plan("names"), all_buttons_on
    )
    failures = [f for r in run(filler) for f in r.failures if f.kind == "radio"]
    assert {f.field for f in failures} >= {"GroupOption", "fruit", "radioButton"}
    assert all("wrong button state" in f.reason for f in failures)


def test_a_refusal_counts_every_value_as_not_visible() -> None:
    """A filler that raises is reported with its exception, and sees nothing."""

    def refuse(template: bytes, values: dict[str, Any]) -> bytes:
        raise ValueError("no thanks\nsecond line")

    filler = wild_eval.Filler(
        "refuse", "refuse", "pypdf", wild_eval.reference_plan("names"), refuse
    )
    results = run(filler)
    assert {r.refused for r in results} == {"ValueError: no thanks"}
    summary = wild_eval.summarize([wild_eval.asdict(r) for r in results])
    assert summary["refused"] == 3
    assert summary["text"]["pct"] == 0.0 and summary["buttons"]["pct"] == 0.0
    assert wild_eval.gate_failures(summary)


@pytest.mark.parametrize(
    ("seen", "expected", "counts"),
    [
        ("Bachelorof", ["Bachelor of Science"], True),  # the start, cut at the edge
        ("B", ["Bachelor of Science"], True),  # a narrow box shows little
        ("", ["Bachelor of Science"], False),  # nothing drawn
        ("Science", ["Bachelor of Science"], False),  # not its start
        ("BachelorofScience", ["Bachelor of Science"], False),  # whole: no cut to excuse
    ],
)
def test_a_combo_value_cut_at_the_box_edge_counts_as_shown(
    seen: str, expected: list[str], counts: bool
) -> None:
    assert wild_eval.cut_at_edge(seen, expected) is counts
