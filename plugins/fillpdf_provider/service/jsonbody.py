"""JSON request bodies read with bounds: every way they can fail is a 400 that says what to do.

``json.loads`` alone lets three kinds of hostile body through to a 500: nesting deep enough
to exhaust the recursion limit, integers with more digits than Python converts, and ``\\ud800``
escapes that decode to lone UTF-16 surrogates (text no encoder, database or PDF accepts).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from fillpdf_provider.service.errors import ApiError

#: Deepest nesting of arrays and objects a body may have; a fill request needs four levels.
MAX_DEPTH = 32
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_json(raw: bytes) -> Any:
    """The JSON value of ``raw``, checked for depth and lone surrogates (400 if bad)."""
    try:
        data = json.loads(raw)
    except RecursionError:
        raise _too_deep(None) from None
    except json.JSONDecodeError as exc:
        raise ApiError("invalid_request", f"The body is not valid JSON ({exc}).") from None
    except UnicodeDecodeError:
        raise ApiError(
            "invalid_request", "The body is not UTF-8 text; send the JSON encoded as UTF-8."
        ) from None
    except ValueError:  # an integer past sys.get_int_max_str_digits()
        raise ApiError(
            "invalid_request",
            f"The body holds a number of over {sys.get_int_max_str_digits():,} digits; no value "
            "needs one, send a shorter number or a string.",
        ) from None
    if _may_be_hostile(raw):
        _check(data)
    return data


def _may_be_hostile(raw: bytes) -> bool:
    """Whether the value must be walked: a lone surrogate can only come from a ``\\u``
    escape of D800-DFFF, and nesting is never deeper than the brackets (two scans in C)."""
    lowered = raw.lower() if b"\\u" in raw else b""
    return b"\\ud" in lowered or raw.count(b"[") + raw.count(b"{") >= MAX_DEPTH


def _check(data: Any) -> None:
    """Walk the value without recursion: depth, and every string and key for surrogates."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            _check_text(value, path, None)
            continue
        if not isinstance(value, dict | list):
            continue
        if len(path) >= MAX_DEPTH:
            raise _too_deep(path)
        if isinstance(value, list):
            stack.extend((item, (*path, index)) for index, item in enumerate(value))
            continue
        for key, item in value.items():
            _check_text(key, path, key)
            stack.append((item, (*path, key)))


def _check_text(text: str, path: tuple[str | int, ...], key: str | None) -> None:
    if text.isascii():
        return
    found = _SURROGATE.search(text)
    if found is None:
        return
    escape = f"\\u{ord(found.group()):04x}"
    if key is None:
        what = f"The text at {where_of(path)}"
    else:  # json.dumps escapes the surrogate: the message itself stays valid text
        what = f"The key {json.dumps(key)} in {where_of(path)}"
    raise ApiError(
        "invalid_request",
        f"{what} holds a lone UTF-16 surrogate ({escape}), which is not a character; send "
        "text as UTF-8, with each \\ud800-\\udfff escape in a valid pair.",
        param=_param(path, key),
    )


def _too_deep(path: tuple[str | int, ...] | None) -> ApiError:
    at = f" (under {where_of(path[:2])})" if path else ""
    return ApiError(
        "invalid_request",
        f"The body nests arrays and objects more than {MAX_DEPTH} levels deep{at}; a request "
        "needs a few levels: send each value as a string, a boolean or null.",
        param=_param(path or (), None),
    )


def where_of(path: tuple[str | int, ...]) -> str:
    """``path`` as a reader would write it: ``values.full_name``, ``fields[0].name``."""
    if not path:
        return "the body"
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _NAME.fullmatch(part):
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part)}]"
    return text


def _param(path: tuple[str | int, ...], key: str | None) -> str | None:
    first = path[0] if path else key
    return first if isinstance(first, str) else None
