#!/usr/bin/env python3
"""An anchor for our detector's figures: CommonForms' FFDNet-S on the same flat PDFs, scored
by the same matching code.

Our detector's figures (``detect_eval.py``, ``train_detector.py``) say little alone: this
puts a published form-field detector beside them. For every form of a corpus:

1. The flat copy is made and cached exactly as ``detect_eval.py`` makes it (``flat_copy``).
2. FFDNet-S runs on it through commonforms 0.1.4 at its own defaults, in its own
   environment (``.venv-anchor``, see ``ffdnet_detect.py``): its raw boxes, mapped to PDF user
   space, are cached by the flat copy's sha256 and a tag of the model and settings, so a long
   run can be stopped and resumed. Its classes become ours: text box -> text, choice button ->
   checkbox, signature -> signature.
3. The detections are matched and scored with ``detect_eval``'s own ``match``, ``score``,
   ``inked`` (the ignore rule) and ``overall``: micro and mean per-form F1, precision,
   recall, class-aware F1, checkbox+radio recall and seconds per page, each comb-equivalent
   (``comb_score``: a comb and a row of one-character boxes score alike) with the
   plain figure beside it.

On the training corpus each form is reported in the cross-validation fold
``train_detector.folds()`` gives it over the whole corpus (versions of one form stay in one
fold), per fold and overall. FFDNet is not trained on any fold: the folds only let the
anchor be read beside our cross-validated figures, fold by fold.

Run from the repository root with the project's environment (``make bench-anchor`` builds
the anchor's environment and runs both corpora)::

    .venv/bin/python benchmarks/ffdnet_anchor.py --corpus dev --jobs 2 --threads 1
    .venv/bin/python benchmarks/ffdnet_anchor.py --corpus train --jobs 2 --threads 1
    .venv/bin/python benchmarks/ffdnet_anchor.py --forms 'vita-min__f88*' --threads 1
    .venv/bin/python benchmarks/ffdnet_anchor.py --corpus dev --compare out/detect.json

``--compare`` reads our per-form figures on the same forms (``detect_eval.py --json`` or
``train_detector.py --json``) and prints both side by side, per fold on the training corpus.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks import ffdnet_detect  # noqa: E402
from benchmarks.detect_eval import (  # noqa: E402
    CLASSES,
    COMB_NOTE,
    DEFAULT_CACHE,
    IOU_MIN,
    WidgetBox,
    _count,
    _fmt,
    _short,
    comb_figures,
    detection_figures,
    flat_copy,
    form_truth,
    overall,
    page_count,
    select_forms,
    sha256,
)
from benchmarks.detect_eval import DEFAULT_CORPUS as DEV_CORPUS  # noqa: E402

#: The mode name under which the anchor's figures sit, as detect_eval's sit under "fields".
MODE = "ffdnet-s"
RESULTS = REPO_ROOT / "benchmarks" / "results"
DEV_RESULTS = RESULTS / "ffdnet_anchor_dev.txt"
CV_RESULTS = RESULTS / "ffdnet_anchor_cv.txt"
ANCHOR_PYTHON = REPO_ROOT / ".venv-anchor" / "bin" / "python"
WORKER = Path(__file__).resolve().with_name("ffdnet_detect.py")


# --------------------------------------------------------------------------- the corpus


@dataclass
class Corpus:
    """Where the forms are and, for a training corpus, the fold of each form."""

    forms: Path
    root: Path | None = None
    """The training corpus (``forms/`` and ``MANIFEST.csv``); None for a folder of forms."""

    @property
    def cross_validated(self) -> bool:
        return self.root is not None


def resolve_corpus(spec: str) -> Corpus:
    """``dev``, ``train``, a training corpus (a folder with ``forms/``) or a folder of PDFs."""
    if spec == "dev":
        return Corpus(DEV_CORPUS)
    if spec == "train":
        from benchmarks.train_detector import DEFAULT_CORPUS as TRAIN_CORPUS

        return Corpus(TRAIN_CORPUS / "forms", TRAIN_CORPUS)
    path = Path(spec)
    if (path / "forms").is_dir():
        return Corpus(path / "forms", path)
    return Corpus(path)


def fold_of(root: Path) -> dict[str, int]:
    """Each form's 0-based fold, as ``train_detector`` assigns it over the whole corpus.

    The assignment depends on every group of the corpus, so it is made over all its forms
    before ``--forms`` or ``--limit`` pick some: a form keeps the fold of the full run.
    """
    from benchmarks.train_detector import _groups, group_folds

    groups = _groups(root)
    paths = sorted((root / "forms").glob("*.pdf"))
    found = group_folds([groups.get(p.name, p.stem) for p in paths])
    return {p.name: k for p, k in zip(paths, found, strict=True)}


# --------------------------------------------------------------------------- detection


@dataclass
class Prepared:
    """A form whose flat copy exists: where its detections are (or are to be) cached."""

    path: Path
    flat_sha256: str
    record: Path
    pages: int
    cached: bool


def _prepare(task: tuple[Path, Path, int]) -> Prepared:
    path, cache_dir, batch = task
    flat = flat_copy(path.read_bytes(), cache_dir)
    digest = sha256(flat)
    record = ffdnet_detect.cache_path(cache_dir, digest, batch)
    cached = ffdnet_detect.read_record(record, digest, batch) is not None
    return Prepared(path, digest, record, page_count(flat), cached)


def prepare(paths: Sequence[Path], cache_dir: Path, batch: int, jobs: int) -> list[Prepared]:
    """Flat copies of every form (cached) and whether FFDNet's detections are cached too."""
    tasks = [(p, cache_dir, batch) for p in paths]
    if jobs > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(jobs, initializer=_quiet) as pool:
            return list(pool.map(_prepare, tasks, chunksize=4))
    return [_prepare(t) for t in tasks]


