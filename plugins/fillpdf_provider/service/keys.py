"""API keys: made by an operator, shown once, stored only as a hash.

A key reads ``fpk_<key id>_<secret>``. The id finds the row; the secret's SHA-256 is
compared in constant time. The secret has 256 bits of entropy, so a plain hash is as strong
as a slow one here, and checking a key stays cheap on every request.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from sqlalchemy import Boolean, select, text, update
from sqlalchemy.engine import Connection, Engine

from fillpdf_provider.service.db import accounts, api_keys
from fillpdf_provider.service.plans import PLANS, Plan, enterprise_plan

KEY_PATTERN = re.compile(r"^fpk_(?P<id>[a-z0-9]{16})_(?P<secret>[A-Za-z0-9_-]{43})$")
#: Requests per minute of an enterprise account whose settings name none: every key has a
#: limit, so every authenticated response can state it.
ENTERPRISE_RATE_LIMIT = 6000
_DUMMY_HASH = hashlib.sha256(b"no such key").hexdigest()
#: Every authenticated request runs this: plain SQL, compiled once, costs a third of the
#: same query built with the expression language on each call.
_CALLER = text(
    "SELECT k.secret_hash, k.revoked_at, a.id, a.plan, a.pages_included, a.overage_rate_usd,"
    " a.max_pages_per_file, a.rate_limit_per_minute, a.hard_stop"
    " FROM api_keys AS k JOIN accounts AS a ON a.id = k.account_id WHERE k.id = :key_id"
).columns(hard_stop=Boolean)


@dataclass(frozen=True)
class Caller:
    """Who made a request: the key and its account's plan."""

    key_id: str
    account_id: str
    plan: Plan


def secret_hash(secret: str) -> str:
    """What is stored of a key's secret, and what a presented secret is compared by."""
    return hashlib.sha256(secret.encode()).hexdigest()


def create_account(
    engine: Engine,
    plan: str,
    now: float,
    *,
    enterprise: dict[str, object] | None = None,
) -> str:
    """A new account on ``plan``; enterprise limits come from ``enterprise``."""
    if plan not in PLANS:
        raise ValueError(f"Unknown plan {plan!r}; choose one of {', '.join(PLANS)}.")
    account_id = "acct_" + secrets.token_hex(8)
    row: dict[str, object] = {"id": account_id, "plan": plan, "created_at": now}
    if plan == "enterprise":
        row.update(enterprise or {})
    with engine.begin() as conn:
        conn.execute(accounts.insert().values(**row))
    return account_id


def create_key(engine: Engine, account_id: str, now: float) -> tuple[str, str]:
    """A new key for ``account_id``: returns ``(key_id, full key)``; only the hash is kept."""
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    with engine.begin() as conn:
        found = conn.execute(select(accounts.c.id).where(accounts.c.id == account_id)).first()
        if found is None:
            raise ValueError(f"No account {account_id!r}; `fillpdf keys list` shows them.")
        conn.execute(
            api_keys.insert().values(
                id=key_id, account_id=account_id, secret_hash=secret_hash(secret), created_at=now
            )
        )
    return key_id, f"fpk_{key_id}_{secret}"


def key_registered(engine: Engine, key: str) -> bool | None:
    """True if ``key`` is already stored, False if not, None if its id is taken by another."""
    match = KEY_PATTERN.match(key)
    if match is None:
        raise ValueError(
            "A key reads fpk_<16 lowercase hex>_<43 URL-safe characters>; make one with "
            "`python -c \"import secrets; print(f'fpk_{secrets.token_hex(8)}_"
            "{secrets.token_urlsafe(32)}')\"`."
        )
    with engine.connect() as conn:
        row = conn.execute(
            select(api_keys.c.secret_hash).where(api_keys.c.id == match["id"])
        ).first()
    if row is None:
        return False
    return hmac.compare_digest(row.secret_hash, secret_hash(match["secret"])) or None


def register_key(engine: Engine, account_id: str, key: str, now: float) -> str:
    """Store a key chosen by the operator (a deployment's secret); returns its id."""
    match = KEY_PATTERN.match(key)
    if match is None or key_registered(engine, key) is not False:
        raise ValueError("That key is malformed or its id is already in use.")
    with engine.begin() as conn:
        conn.execute(
            api_keys.insert().values(
                id=match["id"],
                account_id=account_id,
                secret_hash=secret_hash(match["secret"]),
                created_at=now,
            )
        )
    return match["id"]


def revoke_key(engine: Engine, key_id: str, now: float) -> bool:
    """Revoke a key by its id (or by the whole key); False if there was no live such key."""
    match = KEY_PATTERN.match(key_id)
    if match:
        key_id = match["id"]
    with engine.begin() as conn:
        result = conn.execute(
            update(api_keys)
            .where(api_keys.c.id == key_id, api_keys.c.revoked_at.is_(None))
            .values(revoked_at=now)
        )
    return result.rowcount == 1


def list_keys(engine: Engine) -> list[dict[str, object]]:
    """Every key with its account and plan (never a secret: only hashes are stored)."""
    query = (
        select(
            api_keys.c.id,
            api_keys.c.account_id,
            accounts.c.plan,
            api_keys.c.created_at,
            api_keys.c.revoked_at,
        )
        .join(accounts, accounts.c.id == api_keys.c.account_id)
        .order_by(api_keys.c.created_at)
    )
    with engine.connect() as conn:
        return [dict(row._mapping) for row in conn.execute(query)]


def plan_of(row: dict[str, object]) -> Plan:
    """The plan an account row runs on (enterprise limits from the row itself)."""
    if row["plan"] == "enterprise":
        return enterprise_plan(
            pages_included=row.get("pages_included"),  # type: ignore[arg-type]
            overage_rate_usd=row.get("overage_rate_usd"),  # type: ignore[arg-type]
            max_pages_per_file=row.get("max_pages_per_file"),  # type: ignore[arg-type]
            rate_limit_per_minute=row.get("rate_limit_per_minute")  # type: ignore[arg-type]
            or ENTERPRISE_RATE_LIMIT,
            hard_stop=bool(row.get("hard_stop")),
        )
    return PLANS[str(row["plan"])]


def bearer_key(authorization: str | None) -> re.Match[str] | None:
    """The key of an ``Authorization: Bearer fpk_...`` header, split into id and secret."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    return KEY_PATTERN.match(token.strip()) if scheme.lower() == "bearer" else None


def authenticate(db: Engine | Connection, authorization: str | None) -> Caller | None:
    """The caller behind an ``Authorization: Bearer`` header, or None if it isn't valid."""
    match = bearer_key(authorization)
    if match is None:
        return None
    if isinstance(db, Engine):
        with db.connect() as conn:
            row = conn.execute(_CALLER, {"key_id": match["id"]}).first()
    else:
        row = db.execute(_CALLER, {"key_id": match["id"]}).first()
    stored = row.secret_hash if row is not None else _DUMMY_HASH
    valid = hmac.compare_digest(stored, secret_hash(match["secret"]))
    if row is None or not valid or row.revoked_at is not None:
        return None
    mapping = dict(row._mapping)
    return Caller(key_id=match["id"], account_id=str(mapping["id"]), plan=plan_of(mapping))
