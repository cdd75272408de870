"""Digests of what the engine writes for the corpus: one line per output, to tell whether a
change to the code changed a single byte of a filled or converted PDF.

For every form of ``../shared/corpus/forms``: the form filled (under each overflow policy,
and flattened), and
its flattened copy converted (the PDF and the schema). For every form of
``../shared/corpus/wild/forms``: the form filled. For the sample form: the mail-merge of the
sample rows. Values are derived from each form's own fields, so the run needs no other input.

    python benchmarks/output_digest.py --write out/digests.json     # before a change
    python benchmarks/output_digest.py --check out/digests.json     # after: exit 1 if any differ

A form the engine refuses is recorded with its error's type, so a refusal that changes
shows up too.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))
sys.path.insert(0, str(ROOT))

from fillpdf_provider.engine import FillPdfError, Fit, Template  # noqa: E402
from fillpdf_provider.engine.batch import fill_rows  # noqa: E402
from fillpdf_provider.engine.convert import convert  # noqa: E402
from fillpdf_provider.engine.dates import format_date  # noqa: E402
from kits.flatten import flatten_form  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"
TEXTS = ("Zoë 12", "Ελλάδα", "Кирилл", "Ann Lee")


def values_for(template: Template) -> dict[str, object]:
    """A value for every field: ticked boxes, the last option, dates, text in three scripts."""
    values: dict[str, object] = {}
    for index, field in enumerate(template.fields):
        if field.type == "checkbox":
            values[field.name] = True
        elif field.type in ("radio", "choice"):
            if field.options:
                values[field.name] = field.options[-1]
        elif field.type == "signature":
            continue
        elif field.type == "date":  # a date in the form's own format, as the filler takes
            values[field.name] = format_date(dt.date(2024, 1, 2), template.date_format(field.name))
        elif field.max_length:
            values[field.name] = "1234567890"[: field.max_length]
        else:
            values[field.name] = TEXTS[index % len(TEXTS)]
    return values


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def outcome(make: object) -> str:
    """The digest of what ``make()`` returns, or the name of the engine error it raises."""
    try:
        data = make()  # type: ignore[operator]
    except FillPdfError as exc:
        return f"error:{type(exc).__name__}"
    return sha(data if isinstance(data, bytes) else json.dumps(data, sort_keys=True).encode())


def fill_digests(label: str, path: Path) -> Iterator[tuple[str, str]]:
    try:
        template = Template(path.read_bytes())
    except FillPdfError as exc:
        yield f"{label}/{path.name}:open", f"error:{type(exc).__name__}"
        return
    values = values_for(template)
    shrink, truncate = Fit("shrink"), Fit("truncate")
    yield f"{label}/{path.name}:fill", outcome(lambda: template.fill(values))
    yield f"{label}/{path.name}:shrink", outcome(lambda: template.fill(values, fit=shrink))
    yield f"{label}/{path.name}:truncate", outcome(lambda: template.fill(values, fit=truncate))
    yield (
        f"{label}/{path.name}:flatten",
        outcome(lambda: template.fill(values, flatten=True, fit=shrink)),
    )


def convert_digests(path: Path) -> Iterator[tuple[str, str]]:
    flat = flatten_form(path.read_bytes())
    try:
        result = convert(flat)
    except FillPdfError as exc:
        yield f"convert/{path.name}", f"error:{type(exc).__name__}"
        return
    yield f"convert/{path.name}:pdf", sha(result.pdf)
    schema = [field.to_dict() for field in result.schema]
    yield f"convert/{path.name}:schema", sha(json.dumps(schema, sort_keys=True).encode())


def mail_merge_digests() -> Iterator[tuple[str, str]]:
    template = Template((ROOT / "include" / "sample_form.pdf").read_bytes())
    with tempfile.TemporaryDirectory() as out:
        fill_rows(template, ROOT / "include" / "sample_rows.csv", Path(out))
        for pdf in sorted(Path(out).glob("*.pdf")):
            yield f"mail-merge/{pdf.name}", sha(pdf.read_bytes())


def digests(skip_convert: bool = False) -> dict[str, str]:
    found: dict[str, str] = {}
    forms = sorted((CORPUS / "forms").glob("*.pdf"))
    wild = sorted((CORPUS / "wild" / "forms").glob("*.pdf"))
    if not forms:
        raise SystemExit(f"no corpus at {CORPUS}: put ../shared beside the repository")
    for path in forms:
        found.update(fill_digests("forms", path))
        if not skip_convert:
            found.update(convert_digests(path))
        print(f"  {path.name}", file=sys.stderr, flush=True)
    for path in wild:
        found.update(fill_digests("wild", path))
    found.update(mail_merge_digests())
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", type=Path, help="write the digests to this JSON file")
    action.add_argument("--check", type=Path, help="compare with the digests in this file")
    parser.add_argument("--skip-convert", action="store_true", help="fill only (faster)")
    args = parser.parse_args(argv)
    found = digests(args.skip_convert)
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        print(f"{len(found)} outputs written to {args.write}")
        return 0
    expected = json.loads(args.check.read_text())
    if args.skip_convert:
        expected = {k: v for k, v in expected.items() if not k.startswith("convert/")}
    changed = sorted(k for k in expected.keys() | found.keys() if expected.get(k) != found.get(k))
    for key in changed:
        print(f"differs: {key}: {expected.get(key)} -> {found.get(key)}")
    print(f"{len(found) - len(changed)} of {len(expected)} outputs byte-identical")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
