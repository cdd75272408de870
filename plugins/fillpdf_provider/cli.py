"""The ``fillpdf`` command: make a flat PDF fillable, inspect a form, fill it once, or fill it
for every row of a table.

Other tools call these forms, so their arguments and outputs are kept stable:

    fillpdf convert FLAT.pdf -o FILLABLE.pdf [--detect fields|fields_fast] [--preview DIR]
                    [--json] [--schema SCHEMA.json] [--min-confidence P]
    fillpdf inspect FORM.pdf --json
    fillpdf fill FORM.pdf --values VALUES.json -o OUT.pdf [--flatten]
                 [--overflow error|shrink|truncate] [--min-font-size PT]
    fillpdf batch FORM.pdf ROWS.csv|ROWS.parquet --out-dir DIR [--name-template "{row}.pdf"]
                  [--output-format files|merged|zip]
                  [--flatten] [--overflow error|shrink|truncate] [--min-font-size PT]
                  [--progress auto|bar|lines|off | --no-progress] [--progress-every SECONDS]
    fillpdf serve --data-dir DIR [--host 127.0.0.1] [--port 8000] [--database-url URL]
                  [--workers N] [--public-url URL]
    fillpdf keys create --plan developer|pro|scale|enterprise --data-dir DIR
    fillpdf keys list|revoke KEY_ID --data-dir DIR

Errors go to stderr as one line that says what to do; the exit status is 1 for bad input,
2 for bad usage. A batch shows its progress on stderr too: a bar on a terminal, plain lines
in a log or a pipe.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeAlias

from fillpdf_provider import __version__
from fillpdf_provider.engine.errors import FillPdfError, TextOverflowError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from fillpdf_provider.engine.batch import BatchSummary
    from fillpdf_provider.engine.filler import Template
    from fillpdf_provider.engine.schema import Field

# Each command imports what it runs, when it runs: a one-off ``fillpdf fill`` must not pay
# for the detector (numpy), Parquet (pyarrow), previews (PDFium, Pillow) or the service.

#: ``convert --detect`` choices: ``engine.detect.MODES``, written out so that building the
#: parser does not import the detector (a test keeps the two the same).
DETECT_MODES = ("fields", "fields_fast")

#: ``--overflow`` choices and the ``--min-font-size`` range: ``engine.appearance``'s
#: ``OVERFLOW_POLICIES`` and ``Fit`` bounds, written out for the same reason (a test keeps
#: them the same).
OVERFLOW_POLICIES = ("error", "shrink", "truncate")
FONT_SIZES = (0.5, 72.0)

#: ``batch --output-format`` choices and the one file each but ``files`` writes:
#: ``engine.output_formats``' ``OUTPUT_FORMATS``, ``MERGED_NAME`` and ``ZIP_NAME``, written
#: out for the same reason (a test keeps them the same).
OUTPUT_FORMATS = ("files", "merged", "zip")
ONE_FILE = {"merged": "merged.pdf", "zip": "filled.zip"}

#: The engine's advice for text too long for its box, and the same advice in flags.
_ENGINE_ADVICE = ", or choose the 'shrink' or 'truncate' overflow policy"
_FLAG_ADVICE = ", lower --min-font-size, or pass --overflow shrink or truncate"


def _unit_interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number from 0 to 1")
    return value


def _font_size(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not FONT_SIZES[0] <= value <= FONT_SIZES[1]:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size from {FONT_SIZES[0]:g} to {FONT_SIZES[1]:g} pt"
        )
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return value


def _in_flags(message: str) -> str:
    """An engine message whose advice names an overflow policy, advising the flags."""
    return message.replace(_ENGINE_ADVICE, _FLAG_ADVICE)


def _cmd_convert(args: argparse.Namespace) -> int:
    from fillpdf_provider.engine.convert import convert
    from fillpdf_provider.engine.files import write_atomic
    from fillpdf_provider.engine.preview import write_preview

    preview_dir = Path(args.preview) if args.preview else None
    if preview_dir is not None and preview_dir.exists() and not preview_dir.is_dir():
        raise FillPdfError(f"--preview {args.preview} is a file; give a folder for the PNGs.")
    schema = _read_schema(args.schema) if args.schema else None
    result = convert(
        args.pdf, detect=args.detect, schema=schema, min_confidence=args.min_confidence
    )
    # The previews come first: if their folder cannot be written, no output is left behind.
    previews = write_preview(result.pdf, result.schema, preview_dir) if preview_dir else []
    write_atomic(Path(args.output), result.pdf)
    if previews:
        print(f"wrote {_count(len(previews), 'preview PNG')} (one per page) to {preview_dir}",
              file=sys.stderr)  # fmt: skip
    if args.json:
        _print_json(result.to_dict())
        return 0
    how = f"built from {args.schema}" if args.schema else "found"
    print(
        f"{_count(result.fields, 'field')} {how} on {_count(result.pages, 'page')} in "
        f"{result.ms:,} ms; wrote {args.output}"
    )
    return 0


def _read_schema(path: str) -> dict[str, Any] | list[Any]:
    """A --schema file: a list of field entries, or a whole conversion result."""
    schema = _read_json(path, "schema")
    if not isinstance(schema, dict | list):
        raise FillPdfError(
            f"{path} must hold a schema: a list of field entries, or a conversion result with "
            "its 'schema' list."
        )
    return schema


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("s" if number != 1 else "")


def _print_json(data: object) -> None:
    json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


def _read_json(path: str, what: str) -> object:
    """A JSON file's contents, or one line that says what is wrong with it."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FillPdfError(f"No such {what} file: {path}") from None
    except IsADirectoryError:
        raise FillPdfError(f"{path} is a folder; give the {what} JSON file.") from None
    except UnicodeDecodeError:
        raise FillPdfError(f"{path} is not UTF-8 text; save the {what} as UTF-8 JSON.") from None
    except (json.JSONDecodeError, RecursionError) as exc:
        raise FillPdfError(f"{path} is not valid JSON: {exc}") from None


