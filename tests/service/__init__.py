"""The HTTP service (``fillpdf_provider.service``), mostly against a live ``fillpdf serve``."""
