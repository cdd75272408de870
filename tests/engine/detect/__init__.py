"""Field detection on flat pages (``fillpdf_provider.engine.detect``) and its benchmark's pieces."""
