"""FillPDF: convert flat PDFs into fillable forms and fill them in bulk."""

__version__ = "0.1.0"