def spread(items: Sequence[Prepared], jobs: int) -> list[list[Prepared]]:
    """Forms dealt to ``jobs`` workers, biggest first to the least loaded (by pages)."""
    shares: list[list[Prepared]] = [[] for _ in range(max(1, jobs))]
    load = [0] * len(shares)
    for item in sorted(items, key=lambda p: (-p.pages, p.path.name)):
        k = load.index(min(load))
        shares[k].append(item)
        load[k] += item.pages
    return [s for s in shares if s]


def run_detection(
    pending: Sequence[Prepared],
    cache_dir: Path,
    *,
    python: Path,
    jobs: int,
    threads: int,
    batch: int,
) -> dict[str, str]:
    """FFDNet on every form not yet cached, ``jobs`` worker processes of ``threads`` torch
    threads each; returns the error of each form that got no detections."""
    if not pending:
        return {}
    errors: dict[str, str] = {}
    env = {
        **os.environ,
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "OPENBLAS_NUM_THREADS": str(threads),
        "YOLO_OFFLINE": "true",
    }
    with tempfile.TemporaryDirectory(prefix="ffdnet-tasks-") as scratch:
        work = Path(scratch)
        procs: list[tuple[subprocess.Popen[bytes], Path, list[Prepared]]] = []
        try:
            shares = spread(pending, jobs)
            for k, share in enumerate(shares):
                tasks = []
                for item in share:
                    flat = work / f"{item.flat_sha256}.pdf"
                    flat.write_bytes(flat_copy(item.path.read_bytes(), cache_dir))
                    tasks.append(
                        {
                            "name": item.path.name,
                            "flat": str(flat),
                            "sha256": item.flat_sha256,
                            "out": str(item.record),
                        }
                    )
                task_file = work / f"tasks-{k}.json"
                task_file.write_text(json.dumps(tasks), encoding="utf-8")
                status = work / f"status-{k}.jsonl"
                command = [str(python), str(WORKER), "--tasks", str(task_file)]
                command += ["--threads", str(threads), "--batch", str(batch)]
                command += ["--workers", str(len(shares))]
                with status.open("wb") as out:
                    procs.append((subprocess.Popen(command, stdout=out, env=env), status, share))
            for proc, _status, _share in procs:
                proc.wait()
        except KeyboardInterrupt:
            for proc, _status, _share in procs:
                if proc.poll() is None:
                    proc.terminate()
            for proc, _status, _share in procs:
                proc.wait()
            raise
        for proc, status, share in procs:
            for line in status.read_text(encoding="utf-8").splitlines():
                with_error = json.loads(line)
                if "error" in with_error:
                    errors[with_error["name"]] = with_error["error"]
            for item in share:
                if item.path.name not in errors and not item.record.is_file():
                    errors[item.path.name] = f"no detections (worker exited {proc.returncode})"
    return errors


