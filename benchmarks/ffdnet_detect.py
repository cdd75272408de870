#!/usr/bin/env python3
"""CommonForms' FFDNet-S on flat PDFs: its raw detections, in PDF user space, cached per form.

The anchor that ``ffdnet_anchor.py`` scores our detector against. This file is the half that
runs in the anchor's own environment (``.venv-anchor``, made by ``make bench-anchor`` from
``benchmarks/anchor-requirements.txt``): commonforms, ultralytics and torch are imported only
inside ``Detector``, so the rest (class mapping, coordinate mapping, the cache) is importable
and testable from the project's environment, which never has them.

FFDNet runs through commonforms 0.1.4's own code at its own defaults: its renderer
(``render_pdf``: PDFium at 72 dpi) and ``YOLODetector.extract_widgets`` (confidence 0.3,
NMS IoU 0.1, test-time augmentation, 1600 px). Its boxes come back normalised to the page
image; we map them to user space ourselves, through the very transformation PDFium rendered
the image with (crop box and ``/Rotate`` included), rather than read them back from the
fillable PDF commonforms writes, whose mapping ignores ``/Rotate``.

Used as a worker by ``ffdnet_anchor.py``; by hand::

    .venv-anchor/bin/python benchmarks/ffdnet_detect.py --tasks tasks.json --threads 1

where ``tasks.json`` is a list of ``{"name", "flat", "sha256", "out"}``. Each result is
written to ``out`` under a temporary name, then renamed, so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

Rect = tuple[float, float, float, float]

#: The release whose wheel bundles the weights (later ones fetch them from a hub).
COMMONFORMS_VERSION = "0.1.4"
MODEL = "FFDNet-S"
#: commonforms' defaults: its CLI's confidence and image size; IoU and augmentation are fixed
#: inside ``extract_widgets``.
CONFIDENCE = 0.3
IOU = 0.1
AUGMENT = True
IMAGE_SIZE = 1600
#: Pages per ``predict`` call. commonforms passes a whole document at once, which holds every
#: page's augmented tensors in memory together (about 0.45 GB a page); one page at a time
#: gives the same boxes for pages of one size and keeps a 40-page form within 1 GB.
BATCH = 1
#: Bumped when the record's layout or the coordinate mapping changes.
FORMAT = 1

#: FFDNet's classes (``YOLODetector.id_to_cls``) -> detect_eval's classes. A choice button is
#: a checkbox or a radio button: detect_eval scores both as one group, so "checkbox" loses
#: nothing in class-aware F1 or button recall.
CLASS_MAP = {"TextBox": "text", "ChoiceButton": "checkbox", "Signature": "signature"}


def map_class(label: str) -> str:
    """detect_eval's class for an FFDNet class name; an unknown one is an error, not a guess."""
    try:
        return CLASS_MAP[label]
    except KeyError:
        raise ValueError(f"unknown FFDNet class {label!r}") from None


def setting_tag(batch: int = BATCH) -> str:
    """What a cached record depends on besides the flat PDF: model, settings, release, format."""
    aug = "aug" if AUGMENT else "noaug"
    return (
        f"{MODEL}-conf{CONFIDENCE:g}-iou{IOU:g}-{aug}-{IMAGE_SIZE}px-b{batch}"
        f"-commonforms{COMMONFORMS_VERSION}-f{FORMAT}"
    )


def cache_path(cache_dir: Path, flat_sha256: str, batch: int = BATCH) -> Path:
    """Where the detections of the flat copy with this sha256 are kept."""
    return cache_dir / f"{flat_sha256}-ffdnet-{setting_tag(batch)}.json"


def write_record(path: Path, record: dict[str, Any]) -> None:
    """Write ``record`` to ``path`` atomically: a temporary name in the same folder, renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    scratch.write_text(json.dumps(record, separators=(",", ":")) + "\n", encoding="utf-8")
    os.replace(scratch, path)


def read_record(path: Path, flat_sha256: str, batch: int = BATCH) -> dict[str, Any] | None:
    """The cached record at ``path``, or None when there is none or it is for something else."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if record.get("tag") != setting_tag(batch) or record.get("flat_sha256") != flat_sha256:
        return None
    return record