def _note_repairs(form: str, repaired: str) -> None:
    """Say so when a template could only be read after mending it (its outputs are sound)."""
    if repaired:
        print(
            f"note: {form}: {repaired}; outputs build on the mended copy (re-save the form "
            "from a PDF viewer to skip this step)",
            file=sys.stderr,
        )


def _cmd_inspect(args: argparse.Namespace) -> int:
    from fillpdf_provider.engine.errors import NoFormError
    from fillpdf_provider.engine.fillable import date_formats
    from fillpdf_provider.engine.filler import Template

    dates: dict[str, str | None] = {}
    try:
        template = Template(args.form)
    except NoFormError:
        fields = []
    else:
        _note_repairs(args.form, template.repaired)
        fields = template.fields
        dates = date_formats(template)
    if args.json:
        _print_json({"fields": [_entry(f, dates) for f in fields]})
    elif not fields:
        print(f"{args.form}: no fillable fields (convert it with `fillpdf convert`).")
    else:
        _print_fields(fields, dates)
    return 0


def _entry(field: Field, dates: dict[str, str | None]) -> dict[str, Any]:
    """A field as ``inspect --json`` gives it: its schema entry, and a date's format."""
    entry = field.to_dict()
    if dates.get(field.name):
        entry["date_format"] = dates[field.name]
    return entry


def _print_fields(fields: list[Field], dates: dict[str, str | None]) -> None:
    """The fields as a table a person reads: name, type, page and what limits the value."""
    from fillpdf_provider.engine.dates import readable

    width = min(60, max(len(f.name) for f in fields))
    print(f"{'name':<{width}}  {'type':<9} page  details")
    for f in fields:
        details = _details(f)
        if date_format := dates.get(f.name):
            iso = " (or YYYY-MM-DD)" if readable(date_format) else ""
            details.insert(0, f"format {date_format}{iso}")
        print(f"{f.name:<{width}}  {f.type:<9} {f.page:>4}  {'; '.join(details)}")
    print(f"{len(fields)} fields")


def _details(field: Field) -> list[str]:
    details = []
    if field.options:
        more = " …" if len(field.options) > 6 else ""
        details.append("options: " + ", ".join(field.options[:6]) + more)
    if field.max_length:
        details.append(f"max {field.max_length}" + (" comb" if field.comb else ""))
    flags = {"multiline": field.multiline, "read-only": field.read_only, "required": field.required}
    return details + [name for name, on in flags.items() if on]


def _fillable(path: str) -> Template:
    """The form at ``path``; a flat PDF is refused with the command that makes it fillable."""
    from fillpdf_provider.engine.errors import NoFormError
    from fillpdf_provider.engine.filler import Template

    try:
        return Template(path)
    except NoFormError:
        fillable = Path(path).with_suffix(".fillable.pdf")
        raise FillPdfError(
            f"{path} has no fillable fields: it is a flat form (or its widgets are all "
            f"hidden). Make it fillable first, then fill that: fillpdf convert {path} -o "
            f"{fillable}"
        ) from None


def _fill_values(
    args: argparse.Namespace, template: Template, values: dict[str, Any]
) -> dict[str, object]:
    """One rule everywhere: a key fills a field as a batch's column does, and what a batch's
    cell takes, a JSON value takes."""
    from fillpdf_provider.engine.coerce import coerce_values
    from fillpdf_provider.engine.columns import plan_columns
    from fillpdf_provider.engine.fillable import date_formats

    plan = plan_columns(list(values), template.fields, _mapping(args), noun="key")
    plan.check(strict=args.strict_columns, flags=True, noun="key")
    if values and plan.fills_nothing:
        raise FillPdfError(
            f"No key of {args.values} matches a field of the form: "
            f"{', '.join(map(repr, list(values)[:10]))}. Name the keys after the fields "
            "(`fillpdf inspect FORM.pdf` lists them), or map them with --map KEY=FIELD."
        )
    if note := plan.not_used_note(noun="key"):
        print(note, file=sys.stderr)
    fields = {f.name: f for f in template.fields}
    named = {plan.pairs[k]: v for k, v in values.items() if k in plan.pairs}
    return coerce_values(fields, named, date_formats(template))