# --------------------------------------------------------------------------- scoring


def detections(record: dict[str, Any]) -> list[WidgetBox]:
    """A cached record's boxes as detect_eval's widgets, in our classes."""
    return [
        WidgetBox(int(d["page"]), tuple(d["rect"]), ffdnet_detect.map_class(d["label"]))
        for d in record["detections"]
    ]


def evaluate(
    path: Path, record: dict[str, Any] | None, cache_dir: Path, *, error: str | None = None
) -> dict[str, Any]:
    """One form's summary in ``detect_eval.evaluate_form``'s shape, the anchor as its mode."""
    source = path.read_bytes()
    flat = flat_copy(source, cache_dir)
    gt, ink, summary = form_truth(path.name, source, flat)
    pages = summary["pages"]
    det = detections(record) if record is not None else []
    _, figures = detection_figures(gt, det, ink)
    seconds = record["seconds"] if record is not None else None
    summary["flat_sha256"] = sha256(flat)
    summary["modes"][MODE] = {
        "error": error,
        "traceback": None,
        "seconds": seconds,
        "s_per_page": seconds / pages if seconds is not None and pages else None,
        "threads": record["settings"]["threads"] if record is not None else None,
        "workers": record["settings"].get("workers") if record is not None else None,
        "versions": record["versions"] if record is not None else None,
        # detect_eval's naming figures: FFDNet names nothing
        "schema_entries": 0,
        "duplicate_names": {},
        "n_duplicate_names": 0,
        "labelled": 0,
        "label_named": 0,
        **figures,
    }
    return summary


def _evaluate_job(task: tuple[Path, Path, Path, str, int, str | None]) -> dict[str, Any]:
    path, record_path, cache_dir, digest, batch, error = task
    record = ffdnet_detect.read_record(record_path, digest, batch)
    if record is None and error is None:
        error = "no cached detections"
    return evaluate(path, record, cache_dir, error=error)


def _quiet() -> None:
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    logging.getLogger("pdfminer").setLevel(logging.ERROR)


def score_forms(
    prepared: Sequence[Prepared],
    cache_dir: Path,
    batch: int,
    errors: dict[str, str],
    jobs: int,
) -> list[dict[str, Any]]:
    """Every form's summary, in name order."""
    tasks = [
        (p.path, p.record, cache_dir, p.flat_sha256, batch, errors.get(p.path.name))
        for p in prepared
    ]
    if jobs > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(jobs, initializer=_quiet) as pool:
            summaries = list(pool.map(_evaluate_job, tasks, chunksize=2))
    else:
        summaries = [_evaluate_job(t) for t in tasks]
    return sorted(summaries, key=lambda s: s["form"])


def totals(summaries: Sequence[dict[str, Any]], mode: str = MODE) -> dict[str, Any]:
    """``detect_eval.overall`` for one mode, plus seconds per page over all pages."""
    figures = overall(summaries, (mode,))["modes"][mode]
    seconds = [s["modes"][mode].get("seconds") for s in summaries]
    timed = [(t, s["pages"]) for t, s in zip(seconds, summaries, strict=True) if t is not None]
    figures["mean_s_per_page"] = (
        sum(t for t, _ in timed) / sum(p for _, p in timed) if timed else None
    )
    figures["forms"] = len(summaries)
    figures["pages"] = sum(s["pages"] for s in summaries)
    return figures


