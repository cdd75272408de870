"""How a service process is configured: command-line flags or ``FILLPDF_*`` variables.

Every worker process of ``fillpdf serve --workers N`` builds its settings from the
environment, so the flags are turned into variables before the workers start.
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path

from fillpdf_provider.service.clock import Clock

MB = 1024 * 1024
#: Base of document URLs when no public URL is configured: never the request's Host header.
DEFAULT_PUBLIC_URL = "http://localhost"
#: Set by `fillpdf serve` to its own pid, so its worker processes know to die with it.
SERVER_PID_VARIABLE = "FILLPDF_SERVER_PID"


@dataclass
class Settings:
    """One service's configuration. Only ``data_dir`` is required."""

    data_dir: Path
    database_url: str | None = None
    """SQLAlchemy URL; default a SQLite file in ``data_dir``."""
    public_url: str | None = None
    """Base of ``document_url`` (a CDN or the service's public address); default
    ``DEFAULT_PUBLIC_URL``. Never taken from a request's Host header, which the client
    chooses. ``fillpdf serve`` sets it from its bind address when not given."""
    signing_key: bytes | None = None
    """HMAC key of document URLs; default: ``data_dir/signing.key``, made on first start."""
    max_upload_bytes: int = 25 * MB
    max_fill_body_bytes: int = 25 * MB
    max_fill_chars: int = 1_000_000
    """Characters of text one fill's values may hold in all (about 250 full pages): with
    each value bounded by its box, what keeps the longest fill short."""
    retention_seconds: int = 24 * 3600
    probe_timeout_s: float = 10.0
    """Time allowed to open an uploaded PDF and count its pages."""
    engine_timeout_s: float = 120.0
    """Time allowed for one conversion or one fill of an uploaded PDF."""
    engine_memory_bytes: int = 3 * 1024 * MB
    """Address-space limit of each process that reads or fills a PDF."""
    max_children: int = field(default_factory=lambda: os.cpu_count() or 2)
    """PDF jobs one server process runs at once (each in its own child process)."""
    template_cache_bytes: int = 256 * MB
    """Memory for parsed stored conversions, per server process (an estimate per template:
    its file and its fields); the least recently filled go first."""
    max_form_fields: int = 20_000
    """Fields or annotations an uploaded or inline PDF may declare (real forms: hundreds)."""
    max_queue: int = 32
    """Requests that may wait for a free child; past that they get 503 with Retry-After."""
    queue_timeout_s: float = 30.0
    """Longest wait for a free child before the request gets 503 with Retry-After."""
    sweep_interval_s: float = 60.0
    body_grace_s: float = 5.0
    """Time a request body may take before ``body_min_rate`` applies."""
    body_min_rate: float = 4096.0
    """Bytes per second a request body must average after the grace (0: no minimum); a
    slower body is answered 408, so a trickling client cannot hold a connection."""
    clock: Clock = field(default_factory=Clock)

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir)

    @property
    def public_base_url(self) -> str:
        return self.public_url or DEFAULT_PUBLIC_URL

    @property
    def files_dir(self) -> Path:
        return self.data_dir / "files"

    @property
    def uploads_dir(self) -> Path:
        return self.data_dir / "uploads"

    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'fillpdf.db'}"

    def prepare(self) -> None:
        """Make the folders and the signing key; safe to call from many processes at once.

        The data dir holds the signing key, the database and every customer's files, so it
        is the owner's alone: folders 0700 and the SQLite file 0600 (made before SQLAlchemy
        opens it; SQLite gives its journals the same mode), tightened if found more open.
        Uploads and converted files are written through ``mkstemp``, which makes them 0600.
        """
        for folder in (self.data_dir, self.files_dir, self.uploads_dir):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            _owner_only(folder, 0o700)
        database = sqlite_file(self.resolved_database_url())
        if database is not None:
            database.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(database, os.O_WRONLY | os.O_CREAT, 0o600))
            _owner_only(database, 0o600)
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
            ("FILLPDF_BODY_GRACE", "body_grace_s", float),
            ("FILLPDF_BODY_MIN_RATE", "body_min_rate", float),
            ("FILLPDF_RETENTION_SECONDS", "retention_seconds", int),
            ("FILLPDF_ENGINE_MEMORY_MB", "engine_memory_bytes", lambda v: int(v) * MB),
            ("FILLPDF_MAX_CHILDREN", "max_children", int),
            ("FILLPDF_TEMPLATE_CACHE_MB", "template_cache_bytes", lambda v: int(v) * MB),
            ("FILLPDF_MAX_FILL_CHARS", "max_fill_chars", int),
            ("FILLPDF_MAX_QUEUE", "max_queue", int),
            ("FILLPDF_MAX_FORM_FIELDS", "max_form_fields", int),
            ("FILLPDF_QUEUE_TIMEOUT", "queue_timeout_s", float),
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


def sqlite_file(database_url: str) -> Path | None:
    """The file of a SQLite URL (None for another database or an in-memory one)."""
    from sqlalchemy.engine import make_url

    url = make_url(database_url)
    name = url.database
    if url.get_backend_name() != "sqlite" or not name or name == ":memory:":
        return None
    if name.startswith("file:"):  # a SQLite URI filename: its options say where
        return None
    return Path(name)


def _owner_only(path: Path, mode: int) -> None:
    """Narrow ``path`` to ``mode`` if group or others have any access and it is ours."""
    info = path.stat()
    if stat.S_IMODE(info.st_mode) & 0o077 and info.st_uid == os.geteuid():
        os.chmod(path, stat.S_IMODE(info.st_mode) & mode)
