#!/usr/bin/env python3
"""The worst fill of a stored conversion the service accepts: what its bounds allow.

The service fills stored conversions in its own process, with no deadline to kill them;
what keeps a fill short is what it checks before drawing: the body's size (25 MB), the
values' names (the form's fields only), and each text value's length against what its box
can show. This builds conversions at the plan limits (the largest file a plan takes, 300
pages, and the most widgets a schema makes, 5,000), gives every field the longest value
the engine accepts (or, where boxes hold more, as much as the body allows) and times the
fill, flattened and not, and the refusal of a value past its box's bound. The worst time
is the figure ``docs/api.md`` states.

    .venv/bin/python benchmarks/fill_bounds.py [--out benchmarks/results/fill_bounds.txt]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.machine import Report, machine_info, progress  # noqa: E402
from fillpdf_provider.engine.appearance import Fit  # noqa: E402
from fillpdf_provider.engine.convert import convert  # noqa: E402
from fillpdf_provider.engine.errors import TextOverflowError  # noqa: E402
from fillpdf_provider.engine.filler import Template  # noqa: E402
from fillpdf_provider.engine.rebuild import MAX_WIDGETS  # noqa: E402
from fillpdf_provider.service.plans import PLANS  # noqa: E402
from fillpdf_provider.service.settings import Settings  # noqa: E402
from kits.servicekit import flat_form  # noqa: E402

RESULTS = REPO_ROOT / "benchmarks" / "results" / "fill_bounds.txt"
#: The most pages a plan with a page limit takes in one file.
PAGES = max(p.max_pages_per_file or 0 for p in PLANS.values())
BODY_BYTES = Settings(data_dir=Path(".")).max_fill_body_bytes
MAX_CHARS = Settings(data_dir=Path(".")).max_fill_chars
#: Helvetica's narrowest letter: the most of them fit a box. For multiline boxes, narrow
#: one-letter words: the most words to wrap.
NARROW = "'"
WORDS = "' "


def conversion(boxes_per_page: int, rect: Callable[[int], list[float]], multiline: bool) -> bytes:
    """A stored conversion of ``PAGES`` pages made from a schema, as the service makes it."""
    schema = [
        {
            "name": f"f{page}_{i}",
            "type": "text",
            "page": page,
            "rect": rect(i),
            "multiline": multiline,
        }
        for page in range(PAGES)
        for i in range(boxes_per_page)
    ]
    return convert(flat_form(PAGES), "fields", max_pages=PAGES, schema=json.dumps(schema)).pdf


def longest_accepted(template: Template, name: str, unit: str, cap: int) -> str:
    """The longest run of ``unit`` that ``name`` accepts, at most ``cap`` characters."""

    def fits(count: int) -> bool:
        try:
            template.check({name: (unit * count)[:count]})
            template.fill({name: (unit * count)[:count]})
        except TextOverflowError:
            return False
        return True

    low, high = 0, min(cap, template._plans[name].most_chars(Fit()) * 2 + 2)
    if fits(high):
        return (unit * high)[:high]
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return (unit * low)[:low]


def best_of(runs: int, work: Callable[[], object]) -> float:
    """The fastest of ``runs`` runs of ``work``, in seconds."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def body_bytes(values: dict[str, str]) -> int:
    return len(json.dumps({"conversion_id": "conv_" + "0" * 24, "values": values}))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS, help="results file")
    parser.add_argument("--runs", type=int, default=3, help="runs per case, best kept (3)")
    args = parser.parse_args(argv)
    out = Report()
    info = machine_info(["pypdf"])
    out(
        f"Fill at the service's bounds: {PAGES} pages, {MAX_WIDGETS:,} widgets, body at most "
        f"{BODY_BYTES // 2**20} MB, values at most {MAX_CHARS:,} characters in all, each at "
        "most what its box shows"
    )
    out("command: .venv/bin/python benchmarks/fill_bounds.py")
    out(
        f"machine: {info['cpu_count']} cores, {info['memory_gb']} GB, load "
        f"{info['load_avg_1m']}, Python {info['python']}, pypdf {info['versions']['pypdf']}"
    )
    per_page = MAX_WIDGETS // PAGES
    out(f"{'case':<28} {'fields':>6} {'value chars':>12} {'body MB':>8} {'fill s':>7} flat s")
    worst = max(
        _case(out, "one-line boxes", args.runs, per_page, _line_rect, False, NARROW),
        _case(out, "page-sized multiline boxes", args.runs, 1, _page_rect, True, WORDS),
        _case(out, "a few long multiline boxes", args.runs, 1, _page_rect, True, WORDS, 12),
    )
    out(f"worst fill at the bounds: {worst:.2f} s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(out.text())
    return 0


def _line_rect(i: int) -> list[float]:
    return [40, 760 - 44 * i, 572, 776 - 44 * i]


def _page_rect(i: int) -> list[float]:
    return [36, 36, 576, 756]


def _case(
    out: Report,
    label: str,
    runs: int,
    boxes: int,
    rect: Callable[[int], list[float]],
    multiline: bool,
    unit: str,
    filled_fields: int | None = None,
) -> float:
    """Fill ``filled_fields`` fields (all by default) of one conversion, each at the longest
    value the bounds let it have; the slower time, flattened or not."""
    progress(f"{label}: building the conversion")
    template = Template(conversion(boxes, rect, multiline))
    names = [f.name for f in template.fields][:filled_fields]
    # each value's part of the body (less its name), and of the characters
    share = min(BODY_BYTES // len(names) - 64, MAX_CHARS // len(names))
    value = longest_accepted(template, names[0], unit, share)
    values = dict.fromkeys(names, value)
    progress(f"{label}: filling {len(names):,} fields of {len(value):,} characters")
    filled = best_of(runs, lambda: template.fill(values))
    flat = best_of(runs, lambda: template.fill(values, flatten=True))
    out(
        f"{label:<28} {len(names):>6,} {len(value):>12,} "
        f"{body_bytes(values) / 2**20:>8.1f} {filled:>7.2f} {flat:>7.2f}"
    )
    past = unit * (BODY_BYTES // len(unit) - 128)  # the body's whole size in one value
    refused = best_of(runs, lambda: _refused(template, names[0], past))
    out(f"  a value of {len(past) / 2**20:.0f} MB in one box: refused in {refused * 1000:.0f} ms")
    return max(filled, flat)


def _refused(template: Template, name: str, value: str) -> None:
    try:
        template.fill({name: value})
    except TextOverflowError:
        return
    raise AssertionError("a value past its box's bound was accepted")


if __name__ == "__main__":
    sys.exit(main())