def by_fold(summaries: Sequence[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    found: dict[int, list[dict[str, Any]]] = {}
    for s in summaries:
        if s.get("fold") is not None:
            found.setdefault(int(s["fold"]), []).append(s)
    return dict(sorted(found.items()))


# --------------------------------------------------------------------------- printing


def print_forms(summaries: Sequence[dict[str, Any]], out: TextIO) -> None:
    """One line per form, as ``detect_eval``'s table (fold last on the training corpus):
    comb-equivalent figures, the plain F1 beside."""
    folds = any(s.get("fold") is not None for s in summaries)
    head = (
        f"{'form':<44} {'pg':>3} {'gt':>5} {'det':>5} {'tp':>5} {'P':>6} {'R':>6} {'F1':>6} "
        f"{'plF1':>6} {'cF1':>6} {'btnR':>6} {'s/pg':>7}" + (f" {'fold':>4}" if folds else "")
    )
    print(f"\n{MODE} ({COMB_NOTE})", file=out)
    print(head, file=out)
    print("-" * len(head), file=out)
    for s in summaries:
        row = s["modes"][MODE]
        c = comb_figures(row)
        fold = f" {s['fold'] + 1:>4}" if folds and s.get("fold") is not None else ""
        print(
            f"{_short(s['form'], 44):<44} {s['pages']:>3} {_count(c.get('n_gt')):>5} "
            f"{_count(c.get('n_det')):>5} {_count(c.get('tp')):>5} "
            f"{_fmt(c.get('precision')):>6} {_fmt(c.get('recall')):>6} {_fmt(c.get('f1')):>6} "
            f"{_fmt(row['f1']):>6} {_fmt(c.get('class_f1')):>6} "
            f"{_fmt(c.get('button_recall')):>6} {_fmt(row['s_per_page'], 2):>7}{fold}",
            file=out,
        )
        if row["error"]:
            print(f"    ERROR {row['error']}", file=out)


def print_folds(summaries: Sequence[dict[str, Any]], out: TextIO) -> None:
    """One line per cross-validation test fold and one for all of them."""
    head = (
        f"{'fold':<6} {'forms':>5} {'pages':>5} {'gt':>6} {'det':>6} {'F1':>6} {'plF1':>6} "
        f"{'P':>6} {'R':>6} {'mF1':>6} {'cF1':>6} {'btnR':>6} {'s/pg':>6}"
    )
    print(
        "\nPer cross-validation test fold (train_detector.folds(), whole corpus; a comb as "
        "its cells, plF1 plain)",
        file=out,
    )
    print(head, file=out)
    print("-" * len(head), file=out)
    scopes = [(str(k + 1), rows) for k, rows in by_fold(summaries).items()]
    for name, rows in [*scopes, ("all", list(summaries))]:
        f = totals(rows)
        c = comb_figures(f)
        print(
            f"{name:<6} {f['forms']:>5} {f['pages']:>5} {_count(c.get('n_gt')):>6} "
            f"{_count(c.get('n_det')):>6} {_fmt(c.get('f1')):>6} {_fmt(f['f1']):>6} "
            f"{_fmt(c.get('precision')):>6} {_fmt(c.get('recall')):>6} "
            f"{_fmt(c.get('mean_form_f1')):>6} {_fmt(c.get('class_f1')):>6} "
            f"{_fmt(c.get('button_recall')):>6} {_fmt(f['median_s_per_page'], 2):>6}",
            file=out,
        )


def print_overall(summaries: Sequence[dict[str, Any]], out: TextIO) -> None:
    """The overall block of ``detect_eval``'s report, for the anchor."""
    total = overall(summaries, (MODE,))
    f = totals(summaries)
    excluded = ", ".join(f"{k} {v}" for k, v in total["excluded"].items()) or "none"
    print(
        f"\nOverall: {total['forms']} forms, {total['pages']} pages, {total['gt']} ground-truth "
        f"widgets (left out: {excluded})",
        file=out,
    )

    c = comb_figures(f)
    print(f"  figures: {COMB_NOTE} (in brackets)", file=out)

    def line(label: str, value: str) -> None:
        print(f"  {label:<38}{value:>22}", file=out)

    def both(key: str, digits: int = 3) -> str:
        def text(figures: dict[str, Any]) -> str:
            value = figures.get(key)
            return _fmt(value, digits) if isinstance(value, float) else _count(value)

        return f"{text(c)} ({text(f)})"

    line("ground-truth widgets / cells", both("n_gt"))
    line("detected widgets", both("n_det"))
    line(f"matched (IoU >= {IOU_MIN})", both("tp"))
    line("precision", both("precision"))
    line("recall", both("recall"))
    line("micro F1", both("f1"))
    line("mean per-form F1", both("mean_form_f1"))
    line("class-aware F1", both("class_f1"))
    print("  recall by ground-truth class: found / found with a class of its group", file=out)
    for cls in CLASSES:
        counts = f["by_class"].get(cls)
        if counts and counts["n"]:
            cells = c.get("by_class", {}).get(cls, {})
            line(
                f"  {cls} (n={counts['n']})",
                f"{_fmt(cells.get('recall'), 2)}/{_fmt(cells.get('class_recall'), 2)} "
                f"({_fmt(counts['recall'], 2)}/{_fmt(counts['class_recall'], 2)})",
            )
    line("checkbox+radio recall (group)", both("button_recall"))
    line("forms without detections (errors)", str(f["errors"]))
    line("median s/page", _fmt(f["median_s_per_page"], 3))
    line("mean s/page (all seconds / all pages)", _fmt(f["mean_s_per_page"], 3))
    blank = total.get("gt_blank_by_class", {})
    if blank:
        listed = ", ".join(f"{cls} {n}" for cls, n in blank.items())
        print(f"  ground truth over blank paper in the flat copy: {listed}", file=out)
    print(
        "  checkbox+radio recall ceiling (buttons with print under them): "
        f"{_fmt(total.get('button_recall_ceiling'))}",
        file=out,
    )


def _settings_line(summaries: Sequence[dict[str, Any]]) -> list[str]:
    threads = sorted({str(s["modes"][MODE]["threads"]) for s in summaries} - {"None"})
    workers = sorted({str(s["modes"][MODE].get("workers")) for s in summaries} - {"None"})
    versions = {
        json.dumps(s["modes"][MODE]["versions"], sort_keys=True)
        for s in summaries
        if s["modes"][MODE]["versions"]
    }
    lines = [
        f"anchor: CommonForms {ffdnet_detect.COMMONFORMS_VERSION} {ffdnet_detect.MODEL} at its "
        f"defaults (confidence {ffdnet_detect.CONFIDENCE}, NMS IoU {ffdnet_detect.IOU}, "
        f"augment {'on' if ffdnet_detect.AUGMENT else 'off'}, {ffdnet_detect.IMAGE_SIZE} px, "
        f"pages rendered at 72 dpi); torch threads per process {', '.join(threads) or '-'}, "
        f"processes side by side {', '.join(workers) or '-'}",
        "classes: "
        + ", ".join(f"{k} -> {v}" for k, v in ffdnet_detect.CLASS_MAP.items())
        + f"; scored by detect_eval (one-to-one, IoU >= {IOU_MIN}, ignore rule)",
    ]
    for entry in sorted(versions):
        listed = ", ".join(f"{k} {v}" for k, v in json.loads(entry).items())
        lines.append(f"versions: {listed}")
    return lines


def report(summaries: Sequence[dict[str, Any]], corpus: Corpus, out: TextIO) -> None:
    """The whole text report: settings, per form, per fold, overall."""
    print(
        f"ffdnet_anchor: Python {platform.python_version()}, {os.cpu_count()} CPUs; corpus "
        f"{corpus.forms}; timings are wall seconds per form in each FFDNet process (rendering "
        "and inference, the model loaded once), from the run that cached the form",
        file=out,
    )
    for line in _settings_line(summaries):
        print(line, file=out)
    print_forms(summaries, out)
    if corpus.cross_validated:
        print_folds(summaries, out)
    print_overall(summaries, out)


# --------------------------------------------------------------------------- comparing


def load_summaries(path: Path) -> list[dict[str, Any]]:
    """The per-form summaries of a JSON report (detect_eval, train_detector or this one)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return list(data["forms"] if isinstance(data, dict) else data)


def compare(
    anchor: Sequence[dict[str, Any]],
    ours: Sequence[dict[str, Any]],
    mode: str,
    out: TextIO,
    anchor_mode: str = MODE,
) -> int:
    """Anchor and ours side by side on the forms both have, per fold when there are folds.

    Returns how many forms both have. A form whose sha256 or ground truth differs between
    the two is left out (the corpus changed between the runs), and said so.
    """
    theirs = {s["form"]: s for s in ours if mode in s.get("modes", {})}
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    differ = []
    for s in anchor:
        other = theirs.get(s["form"])
        if other is None:
            continue
        same = other.get("sha256") in (None, s["sha256"]) and other["gt"] == s["gt"]
        if same:
            pairs.append((s, other))
        else:
            differ.append(s["form"])
    print(
        f"\nSide by side on the same {len(pairs)} forms: {anchor_mode} / ours ({mode}); "
        f"{len(anchor) - len(pairs) - len(differ)} anchor forms have no figures of ours",
        file=out,
    )
    if differ:
        print(f"  left out, different file or ground truth: {', '.join(differ)}", file=out)
    moved = sum(
        1 for a, b in pairs if a.get("fold") is not None and b.get("fold") not in (None, a["fold"])
    )
    if moved:
        print(
            f"  {moved} forms are in another fold in ours (a run over part of the corpus?): "
            "the folds below are the anchor's, over the whole corpus",
            file=out,
        )
    if not pairs:
        return 0
    # (column, key, digits, comb-equivalent): the plain F1 beside the comb-equivalent one
    metrics = [
        ("F1", "f1", 3, True),
        ("plF1", "f1", 3, False),
        ("P", "precision", 3, True),
        ("R", "recall", 3, True),
        ("mF1", "mean_form_f1", 3, True),
        ("cF1", "class_f1", 3, True),
        ("btnR", "button_recall", 3, True),
        ("s/pg", "median_s_per_page", 2, False),
    ]
    print("  comb-equivalent figures (plF1: plain F1, a comb as one widget)", file=out)
    head = f"{'scope':<6} {'forms':>5} {'gt':>6}" + "".join(f" {m:>13}" for m, *_ in metrics)
    print(head, file=out)
    print("-" * len(head), file=out)
    folds: dict[int, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for pair in pairs:
        if pair[0].get("fold") is not None:
            folds.setdefault(int(pair[0]["fold"]), []).append(pair)
    scopes = [(f"fold {k + 1}", rows) for k, rows in sorted(folds.items())]
    for name, rows in [*scopes, ("all", pairs)]:
        a = totals([r[0] for r in rows], anchor_mode)
        b = totals([r[1] for r in rows], mode)

        def value(figures: dict[str, Any], key: str, cells: bool) -> float | None:
            return (comb_figures(figures) if cells else figures).get(key)

        cells = "".join(
            f" {_fmt(value(a, key, comb), digits):>6}/{_fmt(value(b, key, comb), digits):<6}"
            for _, key, digits, comb in metrics
        )
        print(f"{name:<6} {len(rows):>5} {a['n_gt']:>6}{cells}".rstrip(), file=out)
    return len(pairs)


# --------------------------------------------------------------------------- main


def pick(corpus: Corpus, forms: str | None, limit: int | None) -> list[Path]:
    """The corpus forms matching ``--forms`` (globs, comma-separated), the first ``limit``."""
    paths = select_forms(corpus.forms, forms)
    return paths[:limit] if limit else paths


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus",
        default="dev",
        help="dev (../shared/corpus/forms), train (../shared/corpus/train, reported per "
        "fold), a training corpus folder (with forms/) or a folder of PDFs",
    )
    parser.add_argument("--forms", help="glob(s) of form file names, comma-separated")
    parser.add_argument("--limit", type=int, help="only the first N forms (by name)")
    parser.add_argument("--jobs", type=int, default=1, help="FFDNet worker processes")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    parser.add_argument(
        "--batch", type=int, default=ffdnet_detect.BATCH, help="pages per predict call"
    )
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="cache folder")
    parser.add_argument(
        "--anchor-python",
        type=Path,
        default=ANCHOR_PYTHON,
        help="the Python of the environment that has commonforms (default .venv-anchor)",
    )
    parser.add_argument(
        "--out",
        help="write the report here ('-': nowhere); default: results/ffdnet_anchor_dev.txt "
        "or _cv.txt for a whole corpus, nowhere for a selection",
    )
    parser.add_argument("--json", type=Path, help="write the per-form figures to this file")
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="OURS.json",
        help="our per-form figures (detect_eval.py or train_detector.py --json) to print beside",
    )
    parser.add_argument("--compare-mode", default="fields", help="our mode to compare with")
    parser.add_argument(
        "--anchor-json",
        type=Path,
        help="read the anchor's per-form figures from this file instead of running it",
    )
    return parser.parse_args(argv)


def _default_out(args: argparse.Namespace, corpus: Corpus) -> Path | None:
    if args.out == "-":
        return None
    if args.out:
        return Path(args.out)
    if args.forms or args.limit or args.anchor_json:
        return None
    return CV_RESULTS if corpus.cross_validated else DEV_RESULTS


def run(args: argparse.Namespace, corpus: Corpus) -> list[dict[str, Any]] | None:
    """Detect what is not cached, score everything; None when nothing matched."""
    paths = pick(corpus, args.forms, args.limit)
    if not paths:
        print(f"no forms match {args.forms!r} in {corpus.forms}", file=sys.stderr)
        return None
    batch = max(1, args.batch)
    started = time.perf_counter()
    prepared = prepare(paths, args.cache, batch, args.jobs)
    pending = [p for p in prepared if not p.cached]
    pages = sum(p.pages for p in pending)
    print(
        f"{len(paths)} forms, {len(prepared) - len(pending)} cached; FFDNet on {len(pending)} "
        f"forms ({pages} pages) with {args.jobs} worker(s) of {args.threads} thread(s)",
        file=sys.stderr,
        flush=True,
    )
    if pending and not args.anchor_python.exists():
        print(
            f"{args.anchor_python} not found: `make bench-anchor` builds the anchor's "
            "environment (or pass --anchor-python)",
            file=sys.stderr,
        )
        return None
    errors = run_detection(
        pending,
        args.cache,
        python=args.anchor_python,
        jobs=args.jobs,
        threads=args.threads,
        batch=batch,
    )
    summaries = score_forms(prepared, args.cache, batch, errors, args.jobs)
    if corpus.root is not None:
        folds = fold_of(corpus.root)
        for s in summaries:
            s["fold"] = folds.get(s["form"])
    print(f"done in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return summaries


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    _quiet()
    corpus = resolve_corpus(args.corpus)
    if not corpus.forms.is_dir():
        print(f"corpus not found at {corpus.forms}; skipped")
        return 0
    if args.anchor_json:
        summaries: list[dict[str, Any]] | None = load_summaries(args.anchor_json)
    else:
        try:
            summaries = run(args, corpus)
        except KeyboardInterrupt:
            print("\ninterrupted: what was detected is cached; run again to go on", file=sys.stderr)
            return 130
    if summaries is None:
        return 1
    lines = io.StringIO()
    report(summaries, corpus, lines)
    if args.compare:
        compare(summaries, load_summaries(args.compare), args.compare_mode, lines)
    text = lines.getvalue()
    print(text, end="")
    target = _default_out(args, corpus)
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"report: {target}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "settings": {
                "corpus": str(corpus.forms),
                "forms": args.forms,
                "limit": args.limit,
                "tag": ffdnet_detect.setting_tag(max(1, args.batch)),
                "class_map": ffdnet_detect.CLASS_MAP,
                "iou_min": IOU_MIN,
            },
            "forms": summaries,
            "overall": totals(summaries),
            "folds": {str(k + 1): totals(rows) for k, rows in by_fold(summaries).items()},
        }
        args.json.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        print(f"JSON: {args.json}")
    return 1 if any(s["modes"][MODE]["error"] for s in summaries) else 0


if __name__ == "__main__":
    sys.exit(main())
