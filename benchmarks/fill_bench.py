#!/usr/bin/env python3
"""The fill benchmark: our engine against what a user would otherwise reach for.

Prints, for one run and side by side:

1. Workload A: ``--rows`` rows of ``kits.formkit.bench_rows`` into ``bench_form()``, in
   memory, forms/s per filler and the ratio ours / each other filler (gate: >= 40x pypdf).
2. Visibility: for a sample of each filler's outputs, how many values a person sees without
   a viewer's help (PDFium flattens the existing appearance streams; pdfplumber reads the
   text back; a render shows whether checkboxes and radio buttons gained ink).
3. Workload B: the corpus form closest to 1.5 MB, every writable field, ours vs pypdf.
4. Memory: peak RSS of a fresh process writing 10,000 and 100,000 forms (flat or not).

Run it from the repository root with the bench virtualenv (see benchmarks/README.md)::

    .venv-bench/bin/python benchmarks/fill_bench.py [--quick] [--json out/bench.json]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.machine import machine_info as shared_machine_info  # noqa: E402

DEFAULT_CORPUS = REPO_ROOT.parent / "shared" / "corpus" / "forms"
CORPUS_TARGET_BYTES = 1_500_000
GATE_RATIO = 40.0
FLAT_TOLERANCE = 0.10
MEMORY_ROW_POOL = 1000
#: Fast fillers repeat the rows until this long has passed (mean rate over all passes).
MIN_SECONDS = 2.0
MAX_PASSES = 20
FILLER_KEYS = (
    "ours",
    "pypdf",
    "pypdfform",
    "pypdfform-gen",
    "pikepdf",
    "pdftk",
    "pymupdf",
    "floor",
)
#: An on-state widget "shows" when its render gained this share of its area in dark pixels.
INK_SHARE = 0.02
INK_MIN_PIXELS = 4

Values = dict[str, Any]
FillFn = Callable[[Values], bytes]
Setup = Callable[[bytes, Path], FillFn]
WidgetMap = dict[str, list[Any]]  # field name -> kits.viewcheck.Widget list


# --------------------------------------------------------------------------- fields


def widget_map(template: bytes) -> WidgetMap:
    """The visible widgets of ``template`` grouped by fully qualified field name."""
    from kits.viewcheck import visible_widgets, widgets_by_name

    return widgets_by_name(visible_widgets(template))


def widget_kind(widgets: Sequence[Any]) -> str:
    """``text``, ``checkbox``, ``radio``, ``choice`` or ``signature`` from the widgets."""
    first = widgets[0]
    if first.field_type == "Btn":
        return "radio" if first.is_radio else "checkbox"
    if first.field_type == "Ch":
        return "choice"
    if first.field_type == "Sig":
        return "signature"
    return "text"


def on_state(widgets: Sequence[Any]) -> str:
    """The on-state name (no slash) of a checkbox."""
    for widget in widgets:
        if widget.on_states:
            return str(widget.on_states[0])
    return "Yes"


def radio_target(widgets: Sequence[Any], option: str) -> tuple[str, int] | None:
    """``(on-state name, position among the group's widgets)`` of a radio option.

    ``option`` is an export value: an on-state name, or an ``/Opt`` entry whose index is the
    kid that carries it.
    """
    for pos, widget in enumerate(widgets):
        if option in widget.on_states:
            return option, pos
    opt = widgets[0].opt
    if opt:
        exports = [export for export, _ in opt]
        if option in exports:
            index = exports.index(option)
            for pos, widget in enumerate(widgets):
                if widget.kid_index == index and widget.on_states:
                    return str(widget.on_states[0]), pos
    return None


# ------------------------------------------------------------------------ fillers


@dataclass
class Filler:
    """One way to fill a form: how to set it up once and how to turn a row into its values."""

    key: str
    label: str
    setup: Setup
    translate: Callable[[Values, WidgetMap], Values]
    row_cap: int | None = None
    note: str = ""


def _identity(row: Values, widgets: WidgetMap) -> Values:
    return row


def _translate(row: Values, widgets: WidgetMap, style: str, drop: set[str]) -> Values:
    """Turn our typed row into the values a library's docs ask for.

    ``style`` ``names`` gives buttons as PDF names (``/Ja``, pypdf), ``bare`` as names without
    the slash (pdftk), ``bool`` keeps checkbox booleans and gives radio on-states without the
    slash (PyMuPDF, pikepdf), ``index`` keeps booleans and gives radio groups as the selected
    widget's position (PyPDFForm). Field kinds in ``drop`` are left out.
    """
    out: Values = {}
    for name, value in row.items():
        ws = widgets.get(name)
        kind = widget_kind(ws) if ws else "text"
        if kind in drop or value is None:
            continue
        if kind == "checkbox":
            state = on_state(ws) if value else "Off"  # type: ignore[arg-type]
            if style == "names":
                out[name] = "/" + state
            elif style == "bare":
                out[name] = state
            else:
                out[name] = bool(value)
        elif kind == "radio":
            target = radio_target(ws, str(value))  # type: ignore[arg-type]
            state, pos = target if target else (str(value), 0)
            if style == "names":
                out[name] = "/" + state
            elif style == "index":
                out[name] = pos
            else:
                out[name] = state
        else:
            out[name] = str(value)
    return out


def setup_floor(template: bytes, workdir: Path) -> FillFn:
    """The floor: write the template bytes to a fresh buffer per row."""

    def fill_one(values: Values) -> bytes:
        buffer = io.BytesIO()
        buffer.write(template)
        return buffer.getvalue()

    return fill_one


def setup_ours(template: bytes, workdir: Path) -> FillFn:
    """Ours: the Template is parsed once, outside the loop."""
    from fillpdf_provider.engine import Template

    parsed = Template(template)
    return lambda values: parsed.fill(values)


def fill_pypdf_naive(template: bytes, values: Values) -> bytes:
    """pypdf as its docs show it: clone the reader, update each page, write."""
    from pypdf import PdfReader, PdfWriter

    reader = PdfReader(io.BytesIO(template))
    writer = PdfWriter(clone_from=reader)
    for page in writer.pages:
        writer.update_page_form_field_values(page, values, auto_regenerate=False)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def fill_pypdfform(template: bytes, values: Values) -> bytes:
    """PyPDFForm: ``PdfWrapper(template).fill(values).read()``, keyed by full field names."""
    from PyPDFForm import PdfWrapper

    return PdfWrapper(template, use_full_widget_name=True).fill(values).read()


def fill_pypdfform_generate(template: bytes, values: Values) -> bytes:
    """PyPDFForm with its documented ``generate_appearance_streams=True`` option."""
    from PyPDFForm import PdfWrapper

    wrapper = PdfWrapper(template, use_full_widget_name=True, generate_appearance_streams=True)
    return wrapper.fill(values).read()


def fill_pikepdf(template: bytes, values: Values) -> bytes:
    """pikepdf's ``pikepdf.form.Form``, generating appearance streams as it fills.

    The default (QPDF) generator: the extended one raises on this form's comb and multiline
    fields (its standard /Helv font has no /FontDescriptor).
    """
    import pikepdf
    from pikepdf.form import CheckboxField, DefaultAppearanceStreamGenerator, Form, RadioButtonGroup

    with pikepdf.open(io.BytesIO(template)) as pdf:
        form = Form(pdf, DefaultAppearanceStreamGenerator)
        for name, value in values.items():
            field = form[name]
            if isinstance(field, CheckboxField):
                field.checked = bool(value)
            elif isinstance(field, RadioButtonGroup):
                field.value = pikepdf.Name("/" + str(value))
            else:
                field.value = value
        buffer = io.BytesIO()
        pdf.save(buffer)
        return buffer.getvalue()


def fill_pymupdf(template: bytes, values: Values) -> bytes:
    """PyMuPDF: set ``widget.field_value``, ``widget.update()``, ``doc.tobytes()``."""
    import pymupdf

    doc = pymupdf.open(stream=template, filetype="pdf")
    try:
        for page in doc:
            for widget in page.widgets():
                if widget.field_name not in values:
                    continue
                value = values[widget.field_name]
                if widget.field_type == pymupdf.PDF_WIDGET_TYPE_RADIOBUTTON:
                    if widget.on_state() != value:
                        continue
                    widget.field_value = True
                else:
                    widget.field_value = value
                widget.update()
        return doc.tobytes()
    finally:
        doc.close()


def xfdf(values: Values) -> bytes:
    """An XFDF document with one ``<field>`` per value."""
    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<xfdf xmlns="http://ns.adobe.com/xfdf/" xml:space="preserve"><fields>'
    ]
    for name, value in values.items():
        parts.append(f"<field name={quoteattr(name)}><value>{escape(str(value))}</value></field>")
    parts.append("</fields></xfdf>\n")
    return "".join(parts).encode("utf-8")


def setup_pdftk(template: bytes, workdir: Path) -> FillFn:
    """pdftk: ``pdftk template.pdf fill_form - output -`` with an XFDF per row on stdin."""
    exe = shutil.which("pdftk")
    if exe is None:
        raise SkipFiller("pdftk: not installed")
    path = workdir / "pdftk-template.pdf"
    path.write_bytes(template)

    def fill_one(values: Values) -> bytes:
        done = subprocess.run(
            [exe, str(path), "fill_form", "-", "output", "-"],
            input=xfdf(values),
            capture_output=True,
            check=False,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"pdftk exit {done.returncode}: {done.stderr.decode()[-300:]}")
        return done.stdout

    return fill_one


def _plain(fill: Callable[[bytes, Values], bytes]) -> Setup:
    def setup(template: bytes, workdir: Path) -> FillFn:
        return lambda values: fill(template, values)

    return setup


def _importable(module: str) -> Callable[[Setup], Setup]:
    """Wrap a setup so a missing library reports as a skip, not a crash."""

    def check(setup: Setup) -> Setup:
        def guarded(template: bytes, workdir: Path) -> FillFn:
            try:
                __import__(module)
            except Exception as exc:
                raise SkipFiller(f"{module} not importable: {exc}") from exc
            return setup(template, workdir)

        return guarded

    return check


class SkipFiller(Exception):
    """A filler that cannot run here (library or tool missing)."""


def all_fillers(pdftk_rows: int) -> list[Filler]:
    """Every filler of workload A, ours first, the floor last."""
    no_sig = {"signature"}
    return [
        Filler("ours", "ours (Template, parsed once)", setup_ours, _identity),
        Filler(
            "pypdf",
            "pypdf naive",
            _importable("pypdf")(_plain(fill_pypdf_naive)),
            lambda r, w: _translate(r, w, "names", set()),
        ),
        Filler(
            "pypdfform",
            "PyPDFForm",
            _importable("PyPDFForm")(_plain(fill_pypdfform)),
            lambda r, w: _translate(r, w, "index", no_sig),
            note="signature values left out (PyPDFForm signs with an image only)",
        ),
        Filler(
            "pypdfform-gen",
            "PyPDFForm (generate AP)",
            _importable("PyPDFForm")(_plain(fill_pypdfform_generate)),
            lambda r, w: _translate(r, w, "index", no_sig),
            note="generate_appearance_streams=True; signature values left out",
        ),
        Filler(
            "pikepdf",
            "pikepdf (pikepdf.form)",
            _importable("pikepdf.form")(_plain(fill_pikepdf)),
            lambda r, w: _translate(r, w, "bool", no_sig),
            note="signature values left out (pikepdf.form: no signature support)",
        ),
        Filler(
            "pdftk",
            "pdftk (XFDF, subprocess)",
            setup_pdftk,
            lambda r, w: _translate(r, w, "bare", set()),
            row_cap=pdftk_rows,
            note=f"{pdftk_rows} rows only: one JVM start per form",
        ),
        Filler(
            "pymupdf",
            "PyMuPDF",
            _importable("pymupdf")(_plain(fill_pymupdf)),
            lambda r, w: _translate(r, w, "bool", no_sig),
            note="signature values left out (PyMuPDF cannot fill signature widgets)",
        ),
        Filler("floor", "floor (copy template bytes)", setup_floor, _identity),
    ]


# ---------------------------------------------------------------------- timing


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 300 else text[:297] + "..."


def time_filler(
    filler: Filler,
    template: bytes,
    rows: Sequence[Values],
    widgets: WidgetMap,
    workdir: Path,
    *,
    keep: int,
    max_seconds: float,
) -> tuple[dict[str, Any], list[bytes | None]]:
    """Fill ``rows`` one by one with ``filler``; its figures and the first ``keep`` outputs.

    One untimed warm-up row first. A row that raises or returns no PDF counts as failed and
    the run goes on; the rate counts good forms only. Stops after ``max_seconds``. A filler
    done with all rows in under ``MIN_SECONDS`` goes over them again (up to ``MAX_PASSES``
    passes) and the rate is the mean over all passes, to steady the fast ones.
    """
    result: dict[str, Any] = {"label": filler.label, "note": filler.note or None}
    if filler.row_cap is not None:
        rows = rows[: filler.row_cap]
    result["rows_requested"] = len(rows)
    try:
        fill = filler.setup(template, workdir)
        native = [filler.translate(row, widgets) for row in rows]
    except SkipFiller as exc:
        result["skipped"] = str(exc)
        return result, []
    except Exception as exc:
        result["error"] = f"setup failed: {_short(exc)}"
        return result, []
    if not native:
        result["error"] = "no rows"
        return result, []
    try:
        fill(native[0])
    except Exception as exc:
        # What a user would do: find the fields the library chokes on and leave them out.
        dropped = probe_fields(fill, native[0])
        if dropped:
            result["dropped_fields"] = dropped
            native = [{k: v for k, v in row.items() if k not in dropped} for row in native]
        try:
            fill(native[0])
        except Exception as again:
            result["warmup_error"] = _short(again if dropped else exc)
    outputs: list[bytes | None] = []
    failed = 0
    first_error: str | None = None
    size = 0
    done = 0
    passes = 0
    stopped_early = False
    start = time.perf_counter()
    while True:
        passes += 1
        for values in native:
            out: bytes | None
            try:
                out = fill(values)
                if not isinstance(out, bytes | bytearray) or not out.startswith(b"%PDF"):
                    raise ValueError(f"not a PDF: {type(out).__name__} {bytes(out[:8])!r}")
            except Exception as exc:
                out = None
                failed += 1
                first_error = first_error or _short(exc)
            else:
                size += len(out)
            if len(outputs) < keep:
                outputs.append(out)
            done += 1
            if time.perf_counter() - start > max_seconds:
                stopped_early = done < len(native)
                break
        elapsed = time.perf_counter() - start
        if stopped_early or elapsed >= MIN_SECONDS or passes >= MAX_PASSES:
            break
    seconds = time.perf_counter() - start
    good = done - failed
    result.update(
        rows_done=done,
        passes=passes,
        rows_failed=failed,
        seconds=round(seconds, 4),
        forms_per_s=round(good / seconds, 2) if seconds > 0 else None,
        mean_output_bytes=round(size / good) if good else None,
        stopped_early=stopped_early,
    )
    if first_error:
        result["error"] = f"{failed}/{done} rows failed, first: {first_error}"
    return result, outputs


def probe_fields(fill: FillFn, values: Values) -> dict[str, str]:
    """The fields that make ``fill`` raise when filled alone, with the error."""
    bad: dict[str, str] = {}
    for name, value in values.items():
        try:
            fill({name: value})
        except Exception as exc:
            bad[name] = _short(exc)
    return bad


def add_ratios(results: dict[str, dict[str, Any]]) -> None:
    """Put ``ours_over`` (ours forms/s / that filler's forms/s) on every other filler."""
    ours = (results.get("ours") or {}).get("forms_per_s")
    for key, res in results.items():
        rate = res.get("forms_per_s")
        if key != "ours" and ours and rate:
            res["ours_over"] = round(ours / rate, 2)


# -------------------------------------------------------------------- visibility


def _expected_texts(value: Any, widgets: Sequence[Any], kind: str) -> set[str]:
    """What may show for ``value``: the text itself; for a choice also its display text."""
    from kits.viewcheck import display_text, squash

    texts = {squash(str(value))}
    if kind == "choice":
        texts.add(squash(display_text(widgets, str(value))))
    return texts


def _contains(seen: str, expected: str) -> bool:
    """Every char of ``expected`` is among ``seen`` (as a multiset: wrapping reorders)."""
    return bool(expected) and (expected in seen or Counter(expected) <= Counter(seen))


def _miss_label(kind: str, value: Any) -> str:
    if kind in ("checkbox", "radio"):
        return kind
    text = str(value)
    if any(ord(ch) > 0x17F for ch in text):
        return f"{kind} (non-Latin)"
    if any(ord(ch) > 0x7E for ch in text):
        return f"{kind} (accented)"
    return kind


class Visibility:
    """Checks filled PDFs against the blank template, as a person would see them."""

    def __init__(self, template: bytes, widgets: WidgetMap, types: dict[str, str]) -> None:
        from kits.viewcheck import Raster, buttons_off, flatten_with_pdfium

        self.widgets = widgets
        self.types = types
        blank = flatten_with_pdfium(buttons_off(template), drop_page_content=True)
        self.blank = Raster(blank)
        self._base: dict[tuple[int, tuple[float, ...]], int] = {}

    def _baseline(self, widget: Any) -> int:
        key = (widget.page, widget.rect)
        if key not in self._base:
            self._base[key] = self.blank.ink(widget.page, widget.rect)
        return self._base[key]

    def _gained_ink(self, raster: Any, widget: Any) -> bool:
        x0, y0, x1, y1 = widget.rect
        area = (x1 - x0) * (y1 - y0) * raster.scale * raster.scale
        gained = raster.ink(widget.page, widget.rect) - self._baseline(widget)
        return gained >= max(INK_MIN_PIXELS, INK_SHARE * area)

    def check(self, rows: Sequence[Values], outputs: Sequence[bytes | None]) -> dict[str, Any]:
        """Share of text values and of buttons to show that a person sees."""
        import pdfplumber

        from kits.viewcheck import Raster, flatten_with_pdfium, text_in_rect

        counts = Counter[str]()
        misses = Counter[str]()
        missed_fields = Counter[str]()
        for row, out in zip(rows, outputs, strict=False):
            if out is None:
                counts["unreadable_outputs"] += 1
                continue
            try:
                flat = flatten_with_pdfium(out, drop_page_content=True)
            except Exception:
                counts["unreadable_outputs"] += 1
                continue
            with pdfplumber.open(io.BytesIO(flat)) as plumber, Raster(flat) as raster:
                for name, value in row.items():
                    ws = self.widgets.get(name)
                    if not ws or value is None or value == "" or value is False:
                        continue
                    kind = widget_kind(ws)
                    if kind in ("checkbox", "radio"):
                        if kind == "radio":
                            target = radio_target(ws, str(value))
                            targets = [ws[target[1]]] if target else []
                        else:
                            targets = list(ws)
                        seen = any(self._gained_ink(raster, w) for w in targets)
                        bucket = "buttons"
                    else:
                        expected = _expected_texts(value, ws, kind)
                        shown = [text_in_rect(plumber, w.page, w.rect) for w in ws]
                        seen = any(_contains(t, e) for t in shown for e in expected)
                        bucket = "text"
                    counts[f"{bucket}_total"] += 1
                    if seen:
                        counts[f"{bucket}_seen"] += 1
                    else:
                        misses[_miss_label(self.types.get(name, kind), value)] += 1
                        missed_fields[name] += 1

        def pct(bucket: str) -> float | None:
            total = counts[f"{bucket}_total"]
            return round(100.0 * counts[f"{bucket}_seen"] / total, 1) if total else None

        return {
            "rows_checked": len(outputs),
            "text_values": counts["text_total"],
            "text_visible": counts["text_seen"],
            "text_visible_pct": pct("text"),
            "buttons": counts["buttons_total"],
            "buttons_shown": counts["buttons_seen"],
            "buttons_shown_pct": pct("buttons"),
            "unreadable_outputs": counts["unreadable_outputs"],
            "invisible_by_type": dict(misses.most_common()),
            "invisible_fields": dict(missed_fields.most_common(8)),
        }

    def close(self) -> None:
        """Free the blank render."""
        self.blank.close()


# -------------------------------------------------------------------- workload B


def pick_corpus_form(corpus: Path) -> tuple[Path, list[Any], list[str]]:
    """The corpus PDF closest to 1.5 MB that our engine can inspect, its fields, and notes."""
    from fillpdf_provider.engine import inspect

    notes: list[str] = []
    candidates = sorted(
        corpus.glob("*.pdf"), key=lambda p: abs(p.stat().st_size - CORPUS_TARGET_BYTES)
    )
    for path in candidates:
        try:
            fields = list(inspect(str(path)))
        except Exception as exc:
            notes.append(f"{path.name}: inspect failed ({_short(exc)})")
            continue
        if not any(not f.read_only for f in fields):
            notes.append(f"{path.name}: no writable field")
            continue
        return path, fields, notes
    raise RuntimeError("no corpus form could be inspected: " + "; ".join(notes[:5]))


def corpus_rows(fields: Sequence[Any], n: int, seed: int = 0) -> list[Values]:
    """``n`` rows filling every writable field with a value of its type."""
    import random

    rnd = random.Random(seed)
    words = ["Zoë", "Ångström", "Smith", "Jones", "Müller", "Garcia", "Lee", "O'Brien"]
    rows = []
    for i in range(n):
        row: Values = {}
        for j, f in enumerate(fields):
            if f.read_only:
                continue
            if f.type == "checkbox":
                row[f.name] = (i + j) % 2 == 0
            elif f.type in ("radio", "choice"):
                if f.options:
                    row[f.name] = f.options[(i + j) % len(f.options)]
            elif f.type == "date":
                row[f.name] = f"{rnd.randint(1, 12):02d}/{rnd.randint(1, 28):02d}/2024"
            elif f.type == "signature":
                row[f.name] = "J. Doe"
            else:
                limit = f.max_length
                if getattr(f, "comb", False) and limit:
                    text = "".join(str(rnd.randint(0, 9)) for _ in range(limit))
                elif getattr(f, "multiline", False):
                    text = " ".join(rnd.choice(words) for _ in range(12))
                else:
                    text = f"{rnd.choice(words)} {i}"
                row[f.name] = text[:limit] if limit else text
        rows.append(row)
    return rows


# ------------------------------------------------------------------------ memory


def _rss_mb() -> float:
    try:
        import psutil

        return psutil.Process().memory_info().rss / 1e6
    except Exception:
        return float("nan")


def peak_rss_mb() -> float:
    """This process's peak RSS in MB.

    ``VmHWM`` from ``/proc/self/status`` where there is one: unlike ``ru_maxrss`` it starts
    afresh at ``exec``, so a child does not inherit the parent's peak at fork time.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024 if sys.platform != "darwin" else kb / 2**20


def memory_child(n: int, mode: str) -> int:
    """Run in a fresh process: compile once, fill ``n`` rows, print figures as JSON."""
    from fillpdf_provider.engine import Template
    from kits.formkit import bench_form, bench_rows

    template = bench_form()
    parsed = Template(template)
    writable = {f.name for f in parsed.fields if not f.read_only}
    pool = [
        {k: v for k, v in row.items() if k in writable}
        for row in bench_rows(min(n, MEMORY_ROW_POOL))
    ]
    rss_setup = _rss_mb()
    with tempfile.TemporaryDirectory(prefix="fill-bench-") as tmp:
        start = time.perf_counter()
        for i in range(n):
            row = pool[i % len(pool)]
            if mode == "write":
                path = os.path.join(tmp, f"{i % 16}.pdf")
                parsed.write(path, row)
                os.unlink(path)
            else:
                parsed.fill(row)
        seconds = time.perf_counter() - start
    peak = peak_rss_mb()
    print(
        json.dumps(
            {
                "rows": n,
                "mode": mode,
                "seconds": round(seconds, 3),
                "rows_per_s": round(n / seconds, 1) if seconds else None,
                "peak_rss_mb": round(peak, 1),
                "rss_after_setup_mb": round(rss_setup, 1),
                "rss_end_mb": round(_rss_mb(), 1),
            }
        )
    )
    return 0


def run_memory(counts: Sequence[int], mode: str, timeout: float) -> dict[str, Any]:
    """Each count in its own fresh subprocess (this script with a hidden flag)."""
    runs: list[dict[str, Any]] = []
    for n in counts:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--_memory-child", str(n)]
        cmd += ["--_memory-mode", mode]
        try:
            done = subprocess.run(
                cmd, capture_output=True, text=True, timeout=timeout, check=False, cwd=REPO_ROOT
            )
        except subprocess.TimeoutExpired:
            runs.append({"rows": n, "error": f"timed out after {timeout:.0f} s"})
            continue
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
        if done.returncode != 0 or not lines:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            runs.append({"rows": n, "error": f"exit {done.returncode}: {tail[0][:300]}"})
            continue
        runs.append(json.loads(lines[-1]))
    result: dict[str, Any] = {"mode": mode, "row_pool": MEMORY_ROW_POOL, "runs": runs}
    good = [r for r in runs if "peak_rss_mb" in r]
    if len(good) >= 2:
        small, big = good[0], good[-1]
        limit = small["peak_rss_mb"] * (1 + FLAT_TOLERANCE)
        result["flat"] = big["peak_rss_mb"] <= limit
        result["verdict"] = (
            f"RSS at {big['rows']:,} = {big['peak_rss_mb']} MB vs {small['rows']:,} = "
            f"{small['peak_rss_mb']} MB (+{FLAT_TOLERANCE:.0%} = {limit:.1f} MB): "
            + ("flat" if result["flat"] else "NOT flat")
        )
    return result


# ------------------------------------------------------------------------ report


def machine_info() -> dict[str, Any]:
    """Python, CPU, memory and library versions (pdftk's too, when it is installed)."""
    info = shared_machine_info(
        (
            "airflow-provider-fillpdf",
            "pypdf",
            "PyPDFForm",
            "pikepdf",
            "PyMuPDF",
            "pdfplumber",
            "pypdfium2",
        )
    )
    exe = shutil.which("pdftk")
    if exe:
        try:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
            info["versions"]["pdftk"] = out.stdout.splitlines()[0] if out.stdout else "unknown"
        except Exception as exc:
            info["versions"]["pdftk"] = f"error: {_short(exc)}"
    else:
        info["versions"]["pdftk"] = None
    return info


def _fmt(value: Any, spec: str = "") -> str:
    if value is None:
        return "-"
    return format(value, spec) if spec else str(value)


def print_speed_table(title: str, results: dict[str, dict[str, Any]]) -> None:
    """Forms/s, ratio and errors per filler."""
    print(f"\n== {title}")
    print(
        f"  {'filler':<30} {'rows':>6} {'seconds':>9} {'forms/s':>10} {'ours/x':>9} {'KB/form':>8}"
    )
    for res in results.values():
        if "skipped" in res:
            print(f"  {res['label']:<30} skipped: {res['skipped']}")
            continue
        if "rows_done" not in res:
            print(f"  {res['label']:<30} ERROR: {res.get('error')}")
            continue
        kb = res["mean_output_bytes"] / 1024 if res.get("mean_output_bytes") else None
        print(
            f"  {res['label']:<30} {res['rows_done']:>6} {_fmt(res['seconds'], '.2f'):>9} "
            f"{_fmt(res['forms_per_s'], ',.1f'):>10} "
            f"{_fmt(res.get('ours_over'), ',.2f') + ('x' if 'ours_over' in res else ''):>9} "
            f"{_fmt(kb, '.1f'):>8}"
        )
        extras = []
        if res.get("note"):
            extras.append(res["note"])
        if res.get("passes", 1) > 1:
            extras.append(f"{res['passes']} passes over the rows, mean rate")
        if res.get("stopped_early"):
            extras.append(f"stopped after the time limit, {res['rows_done']} rows")
        if res.get("dropped_fields"):
            for name, err in res["dropped_fields"].items():
                extras.append(f"left out {name}: raises {err}")
        if res.get("warmup_error"):
            extras.append(f"warm-up error: {res['warmup_error']}")
        if res.get("error"):
            extras.append(f"ERROR: {res['error']}")
        for extra in extras:
            print(f"  {'':<30}   ({extra})")


def print_visibility(results: dict[str, dict[str, Any]], labels: dict[str, str]) -> None:
    """% text values visible, % buttons shown, and what stays invisible."""
    print("\n== Visibility without a viewer (PDFium flatten of existing appearances)")
    print(f"  {'filler':<30} {'rows':>5} {'text visible':>16} {'buttons shown':>16}")
    for key, res in results.items():
        if "error" in res:
            print(f"  {labels[key]:<30} ERROR: {res['error']}")
            continue
        text = f"{_fmt(res['text_visible_pct'])}% ({res['text_visible']}/{res['text_values']})"
        btn = f"{_fmt(res['buttons_shown_pct'])}% ({res['buttons_shown']}/{res['buttons']})"
        print(f"  {labels[key]:<30} {res['rows_checked']:>5} {text:>16} {btn:>16}")
        if res["invisible_by_type"] and key != "floor":
            missed = ", ".join(f"{k} x{v}" for k, v in res["invisible_by_type"].items())
            print(f"  {'':<30}   invisible: {missed}")
        if res["unreadable_outputs"]:
            print(f"  {'':<30}   {res['unreadable_outputs']} outputs missing or unreadable")


# -------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command line; ``--quick`` fills in small defaults for whatever is not given."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, help="rows of workload A (default 1000; quick 200)")
    p.add_argument("--pdftk-rows", type=int, help="rows for pdftk (default 50; quick 10)")
    p.add_argument("--visibility-rows", type=int, help="rows checked (default 20; quick 5)")
    p.add_argument("--corpus-rows", type=int, help="rows of workload B (default 50; quick 10)")
    p.add_argument("--corpus-dir", type=Path, default=DEFAULT_CORPUS)
    p.add_argument(
        "--memory-rows", help="comma list, each in a fresh process (default 10000,100000)"
    )
    p.add_argument("--memory-mode", choices=("write", "fill"), default="write")
    p.add_argument("--memory-timeout", type=float, default=1800.0)
    p.add_argument(
        "--max-seconds", type=float, help="time limit per filler and workload (default 300)"
    )
    p.add_argument(
        "--fillers", help="comma list of: ours,pypdf,pypdfform,pikepdf,pdftk,pymupdf,floor"
    )
    p.add_argument(
        "--skip", default="", help="comma list of sections to skip: visibility,corpus,memory"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="small smoke-test run")
    p.add_argument("--json", type=Path, help="write every figure to this JSON file")
    p.add_argument("--strict", action="store_true", help="exit 1 when a gate fails")
    p.add_argument("--_memory-child", dest="memory_child", type=int, help=argparse.SUPPRESS)
    p.add_argument(
        "--_memory-mode", dest="memory_child_mode", default="write", help=argparse.SUPPRESS
    )
    args = p.parse_args(argv)
    quick = args.quick
    defaults = {
        "rows": 200 if quick else 1000,
        "pdftk_rows": 10 if quick else 50,
        "visibility_rows": 5 if quick else 20,
        "corpus_rows": 10 if quick else 50,
        "memory_rows": "2000,5000" if quick else "10000,100000",
        "max_seconds": 60.0 if quick else 300.0,
    }
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    args.memory_counts = [int(x) for x in str(args.memory_rows).split(",") if x.strip()]
    args.skip_set = {s.strip() for s in args.skip.split(",") if s.strip()}
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run every section and print the report."""
    args = parse_args(argv)
    with contextlib.suppress(AttributeError, ValueError):
        sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    if args.memory_child is not None:
        return memory_child(args.memory_child, args.memory_child_mode)
    for name in ("pypdf", "pdfminer", "pikepdf", "PyPDFForm"):
        logging.getLogger(name).setLevel(logging.ERROR)
    logging.basicConfig(level=logging.ERROR)

    report: dict[str, Any] = {"machine": machine_info(), "args": {}}
    report["args"] = {
        k: (str(v) if isinstance(v, Path) else v)
        for k, v in vars(args).items()
        if k not in ("skip_set", "memory_child", "memory_child_mode")
    }
    m = report["machine"]
    print("fill benchmark")
    print(
        f"  python {m['python']} ({m['implementation']}), {m['cpu_count']} CPUs "
        f"({m['cpus_usable']} usable, load {m['load_avg_1m']}), "
        f"{m['memory_gb']} GB, {m['platform']}"
    )
    print("  " + ", ".join(f"{k} {v or 'missing'}" for k, v in m["versions"].items()))

    gates: dict[str, bool] = {}
    try:
        from kits.formkit import bench_form, bench_rows

        template = bench_form()
        rows = bench_rows(args.rows, seed=args.seed)
        widgets = widget_map(template)
    except Exception as exc:
        print(f"\nERROR: cannot build the bench form or rows: {_short(exc)}")
        traceback.print_exc()
        return 2
    types = {name: widget_kind(ws) for name, ws in widgets.items()}
    writable = {name for name, ws in widgets.items() if not ws[0].field_flags & 1}
    try:
        from fillpdf_provider.engine import Template

        fields = Template(template).fields
        types.update({f.name: f.type for f in fields})
        writable = {f.name for f in fields if not f.read_only}
    except Exception as exc:
        print(f"  (our engine cannot read the bench form: {_short(exc)}; using its widgets)")
    left_out = sorted({k for row in rows for k in row} - writable)
    rows = [{k: v for k, v in row.items() if k in writable} for row in rows]
    kinds = Counter(types.values())
    print(
        f"  bench form: {len(template) / 1024:.1f} KB, {len(types)} fields "
        f"({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}); rows: {len(rows)}"
    )
    if left_out:
        print(f"  row values left out (read-only, hidden or unknown fields): {', '.join(left_out)}")
    report["bench_form"] = {
        "bytes": len(template),
        "fields": len(types),
        "types": dict(kinds),
        "left_out_of_rows": left_out,
    }

    wanted = {s.strip() for s in args.fillers.split(",")} if args.fillers else None
    fillers = [f for f in all_fillers(args.pdftk_rows) if wanted is None or f.key in wanted]
    labels = {f.key: f.label for f in fillers}
    keep = 0 if "visibility" in args.skip_set else args.visibility_rows

    with tempfile.TemporaryDirectory(prefix="fill-bench-") as tmp:
        workdir = Path(tmp)
        # ---- workload A
        results_a: dict[str, dict[str, Any]] = {}
        outputs: dict[str, list[bytes | None]] = {}
        for filler in fillers:
            print(f"  ... workload A: {filler.label}", file=sys.stderr, flush=True)
            res, outs = time_filler(
                filler, template, rows, widgets, workdir, keep=keep, max_seconds=args.max_seconds
            )
            results_a[filler.key] = res
            outputs[filler.key] = outs
        add_ratios(results_a)
        report["workload_a"] = {"rows": len(rows), "fillers": results_a}
        print_speed_table(
            f"Workload A: {len(rows)} rows into bench_form(), PDF bytes in memory", results_a
        )
        ratio = results_a.get("pypdf", {}).get("ours_over")
        if "ours" in results_a and "pypdf" in results_a:
            gates["ours_vs_pypdf_40x"] = bool(ratio and ratio >= GATE_RATIO)
            verdict = "PASS" if gates["ours_vs_pypdf_40x"] else "FAIL"
            print(
                f"\n  ours / pypdf naive = {_fmt(ratio)}x (target >= {GATE_RATIO:.0f}x): {verdict}"
            )

        # ---- visibility
        if "visibility" not in args.skip_set:
            vis: dict[str, dict[str, Any]] = {}
            try:
                checker = Visibility(template, widgets, types)
            except Exception as exc:
                print(f"\n== Visibility: skipped ({_short(exc)})")
                report["visibility"] = {"error": _short(exc)}
            else:
                try:
                    for key, outs in outputs.items():
                        if not outs:
                            continue
                        print(f"  ... visibility: {labels[key]}", file=sys.stderr, flush=True)
                        try:
                            vis[key] = checker.check(rows[: len(outs)], outs)
                        except Exception as exc:
                            vis[key] = {"error": _short(exc)}
                finally:
                    checker.close()
                report["visibility"] = vis
                print_visibility(vis, labels)
                if "floor" in vis:
                    print("  (floor = the blank template: a baseline that shows no value)")

        # ---- workload B
        if "corpus" not in args.skip_set:
            report["workload_b"] = workload_b(args, workdir)

    # ---- memory
    if "memory" not in args.skip_set:
        print(
            f"  ... memory: {args.memory_counts} rows, {args.memory_mode}",
            file=sys.stderr,
            flush=True,
        )
        mem = run_memory(args.memory_counts, args.memory_mode, args.memory_timeout)
        report["memory"] = mem
        print(f"\n== Memory: fresh process per run, Template.{args.memory_mode}() per row")
        print(
            f"  {'rows':>8} {'peak RSS MB':>12} {'after setup':>12} {'at end':>8} "
            f"{'rows/s':>10} {'s':>8}"
        )
        for run in mem["runs"]:
            if "error" in run:
                print(f"  {run['rows']:>8,} ERROR: {run['error']}")
                continue
            print(
                f"  {run['rows']:>8,} {run['peak_rss_mb']:>12.1f} "
                f"{run['rss_after_setup_mb']:>12.1f} {run['rss_end_mb']:>8.1f} "
                f"{_fmt(run['rows_per_s'], ',.1f'):>10} {run['seconds']:>8.1f}"
            )
        print(
            f"  (rows cycle through a pool of {MEMORY_ROW_POOL} bench_rows; "
            "outputs written to a temp dir and deleted)"
            if args.memory_mode == "write"
            else f"  (rows cycle through a pool of {MEMORY_ROW_POOL}; outputs dropped)"
        )
        if "flat" in mem:
            gates["memory_flat"] = bool(mem["flat"])
            print(f"  {mem['verdict']}")

    report["gates"] = gates
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        print(f"\nJSON written to {args.json}")
    if args.strict and not all(gates.values()):
        return 1
    return 0


def workload_b(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """Ours vs pypdf naive vs the floor on the corpus form closest to 1.5 MB."""
    corpus: Path = args.corpus_dir
    if not corpus.is_dir():
        print(f"\n== Workload B: skipped, no corpus folder at {corpus}")
        return {"skipped": f"no corpus folder at {corpus}"}
    try:
        path, fields, notes = pick_corpus_form(corpus)
    except Exception as exc:
        print(f"\n== Workload B: skipped ({_short(exc)})")
        return {"skipped": _short(exc)}
    template = path.read_bytes()
    rows = corpus_rows(fields, args.corpus_rows, seed=args.seed)
    writable = sum(1 for f in fields if not f.read_only)
    try:
        widgets = widget_map(template)
    except Exception as exc:
        print(f"  (cannot read the corpus form's widgets: {_short(exc)})")
        widgets = {}
    keys = {"ours", "pypdf", "floor"}
    results: dict[str, dict[str, Any]] = {}
    for filler in all_fillers(0):
        if filler.key not in keys:
            continue
        print(f"  ... workload B: {filler.label}", file=sys.stderr, flush=True)
        results[filler.key], _ = time_filler(
            filler, template, rows, widgets, workdir, keep=0, max_seconds=args.max_seconds
        )
    add_ratios(results)
    pages = "?"
    try:
        from pypdf import PdfReader

        pages = str(len(PdfReader(io.BytesIO(template)).pages))
    except Exception:
        pass
    title = (
        f"Workload B: {path.name} ({len(template) / 1e6:.2f} MB, {pages} pages), "
        f"{writable} writable fields x {len(rows)} rows"
    )
    print_speed_table(title, results)
    for note in notes:
        print(f"  (passed over {note})")
    return {
        "file": path.name,
        "bytes": len(template),
        "pages": pages,
        "writable_fields": writable,
        "rows": len(rows),
        "passed_over": notes,
        "fillers": results,
    }


if __name__ == "__main__":
    sys.exit(main())
