"""The test suite, one folder per part of the package (``tests/engine/`` tests
``fillpdf_provider.engine``, ...); ``conftest.py`` holds the fixtures all folders share and
``kits/`` (at the repository root) the helpers they build on."""
