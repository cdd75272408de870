"""The FFDNet anchor's own pieces, without commonforms or torch (the project's environment
never has them): class mapping, the detection cache, the mapping of image boxes to PDF user
space, and scoring cached detections with detect_eval's code.

``benchmarks/ffdnet_anchor.py`` sets our detector beside CommonForms' FFDNet-S; a wrong class
map, a stale cache or boxes on the wrong spot of a rotated page would make the anchor look
worse (or better) than it is.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from pypdf import PdfWriter
from pypdf.generic import ArrayObject, DecodedStreamObject, FloatObject, NameObject

from benchmarks import ffdnet_anchor, ffdnet_detect
from benchmarks.detect_eval import COMB_KEY, GROUP, flat_copy, ground_truth, sha256
from kits.formkit import sample_form


def test_classes_map_to_detect_eval_groups() -> None:
    assert ffdnet_detect.map_class("TextBox") == "text"
    assert ffdnet_detect.map_class("ChoiceButton") == "checkbox"
    assert ffdnet_detect.map_class("Signature") == "signature"
    assert [GROUP[c] for c in ffdnet_detect.CLASS_MAP.values()] == [
        "fill-in",
        "button",
        "signature",
    ]
    with pytest.raises(ValueError, match="Radio"):
        ffdnet_detect.map_class("Radio")


def test_cache_round_trip(tmp_path: Path) -> None:
    digest = "ab" * 32
    path = ffdnet_detect.cache_path(tmp_path / "cache", digest)
    assert digest in path.name and ffdnet_detect.setting_tag() in path.name
    assert ffdnet_detect.read_record(path, digest) is None  # nothing cached yet
    record = {
        "tag": ffdnet_detect.setting_tag(),
        "flat_sha256": digest,
        "pages": 1,
        "seconds": 2.5,
        "detections": [{"page": 0, "label": "TextBox", "box": [0, 0, 1, 1], "rect": [1, 2, 3, 4]}],
    }
    ffdnet_detect.write_record(path, record)
    assert ffdnet_detect.read_record(path, digest) == record
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary left behind
    assert ffdnet_detect.read_record(path, "cd" * 32) is None  # another flat copy
    assert ffdnet_detect.read_record(path, digest, batch=4) is None  # other settings
    path.write_text('{"tag": ')  # cut short by a crash: not a record
    assert ffdnet_detect.read_record(path, digest) is None


def _page_pdf(rotate: int, crop: tuple[float, float, float, float] | None) -> bytes:
    """A letter page with one black rectangle at (100, 200)-(150, 220) in user space."""
    writer = PdfWriter()
    page = writer.add_blank_page(612, 792)
    content = DecodedStreamObject()
    content.set_data(b"0 0 0 rg 100 200 50 20 re f")
    page[NameObject("/Contents")] = writer._add_object(content)
    if rotate:
        page[NameObject("/Rotate")] = FloatObject(rotate)
    if crop:
        page[NameObject("/CropBox")] = ArrayObject(FloatObject(v) for v in crop)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("rotate", "crop"),
    [(0, None), (90, None), (270, None), (180, (50.0, 100.0, 500.0, 700.0))],
)
def test_image_boxes_map_to_user_space(
    rotate: int, crop: tuple[float, float, float, float] | None, tmp_path: Path
) -> None:
    """A box found on the page image as commonforms renders it (72 dpi, the page's own
    rotation) lands on the rectangle drawn in user space."""
    import pypdfium2 as pdfium

    path = tmp_path / "page.pdf"
    path.write_bytes(_page_pdf(rotate, crop))
    doc = pdfium.PdfDocument(str(path))
    image = np.asarray(doc[0].render(scale=1, rotation=0).to_pil().convert("L"))
    doc.close()
    height, width = image.shape
    ys, xs = np.nonzero(image < 128)
    box = (xs.min() / width, ys.min() / height, (xs.max() + 1) / width, (ys.max() + 1) / height)
    (affine,) = ffdnet_detect.page_affines(path, [(width, height)])
    rect = ffdnet_detect.to_user_space(affine, box, width, height)
    assert rect == pytest.approx((100, 200, 150, 220), abs=1.0)


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "forms"
    folder.mkdir()
    (folder / "sample.pdf").write_bytes(sample_form()[0])
    return folder


def _cache_truth(form: Path, cache: Path, drop: int = 0) -> dict[str, float]:
    """Cache 'detections' that are the form's ground truth, minus the last ``drop``."""
    source = form.read_bytes()
    flat = flat_copy(source, cache)
    labels = {v: k for k, v in ffdnet_detect.CLASS_MAP.items()}
    gt = ground_truth(source)
    found = [
        {
            "page": w.page,
            "label": labels.get(w.cls, "ChoiceButton" if w.cls == "radio" else "TextBox"),
            "box": [0.0, 0.0, 0.0, 0.0],
            "rect": list(w.rect),
        }
        for w in gt[: len(gt) - drop]
    ]
    record = {
        "tag": ffdnet_detect.setting_tag(),
        "flat_sha256": sha256(flat),
        "settings": {"threads": 1},
        "versions": {"commonforms": ffdnet_detect.COMMONFORMS_VERSION},
        "pages": 1,
        "seconds": 3.0,
        "detections": found,
    }
    ffdnet_detect.write_record(ffdnet_detect.cache_path(cache, sha256(flat)), record)
    return {"gt": len(gt), "found": len(found)}


