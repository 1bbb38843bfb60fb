"""API tokens: made once and shown once; only their SHA-256 is stored, so a leaked database leaks no token."""

from __future__ import annotations

import hashlib
import secrets

from django.utils import timezone

from sgg_eval.service.models import ApiToken

PREFIX = "sgg_"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(user, name: str) -> tuple[ApiToken, str]:
    """A new token of ``user``: its record and the token itself (shown to the user once)."""
    token = PREFIX + secrets.token_urlsafe(32)
    record = ApiToken.objects.create(owner=user, name=name or "token", prefix=token[:10], digest=digest(token))
    return record, token


def user_of(header: str):
    """The user an ``Authorization: Token <token>`` header acts for, or None (no, unknown or revoked token)."""
    scheme, _, token = (header or "").partition(" ")
    if scheme.lower() not in ("token", "bearer") or not token.strip():
        return None
    record = ApiToken.objects.select_related("owner").filter(digest=digest(token.strip()), revoked=None).first()
    if record is None or not record.owner.is_active:
        return None
    return record.owner


def revoke(user, token_id: int) -> bool:
    return bool(ApiToken.objects.filter(owner=user, pk=token_id, revoked=None).update(revoked=timezone.now()))
