"""Open the editor in a browser without putting its token on a command line.

A browser started with the address as an argument shows it to every user of the machine
(``ps``, ``/proc/PID/cmdline``). Instead the browser is given a file only this user can
read, which forwards to the address, as Jupyter does.
"""

from __future__ import annotations

import html
import os
import tempfile
from pathlib import Path


def write_opener(url: str) -> Path:
    """A new HTML file, readable by this user only (0600), that forwards to ``url``."""
    handle, name = tempfile.mkstemp(prefix="fillpdf-review-", suffix=".html")
    address = html.escape(url, quote=True)
    page = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="refresh" content="0;url={address}">\n'
        "<title>FillPDF review</title></head>\n"
        f'<body><p>Opening the review editor: <a href="{address}">continue</a>.</p></body>'
        "</html>\n"
    )
    os.fchmod(handle, 0o600)  # mkstemp's mode already; said here, where it matters
    with os.fdopen(handle, "w", encoding="utf-8") as file:
        file.write(page)
    return Path(name)
