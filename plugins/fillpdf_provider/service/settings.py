"""How a service process is configured: command-line flags or ``FILLPDF_*`` variables.

Every worker process of ``fillpdf serve --workers N`` builds its settings from the
environment, so the flags are turned into variables before the workers start.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from fillpdf_provider.service.clock import Clock

MB = 1024 * 1024


@dataclass
class Settings:
    """One service's configuration. Only ``data_dir`` is required."""

    data_dir: Path
    database_url: str | None = None
    """SQLAlchemy URL; default a SQLite file in ``data_dir``."""
    public_url: str | None = None
    """Base of ``document_url`` (a CDN or the service's public address); default: the URL
    the request came in on."""
    signing_key: bytes | None = None
    """HMAC key of document URLs; default: ``data_dir/signing.key``, made on first start."""
    max_upload_bytes: int = 25 * MB
    max_fill_body_bytes: int = 25 * MB
    retention_seconds: int = 24 * 3600
    probe_timeout_s: float = 10.0
    """Time allowed to open an uploaded PDF and count its pages."""
    engine_timeout_s: float = 120.0
    """Time allowed for one conversion or one fill of an uploaded PDF."""
    engine_memory_bytes: int = 3 * 1024 * MB
    """Address-space limit of the process that reads an untrusted PDF."""
    sweep_interval_s: float = 60.0
    clock: Clock = field(default_factory=Clock)

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir)

    @property
    def files_dir(self) -> Path:
        return self.data_dir / "files"

    @property
    def uploads_dir(self) -> Path:
        return self.data_dir / "uploads"

    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'fillpdf.db'}"

    def prepare(self) -> None:
        """Make the folders and the signing key; safe to call from many processes at once."""
        for folder in (self.data_dir, self.files_dir, self.uploads_dir):
            folder.mkdir(parents=True, exist_ok=True)
        if self.signing_key is None:
            self.signing_key = _signing_key(self.data_dir / "signing.key")

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        data_dir = env.get("FILLPDF_DATA_DIR")
        if not data_dir:
            raise ValueError("Set FILLPDF_DATA_DIR (or pass --data-dir) to a writable folder.")
        settings = cls(
            data_dir=Path(data_dir),
            database_url=env.get("FILLPDF_DATABASE_URL") or None,
            public_url=env.get("FILLPDF_PUBLIC_URL") or None,
            signing_key=env["FILLPDF_SIGNING_KEY"].encode()
            if env.get("FILLPDF_SIGNING_KEY")
            else None,
            clock=Clock(env.get("FILLPDF_CLOCK_FILE") or None),
        )
        for name, attr, kind in (
            ("FILLPDF_ENGINE_TIMEOUT", "engine_timeout_s", float),
            ("FILLPDF_PROBE_TIMEOUT", "probe_timeout_s", float),
            ("FILLPDF_SWEEP_INTERVAL", "sweep_interval_s", float),
            ("FILLPDF_RETENTION_SECONDS", "retention_seconds", int),
        ):
            if env.get(name):
                setattr(settings, attr, kind(env[name]))
        return settings


def _signing_key(path: Path) -> bytes:
    """The key in ``path``, written once (mode 0600) by whichever process gets there first."""
    if not path.exists():
        key = secrets.token_hex(32).encode()
        temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(key)
        try:
            os.link(temp, path)  # fails if another process won the race: keep theirs
        except FileExistsError:
            pass
        finally:
            temp.unlink(missing_ok=True)
    return path.read_bytes().strip()