def test_cached_detections_are_scored_by_detect_eval(corpus: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    counts = _cache_truth(corpus / "sample.pdf", cache, drop=2)
    report = tmp_path / "anchor.json"
    args = ["--corpus", str(corpus), "--cache", str(cache), "--out", "-"]
    # everything is cached: no worker is started, so no anchor environment is needed
    args += ["--anchor-python", str(tmp_path / "missing"), "--json", str(report)]
    assert ffdnet_anchor.main(args) == 0
    data = json.loads(report.read_text())
    row = data["forms"][0]["modes"][ffdnet_anchor.MODE]
    assert row["n_det"] == counts["found"] and row["tp"] == counts["found"]
    assert row["precision"] == 1.0 and row["tp_class"] == row["tp"]
    assert row["recall"] == pytest.approx(counts["found"] / counts["gt"])
    assert row["s_per_page"] == 3.0
    assert data["overall"]["f1"] == row["f1"]
    # comb-equivalent: the sample's 5-cell ZIP comb, found as one text box, is matched whole
    cells = row[COMB_KEY]
    found = (cells["n_gt"], cells["n_det"], cells["tp"])
    assert found == (counts["gt"], counts["found"], row["tp"])
    assert data["overall"][COMB_KEY]["f1"] == cells["f1"] == row["f1"]

    out = io.StringIO()
    ours = json.loads(report.read_text())["forms"]
    assert ffdnet_anchor.compare(data["forms"], ours, ffdnet_anchor.MODE, out) == 1
    assert "same 1 forms" in out.getvalue()


def test_a_form_not_cached_needs_the_anchor_environment(corpus: Path, tmp_path: Path) -> None:
    args = ["--corpus", str(corpus), "--cache", str(tmp_path / "cache"), "--out", "-"]
    assert ffdnet_anchor.main([*args, "--anchor-python", str(tmp_path / "missing")]) == 1


def test_folds_are_train_detectors_over_the_whole_corpus(tmp_path: Path) -> None:
    from benchmarks.train_detector import folds

    root = tmp_path / "train"
    (root / "forms").mkdir(parents=True)
    names = [f"form{i}.pdf" for i in range(12)]
    for name in names:
        (root / "forms" / name).write_bytes(b"%PDF-1.4\n")
    rows = ["file,form_group"] + [f"{n},group{i // 2}" for i, n in enumerate(names)]
    (root / "MANIFEST.csv").write_text("\n".join(rows) + "\n")
    fold = ffdnet_anchor.fold_of(root)
    expected = folds([type("F", (), {"group": f"group{i // 2}"})() for i in range(12)])
    assert [fold[n] for n in names] == expected
    assert all(fold[names[i]] == fold[names[i + 1]] for i in range(0, 12, 2))  # groups stay