def _cmd_fill(args: argparse.Namespace) -> int:
    from fillpdf_provider.engine.appearance import Fit
    from fillpdf_provider.engine.files import write_atomic

    values = _read_json(args.values, "values")
    if not isinstance(values, dict):
        raise FillPdfError(f'{args.values} must hold a JSON object: {{"field name": value}}.')
    fit = Fit(args.overflow, args.min_font_size)
    try:
        template = _fillable(args.form)
        _note_repairs(args.form, template.repaired)
        filled = template.fill_result(
            _fill_values(args, template, values), flatten=args.flatten, fit=fit
        )
    except TextOverflowError as exc:
        message = _in_flags(exc.message)
        if "--overflow" not in message:
            message += " (--overflow shrink or truncate draws what fits.)"
        raise FillPdfError(message, param=exc.param) from None
    write_atomic(Path(args.output), filled.pdf)
    print(f"wrote {args.output} ({len(filled.pdf):,} bytes)", file=sys.stderr)
    if filled.cut:
        names = ", ".join(repr(name) for name in filled.cut)
        print(
            f"note: text cut to fit its box in {names} (--overflow {args.overflow})",
            file=sys.stderr,
        )
    return 0


#: ``batch --progress`` choices; ``auto`` is a bar on a terminal and plain lines elsewhere.
PROGRESS_MODES = ("auto", "bar", "lines", "off")
#: The bar is redrawn at most this often (seconds): ten times a second reads as live.
BAR_INTERVAL = 0.1


def _progress_mode(choice: str, stream: TextIO) -> str:
    """``auto`` draws a bar only where a carriage return redraws it in place: a terminal,
    and not one that declares itself dumb (``TERM=dumb``). Elsewhere (a log file, a pipe,
    CI) plain lines."""
    if choice != "auto":
        return choice
    terminal = stream.isatty() and os.environ.get("TERM", "") != "dumb"
    return "bar" if terminal else "lines"