# --------------------------------------------------------------------------- coordinates


Affine = tuple[float, float, float, float, float, float]


def device_to_page(page: Any, width: int, height: int) -> Affine:
    """The affine map from pixels of ``page`` rendered as a ``width`` x ``height`` bitmap
    (rotation 0, no crop: how ``render_pdf`` renders) to PDF user space.

    PDFium's own inverse of the matrix it rendered with, read at three exact corners, so the
    crop box, its offset and the page's ``/Rotate`` are all accounted for.
    """
    import pypdfium2.raw as pdfium_c

    def at(x: int, y: int) -> tuple[float, float]:
        px, py = ctypes.c_double(), ctypes.c_double()
        ok = pdfium_c.FPDF_DeviceToPage(
            page.raw, 0, 0, width, height, 0, x, y, ctypes.byref(px), ctypes.byref(py)
        )
        if not ok:
            raise RuntimeError("FPDF_DeviceToPage failed")
        return px.value, py.value

    ox, oy = at(0, 0)
    ax, ay = at(width, 0)
    bx, by = at(0, height)
    return (ox, oy, (ax - ox) / width, (ay - oy) / width, (bx - ox) / height, (by - oy) / height)


def to_user_space(affine: Affine, box: Rect, width: int, height: int) -> Rect:
    """A box normalised to the image (``x0, y0, x1, y1`` in 0..1, top-left origin) in PDF
    user space, normalised so that x0 <= x1 and y0 <= y1."""
    ox, oy, ux, uy, vx, vy = affine
    xs, ys = [], []
    for nx in (box[0], box[2]):
        for ny in (box[1], box[3]):
            u, v = nx * width, ny * height
            xs.append(ox + u * ux + v * vx)
            ys.append(oy + u * uy + v * vy)
    return (min(xs), min(ys), max(xs), max(ys))


def page_affines(pdf_path: Path, sizes: Sequence[tuple[int, int]]) -> list[Affine]:
    """``device_to_page`` for every page, at the image size each was rendered at."""
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(pdf_path))
    try:
        if len(doc) != len(sizes):
            raise ValueError(f"{len(doc)} pages but {len(sizes)} images")
        affines = []
        for index, (width, height) in enumerate(sizes):
            page = doc[index]
            try:
                affines.append(device_to_page(page, width, height))
            finally:
                page.close()
        return affines
    finally:
        doc.close()


# --------------------------------------------------------------------------- the model


def versions() -> dict[str, str]:
    found = {}
    for package in (
        "commonforms",
        "formalpdf",
        "ultralytics",
        "torch",
        "pypdfium2",
        "opencv-python",
    ):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "missing"
    return found


