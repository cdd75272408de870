#!/usr/bin/env python3
"""Screenshots of the review editor (``fillpdf review``) on two development forms, for the
README: what a person sees when checking a conversion. ``make docs-screenshots``.

Each form's flat copy (its widgets and ``/AcroForm`` removed, as ``benchmarks/detect_eval.py``
makes them) is opened in the editor in headless Chromium, one field is selected so the panel
shows, and the window is saved as ``docs/review-<form>.png``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "plugins")]

from benchmarks.detect_eval import DEFAULT_CACHE, flat_copy  # noqa: E402
from kits.browserkit import chromium  # noqa: E402
from kits.reviewkit import review  # noqa: E402

FORMS = ROOT.parent / "shared" / "corpus" / "forms"
#: US federal forms (public domain): a one-page tax form and the W-4.
SHOTS = {
    "AutoFill__f1099NEC.pdf": "review-f1099nec.png",
    "instead-assignment__fw4.pdf": "review-fw4.png",
}


def main() -> int:
    if not FORMS.is_dir():
        print(f"No development corpus at {FORMS}.", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch, chromium() as browser:
        for form, shot in SHOTS.items():
            flat = Path(scratch) / form
            flat.write_bytes(flat_copy((FORMS / form).read_bytes(), DEFAULT_CACHE))
            with review(flat, "--out", Path(scratch) / f"{flat.stem}.schema.json") as run:
                context = browser.new_context(viewport={"width": 1440, "height": 960})
                page = context.new_page()
                page.set_default_timeout(120_000)
                page.goto(run.url)
                page.locator('body[data-ready="true"]').wait_for()
                page.locator("img").first.wait_for()
                page.wait_for_load_state("networkidle")
                page.locator("[data-field]").nth(2).click()
                page.screenshot(path=str(ROOT / "docs" / shot))
                context.close()
            print(f"wrote docs/{shot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