def _columns(stream: TextIO) -> int:
    """The terminal's width; ``COLUMNS`` or 80 where it cannot be told (a pipe, a pty of
    no size)."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        columns = 0
    if columns <= 0:
        text = os.environ.get("COLUMNS", "")
        columns = int(text) if text.isdigit() and int(text) > 0 else 80
    return columns


class _Progress:
    """How far a batch is, on stderr: a bar redrawn in place, plain lines, or nothing.

    The bar uses carriage returns and spaces only, no colour or other escape codes; it is
    never wider than the terminal (a wrapped line could not be redrawn) and ends with a
    line feed, so what is printed after it starts on a line of its own. Lines say the same
    in words, every ``every`` seconds: a log keeps them all.
    """

    def __init__(
        self, mode: str, total: int | None, every: float, stream: TextIO | None = None
    ) -> None:
        self.mode, self.total = mode, total
        self.every = BAR_INTERVAL if mode == "bar" else every
        self.stream = stream or sys.stderr
        self.shown = False  # a line has been written
        self.open = False  # a bar is drawn and not yet ended with a line feed
        self.width = 0  # characters of the bar on screen, blanked by a shorter redraw

    def __call__(self, summary: BatchSummary, seconds: float) -> None:
        if self.mode == "bar":
            self._draw_bar(summary, seconds)
        elif self.mode == "lines" and (self.shown or not summary.finished):
            # a batch over before its first line needs no last one: the summary says it
            line = f"fillpdf batch: {summary.progress_line(seconds, self.total)}\n"
            self.stream.write(line)
            self.stream.flush()
            self.shown = True

    def _draw_bar(self, summary: BatchSummary, seconds: float) -> None:
        room = _columns(self.stream) - 1  # a character in the last column may wrap the line
        counts, failed, rate, time_left = summary.progress_parts(seconds, self.total)
        for parts in ([counts, failed, rate, time_left], [counts, failed, time_left],
                      [counts, failed], [counts]):  # fmt: skip
            text = "  ".join(parts)
            if len(text) <= room:
                break
        text = text[:room]
        cells = min(30, room - len(text) - 3)
        if self.total and cells >= 10:
            done = cells * min(summary.rows, self.total) // self.total
            text = f"[{'#' * done}{'.' * (cells - done)}] {text}"
        self.stream.write("\r" + text.ljust(min(self.width, room)))
        self.width = len(text)
        if summary.finished:
            self.stream.write("\n")
            self.width = 0
        self.stream.flush()
        self.open = not summary.finished

    def close(self) -> None:
        """End a bar left unfinished (a batch stopped by a bad row or Ctrl-C) with a line
        feed, so the error after it is not written over it."""
        if self.open:
            self.stream.write("\n")
            self.stream.flush()
            self.open = False


def _cmd_batch(args: argparse.Namespace) -> int:
    from fillpdf_provider.engine.appearance import Fit
    from fillpdf_provider.engine.batch import total_rows
    from fillpdf_provider.engine.columns import ColumnError
    from fillpdf_provider.engine.output_formats import fill_in_format

    fit = Fit(args.overflow, args.min_font_size)
    template = _fillable(args.form)
    _note_repairs(args.form, template.repaired)
    mode = _progress_mode(args.progress, sys.stderr)
    total = total_rows(args.rows) if mode != "off" else None
    progress = _Progress(mode, total, args.progress_every)
    try:
        summary = fill_in_format(
            template,
            args.rows,
            args.out_dir,
            args.output_format,
            name_template=args.name_template,
            flatten=args.flatten,
            on_error=args.on_error,
            progress=None if mode == "off" else progress,
            progress_every=progress.every,
            require=args.require,
            fit=fit,
            mapping=_mapping(args),
            strict_columns=args.strict_columns,
        )
    except ColumnError as exc:
        raise FillPdfError(exc.worded(flags=True), param=exc.param) from None
    finally:
        progress.close()
    if summary.unused_note:
        print(summary.unused_note, file=sys.stderr)
    shown = summary.errors[:5]
    for error in shown:
        print(f"row {error['row']}: {_in_flags(str(error['error']))}", file=sys.stderr)
    if summary.failed > len(shown):
        print(
            f"... and {summary.failed - len(shown):,} more; every row's error is in "
            f"{summary.manifest}",
            file=sys.stderr,
        )
    if args.output_format != "files":
        print(f"wrote {Path(summary.out_dir) / ONE_FILE[args.output_format]}", file=sys.stderr)
    print(summary.line())
    return 0 if summary.failed == 0 else 1


def _service_env(args: argparse.Namespace) -> None:
    """Flags become ``FILLPDF_*`` variables: every server worker reads its settings there."""
    import os

    for flag, variable in (
        ("data_dir", "FILLPDF_DATA_DIR"),
        ("database_url", "FILLPDF_DATABASE_URL"),
        ("public_url", "FILLPDF_PUBLIC_URL"),
    ):
        value = getattr(args, flag, None)
        if value:
            os.environ[variable] = str(Path(value).resolve()) if flag == "data_dir" else value


def _cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from fillpdf_provider.service.serving import bind_url, uvicorn_options
    from fillpdf_provider.service.settings import SERVER_PID_VARIABLE, Settings

    _service_env(args)
    if not os.environ.get("FILLPDF_PUBLIC_URL"):  # document URLs never follow a Host header
        os.environ["FILLPDF_PUBLIC_URL"] = bind_url(args.host, args.port)
    os.environ[SERVER_PID_VARIABLE] = str(os.getpid())
    Settings.from_env().prepare()  # fail here, once, on a bad data dir
    uvicorn.run(
        "fillpdf_provider.service.app:create_app",
        **uvicorn_options(
            host=args.host,
            port=args.port,
            workers=args.workers,
            log_level=args.log_level,
            grace=args.grace,
        ),
    )
    return 0


def _key_store(*, create: bool) -> tuple[Engine, float]:
    from fillpdf_provider.service.db import create_schema, make_engine
    from fillpdf_provider.service.settings import Settings

    settings = Settings.from_env()
    if not create and not settings.data_dir.is_dir():  # a typo must not make a new store
        raise FillPdfError(
            f"No data dir {settings.data_dir}: check the path, or start one with "
            f"`fillpdf keys create --data-dir {settings.data_dir}` or "
            f"`fillpdf serve --data-dir {settings.data_dir}`."
        )
    settings.prepare()
    engine = make_engine(settings.resolved_database_url())
    create_schema(engine)
    return engine, settings.clock.now()


def _create_key(args: argparse.Namespace, engine: Engine, now: float) -> int:
    """``keys create``: a new key (or the one given with --key), on a new account unless
    --account names one."""
    from fillpdf_provider.service import keys

    if args.key:
        known = keys.key_registered(engine, args.key)
        if known:
            print(f"key {args.key.split('_')[1]} is already registered")
            return 0
        if known is None:
            raise FillPdfError("Another key already uses that key id; choose a new key.")
    account = args.account
    if account is None:
        enterprise = {
            "pages_included": args.pages_included,
            "overage_rate_usd": args.overage_rate,
            "max_pages_per_file": args.max_pages,
            "rate_limit_per_minute": args.rate_limit,
            "hard_stop": args.hard_stop,
        }
        account = keys.create_account(engine, args.plan, now, enterprise=enterprise)
    if args.key:
        key_id = keys.register_key(engine, account, args.key, now)
        print(f"account {account}, key id {key_id} (the key given)")
        return 0
    key_id, key = keys.create_key(engine, account, now)
    print(f"account {account}, key id {key_id}")
    print("the key is shown once, below; only its hash is stored")
    print(key)
    return 0


def _cmd_keys(args: argparse.Namespace) -> int:
    from fillpdf_provider.service import keys

    _service_env(args)
    engine, now = _key_store(create=args.action == "create")
    if args.action == "create":
        return _create_key(args, engine, now)
    if args.action == "revoke":
        if not args.key_id:
            raise FillPdfError("Give the key id to revoke: fillpdf keys revoke KEY_ID.")
        if not keys.revoke_key(engine, args.key_id, now):
            raise FillPdfError(f"No live key {args.key_id!r}; `fillpdf keys list` shows them.")
        print(f"revoked {args.key_id}")
        return 0
    rows = keys.list_keys(engine)
    for row in rows:
        state = "revoked" if row["revoked_at"] else "live"
        print(f"{row['id']}  {row['account_id']}  {row['plan']:<10}  {state}")
    if not rows:
        print("no keys yet: fillpdf keys create --plan developer --data-dir DIR")
    return 0


EXAMPLES = """\
examples:
  fillpdf convert flat.pdf -o form.pdf --json > conversion.json
  fillpdf review flat.pdf                 # check the fields by eye, save flat.schema.json
  fillpdf inspect form.pdf
  fillpdf fill form.pdf --values values.json -o filled.pdf
  fillpdf batch form.pdf rows.csv --out-dir out/ --name-template "{row}-{last_name}.pdf"
  fillpdf keys create --plan developer --data-dir service-data
  fillpdf serve --data-dir service-data --port 8000

