"""The Python client (``fillpdf_provider.client``) and the account model it shares."""
