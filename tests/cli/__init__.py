"""The ``fillpdf`` command, run as a user runs it."""
