#!/usr/bin/env python3
"""Cold fill: one ``fillpdf fill`` process against one pypdf script, on the same form and values.

A user who fills one form from a shell pays for the whole process: interpreter start,
imports, parsing the template, drawing the values, writing the file. This benchmark times
exactly that, for both:

* ours: ``fillpdf fill FORM --values VALUES.json -o OUT.pdf``;
* pypdf: ``python pypdf_fill.py FORM VALUES.json OUT.pdf``, a script that does what a pypdf
  user writes: ``PdfReader``, ``PdfWriter(clone_from=reader)``,
  ``update_page_form_field_values(page, values, auto_regenerate=False)`` on every page,
  ``write`` to a file. Checkboxes and radio buttons get their on-state names (``/Yes``).

Forms: ``kits/formkit.py``'s bench form and a few varied forms of the wild corpus
(``../shared/corpus/wild/forms``; skipped with a message when that folder is absent). Two
value sets per form: ASCII only, and Greek and Cyrillic text in every text field.

The two commands alternate (the order flips every round) for ``--rounds`` rounds after one
untimed warm-up each (which also writes any missing ``.pyc``, as an install does); the
figures are medians of ``time.perf_counter`` around ``subprocess.run``. Printed per form and
value set: the ratio ours / pypdf (acceptance: <= 1.0), and the output sizes: ours, the
template, pypdf's, and ours / (template + the values' UTF-8 bytes) (goal: <= 1.2).
``--importtime`` also prints where a ``fillpdf fill`` process spends its import time
(``python -X importtime``), by top-level package.

Run it from the repository root::

    .venv/bin/python benchmarks/cold_fill.py [--rounds 7] [--forms bench,pdf.js__textfields]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.machine import Report, machine_info, progress  # noqa: E402

WILD = Path(os.environ.get("FILLPDF_WILD_CORPUS") or REPO_ROOT.parent / "shared/corpus/wild/forms")
RESULTS = REPO_ROOT / "benchmarks" / "results" / "cold_fill.txt"
#: Varied wild forms: small and large, one and many pages, text, comb, checkboxes, choices.
WILD_FORMS = (
    "pdf.js__textfields.pdf",
    "pypdf__libreoffice-form.pdf",
    "itext__datasheet.pdf",
    "pdf-lib__sample_form.pdf",
    "pdfbox__AcroFormsBasicFields.pdf",
    "pdf.js__prefilled_f1040.pdf",
)
GREEK = "Ελένη Παπαδοπούλου"
CYRILLIC = "Анна Кузнецова"

PYPDF_SCRIPT = """\
import json
import sys

from pypdf import PdfReader, PdfWriter

form, values_path, out = sys.argv[1:4]
with open(values_path, encoding="utf-8") as handle:
    values = json.load(handle)
reader = PdfReader(form)
writer = PdfWriter(clone_from=reader)
for page in writer.pages:
    writer.update_page_form_field_values(page, values, auto_regenerate=False)
with open(out, "wb") as handle:
    writer.write(handle)
"""


@dataclass
class Case:
    form: str  # a short name
    path: Path
    value_set: str  # "ascii" or "greek+cyrillic"
    ours_values: Path
    pypdf_values: Path
    value_bytes: int


def bench_form(folder: Path) -> Path:
    from kits.formkit import bench_form as build

    path = folder / "bench.pdf"
    path.write_bytes(build())
    return path


def on_states(path: Path) -> dict[str, list[str]]:
    """Each button field's on-state names (no slash), by full name, as pypdf reads them."""
    from pypdf import PdfReader

    states: dict[str, list[str]] = {}
    for name, field in (PdfReader(path).get_fields() or {}).items():
        found = [str(s)[1:] for s in field.get("/_States_", []) if str(s) != "/Off"]
        if found:
            states[name] = found
    return states


