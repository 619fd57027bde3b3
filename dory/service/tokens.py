"""Bearer tokens for `dory serve` (HTTP and MCP): created once, kept only as salted hashes.

A token reads `dory_<id>_<secret>`: the id (8 hex characters) finds its record, the secret (32 random
bytes) is checked against `sha256(salt + secret)` with a constant-time compare. The secret has 256
bits of entropy, so a fast hash is enough (a slow password hash would only slow every request).
Records live in `<state>/tokens.json`, mode 0600, rewritten atomically under an flock so two
`dory auth` commands never lose each other's token; a revoked token keeps its record (without its
hash) so `auth list` can show when it was revoked. Servers re-read the file when it changes, so a
revocation takes effect on the next request.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from dory.corpus.atomic import write_atomic
from dory.errors import AlreadyExists, Forbidden, InvalidInput, NotFound, Unauthorized
from dory.models import TokenCreated, TokenCreateRequest, TokenInfo, TokenListResponse, TokenScope

_TOKEN = re.compile(r"^dory_([0-9a-f]{8})_([A-Za-z0-9_-]{20,100})$")
_LIFETIME = re.compile(r"^(\d{1,6})([dhm])$")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}
_DUMMY_SALT = "0" * 32


@dataclass(frozen=True)
class Principal:
    """Who a request comes from: the token's name (the agent of its writes) and its scopes."""

    name: str
    scopes: frozenset[str]

    def allows(self, scope: TokenScope) -> bool:
        """admin allows everything; every token may read."""
        return scope == "read" or scope in self.scopes or "admin" in self.scopes

    def agent(self, given: str | None) -> str | None:
        """Who a write is recorded as made by: a token's name; the local user keeps what it said."""
        return given if self is LOCAL_USER else self.name

    def require(self, scope: TokenScope) -> None:
        if not self.allows(scope):
            raise Forbidden(f"the token {self.name!r} lacks the {scope!r} scope", scope=scope, token=self.name)


# The caller when no token is involved: the CLI, MCP over stdio, and `dory serve` while no token exists
# (then open to local callers only). Every scope, like the user at the keyboard.
LOCAL_USER = Principal("local", frozenset({"admin"}))


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def _hash(salt: str, secret: str) -> str:
    return hashlib.sha256(f"{salt}{secret}".encode()).hexdigest()


def expiry(spec: str | None, now: dt.datetime) -> str | None:
    """`30d`, `12h`, `90m` from now, or an ISO date/time (UTC when it has no zone); must be future."""
    if spec is None:
        return None
    if match := _LIFETIME.match(spec.strip()):
        when = now + dt.timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    else:
        try:
            when = dt.datetime.fromisoformat(spec.strip())
        except ValueError as exc:
            raise InvalidInput(f"expires: {spec!r} is neither a lifetime (30d, 12h, 90m) nor an ISO date") from exc
        when = when if when.tzinfo else when.replace(tzinfo=dt.UTC)
    if when <= now:
        raise InvalidInput(f"expires: {spec!r} is not in the future")
    return when.astimezone(dt.UTC).isoformat()


class TokenStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._cache: tuple[tuple[int, int], dict[str, dict[str, Any]]] | None = None

    # -- reading -----------------------------------------------------------------------------
    def _records(self) -> dict[str, dict[str, Any]]:
        """id -> record, re-read only when the file changed (servers call this on every request)."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return {}
        stamp = (st.st_mtime_ns, st.st_size)
        if self._cache is None or self._cache[0] != stamp:
            data = json.loads(self.path.read_text(encoding="utf-8") or "{}")
            self._cache = (stamp, {rec["id"]: rec for rec in data.get("tokens", [])})
        return self._cache[1]

    def configured(self) -> bool:
        """Whether any token is active (a server on a non-loopback address needs one)."""
        now = _now()
        return any(_active(rec, now) for rec in self._records().values())

    def verify(self, token: str | None) -> Principal:
        """The principal of a bearer token; Unauthorized for a missing, unknown, revoked or expired one.
        The hash is always computed and compared, so a bad id costs as long as a bad secret."""
        match = _TOKEN.match(token or "")
        token_id, secret = (match.group(1), match.group(2)) if match else ("", "")
        record = self._records().get(token_id)
        expected = record.get("hash") if record else None
        actual = _hash(record["salt"] if record else _DUMMY_SALT, secret)
        same = hmac.compare_digest(actual, expected or "x" * 64)
        if not (match and record and expected and same):
            raise Unauthorized("a valid bearer token is required (create one with `dory auth new NAME`)")
        if not _active(record, _now()):
            raise Unauthorized(f"the token {record['name']!r} has expired", token=record["name"])
        return Principal(record["name"], frozenset(record["scopes"]))

    def list(self) -> TokenListResponse:
        now = _now()
        infos = [_info(rec, now) for rec in self._records().values()]
        return TokenListResponse(tokens=sorted(infos, key=lambda i: (not i.active, i.name)))

    # -- changing ----------------------------------------------------------------------------
    def create(self, req: TokenCreateRequest) -> TokenCreated:
        now = _now()
        expires_at = expiry(req.expires, now)
        if req.name == LOCAL_USER.name:
            raise InvalidInput(f"{req.name!r} names the local user (no token); choose another name", name=req.name)
        with self._locked() as records:
            if any(rec["name"] == req.name and _active(rec, now) for rec in records.values()):
                raise AlreadyExists(f"a token named {req.name!r} exists; revoke it first", name=req.name)
            token_id = secrets.token_hex(4)
            while token_id in records:
                token_id = secrets.token_hex(4)
            secret, salt = secrets.token_urlsafe(32), secrets.token_hex(16)
            records[token_id] = {
                "id": token_id,
                "name": req.name,
                "scopes": sorted(set(req.scopes)),
                "salt": salt,
                "hash": _hash(salt, secret),
                "created_at": now.isoformat(),
                "expires_at": expires_at,
                "revoked_at": None,
            }
            info = _info(records[token_id], now)
        return TokenCreated(token=f"dory_{token_id}_{secret}", info=info)

    def revoke(self, name: str) -> TokenInfo:
        now = _now()
        with self._locked() as records:
            live = [rec for rec in records.values() if rec["name"] == name and rec.get("hash")]
            if not live:
                raise NotFound(f"no token named {name!r}", name=name)
            for rec in live:
                rec["hash"], rec["revoked_at"] = None, now.isoformat()
            return _info(live[0], now)

    @contextmanager
    def _locked(self) -> Iterator[dict[str, dict[str, Any]]]:
        """The records, read and written back under an exclusive lock (mode 0600)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._cache = None
            records = dict(self._records())
            yield records
            body = json.dumps({"tokens": list(records.values())}, indent=2) + "\n"
            write_atomic(self.path, body.encode(), mode=0o600)
            self.path.chmod(0o600)  # also for a file made by an older version or by hand
            self._cache = None


def _active(record: dict[str, Any], now: dt.datetime) -> bool:
    expires = record.get("expires_at")
    return bool(record.get("hash")) and (expires is None or dt.datetime.fromisoformat(expires) > now)


def _info(record: dict[str, Any], now: dt.datetime) -> TokenInfo:
    return TokenInfo(
        name=record["name"],
        scopes=cast(list[TokenScope], record["scopes"]),
        created_at=record["created_at"],
        expires_at=record.get("expires_at"),
        revoked_at=record.get("revoked_at"),
        active=_active(record, now),
    )
