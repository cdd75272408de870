"""Review a conversion by eye: the form's pages with a box per field, edited in a browser.

``fillpdf review`` serves the editor on 127.0.0.1 behind a per-run token; the Airflow UI
serves the same editor behind its own sign-in. Saving writes the schema ``convert --schema``
takes, and can build the fillable PDF from it in the same step.
"""

from fillpdf_provider.review.app import create_review_app, review_routes
from fillpdf_provider.review.session import FileSink, PageView, ReviewSession, Saved

__all__ = [
    "FileSink",
    "PageView",
    "ReviewSession",
    "Saved",
    "create_review_app",
    "review_routes",
]
