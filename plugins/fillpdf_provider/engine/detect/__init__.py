"""Field detection on flat PDFs: drawn boxes, lines, combs, checkboxes and radio circles.

``detect_fields`` reads a page's chars and vector graphics (pdfplumber) and returns
``Detected`` candidates with names derived from the nearest printed label.
"""

from fillpdf_provider.engine.detect.model import Detected

__all__ = ["Detected"]