def make_values(path: Path, value_set: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Values for every visible writable field: ours, and the same as pypdf takes them."""
    from fillpdf_provider.engine import inspect

    states = on_states(path)
    ours: dict[str, Any] = {}
    theirs: dict[str, Any] = {}
    texts = 0
    for field in inspect(path):
        if field.read_only or field.type == "signature":
            continue
        if field.type in ("text", "date"):
            texts += 1
            if value_set == "ascii":
                text = f"Value {texts} of form" if field.type == "text" else "2024-05-17"
            else:
                text = GREEK if texts % 2 else CYRILLIC
            if field.multiline:
                text += "\nsecond line"
            if field.max_length:
                text = text[: field.max_length]
            ours[field.name] = theirs[field.name] = text
        elif field.type == "checkbox":
            ours[field.name] = True
            theirs[field.name] = "/" + (states.get(field.name) or ["Yes"])[0]
        elif field.type == "radio" and field.options:
            option = field.options[0]
            ours[field.name] = option
            known = states.get(field.name) or [option]
            theirs[field.name] = "/" + (option if option in known else known[0])
        elif field.type == "choice" and field.options:
            ours[field.name] = theirs[field.name] = field.options[0]
    ours = engine_accepts(path, ours)
    return ours, pypdf_accepts(path, {k: v for k, v in theirs.items() if k in ours})


def engine_accepts(path: Path, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` as our engine takes them: a text too long for its box (the engine refuses
    text under 4 pt) is cut to its first word, else to two characters, else left out."""
    from fillpdf_provider.engine import FillPdfError, Template

    template = Template(path)
    kept: dict[str, Any] = {}
    for name, value in values.items():
        tries = [value]
        if isinstance(value, str):
            tries += [value.split()[0], value[:2]] if value.split() else []
        for attempt in tries:
            try:
                template.fill({name: attempt})
            except FillPdfError:
                continue
            kept[name] = attempt
            break
    return kept


def pypdf_accepts(path: Path, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` without the fields pypdf raises on (each tried alone when all fail)."""
    import io
    import logging

    from pypdf import PdfReader, PdfWriter

    logging.getLogger("pypdf").setLevel(logging.ERROR)

    def fills(subset: dict[str, Any]) -> bool:
        try:
            writer = PdfWriter(clone_from=PdfReader(path))
            for page in writer.pages:
                writer.update_page_form_field_values(page, subset, auto_regenerate=False)
            writer.write(io.BytesIO())
        except Exception:  # any failure leaves the field out
            return False
        return True

    if fills(values):
        return values
    kept = {k: v for k, v in values.items() if fills({k: v})}
    dropped = sorted(set(values) - set(kept))
    progress(f"{path.name}: pypdf raises on {', '.join(dropped)}; left out for pypdf")
    return kept


def value_bytes(values: dict[str, Any]) -> int:
    """The bytes the values carry: UTF-8 text of strings, nothing for booleans."""
    return sum(len(v.encode("utf-8")) for v in values.values() if isinstance(v, str))


def cases(folder: Path, names: list[str] | None, report: Report) -> list[Case]:
    forms: list[tuple[str, Path]] = [("bench", bench_form(folder))]
    if WILD.is_dir():
        forms += [(Path(n).stem, WILD / n) for n in WILD_FORMS if (WILD / n).is_file()]
    else:
        report(f"(no wild corpus at {WILD}: only the bench form)")
    if names:
        forms = [(n, p) for n, p in forms if any(w in n for w in names)]
    found: list[Case] = []
    for name, path in forms:
        for value_set in ("ascii", "greek+cyrillic"):
            ours, theirs = make_values(path, value_set)
            stem = f"{name}.{value_set.replace('+', '_')}"
            ours_path = folder / f"{stem}.ours.json"
            theirs_path = folder / f"{stem}.pypdf.json"
            ours_path.write_text(json.dumps(ours, ensure_ascii=False), encoding="utf-8")
            theirs_path.write_text(json.dumps(theirs, ensure_ascii=False), encoding="utf-8")
            found.append(Case(name, path, value_set, ours_path, theirs_path, value_bytes(ours)))
    return found


def commands(
    case: Case, folder: Path, script: Path, baseline: Path | None
) -> dict[str, tuple[list[str], dict[str, str]]]:
    """The commands to time, each with its environment: ours, pypdf, and the baseline
    (``fillpdf`` with ``baseline`` first on ``PYTHONPATH``) when there is one."""
    bin_dir = Path(sys.executable).parent
    stem = f"{case.form}.{case.value_set.replace('+', '_')}"

    def fillpdf(key: str) -> list[str]:
        return [
            str(bin_dir / "fillpdf"),
            "fill",
            str(case.path),
            "--values",
            str(case.ours_values),
            "-o",
            str(folder / f"{stem}.{key}.pdf"),
        ]

    pypdf = [
        sys.executable,
        str(script),
        str(case.path),
        str(case.pypdf_values),
        str(folder / f"{stem}.pypdf.pdf"),
    ]
    found = {"ours": (fillpdf("ours"), CHILD_ENV), "pypdf": (pypdf, CHILD_ENV)}
    if baseline is not None:
        found["base"] = (fillpdf("base"), {**CHILD_ENV, "PYTHONPATH": str(baseline)})
    return found


#: Children may write bytecode (an installed package has its ``.pyc`` files): with
#: ``PYTHONDONTWRITEBYTECODE`` set, every edited module would be compiled in every process.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        raise RuntimeError(f"{Path(command[1]).name} exited {done.returncode}: {tail}")
    return seconds


def import_profile(command: list[str], report: Report, top: int = 12) -> None:
    """Where a process spends its import time, by top-level package (``-X importtime``)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _CLI, *command[1:]],
        capture_output=True,
        check=False,
        text=True,
        env=CHILD_ENV,
    )
    own: dict[str, int] = defaultdict(int)
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cumulative, module = line[len("import time:") :].split("|")
        own[module.strip().split(".")[0]] += int(self_us)
    total = sum(own.values())
    report(f"  imports of `fillpdf fill`: {total / 1000:.0f} ms in all; the largest:")
    for package, us in sorted(own.items(), key=lambda item: -item[1])[:top]:
        report(f"    {package:<28} {us / 1000:7.1f} ms")


_CLI = "import sys; from fillpdf_provider.cli import main; sys.exit(main())"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per case (7)")
    parser.add_argument("--forms", help="comma-separated substrings of form names to run")
    parser.add_argument("--importtime", action="store_true", help="print the CLI's import costs")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="a folder holding another fillpdf_provider (e.g. `git archive` of an older "
        "commit's plugins/): its `fillpdf fill` is timed too, on the same values",
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="results file")
    args = parser.parse_args(argv)

    report = Report()
    info = machine_info(["pypdf", "fonttools", "fontpkg-noto-sans"])
    report("Cold fill: one `fillpdf fill` process vs one pypdf script (medians)")
    report(
        f"python {info['python']}, {info['cpus_usable']} CPUs, load {info['load_avg_1m']}, "
        + ", ".join(f"{k} {v}" for k, v in info["versions"].items())
    )
    report(f"rounds: {args.rounds} (alternating order), after one untimed warm-up each")
    if args.baseline:
        report(f"base: `fillpdf fill` with PYTHONPATH={args.baseline}")
    with tempfile.TemporaryDirectory(prefix="cold-fill-") as temp:
        folder = Path(temp)
        script = folder / "pypdf_fill.py"
        script.write_text(PYPDF_SCRIPT, encoding="utf-8")
        names = [n for n in (args.forms or "").split(",") if n] or None
        all_cases = cases(folder, names, report)
        report()
        base_head = f" {'base s':>7} {'base/p':>6} {'base B':>8}" if args.baseline else ""
        header = (
            f"{'form':<30} {'values':<14} {'ours s':>7} {'pypdf s':>7} {'ratio':>6}  "
            f"{'ours B':>8} {'tmpl B':>8} {'pypdf B':>8} {'val B':>6} {'out/(t+v)':>9}" + base_head
        )
        report(header)
        report("-" * len(header))
        ratios: list[float] = []
        sizes: list[float] = []
        for case in all_cases:
            progress(f"{case.form} / {case.value_set}")
            cmds = commands(case, folder, script, args.baseline)
            times: dict[str, list[float]] = {key: [] for key in cmds}
            try:
                for command, env in cmds.values():
                    run(command, env)  # warm-up: page cache, .pyc files
                for index in range(args.rounds):
                    order = list(cmds) if index % 2 == 0 else list(reversed(cmds))
                    for key in order:
                        times[key].append(run(*cmds[key]))
            except RuntimeError as exc:
                report(f"{case.form[:30]:<30} {case.value_set:<14} failed: {str(exc)[:200]}")
                continue
            median = {key: statistics.median(values) for key, values in times.items()}
            size = {key: Path(cmds[key][0][-1]).stat().st_size for key in cmds}
            template_b = case.path.stat().st_size
            bound = size["ours"] / (template_b + case.value_bytes)
            ratios.append(median["ours"] / median["pypdf"])
            sizes.append(bound)
            base = (
                f" {median['base']:7.3f} {median['base'] / median['pypdf']:6.2f} {size['base']:8,}"
                if "base" in cmds
                else ""
            )
            report(
                f"{case.form[:30]:<30} {case.value_set:<14} {median['ours']:7.3f} "
                f"{median['pypdf']:7.3f} {median['ours'] / median['pypdf']:6.2f}  "
                f"{size['ours']:8,} {template_b:8,} {size['pypdf']:8,} "
                f"{case.value_bytes:6,} {bound:9.3f}" + base
            )
        report("-" * len(header))
        if ratios:
            report(
                f"ratio ours/pypdf: median {statistics.median(ratios):.2f}, worst "
                f"{max(ratios):.2f} (acceptance <= 1.0); output / (template + values): "
                f"median {statistics.median(sizes):.3f}, worst {max(sizes):.3f} (goal <= 1.2)"
            )
        if args.importtime and all_cases:
            report()
            ours = commands(all_cases[0], folder, script, None)["ours"][0]
            import_profile(ours, report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report.text(), encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
