"""Operations' tables: the scoped tokens a release pipeline uses, and the audit log."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ScopedToken(models.Model):
    """A credential for one campaign and a few endpoints (its scopes), with an expiry.

    It acts as the user who made it, within its scopes: it never reaches more than that user may,
    and a user who loses the campaign's role takes the token's reach with them. Only a hash of the
    secret is stored; the secret is shown once, when the token is made."""

    campaign = models.ForeignKey("labeling.Campaign", on_delete=models.CASCADE, related_name="scoped_tokens")
    name = models.CharField(max_length=100)
    scopes = models.JSONField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    # SHA-256 of the whole secret, hex: the secret has 256 random bits, so a fast hash suffices.
    secret_hash = models.CharField(max_length=64, unique=True)
    # The secret's first characters, shown in lists so an owner can tell tokens apart.
    prefix = models.CharField(max_length=16)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_used_at = models.DateTimeField(null=True, blank=True)
    last_used_from = models.GenericIPAddressField(null=True, blank=True)
    # Requests in the current minute (the rate limit's window), counted by one conditional update.
    window_minute = models.BigIntegerField(default=0)
    window_requests = models.IntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class AuditEvent(models.Model):
    """Who did what to access, from where: sign-ins, tokens, role changes."""

    class Kind(models.TextChoices):
        SIGN_IN = "sign_in", "sign-in"
        SIGN_IN_FAILED = "sign_in_failed", "failed sign-in"
        SIGN_OUT = "sign_out", "sign-out"
        TOKEN_CREATED = "token_created", "scoped token made"
        TOKEN_USED = "token_used", "scoped token used"
        TOKEN_REFUSED = "token_refused", "scoped token refused"
        TOKEN_REVOKED = "token_revoked", "scoped token revoked"
        ROLE_CHANGED = "role_changed", "role changed"

    at = models.DateTimeField(db_index=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    # The user the event is about; the name stays when the account goes, and names a failed
    # sign-in's attempted account, which may not exist.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    username = models.CharField(max_length=150, blank=True)
    source = models.GenericIPAddressField(null=True, blank=True)
    campaign = models.ForeignKey(
        "labeling.Campaign", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    detail = models.JSONField(default=dict)

    class Meta:
        ordering = ["-at", "-pk"]
        indexes = [models.Index(fields=["kind", "at"])]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.get_kind_display()} ({self.username})"


class ExternalIdentity(models.Model):
    """The account an identity provider's subject signs in as (operations.single_sign_on).

    A sign-in finds its user by (issuer, subject), never by name or address: those change at the
    provider and may collide with a local account."""

    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="external_identity"
    )
    created_at = models.DateTimeField()
    last_sign_in_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="one_user_per_subject")]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class ProvidedMembership(models.Model):
    """A campaign membership the provider's groups granted at the last sign-in: the next sign-in
    takes back those its groups no longer grant, and leaves memberships a coordinator gave alone."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    campaign = models.ForeignKey("labeling.Campaign", on_delete=models.CASCADE, related_name="+")
    role = models.CharField(max_length=20)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "campaign"], name="one_provided_membership")]