@dataclass
class Detector:
    """FFDNet-S loaded once (commonforms' ``YOLODetector``), run form by form."""

    threads: int = 1
    batch: int = BATCH
    workers: int = 1
    """How many detectors ran side by side: recorded, as it tells what the seconds mean."""

    def __post_init__(self) -> None:
        # No connectivity probe (ultralytics looks up public DNS names at import otherwise),
        # no per-image log lines, its settings file in the temp folder rather than the home
        # directory, and OpenMP held to the threads asked for (read when torch loads).
        os.environ.setdefault("YOLO_OFFLINE", "true")
        os.environ.setdefault("YOLO_VERBOSE", "false")
        settings = Path(tempfile.gettempdir()) / "fillpdf-ffdnet-ultralytics"
        settings.mkdir(parents=True, exist_ok=True)
        os.environ.setdefault("YOLO_CONFIG_DIR", str(settings))
        os.environ["OMP_NUM_THREADS"] = str(self.threads)
        import torch

        torch.set_num_threads(self.threads)
        torch.set_num_interop_threads(1)
        from commonforms.inference import YOLODetector

        found = metadata.version("commonforms")
        if found != COMMONFORMS_VERSION:
            raise RuntimeError(
                f"commonforms {found} installed, the anchor is {COMMONFORMS_VERSION}"
            )
        self.model = YOLODetector(MODEL, device="cpu")
        self._warm_up()

    def _warm_up(self) -> None:
        """One untimed prediction, so the first form does not pay for lazy initialisation."""
        from commonforms.utils import Page
        from PIL import Image

        image = Image.new("RGB", (612, 792), "white")
        self.model.extract_widgets([Page(image, 612, 792)], CONFIDENCE, IMAGE_SIZE)

    def detect(self, flat: Path) -> dict[str, Any]:
        """Every detection of one flat PDF, with the seconds rendering and inference took."""
        from commonforms.inference import render_pdf

        started = time.perf_counter()
        pages = render_pdf(str(flat))
        rendered = time.perf_counter()
        found: list[dict[str, Any]] = []
        for first in range(0, len(pages), self.batch):
            chunk = pages[first : first + self.batch]
            widgets = self.model.extract_widgets(
                chunk, confidence=CONFIDENCE, image_size=IMAGE_SIZE
            )
            for offset, page_widgets in sorted(widgets.items()):
                for widget in page_widgets:
                    b = widget.bounding_box
                    found.append(
                        {
                            "page": first + offset,
                            "label": widget.widget_type,
                            "box": [float(b.x0), float(b.y0), float(b.x1), float(b.y1)],
                        }
                    )
        seconds = time.perf_counter() - started
        sizes = [(p.image.width, p.image.height) for p in pages]
        affines = page_affines(flat, sizes)
        for item in found:
            width, height = sizes[item["page"]]
            rect = to_user_space(affines[item["page"]], tuple(item["box"]), width, height)
            item["rect"] = [round(v, 3) for v in rect]
        return {
            "pages": len(pages),
            "image_sizes": [list(s) for s in sizes],
            "seconds": seconds,
            "render_seconds": rendered - started,
            "detections": found,
        }


def record_for(detector: Detector, flat: Path, flat_sha256: str, name: str = "") -> dict[str, Any]:
    """A cache record: the detections and everything needed to tell how they were made."""
    result = detector.detect(flat)
    return {
        "tag": setting_tag(detector.batch),
        "flat_sha256": flat_sha256,
        "form": name,
        "model": MODEL,
        "settings": {
            "confidence": CONFIDENCE,
            "iou": IOU,
            "augment": AUGMENT,
            "image_size": IMAGE_SIZE,
            "batch": detector.batch,
            "threads": detector.threads,
            "workers": detector.workers,
        },
        "versions": versions(),
        **result,
    }


def run_tasks(tasks: Sequence[dict[str, str]], threads: int, batch: int, workers: int = 1) -> int:
    """Detect every task's flat PDF; one JSON line per form on stdout, progress on stderr."""
    detector = Detector(threads=threads, batch=batch, workers=workers)
    failed = 0
    for done, task in enumerate(tasks, 1):
        name = task.get("name", task["flat"])
        out = Path(task["out"])
        try:
            record = record_for(detector, Path(task["flat"]), task["sha256"], name)
            write_record(out, record)
        except Exception as exc:  # one bad PDF must not stop a two-hour run
            failed += 1
            error = f"{type(exc).__name__}: {exc}"[:400]
            print(json.dumps({"name": name, "error": error}), flush=True)
            traceback.print_exc(file=sys.stderr)
            continue
        pages = max(record["pages"], 1)
        print(json.dumps({"name": name, "out": str(out)}), flush=True)
        print(
            f"  ffdnet [{done}/{len(tasks)}] {name}: {record['pages']} pages, "
            f"{len(record['detections'])} boxes, {record['seconds'] / pages:.2f} s/page",
            file=sys.stderr,
            flush=True,
        )
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=Path, required=True, help="JSON list of forms to detect")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--batch", type=int, default=BATCH, help="pages per predict call")
    parser.add_argument("--workers", type=int, default=1, help="detectors running side by side")
    args = parser.parse_args(argv)
    tasks = json.loads(args.tasks.read_text(encoding="utf-8"))
    return run_tasks(tasks, args.threads, max(1, args.batch), args.workers)


if __name__ == "__main__":
    sys.exit(main())
