"""The engine (``fillpdf_provider.engine``): inspect, fill, batch, convert, rebuild, preview."""
