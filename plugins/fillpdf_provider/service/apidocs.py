"""The API reference at ``/v1/docs``: one HTML page rendered on the server from the OpenAPI
document.

FastAPI's own page loads Swagger UI's scripts and styles from a CDN: a third party then runs
code on the service's origin. This page has no script and no outside URL, so it is served
under ``Content-Security-Policy: default-src 'none'`` (inline styles only) and works offline.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from fillpdf_provider.api_errors import ERROR_TYPES

CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
_CODE = re.compile(r"`([^`]+)`")
_STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto;
       padding: 0 1rem; color: #1b1b1b; }
h2 { margin-top: 2.5rem; border-top: 1px solid #ddd; padding-top: 1rem; }
code, .path { font-family: ui-monospace, monospace; background: #f3f3f3; padding: 0 .2em; }
.method { font-weight: bold; text-transform: uppercase; margin-right: .5em; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
th, td { text-align: left; vertical-align: top; border-bottom: 1px solid #e5e5e5;
         padding: .3rem .5rem; }
.muted { color: #666; }
"""


def install_docs(app: FastAPI, path: str = "/v1/docs") -> None:
    """Serve the page at ``path`` (rendered once, on first request; not in the schema)."""
    rendered: list[str] = []

    @app.get(path, include_in_schema=False, response_class=HTMLResponse)
    async def api_docs() -> HTMLResponse:
        if not rendered:
            rendered.append(render(app.openapi()))
        return HTMLResponse(
            rendered[0], headers={"Content-Security-Policy": CONTENT_SECURITY_POLICY}
        )


def render(openapi: dict[str, Any]) -> str:
    """The whole page for ``openapi`` (an OpenAPI 3 document as a dict)."""
    info = openapi.get("info", {})
    title = f"{info.get('title', 'API')} {info.get('version', '')}".strip()
    operations = [
        (path, method, operation)
        for path, item in openapi.get("paths", {}).items()
        for method, operation in item.items()
        if method in METHODS
    ]
    resolve = _resolver(openapi)
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_text(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{_text(title)}</h1>",
        _paragraph(info.get("description")),
        '<p class="muted">The machine-readable document is <a href="openapi.json">'
        "openapi.json</a>.</p>",
        "<ul>",
        *(
            f'<li><a href="#{_anchor(m, p)}"><span class="method">{m}</span>'
            f'<span class="path">{_text(p)}</span></a> {_text(o.get("summary", ""))}</li>'
            for p, m, o in operations
        ),
        "</ul>",
        _authentication(openapi),
        _errors(),
        *(_operation(p, m, o, resolve) for p, m, o in operations),
        "</body></html>",
    ]
    return "\n".join(part for part in parts if part)


def _operation(
    path: str, method: str, operation: dict[str, Any], resolve: Callable[[Any], Any]
) -> str:
    parts = [
        f'<h2 id="{_anchor(method, path)}"><span class="method">{method}</span>'
        f'<span class="path">{_text(path)}</span></h2>',
        _paragraph(operation.get("summary")),
        _paragraph(operation.get("description")),
    ]
    key = "<code>Authorization: Bearer &lt;API key&gt;</code>"
    needs = f"Needs {key}." if operation.get("security") else "No API key."
    parts.append(f'<p class="muted">{needs}</p>')
    parameters = [resolve(p) for p in operation.get("parameters", [])]
    if parameters:
        rows = [
            (
                f"<code>{_text(p.get('name', ''))}</code>",
                _text(p.get("in", "")),
                "yes" if p.get("required") else "no",
                _text(_type(p.get("schema", {}), resolve)),
                _inline(p.get("description") or p.get("schema", {}).get("description")),
            )
            for p in parameters
        ]
        parts += ["<h3>Parameters</h3>", _table(("Name", "In", "Required", "Type", ""), rows)]
    body = resolve(operation.get("requestBody")) if operation.get("requestBody") else None
    if body:
        parts.append("<h3>Request body</h3>")
        for media, content in body.get("content", {}).items():
            parts.append(f"<p><code>{_text(media)}</code></p>")
            parts.append(_properties(resolve(content.get("schema", {})), resolve))
    responses = operation.get("responses", {})
    rows = [
        (
            f"<code>{_text(status)}</code>",
            _inline(answer.get("description")),
            ", ".join(f"<code>{_text(m)}</code>" for m in answer.get("content", {})),
            ", ".join(f"<code>{t}</code>" for t in _error_types(status)),
            ", ".join(f"<code>{_text(h)}</code>" for h in answer.get("headers", {})),
        )
        for status, answer in ((s, resolve(r)) for s, r in responses.items())
    ]
    parts += [
        "<h3>Responses</h3>",
        _table(("Status", "", "Content", "Error types", "Headers"), rows),
    ]
    return "\n".join(part for part in parts if part)


