"""The detection benchmark's own pieces, on small forms built with formkit (no corpus needed).

``benchmarks/detect_eval.py`` scores the converter against real forms; if its flattening,
ground truth, matching or arithmetic were wrong, every figure it prints would be too.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from pypdf import PdfReader
from pypdf.generic import NumberObject

from benchmarks.detect_eval import (
    COMB_KEY,
    Match,
    Score,
    StandIn,
    WidgetBox,
    acceptance,
    comb_cells,
    comb_score,
    debug_report,
    draw_pages,
    duplicate_names,
    evaluate_form,
    excluded_widgets,
    generic_name,
    generic_name_stats,
    ground_truth,
    inked,
    iou,
    iou_matrix,
    label_name_stats,
    main,
    match,
    name_from_label,
    output_widgets,
    overall,
    score,
    text_runs,
)
from fillpdf_provider.engine.schema import Field
from kits.flatkit import FlatPage, one_page
from kits.flatten import flatten_form
from kits.formedit import add_date_script, add_link, hoist, set_entries
from kits.formkit import Spec, build_form, sample_form

FF_PUSHBUTTON = 1 << 16
F_NOVIEW = 1 << 5


def _box(x: float, y: float, w: float = 100, h: float = 16) -> tuple[float, float, float, float]:
    return (x, y, x + w, y + h)


def _w(rect: tuple[float, float, float, float], cls: str = "text", page: int = 0) -> WidgetBox:
    return WidgetBox(page, rect, cls)


@pytest.fixture(scope="module")
def typed_form() -> bytes:
    """Every class, every exclusion, an inherited /FT and a link annotation."""
    specs = [
        Spec("name", "text", _box(40, 700), label="Name"),
        Spec("ids.zip", "text", _box(200, 700), label="ZIP", comb=5),
        Spec("dob", "text", _box(360, 700), label="Date of birth"),
        Spec("agree", "checkbox", _box(40, 650, 12, 12), label="I agree"),
        Spec("plan", "radio", _box(40, 600, 200, 12), label="Plan", options=["a", "b", "c"]),
        Spec("country", "combo", _box(300, 600), label="Country", options=["X", "Y"]),
        Spec("langs", "listbox", _box(300, 520, 100, 60), label="Languages", options=["X"]),
        Spec("sig", "signature", _box(40, 450, 200, 30), label="Signature"),
        Spec("secret", "text", _box(40, 400), hidden=True),
        Spec("noview", "text", _box(200, 400)),
        Spec("push", "checkbox", _box(360, 400, 12, 12)),
        Spec("parked", "text", (700.0, 100.0, 800.0, 116.0)),
        Spec("flat", "text", (40.0, 300.0, 140.0, 300.0)),
    ]
    pdf = build_form(specs, title="Typed")
    pdf = add_date_script(pdf, "dob", "mm/dd/yyyy")
    pdf = hoist(pdf, "ids.zip", ("/FT", "/Ff"))
    pdf = set_entries(pdf, "noview", {"/F": NumberObject(4 | F_NOVIEW)}, on_field=False)
    pdf = set_entries(pdf, "push", {"/Ff": NumberObject(FF_PUSHBUTTON)})
    return add_link(pdf, (400, 50, 500, 70))


# --------------------------------------------------------------------------- flatten, truth


def test_flatten_removes_widgets_and_form_but_keeps_links(typed_form: bytes) -> None:
    flat = flatten_form(typed_form)
    reader = PdfReader(io.BytesIO(flat))
    assert "/AcroForm" not in reader.trailer["/Root"]
    subtypes = [a.get_object()["/Subtype"] for p in reader.pages for a in p.get("/Annots", [])]
    assert subtypes == ["/Link"]
    assert len(reader.pages) == len(PdfReader(io.BytesIO(typed_form)).pages)
    assert ground_truth(flat) == [] and output_widgets(flat) == []
    # the page still prints its labels
    assert "Date of birth" in reader.pages[0].extract_text()


def test_flatten_drops_annots_entry_when_only_widgets() -> None:
    pdf, _ = sample_form()
    reader = PdfReader(io.BytesIO(flatten_form(pdf)))
    assert all("/Annots" not in page for page in reader.pages)


def test_ground_truth_classes(typed_form: bytes) -> None:
    truth = {w.name: w for w in ground_truth(typed_form)}
    assert {name: w.cls for name, w in truth.items() if name != "plan"} == {
        "name": "text",
        "ids.zip": "comb",  # /FT and /Ff inherited from the parent
        "dob": "date",  # AFDate_ scripts
        "agree": "checkbox",
        "country": "choice",
        "langs": "choice",
        "sig": "signature",
    }
    radios = [w for w in ground_truth(typed_form) if w.name == "plan"]
    assert [w.cls for w in radios] == ["radio"] * 3  # every kid is one widget
    assert truth["name"].rect == (40, 700, 140, 716)
    assert truth["name"].page == 0
    # a comb knows its cells (/MaxLen), other fields have none
    assert truth["ids.zip"].max_length == 5
    assert {w.max_length for name, w in truth.items() if name != "ids.zip"} == {None}


def test_ground_truth_exclusions(typed_form: bytes) -> None:
    assert excluded_widgets(typed_form) == {
        "hidden": 2,
        "pushbutton": 1,
        "off page": 1,
        "zero area": 1,
    }
    # the converter's output keeps what it wrote, except pushbuttons
    names = {w.name for w in output_widgets(typed_form)}
    assert {"secret", "noview", "parked", "flat"} <= names
    assert "push" not in names


# --------------------------------------------------------------------------- matching


def test_iou() -> None:
    a = _box(0, 0, 100, 20)
    assert iou(a, a) == 1.0
    assert iou(a, _box(20, 0, 100, 20)) == pytest.approx(1600 / 2400)
    assert iou(a, _box(200, 0)) == 0.0
    assert iou(a, (10, 10, 10, 15)) == 0.0  # zero area
    rects = [a, _box(20, 0, 100, 20), _box(200, 0)]
    matrix = iou_matrix(rects, rects[::-1])
    for i, r in enumerate(rects):
        for j, s in enumerate(rects[::-1]):
            assert matrix[i, j] == pytest.approx(iou(r, s))
    assert iou_matrix([], rects).shape == (0, 3)


def test_match_perfect() -> None:
    gt = [_w(_box(40, 700 - 30 * i)) for i in range(5)] + [_w(_box(40, 700), page=1)]
    matches = match(gt, list(reversed(gt)))
    assert [(m.gt, m.det) for m in matches] == [(i, 5 - i) for i in range(6)]
    assert all(m.iou == 1.0 for m in matches)


def test_match_shifted() -> None:
    gt = [_w(_box(0, 0, 100, 20))]
    assert match(gt, [_w(_box(20, 0, 100, 20))]) == [Match(0, 0, pytest.approx(2 / 3))]
    assert match(gt, [_w(_box(40, 0, 100, 20))]) == []  # IoU 0.43
    assert match(gt, [_w(_box(0, 0, 100, 20), page=1)]) == []  # same rect, other page


def test_match_missing_and_extra() -> None:
    gt = [_w(_box(40, 700 - 30 * i)) for i in range(4)]
    missing = match(gt, gt[:3])
    assert [m.gt for m in missing] == [0, 1, 2]
    extra = [*gt, _w(_box(300, 100)), _w(_box(41, 700))]  # a stray box and a duplicate
    found = match(gt, extra)
    assert [(m.gt, m.det) for m in found] == [(0, 0), (1, 1), (2, 2), (3, 3)]


def test_match_is_optimal_not_greedy() -> None:
    a, b = _w((0, 0, 10, 10)), _w((3, 0, 13, 10))
    x, y = _w((1, 0, 11, 10)), _w((0, 0, 8, 10))
    # greedy takes a~x (0.82) and leaves y (0.38 with b) unmatched
    assert {(m.gt, m.det) for m in match([a, b], [x, y])} == {(0, 1), (1, 0)}


# --------------------------------------------------------------------------- comb cells


def _comb(x: float, y: float, n: int = 5, cell: float = 20, h: float = 16) -> WidgetBox:
    return WidgetBox(0, (x, y, x + n * cell, y + h), "comb", "comb", None, n)


def _row(x: float, y: float, n: int = 5, cell: float = 20, h: float = 16) -> list[WidgetBox]:
    return [_w((x + k * cell, y, x + (k + 1) * cell, y + h)) for k in range(n)]


def test_comb_cells_split_a_comb_along_its_long_side() -> None:
    cells, owner = comb_cells([_w(_box(0, 0)), _comb(100, 700)])
    assert [c.rect for c in cells[1:]] == [(100 + 20 * k, 700, 120 + 20 * k, 716) for k in range(5)]
    assert owner == [0, 1, 1, 1, 1, 1] and cells[0] == _w(_box(0, 0))
    assert {c.cls for c in cells[1:]} == {"comb"}
    upright = WidgetBox(0, (0, 0, 16, 60), "comb", max_length=3)  # turned a quarter
    assert [c.rect for c in comb_cells([upright])[0]] == [
        (0, 40, 16, 60),
        (0, 20, 16, 40),
        (0, 0, 16, 20),
    ]
    # no /MaxLen, or one cell: nothing to split
    whole = [WidgetBox(0, _box(0, 0), "comb"), WidgetBox(0, _box(0, 50), "comb", max_length=1)]
    assert comb_cells(whole) == (whole, [0, 1])


def test_a_comb_and_a_row_of_boxes_are_the_same_field() -> None:
    """Either way round, n cells give n matches; a comb found as a comb is one match, and
    the plain matching (a comb is one widget) is what it always was."""
    comb, row = [_comb(100, 700)], _row(100, 700)
    for gt, det in ((comb, row), (row, comb)):
        cells = comb_score(gt, det)
        assert (cells.n_gt, cells.n_det, cells.tp, cells.f1) == (5, 5, 5, 1.0)
    cells = comb_score(comb, [_comb(101, 700)])
    assert (cells.n_gt, cells.n_det, cells.tp, cells.f1) == (1, 1, 1, 1.0)
    # four of five boxes found: four matches of five cells, not one comb missed
    cells = comb_score(comb, row[:4])
    assert (cells.n_gt, cells.n_det, cells.tp) == (5, 4, 4)
    # one box on one cell is no row: the comb stays whole and unmatched
    cells = comb_score(comb, row[:1])
    assert (cells.n_gt, cells.n_det, cells.tp) == (1, 1, 0)
    # plain: a comb over five boxes matches none of them (IoU 1/5 each)
    assert match(comb, row) == [] and score(comb, row, []).f1 == 0.0
    assert [(m.gt, m.det) for m in match(comb, [_comb(101, 700)])] == [(0, 0)]
    # a comb over the same rectangle with three times the cells: the same box, one match
    assert comb_score(comb, [_comb(100, 700, n=15, cell=20 / 3)]).tp == 1
    # a class of the same group counts in the class-aware figure
    assert comb_score(comb, row).tp_class == 5


def test_one_plain_box_over_a_comb_is_matched_whole() -> None:
    comb = [_comb(100, 700)]
    box = [_w((100, 700, 200, 716))]  # the comb's whole rectangle, as one text field
    plain = score(comb, box, match(comb, box))
    assert (plain.n_gt, plain.n_det, plain.tp) == (1, 1, 1)  # unchanged
    for gt, det in ((comb, box), (box, comb)):
        cells = comb_score(gt, det)
        assert (cells.n_gt, cells.n_det, cells.tp) == (1, 1, 1)
    pair = [_comb(100, 700, n=2)]  # one of two cells has IoU 0.5 with the whole box
    box = [_w((100, 700, 140, 716))]
    assert (comb_score(pair, box).n_gt, comb_score(pair, box).tp) == (1, 1)


def test_comb_cells_keep_the_ignore_rule_and_their_class() -> None:
    gt = [_comb(100, 700), _w(_box(100, 600), "checkbox")]
    det = [*_row(100, 700), _w(_box(100, 600), "checkbox")]
    cells = comb_score(gt, det, ignored=[True, False])
    # the comb's five cells leave recall, and the boxes on them count neither way
    assert (cells.n_gt, cells.n_det, cells.tp) == (1, 1, 1)
    assert cells.by_class == {"checkbox": [1, 1, 1]}
    counted = comb_score(gt, det)
    assert counted.by_class == {"comb": [5, 5, 5], "checkbox": [1, 1, 1]}


# --------------------------------------------------------------------------- arithmetic


def test_score_arithmetic() -> None:
    rects = [_box(40, 700 - 40 * i) for i in range(6)]
    gt = [
        _w(rects[0], "text"),
        _w(rects[1], "date"),
        _w(rects[2], "checkbox"),
        _w(rects[3], "radio"),
        _w(rects[4], "signature"),
    ]
    det = [
        _w(rects[0], "comb"),  # same group as text
        _w(rects[1], "checkbox"),  # wrong group
        _w(rects[2], "radio"),  # same group
        _w(rects[4], "signature"),
        _w(rects[5], "text"),  # false positive
    ]
    result = score(gt, det, match(gt, det))
    assert (result.n_gt, result.n_det, result.tp, result.tp_class) == (5, 5, 4, 3)
    assert result.precision == 0.8 and result.recall == 0.8 and result.f1 == 0.8
    assert result.class_f1 == pytest.approx(0.6)
    assert result.button_recall == 0.5
    assert result.by_class == {
        "text": [1, 1, 1],
        "date": [1, 1, 0],
        "checkbox": [1, 1, 1],
        "radio": [1, 0, 0],
        "signature": [1, 1, 1],
    }
    # micro-average: counts add up, ratios are recomputed
    other = Score(n_gt=5, n_det=0, tp=0, tp_class=0, by_class={"radio": [5, 0, 0]})
    total = result + other
    assert (total.n_gt, total.n_det, total.tp) == (10, 5, 4)
    assert total.f1 == pytest.approx(8 / 15)
    assert total.button_recall == pytest.approx(1 / 7)
    assert Score.from_dict(total.to_dict()) == total


def test_score_ignore_regions() -> None:
    """A widget over blank paper leaves recall; a detection on it is neither right nor wrong."""
    rects = [_box(40, 700 - 40 * i) for i in range(4)]
    gt = [_w(rects[0]), _w(rects[1], "checkbox"), _w(rects[2])]
    det = [_w(rects[0]), _w(rects[1], "checkbox"), _w(rects[3])]
    ignored = [False, True, True]
    result = score(gt, det, match(gt, det), ignored=ignored)
    # gt: only the first counts; det: the one on the ignored checkbox does not count
    assert (result.n_gt, result.n_det, result.tp, result.tp_class) == (1, 2, 1, 1)
    assert result.by_class == {"text": [1, 1, 1]}
    assert result.button_recall is None
    assert score(gt, det, match(gt, det)) == score(gt, det, match(gt, det), [False] * 3)


def test_score_edge_cases() -> None:
    gt = [_w(_box(0, 0))]
    nothing = score(gt, [], [])
    assert nothing.precision is None and nothing.recall == 0.0 and nothing.f1 == 0.0
    empty = Score()
    assert empty.f1 is None and empty.button_recall is None


def test_duplicate_names_counts_schema_entries() -> None:
    schema = [
        Field("plan", "radio", 0, (0, 0, 1, 1)),  # one entry for a group of kids
        Field("name", "text", 0, (0, 0, 1, 1)),
        {"name": "name", "type": "text"},
        {"name": "city", "type": "text"},
    ]
    assert duplicate_names(schema) == {"name": 2}


@pytest.mark.parametrize(
    ("name", "label", "derived"),
    [
        ("full_name", "Full name", True),
        ("full_name_2", "Full name", True),
        ("date_of_birth", "Date of birth (YYYY-MM-DD)", True),
        ("first", "First name of the applicant", True),
        ("zoe_angstrom", "Zoë Ångström", True),
        ("line_1a_wages", "1a Wages", True),
        ("name", "(a) Name", True),
        ("employ", "Employer's name", True),  # cut short
        ("field_3", "Full name", False),
        ("field_1", "1", False),
        ("field_3", "1 3", False),
        ("text_2", "Date", False),
        ("field_1", None, None),
        ("field_1", "—", None),
    ],
)
def test_name_from_label(name: str, label: str | None, derived: bool | None) -> None:
    assert name_from_label(name, label) is derived


def test_label_name_stats() -> None:
    schema = [
        {"name": "full_name", "label": "Full name"},
        {"name": "text_2", "label": "Email"},
        {"name": "box_1", "label": None},
    ]
    assert label_name_stats(schema) == (1, 2, [("text_2", "Email")])


def test_acceptance_lines() -> None:
    def mode(**figures: object) -> dict[str, object]:
        base = {
            "errors": 0,
            "f1": 0.9,
            "button_recall": 0.96,
            "duplicate_names": 0,
            "forms_with_duplicates": 0,
            "median_s_per_page": 0.3,
            "ratio_to_pdfplumber": 1.5,
            "label_named_share": 0.96,
            "label_named": 96,
            "labelled": 100,
            "generic_share": 0.05,
            "generic_named": 5,
            "near_text": 100,
            COMB_KEY: {"f1": 0.9, "button_recall": 0.96},
        }
        return base | figures

    total = {
        "pdfplumber_median_s_per_page": 0.2,
        "modes": {"fields": mode(), "fields_fast": mode(ratio_to_pdfplumber=0.6)},
    }
    gates = acceptance(total)
    failed = [g.text for g in gates if g.status == "FAIL"]
    assert len(failed) == 1 and "fields_fast" in failed[0] and "0.5x" in failed[0]
    assert all(g.status == "PASS" for g in gates if g.text not in failed)
    only_fields = acceptance({**total, "modes": {"fields": mode(duplicate_names=2)}})
    statuses = {g.text.split(" (")[0]: g.status for g in only_fields}
    assert statuses["duplicate schema names"] == "FAIL"
    assert "SKIP" in {g.status for g in only_fields}  # fields_fast timing was not measured
    generic = acceptance({**total, "modes": {"fields": mode(generic_share=0.2)}})
    statuses = {g.text.split(" (")[0]: g.status for g in generic}
    assert statuses["generic names where text is printed near"] == "FAIL"
    # the bar reads the comb-equivalent figures and shows the plain ones beside them
    cells = mode(f1=0.95, **{COMB_KEY: {"f1": 0.5, "button_recall": 0.96}})
    f1_gate = next(g for g in acceptance({**total, "modes": {"fields": cells}}) if "F1" in g.text)
    assert f1_gate.status == "FAIL" and "0.500 >= 0.88 (plain 0.950)" in f1_gate.text
    before = mode(f1=0.95)
    del before[COMB_KEY]  # a report from before comb-equivalent figures: not measured
    f1_gate = next(g for g in acceptance({**total, "modes": {"fields": before}}) if "F1" in g.text)
    assert f1_gate.status == "SKIP"


@pytest.mark.parametrize(
    ("name", "label", "generic"),
    [
        ("text", None, True),
        ("text_4", None, True),
        ("checkbox_12", "", True),
        ("choice", "Size", True),
        ("date", "Date", False),  # the label's own word, not a fallback
        ("date_2", "Date signed", False),
        ("textbook", None, False),
        ("quantity_2", "Quantity (row 2)", False),
    ],
)
def test_generic_name(name: str, label: str | None, generic: bool) -> None:
    assert generic_name(name, label) is generic


def test_generic_name_stats_count_fields_with_text_near_them() -> None:
    page = FlatPage()
    page.text(72, 705, "Full name")
    page.text(300, 500, "+ = $")  # signs: nothing a name comes from
    flat = one_page(page)
    schema = [
        {"name": "text", "label": None, "page": 0, "rect": [150, 700, 400, 720]},  # beside it
        {"name": "full_name", "label": "Full name", "page": 0, "rect": [72, 660, 300, 690]},
        {"name": "text_2", "label": None, "page": 0, "rect": [72, 300, 200, 320]},  # far off
        {"name": "text_3", "label": None, "page": 0, "rect": [330, 495, 400, 510]},  # signs
    ]
    assert generic_name_stats(text_runs(flat), schema) == (1, 2, ["text"])


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def form_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("forms") / "sample.pdf"
    path.write_bytes(sample_form()[0])
    return path


def test_evaluate_form_with_exact_stand_in(form_path: Path, tmp_path: Path) -> None:
    exact = StandIn("truth", jitter=0.0, drop={}, mistype=0.0, extra=0.0)
    evaluation = evaluate_form(
        form_path, modes=("fields",), converter=exact, cache_dir=tmp_path, keep=True
    )
    summary = evaluation.summary
    row = summary["modes"]["fields"]
    assert row["error"] is None
    assert summary["gt"] == row["n_det"] == row["tp"] == row["tp_class"] > 10
    assert row["f1"] == row["class_f1"] == 1.0 and row["n_duplicate_names"] == 0
    # the sample's comb (ZIP code, 5 cells) written back as a comb: matched whole, as plain
    cells = row[COMB_KEY]
    assert cells["n_gt"] == cells["n_det"] == cells["tp"] == summary["gt"]
    assert cells["f1"] == 1.0 and cells["by_class"]["comb"]["n"] == 1
    total = overall([summary], ("fields",))["modes"]["fields"]
    assert total[COMB_KEY]["f1"] == total[COMB_KEY]["mean_form_f1"] == 1.0
    assert total["n_gt"] == summary["gt"]  # the plain figures are whole widgets
    assert row["s_per_page"] > 0 and summary["pdfplumber_s_per_page"] > 0
    assert list(tmp_path.glob("*-flat-*.pdf"))  # the flat copy is cached
    out = io.StringIO()
    debug_report(evaluation.gt, evaluation.details["fields"], evaluation.flat, "fields", out)
    assert "missed ground truth (0)" in out.getvalue()
    assert "false positives (0)" in out.getvalue()


def test_evaluate_form_reports_errors_and_misses(form_path: Path, tmp_path: Path) -> None:
    def broken(pdf: bytes, detect: str) -> object:
        raise RuntimeError("no detector")

    failed = evaluate_form(form_path, modes=("fields",), converter=broken, cache_dir=None)
    row = failed.summary["modes"]["fields"]
    assert "RuntimeError: no detector" in row["error"]
    assert row["n_det"] == 0 and row["recall"] == 0.0 and row["s_per_page"] is None
    total = overall([failed.summary], ("fields",))
    assert total["modes"]["fields"]["errors"] == 1
    assert any(g.status == "FAIL" and "failed to convert" in g.text for g in acceptance(total))

    empty = evaluate_form(
        form_path, modes=("fields",), converter=StandIn("empty"), cache_dir=None, keep=True
    )
    out = io.StringIO()
    debug_report(empty.gt, empty.details["fields"], empty.flat, "fields", out)
    assert f"missed ground truth ({empty.summary['gt']})" in out.getvalue()
    assert "nothing detected near it" in out.getvalue()


def test_draw_pages(tmp_path: Path) -> None:
    pdf, _ = sample_form()
    flat = flatten_form(pdf)
    gt = ground_truth(pdf)
    det = [gt[0], _w(_box(300, 100), "checkbox")]
    written = draw_pages(flat, gt, det, match(gt, det), tmp_path, "fields", scale=0.5)
    assert [p.name for p in written] == ["fields-p000.png"]
    assert written[0].stat().st_size > 1000


def test_main_exit_codes_and_json(form_path: Path, tmp_path: Path) -> None:
    args = ["--corpus", str(form_path.parent), "--stand-in", "empty", "--quiet"]
    args += ["--mode", "fields", "--cache", str(tmp_path / "cache")]
    report = tmp_path / "out.json"
    assert main([*args, "--json", str(report)]) == 0
    data = json.loads(report.read_text())
    assert data["forms"][0]["form"] == "sample.pdf"
    assert data["overall"]["modes"]["fields"]["f1"] == 0.0
    assert main([*args, "--check"]) == 1


def test_inked_tells_drawn_boxes_from_blank_paper() -> None:
    from kits.flatkit import FlatPage, one_page

    page = FlatPage()
    page.box((100, 600, 112, 612))
    page.box((300, 600, 312, 612))
    page.raw("q 0.88 G 400 600 12 12 re S Q")  # the light grey of many tax forms' boxes
    page.line(500, 590, 560, 590)  # a line 5 pt under the last widget: outside its margin
    flat = one_page(page)
    widgets = [
        WidgetBox(0, (100, 600, 112, 612), "checkbox"),  # its own drawn box
        WidgetBox(0, (302, 602, 310, 610), "checkbox"),  # inside a larger drawn box
        WidgetBox(0, (200, 600, 212, 612), "checkbox"),  # nothing drawn there
        WidgetBox(0, (400, 600, 412, 612), "checkbox"),  # drawn in light grey
        WidgetBox(0, (500, 595, 560, 610), "text"),  # a dark line just beyond the margin
    ]
    assert inked(flat, widgets) == [True, True, False, True, False]
