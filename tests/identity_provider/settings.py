"""Settings of the test identity provider: django-oauth-toolkit's OpenID Connect provider in a
Django project of its own, run as a separate process (tests/identity_provider/__init__.py).
Everything it keeps lives in IDENTITY_PROVIDER_HOME."""

import os
from pathlib import Path

HOME = Path(os.environ["IDENTITY_PROVIDER_HOME"])
SECRET_KEY = "test identity provider, loopback only"
# The administration API's bearer token (admin_api.py): the tests that started the provider know it.
SEED_TOKEN = (HOME / "seed-token").read_text().strip() if (HOME / "seed-token").exists() else ""
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "tests.identity_provider.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [Path(__file__).parent / "templates"],
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(HOME / "provider.sqlite3")}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
LOGIN_URL = "/accounts/login/"
# The provider's cookies must not replace the application's: both live on 127.0.0.1.
SESSION_COOKIE_NAME = "provider_session"
CSRF_COOKIE_NAME = "provider_csrf"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": (HOME / "signing-key.pem").read_text()
    if (HOME / "signing-key.pem").exists()
    else "",
    "OIDC_RP_INITIATED_LOGOUT_ENABLED": True,
    "OIDC_RP_INITIATED_LOGOUT_ALWAYS_PROMPT": False,
    "PKCE_REQUIRED": True,
    "SCOPES": {"openid": "OpenID Connect", "profile": "profile", "email": "email"},
    "OAUTH2_VALIDATOR_CLASS": "tests.identity_provider.validator.GroupsValidator",
}