def _properties(schema: dict[str, Any], resolve: Callable[[Any], Any]) -> str:
    properties = schema.get("properties")
    if not properties:
        return f"<p>{_text(_type(schema, resolve))}</p>"
    required = set(schema.get("required", []))
    rows = []
    for name, prop in properties.items():
        prop = resolve(prop)
        notes = [_inline(prop.get("description"))]
        if "default" in prop:
            notes.append(f"Default <code>{_text(json.dumps(prop['default']))}</code>.")
        rows.append(
            (
                f"<code>{_text(name)}</code>",
                "yes" if name in required else "no",
                _text(_type(prop, resolve)),
                " ".join(note for note in notes if note),
            )
        )
    return _table(("Field", "Required", "Type", ""), rows)


def _authentication(openapi: dict[str, Any]) -> str:
    schemes = openapi.get("components", {}).get("securitySchemes", {})
    if not schemes:
        return ""
    items = "".join(
        f"<li><code>{_text(name)}</code>: {_text(s.get('type', ''))} "
        f"{_text(s.get('scheme', ''))}. {_inline(s.get('description'))}</li>"
        for name, s in schemes.items()
    )
    return f"<h2>Authentication</h2><ul>{items}</ul>"


def _errors() -> str:
    rows = [
        (f"<code>{entry.status}</code>", f"<code>{kind}</code>")
        for kind, entry in ERROR_TYPES.items()
    ]
    rows.sort()
    return (
        "<h2>Errors</h2><p>Every answer other than 2xx has the body "
        '<code>{"error": {"type", "message", "param"}}</code>: <code>type</code> is stable, '
        "<code>message</code> says what to do, <code>param</code> names the request field "
        "concerned (or is null). Every answer carries <code>X-Request-Id</code>; quote it when "
        "reporting a problem.</p>" + _table(("Status", "Type"), rows)
    )


def _error_types(status: str) -> list[str]:
    return [kind for kind, entry in ERROR_TYPES.items() if str(entry.status) == status]


def _resolver(openapi: dict[str, Any]) -> Callable[[Any], Any]:
    def resolve(node: Any) -> Any:
        seen = 0
        while isinstance(node, dict) and "$ref" in node and seen < 16:
            target: Any = openapi
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target.get(part, {}) if isinstance(target, dict) else {}
            node, seen = target, seen + 1
        return node if isinstance(node, dict) else {}

    return resolve


def _type(schema: dict[str, Any], resolve: Callable[[Any], Any]) -> str:
    """A short reading of a JSON schema: ``string``, ``array of string``, ``FillFieldIn``."""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_type(s, resolve) for s in schema[key])
    if "enum" in schema:
        return "one of " + ", ".join(str(v) for v in schema["enum"])
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return " or ".join(_type({**schema, "type": k}, resolve) for k in kind)
    if kind == "array":
        return f"array of {_type(schema.get('items', {}), resolve)}"
    if kind == "object" and "additionalProperties" in schema:
        extra = schema["additionalProperties"]
        if isinstance(extra, dict):
            return f"object of {_type(extra, resolve)}"
    if schema.get("format"):
        return f"{kind} ({schema['format']})"
    return str(kind)


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    head = "".join(f"<th>{cell}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _anchor(method: str, path: str) -> str:
    return method + "-" + re.sub(r"[^A-Za-z0-9]+", "-", path).strip("-")


def _text(value: object) -> str:
    return html.escape(str(value), quote=True)


def _inline(value: object) -> str:
    """Escaped text with Markdown's `code` spans kept as code."""
    if not value:
        return ""
    return _CODE.sub(r"<code>\1</code>", _text(value))


def _paragraph(value: object) -> str:
    return f"<p>{_inline(value)}</p>" if value else ""
