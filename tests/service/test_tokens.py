"""Bearer tokens: shown once, stored only as salted hashes in a 0600 file, checked in constant time,
refused when unknown, revoked or expired, and never lost when two `dory auth new` race."""

from __future__ import annotations

import datetime as dt
import json
import stat
import threading
from pathlib import Path

import pydantic
import pytest

from dory.errors import AlreadyExists, Forbidden, InvalidInput, NotFound, Unauthorized
from dory.models import TokenCreateRequest
from dory.service.tokens import TokenStore, expiry


def new(store: TokenStore, name: str, *scopes: str, expires: str | None = None) -> str:
    req = TokenCreateRequest.model_validate({"name": name, "scopes": list(scopes) or ["read"], "expires": expires})
    return store.create(req).token


def test_the_file_is_0600_and_holds_no_secret(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "state" / "tokens.json")
    secret = new(store, "agent", "write")
    mode = stat.S_IMODE((tmp_path / "state" / "tokens.json").stat().st_mode)
    assert mode == 0o600
    text = (tmp_path / "state" / "tokens.json").read_text()
    assert secret not in text and secret.split("_")[2] not in text
    record = json.loads(text)["tokens"][0]
    assert set(record) >= {"salt", "hash"} and record["name"] == "agent"


def test_a_token_verifies_to_its_name_and_scopes_and_a_changed_one_does_not(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    secret = new(store, "agent", "write")
    who = store.verify(secret)
    assert who.name == "agent" and who.allows("write") and who.allows("read") and not who.allows("admin")
    with pytest.raises(Forbidden) as refused:
        who.require("admin")
    assert refused.value.code == "forbidden"
    for bad in [
        secret[:-1] + ("A" if secret[-1] != "A" else "B"),
        "dory_ffffffff_" + secret[14:],
        "",
        None,
        "x" * 5000,
    ]:
        with pytest.raises(Unauthorized) as info:
            store.verify(bad)
        assert info.value.code == "unauthorized"


def test_revoked_and_expired_tokens_are_refused_and_listed_inactive(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    gone = new(store, "gone")
    store.revoke("gone")
    with pytest.raises(Unauthorized):
        store.verify(gone)
    with pytest.raises(NotFound):
        store.revoke("gone")
    # An expired token: written as a record whose expiry has passed (no clock is waited for).
    soon = new(store, "soon", expires="1d")
    data = json.loads((tmp_path / "tokens.json").read_text())
    for record in data["tokens"]:
        if record["name"] == "soon":
            record["expires_at"] = "2000-01-01T00:00:00+00:00"
    (tmp_path / "tokens.json").write_text(json.dumps(data))
    with pytest.raises(Unauthorized) as info:
        store.verify(soon)
    assert "expired" in info.value.message
    assert {t.name: t.active for t in store.list().tokens} == {"gone": False, "soon": False}
    assert not store.configured()
    new(store, "gone")  # a revoked name may be used again
    assert store.configured()


def test_an_active_name_cannot_be_taken_twice(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    new(store, "agent")
    with pytest.raises(AlreadyExists):
        new(store, "agent")


@pytest.mark.parametrize("name", ["", "../x", "a b", "x" * 65, "-lead", "name\n", "ünïcode"])
def test_hostile_names_are_refused_by_the_model(name: str) -> None:
    with pytest.raises(pydantic.ValidationError):
        TokenCreateRequest(name=name)


def test_expiry_accepts_lifetimes_and_future_dates_only() -> None:
    now = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)
    assert expiry("30d", now) == "2026-12-25T12:00:00+00:00"
    assert expiry("90m", now) == "2026-11-25T13:30:00+00:00"
    assert expiry("2027-01-01", now) == "2027-01-01T00:00:00+00:00"
    for bad in ["yesterday", "2020-01-01", "0h", "-5d"]:
        with pytest.raises(InvalidInput):
            expiry(bad, now)


def test_two_creators_at_once_lose_neither_token(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    secrets: list[str] = []
    threads = [threading.Thread(target=lambda n=n: secrets.append(new(TokenStore(path), f"t{n}"))) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store = TokenStore(path)
    assert sorted(store.verify(secret).name for secret in secrets) == sorted(f"t{n}" for n in range(8))


def test_local_is_reserved_for_the_caller_without_a_token(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as info:
        new(TokenStore(tmp_path / "tokens.json"), "local", "admin")
    assert info.value.code == "validation_error"
    assert not (tmp_path / "tokens.json").exists()