Each command explains itself: fillpdf COMMAND --help. Errors are one line on stderr that says
what to do; the exit status is 1 for bad input, 2 for bad usage."""

#: What ``keys --plan`` offers, in the service's plan table's words.
PLAN_HELP = (
    "developer (default): 25 pages a month, then refused (no overage), 10 pages a file, "
    "10 requests a minute; pro: 60 pages, then $0.90 a page, 100 a file, 60 a minute; "
    "scale: 400 pages, then $0.80 a page, 300 a file, 300 a minute; enterprise: no limit "
    "but those set below"
)


#: The object ``add_subparsers`` returns, on which each command adds its parser.
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fillpdf",
        description="Make flat PDFs fillable; inspect and fill forms, one at a time or in bulk.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"fillpdf {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _convert_command(commands)
    _review_command(commands)
    _inspect_command(commands)
    _fill_command(commands)
    _batch_command(commands)
    _serve_command(commands)
    _keys_command(commands)
    return parser


def _convert_command(commands: Subcommands) -> None:
    p = commands.add_parser(
        "convert",
        help="detect the fields of a flat PDF and make it fillable",
        description="Detect the fields of a flat PDF and write it fillable. To correct a "
        "conversion, edit the schema it printed (--json) and convert again with --schema: "
        "the form is then written exactly as the schema says, with no detection.",
    )
    p.add_argument("pdf", help="a flat PDF (printed boxes and lines, no form fields)")
    p.add_argument("-o", "--output", required=True, help="where to write the fillable PDF")
    p.add_argument(
        "--detect",
        choices=DETECT_MODES,
        default="fields",
        help="fields: every cue, chosen by the trained scorer (default); fields_fast: reads "
        "pages through PDFium, about three times faster, with the rules alone and no box glyphs",
    )
    p.add_argument(
        "--min-confidence",
        type=_unit_interval,
        default=0.0,
        metavar="P",
        help="leave out detected fields less sure than P (0 to 1; of fields at 0.9 about "
        "nine in ten are right); default 0: keep every field found",
    )
    p.add_argument("--preview", metavar="DIR", help="write one PNG per page with the fields drawn")
    p.add_argument("--json", action="store_true", help="print the conversion result as JSON")
    p.add_argument(
        "--schema",
        metavar="SCHEMA.json",
        help="build the form from this schema instead of detecting it: the 'schema' list of "
        "a --json result (or that whole result), edited; entries need name, type, page and "
        "rect (PDF points, inside the page); radio groups place each option with 'widgets'; "
        "an unknown key is an error",
    )
    p.set_defaults(run=_cmd_convert)


def _review_command(commands: Subcommands) -> None:
    p = commands.add_parser(
        "review",
        help="check and fix a conversion's fields in the browser, then save its schema",
        description="Detect the fields of a flat PDF (or load a schema) and open an editor in "
        "the browser: each page with a box per field, coloured by type, with its name and "
        "confidence. Move, resize, draw, delete, rename, retype and group boxes; Save writes "
        "the schema `fillpdf convert --schema` takes, 'Save and build PDF' also writes the "
        "fillable PDF. The editor listens on 127.0.0.1 only and needs the printed address "
        "(it carries a token made for this run). Ctrl+C stops it.",
    )
    p.add_argument("pdf", help="a flat PDF (printed boxes and lines, no form fields)")
    p.add_argument(
        "--schema",
        metavar="SCHEMA.json",
        help="start from this schema (a saved review, or a --json result) instead of detecting",
    )
    p.add_argument(
        "--out",
        metavar="SCHEMA.json",
        help="where Save writes the schema (default: NAME.schema.json beside the PDF); the "
        "built PDF goes beside it as NAME.fillable.pdf",
    )
    p.add_argument(
        "--detect",
        choices=DETECT_MODES,
        default="fields",
        help="how to find the fields when no --schema is given (default fields)",
    )
    p.add_argument("--port", type=int, default=0, help="port (default: any free one)")
    p.add_argument("--no-browser", action="store_true", help="print the address, open nothing")
    p.set_defaults(run=_cmd_review)


def _cmd_review(args: argparse.Namespace) -> int:
    import secrets
    import signal
    import socket
    import webbrowser

    import uvicorn

    from fillpdf_provider.engine.convert import convert
    from fillpdf_provider.review import FileSink, ReviewSession, create_review_app
    from fillpdf_provider.review.opener import write_opener

    source = Path(args.pdf)
    pdf = source.read_bytes()
    out = Path(args.out) if args.out else source.with_name(f"{source.stem}.schema.json")
    stem = out.name.removesuffix(".json").removesuffix(".schema")
    sink = FileSink(out, out.with_name(f"{stem}.fillable.pdf"))
    if args.schema:
        schema: Any = _read_schema(args.schema)
    else:
        schema = [f.to_dict() for f in convert(pdf, detect=args.detect).schema]
    session = ReviewSession(pdf, schema, sink, name=source.name)
    token = secrets.token_urlsafe(24)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(128)  # from here a browser's request waits for the server, not refused
    host = f"127.0.0.1:{listener.getsockname()[1]}"
    app = create_review_app(session, token, host=host)
    url = f"http://{host}/?token={token}"
    print(f"Reviewing {source.name}: {len(session.schema)} fields. Open {url}", flush=True)
    print(f"Save writes {sink.schema_path} (and {sink.pdf_path}); Ctrl+C stops.", flush=True)
    # The browser opens a file only this user can read, which forwards to the address: the
    # token stays off the browser's command line, which other users of the machine can read.
    opener = None if args.no_browser else write_opener(url)
    # uvicorn raises a SIGTERM again once it has stopped: ended by it, the file still goes.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        if opener is not None:
            webbrowser.open(opener.as_uri())
        config = uvicorn.Config(app, log_level="warning", server_header=False)
        uvicorn.Server(config).run(sockets=[listener])
    finally:
        if opener is not None:
            opener.unlink(missing_ok=True)
    return 0


def _inspect_command(commands: Subcommands) -> None:
    p = commands.add_parser(
        "inspect",
        help="list a form's fields",
        description="List the fields a user can fill: the name to fill each by (the key of "
        "fill's values and the column name of batch's rows), its type, page and options.",
    )
    p.add_argument("form", help="a fillable PDF")
    p.add_argument(
        "--json",
        action="store_true",
        help='print {"fields": [schema entries]} (name, type, page, rect, options, ...) '
        "instead of a table",
    )
    p.set_defaults(run=_cmd_inspect)


def _fill_command(commands: Subcommands) -> None:
    p = commands.add_parser(
        "fill",
        help="fill a form with values from a JSON file",
        description="Fill a form once. Keys fill fields as batch's columns do, and values are "
        "read as batch reads cells: a checkbox takes true/false, yes/no, y/n, 1/0, x or on/off; "
        "a radio group or choice one of its options in any case (a yes/no group those words "
        "too); a date field a date in the form's format "
        "or ISO 8601 (2025-03-05), written in the form's format; fields left out stay as the "
        "form has them. See the field names with fillpdf inspect.",
    )
    p.add_argument("form", help="a fillable PDF")
    p.add_argument(
        "--values",
        required=True,
        metavar="VALUES.json",
        help='a JSON file holding {"field name": value}',
    )
    p.add_argument(
        "-o", "--output", required=True, metavar="OUT.pdf", help="where to write the filled PDF"
    )
    p.add_argument("--flatten", action="store_true", help="draw values into the page, no fields")
    _fit_flags(p)
    _column_flags(p, "key")
    p.set_defaults(run=_cmd_fill)


def _batch_command(commands: Subcommands) -> None:
    p = commands.add_parser(
        "batch",
        help="fill a form once per row of a CSV or Parquet file",
        description="Fill a form once per row: one PDF each in --out-dir (or all in one merged PDF "
        "or one zip: --output-format), and manifest.parquet with every row's outcome. A column "
        "fills the field of its name (also matched lower-cased, with spaces and punctuation set "
        "aside) or the field --map names. A column that matches no field but looks like a field "
        "no column fills is an error, before anything is written; any other is listed once as not "
        "used (--strict-columns: an error). Fields no column fills stay empty. The exit status is "
        "1 when any row failed.",
    )
    p.add_argument("form", help="a fillable PDF")
    p.add_argument("rows", help="CSV or Parquet file; columns named like the fields")
    p.add_argument(
        "--out-dir", required=True, metavar="DIR", help="folder for the PDFs and manifest.parquet"
    )
    p.add_argument(
        "--name-template",
        default="{row}.pdf",
        help='output file names, e.g. "{row}.pdf" or "{id}-{last_name}.pdf"',
    )
    p.add_argument(
        "--output-format",
        choices=OUTPUT_FORMATS,
        default="files",
        help="files: one PDF per row (default); merged: every row's pages in one flattened "
        "PDF, DIR/merged.pdf, in row order; zip: the rows' PDFs, named by --name-template, "
        "in one archive, DIR/filled.zip. Each is published whole, once every row is done, "
        "with DIR/manifest.parquet; a batch stopped part-way publishes neither",
    )
    p.add_argument(
        "--flatten",
        action="store_true",
        help="draw values into the page, no fields (merged always flattens)",
    )
    p.add_argument(
        "--on-error",
        choices=("skip", "fail"),
        default="skip",
        help="skip: record a bad row and go on (default); fail: stop at it",
    )
    p.add_argument(
        "--require",
        action="store_true",
        help="a row that leaves a field the form marks required empty is a bad row",
    )
    _fit_flags(p)
    _column_flags(p, "column")
    p.add_argument(
        "--progress",
        choices=PROGRESS_MODES,
        default="auto",
        help="how stderr shows progress: auto (default): a bar redrawn in place on a "
        "terminal, plain lines elsewhere (a log, a pipe, CI, TERM=dumb); bar; lines; off",
    )
    p.add_argument(
        "--no-progress", dest="progress", action="store_const", const="off",
        help="no progress on stderr (--progress off)",
    )  # fmt: skip
    p.add_argument(
        "--progress-every",
        type=_seconds,
        default=10.0,
        metavar="SECONDS",
        help="plain lines: one every SECONDS (default 10); the bar redraws up to 10 times a second",
    )
    p.set_defaults(run=_cmd_batch)


def _serve_command(commands: Subcommands) -> None:
    p = commands.add_parser(
        "serve",
        help="run the FillPDF HTTP API (/v1)",
        description="Run the FillPDF HTTP API (/v1, its reference at /v1/docs). Keys, usage "
        "and conversions live in the data folder (or the database of --database-url); make a "
        "key first with fillpdf keys create and the same --data-dir.",
    )
    _store_flags(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--workers", type=int, default=1, help="server processes (default 1)")
    p.add_argument(
        "--public-url",
        help="base of document URLs, e.g. a CDN or the address clients use (default: "
        "http://HOST:PORT of --host/--port, the machine's name for 0.0.0.0; never the "
        "request's Host header)",
    )
    p.add_argument(
        "--grace",
        type=float,
        default=float(os.environ.get("FILLPDF_SHUTDOWN_GRACE") or 30.0),
        help="seconds a stop (SIGTERM) waits for requests in progress (default 30, or "
        "FILLPDF_SHUTDOWN_GRACE)",
    )
    p.add_argument(
        "--log-level",
        default="info",
        choices=("debug", "info", "warning", "error"),
        help="the least severe log line written, as JSON on stderr (default info: one line "
        "per request)",
    )
    p.set_defaults(run=_cmd_serve)


def _keys_command(commands: Subcommands) -> None:
    p = commands.add_parser(
        "keys",
        help="create, list or revoke API keys of the service",
        description="Manage the service's API keys in its data folder. A key is shown once, "
        "when it is made, and stored only as a hash: keep it where your clients read it (an "
        "Airflow connection's password).",
    )
    p.add_argument(
        "action",
        choices=("create", "list", "revoke"),
        help="create: make a key (and its account, unless --account); list: every key with "
        "its account, plan and state; revoke: refuse a key from now on",
    )
    p.add_argument("key_id", nargs="?", help="revoke: the key id (or the whole key)")
    _store_flags(p)
    p.add_argument(
        "--plan",
        default="developer",
        choices=("developer", "pro", "scale", "enterprise"),
        help=f"create: the new account's plan. {PLAN_HELP}",
    )
    p.add_argument("--account", help="add the key to this existing account instead")
    p.add_argument(
        "--key",
        help="register this key instead of making one (for deployments that keep the key "
        "in a secret); does nothing if it is already registered",
    )
    enterprise = p.add_argument_group(
        "enterprise account settings", "with --plan enterprise; each left out sets no limit"
    )
    enterprise.add_argument(
        "--pages-included", type=int, metavar="PAGES", help="pages included each month"
    )
    enterprise.add_argument(
        "--overage-rate", type=float, metavar="USD", help="USD per page past the included"
    )
    enterprise.add_argument("--max-pages", type=int, metavar="PAGES", help="pages per file")
    enterprise.add_argument("--rate-limit", type=int, metavar="N", help="requests per minute")
    enterprise.add_argument(
        "--hard-stop", action="store_true", help="refuse conversions past the included pages"
    )
    p.set_defaults(run=_cmd_keys)


def _fit_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--overflow",
        choices=OVERFLOW_POLICIES,
        default="error",
        help="text too long for its box even at --min-font-size: error: refuse it, naming "
        "the field (default); shrink: draw what fits at that size; truncate: draw what fits "
        "at the field's own size. Both report the fields cut",
    )
    p.add_argument(
        "--min-font-size",
        type=_font_size,
        default=4.0,
        metavar="PT",
        help="text shrinks down to this size before --overflow applies (default 4)",
    )


def _column_flags(p: argparse.ArgumentParser, what: str) -> None:
    name = what.upper()
    p.add_argument(
        "--map",
        action="append",
        default=[],
        metavar=f"{name}=FIELD",
        help=f"fill FIELD from the {what} {name} (repeatable); {name}= leaves it out on purpose",
    )
    p.add_argument(
        "--mapping",
        metavar="FILE.json",
        help=f'a JSON file of {{"{name}": "FIELD"}}, as many --map ("" leaves one out)',
    )
    p.add_argument(
        "--strict-columns",
        action="store_true",
        help=f"a {what} that matches no field is an error (default: listed once as not used)",
    )


#: What a command's mapping maps from, where not a column: fill's values are a JSON object.
_NAMES_ARE = {"fill": "key"}


def _mapping(args: argparse.Namespace) -> dict[str, str]:
    """``--mapping FILE.json`` and then each ``--map COLUMN=FIELD``, as one mapping."""
    what = _NAMES_ARE.get(args.command, "column")
    mapping: dict[str, str] = {}
    if args.mapping:
        loaded = _read_json(args.mapping, "mapping")
        if not isinstance(loaded, dict) or not all(
            isinstance(v, str | None) for v in loaded.values()
        ):
            raise FillPdfError(
                f'{args.mapping} must hold a JSON object of {{"{what.upper()}": "FIELD"}}; a '
                f'field of "" (or null) leaves the {what} out.'
            )
        mapping.update({str(k): v or "" for k, v in loaded.items()})
    for pair in args.map:
        column, equals, field_name = pair.partition("=")
        if not equals or not column:
            raise FillPdfError(
                f"--map {pair!r} is not {what.upper()}=FIELD; write e.g. --map 'E-mail=email' "
                f"(--map 'notes=' leaves the {what} notes out)."
            )
        mapping[column] = field_name
    return mapping


def _store_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data-dir", metavar="DIR", help="the service's data folder (or FILLPDF_DATA_DIR)"
    )
    p.add_argument(
        "--database-url",
        metavar="URL",
        help="SQLAlchemy URL, e.g. postgresql://... for several servers (default: SQLite in "
        "the data folder)",
    )


#: Commands that read or fill one form and end. The cyclic garbage collector pauses while
#: they run (else it scans every imported module's objects again and again while pypdf loads
#: and parses: about 5% of a one-off fill) and resumes after, for a caller that runs ``main``.
#: At exit, the objects then alive are frozen: the interpreter's last collections skip them
#: instead of walking all of pypdf, fontTools and Pillow once more (another 15-25 ms).
_ONE_SHOT = frozenset({"fill", "inspect"})


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    paused = args.command in _ONE_SHOT and gc.isenabled()
    if paused:
        gc.disable()
        atexit.unregister(gc.freeze)  # once, however often main runs
        atexit.register(gc.freeze)
    try:
        code = int(args.run(args))
        sys.stdout.flush()  # here, so a closed pipe is caught below and not at exit
        return code
    except BrokenPipeError:  # stdout closed early (`| head`): end quietly, as on SIGPIPE
        _silence_stdout()
        return 141
    except FillPdfError as exc:
        print(f"fillpdf {args.command}: error: {_in_flags(str(exc))}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"fillpdf {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        if paused:
            gc.enable()


def _silence_stdout() -> None:
    """Point stdout at devnull, so that flushing it at exit raises no second BrokenPipeError
    (the Python docs' "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
