"""Django settings, read from environment variables through small typed helpers.

Defaults give a working set-up with no server at all: SQLite under var/, a Celery broker on
kombu's filesystem transport under var/celery/, DEBUG off and a secret key made for this
installation (var/secret_key). Set DATABASE_URL for PostgreSQL, REDIS_URL for Redis (broker,
result backend and cache), DEBUG=1 for development (`make dev`), and PRODUCTION=1 for a
deployment behind HTTPS (secret key and host names required, secure cookies, HSTS, hashed
static files).
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import sys
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str | None = None) -> str:
    """A string variable; a missing one without default is a configuration error."""
    value = os.environ.get(name)
    if value is None or value == "":
        if default is None:
            raise ImproperlyConfigured(f"environment variable {name} is required")
        return default
    return value


def env_bool(name: str, default: bool) -> bool:
    """A yes/no variable: 1/true/yes/on or 0/false/no/off."""
    value = os.environ.get(name, "").strip().lower()
    if value == "":
        return default
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1/0, true/false, yes/no)")


def env_int(name: str, default: int) -> int:
    """An integer variable."""
    value = os.environ.get(name, "").strip()
    if value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer") from None


def env_renamed(name: str, old_name: str) -> str:
    """The variable's name to read: `old_name` (with a deprecation line on stderr) while only
    that one is set, so a deployment keeps working across the rename."""
    if os.environ.get(name, "").strip() == "" and os.environ.get(old_name, "").strip() != "":
        print(f"settings: {old_name} is deprecated; set {name} instead", file=sys.stderr)
        return old_name
    return name


def env_float(name: str, default: float) -> float:
    """A finite number variable."""
    value = os.environ.get(name, "").strip()
    if value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number") from None
    if not math.isfinite(number):
        raise ImproperlyConfigured(f"{name}={value!r} is not a finite number")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    """A comma-separated list variable."""
    value = os.environ.get(name, "").strip()
    if value == "":
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def env_groups(name: str, default: list[str]) -> tuple[str, ...]:
    """A comma-separated list where set but empty means none (an unset variable takes the
    default): an operator must be able to give a role no group at all."""
    return () if os.environ.get(name) == "" else tuple(env_list(name, default))


_HOST_NAME = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)(\.(?!-)[a-z0-9_-]{1,63}(?<!-))*\.?$")
_BRACKETED_HOST = re.compile(r"^\[(?P<host>[^\]]+)\](?::(?P<port>.*))?$")


def _host_entry(name: str, entry: str) -> str:
    """One host entry, lower-cased: a host name, an IP address or a CIDR network, with an optional
    :port (an IPv6 address with a port in brackets); outbound/rules.py reads them."""
    text = entry.strip().lower()
    bracketed = _BRACKETED_HOST.match(text)
    host, port = text, None
    if bracketed:
        host, port = bracketed.group("host"), bracketed.group("port")
    elif text.count(":") == 1:
        host, port = text.split(":")
    if port is not None and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise ImproperlyConfigured(f"{name}: {entry!r} has a port that is not a number from 1 to 65535")
    try:
        ipaddress.ip_network(host, strict=False)
    except ValueError:
        if bracketed or not _HOST_NAME.match(host):
            raise ImproperlyConfigured(
                f"{name}: {entry!r} is neither a host name nor an IP address or network "
                "(e.g. api.openai.com, 10.0.0.5:8000, 127.0.0.0/8, [::1]:8000)"
            ) from None
    return text


def env_hosts(name: str, default: list[str]) -> tuple[str, ...]:
    """A comma-separated list of hosts: names, IP addresses or CIDR networks, each with an
    optional :port."""
    return tuple(_host_entry(name, entry) for entry in env_list(name, default))


def env_key_hosts(name: str, default: dict[str, list[str]]) -> dict[str, tuple[str, ...]]:
    """Environment variables bound to hosts: ``VARIABLE=host,host;VARIABLE=host`` (hosts as in
    `env_hosts`)."""
    value = os.environ.get(name, "").strip()
    if value == "":
        return {variable: tuple(_host_entry(name, h) for h in hosts) for variable, hosts in default.items()}
    bindings: dict[str, tuple[str, ...]] = {}
    for part in filter(None, (part.strip() for part in value.split(";"))):
        variable, equals, hosts = (piece.strip() for piece in part.partition("="))
        entries = tuple(_host_entry(name, h) for h in hosts.split(",") if h.strip())
        if not equals or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", variable) or not entries:
            raise ImproperlyConfigured(
                f"{name}: {part!r} is not VARIABLE=host[,host...] "
                "(e.g. OPENAI_API_KEY=api.openai.com;JUDGE_API_KEY=10.0.0.5:8000)"
            )
        if variable in bindings:
            raise ImproperlyConfigured(f"{name} binds {variable} twice")
        bindings[variable] = entries
    return bindings


DEV_SECRET_KEY = "dev-only-insecure-key-" + "x" * 40
"""The public key earlier versions ran with outside production; refused everywhere now."""


def refuse_weak_secret_key(key: str) -> str:
    """`key` if it is fit to sign with; Django's own test (security.W009) as an error, so a server
    with a guessable key does not start: sessions, CSRF tokens and password-reset links are
    signed with it."""
    if key == DEV_SECRET_KEY or key.startswith(("dev-only-insecure-key", "django-insecure-")):
        raise ImproperlyConfigured("SECRET_KEY is a published development key; set a random one")
    if len(key) < 50 or len(set(key)) < 5:
        raise ImproperlyConfigured(
            "SECRET_KEY is too weak: use at least 50 characters with at least 5 different ones, "
            "e.g. python -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )
    return key


def installation_secret_key(folder: Path) -> str:
    """The key made for this installation on its first start (`folder`/secret_key, readable by
    its owner only), so a server started without SECRET_KEY signs with nothing anybody else knows.

    Several processes start at once (gunicorn's workers, the Celery worker): the key is written to
    a file of its own and then linked into place, so the file appears whole or not at all. (Created
    empty and then written, another process could read it empty in between and serve every request
    with a 500: "The SECRET_KEY setting must not be empty".)"""
    import secrets
    import tempfile
    import time

    path = folder / "secret_key"
    for _ in range(50):
        try:
            existing = path.read_text().strip()
        except FileNotFoundError:
            break
        if existing:
            return existing
        time.sleep(0.1)  # an older release's first start may still be writing it
    else:
        raise ImproperlyConfigured(f"{path} is empty: delete it and a new key is made at the next start")
    key = secrets.token_urlsafe(50)
    descriptor, temporary = tempfile.mkstemp(prefix=".secret_key-", dir=folder)  # mode 0600
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(key + "\n")
        try:
            os.link(temporary, path)
        except FileExistsError:  # another process of this start made it first
            return path.read_text().strip()
    finally:
        os.remove(temporary)
    return key


PRODUCTION = env_bool("PRODUCTION", False)
# DEBUG pages show settings and source, and the browsable API is on: only when asked for.
DEBUG = env_bool("DEBUG", False)
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured(
        "PRODUCTION=1 with DEBUG=1 is refused: unset DEBUG (or PRODUCTION for development)"
    )
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

if PRODUCTION:
    SECRET_KEY = refuse_weak_secret_key(env_str("SECRET_KEY"))
    ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", [])
    if not ALLOWED_HOSTS:
        raise ImproperlyConfigured("ALLOWED_HOSTS is required in production (comma-separated host names)")
else:
    # Plain HTTP on this machine (or a trusted network, with ALLOWED_HOSTS): a key given must
    # still be strong; without one, the installation's own.
    given = os.environ.get("SECRET_KEY", "")
    SECRET_KEY = refuse_weak_secret_key(given) if given else installation_secret_key(VAR_DIR)
    ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "labeling",
    "uploads",
    "sampling",
    "demo",
    "webhooks",
    "graded",
    "pairwise",
    "sxs",
    "training",
    "operations",
]

MIDDLEWARE = [
    # First: the forwarded headers of a peer that is no trusted proxy are gone before anything
    # (the HTTPS redirect, the login limits) reads them.
    "operations.proxies.forwarded_headers_from_trusted_proxies",
    "django.middleware.security.SecurityMiddleware",
    # django-csp's, with the policy text built once (labeling/middleware.py).
    "labeling.middleware.SettledContentSecurityPolicy",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "labeling.middleware.refuse_nul_characters",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Every page needs a login unless marked @login_not_required (the login page, the API,
    # which authenticates by session or token itself).
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last: turns a refused login (operations.login_throttle) into the 429 lockout page.
    "axes.middleware.AxesMiddleware",
]
# What serves browser sessions only. The judging API's token lane (config/token_lane.py) runs the
# rest of MIDDLEWARE for a request with an API token and no cookie to its two hot endpoints; a
# middleware added above runs there too unless it is named here.
SESSION_ONLY_MIDDLEWARE = (
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "axes.middleware.AxesMiddleware",
)

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        # A health check is one more round trip at the start of every request. Without it, a
        # connection the database dropped (a restart) fails one request and is then replaced.
        conn_health_checks=env_bool("DATABASE_CONN_HEALTH_CHECKS", False),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # IMMEDIATE transactions take the write lock up front, so two writers queue on the busy
    # timeout instead of failing with "database is locked"; WAL lets the web server and the
    # worker read while the other writes.
    # Persistent connections: opening one and setting its pragmas on every request cost 15-25%
    # of the throughput of 50 assessors (bench/bench_team.py, 3 x 2 gthread workers).
    DATABASES["default"]["CONN_MAX_AGE"] = env_int("DATABASE_CONN_MAX_AGE", 60)
    # Django's SQLite, whose writers poll for the write lock every few milliseconds rather than
    # on SQLite's backoff of up to 100 ms (infrastructure/sqlite_backend/base.py says why).
    DATABASES["default"]["ENGINE"] = "infrastructure.sqlite_backend"
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file (not in-memory) test database, so a real Celery worker process can share it;
    # the process id keeps concurrent test runs apart.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    # First: refuses any login for a locked-out user name or address before a password is checked.
    "operations.login_throttle.LoginThrottleBackend",
    # Django's ModelBackend, refusing passwords when PASSWORD_SIGN_IN is off.
    "operations.single_sign_on.PasswordBackend",
    # The sessions of users who signed in at the identity provider (operations.single_sign_on).
    "operations.single_sign_on.IdentityProviderBackend",
    # Object permissions on campaigns, from campaign membership (labeling.permissions).
    "labeling.permissions.CampaignPermissionBackend",
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Brute-force protection (django-axes, see operations/login_throttle.py): logins are refused for
# LOGIN_COOLOFF_MINUTES after LOGIN_FAILURE_LIMIT failures of one user name from one address, or
# LOGIN_ADDRESS_FAILURE_LIMIT from one address (any user names), or LOGIN_USER_FAILURE_LIMIT for
# one user name (any addresses). Behind proxies, LOGIN_TRUSTED_PROXY_COUNT says how many of them
# append to X-Forwarded-For (one TLS proxy in the usual production set-up), so the client's
# address is counted rather than the proxy's.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
LOGIN_ADDRESS_FAILURE_LIMIT = env_int("LOGIN_ADDRESS_FAILURE_LIMIT", 100)
LOGIN_USER_FAILURE_LIMIT = env_int("LOGIN_USER_FAILURE_LIMIT", 100)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_COOLOFF_MINUTES", 15))
# The three counts, in the order LoginThrottleHandler reads them.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address", "username"]
AXES_HANDLER = "operations.login_throttle.LoginThrottleHandler"
# No reset on a successful login: it would clear every failure from the same address, so an
# attacker with an account of their own could reset the count against someone else's.
AXES_RESET_ON_SUCCESS = False
AXES_LOCKOUT_CALLABLE = "operations.login_throttle.lockout_response"
AXES_CLIENT_IP_CALLABLE = "operations.login_throttle.client_address"
AXES_VERBOSE = False

# Scoped tokens (operations/scoped_tokens.py): live tokens per campaign, the longest expiry a
# maker may choose, and the requests one token may make a minute (429 beyond).
SCOPED_TOKENS_PER_CAMPAIGN = env_int("SCOPED_TOKENS_PER_CAMPAIGN", 20)
SCOPED_TOKEN_MAX_DAYS = env_int("SCOPED_TOKEN_MAX_DAYS", 365)
SCOPED_TOKEN_REQUESTS_PER_MINUTE = env_int("SCOPED_TOKEN_REQUESTS_PER_MINUTE", 120)
if min(SCOPED_TOKENS_PER_CAMPAIGN, SCOPED_TOKEN_MAX_DAYS, SCOPED_TOKEN_REQUESTS_PER_MINUTE) < 1:
    raise ImproperlyConfigured(
        "SCOPED_TOKENS_PER_CAMPAIGN, SCOPED_TOKEN_MAX_DAYS and SCOPED_TOKEN_REQUESTS_PER_MINUTE "
        "must be at least 1"
    )

# OpenID Connect sign-in (operations/single_sign_on.py), on when OIDC_ISSUER is set: the
# authorization code flow with PKCE against the issuer's discovery document. Roles come from the
# ID token's OIDC_GROUPS_CLAIM at every sign-in: a user in one of OIDC_ADMIN_GROUPS is an admin,
# and so on down; campaign memberships from the groups that OIDC_CAMPAIGN_GROUP_PATTERN matches
# (named groups `campaign`, an id, and `role`, assessor or coordinator). PUBLIC_URL is the
# address users reach the server at, when a reverse proxy stands in front of it.
OIDC_ISSUER = env_str("OIDC_ISSUER", "").rstrip("/")
OIDC_CLIENT_ID = env_str("OIDC_CLIENT_ID", "")
OIDC_CLIENT_SECRET = env_str("OIDC_CLIENT_SECRET", "")
OIDC_SCOPES = env_str("OIDC_SCOPES", "openid email profile")
OIDC_PROVIDER_NAME = env_str("OIDC_PROVIDER_NAME", "your organization")
OIDC_USERNAME_CLAIM = env_str("OIDC_USERNAME_CLAIM", "preferred_username")
OIDC_GROUPS_CLAIM = env_str("OIDC_GROUPS_CLAIM", "groups")
OIDC_ADMIN_GROUPS = env_groups("OIDC_ADMIN_GROUPS", ["relevance-admins"])
OIDC_COORDINATOR_GROUPS = env_groups("OIDC_COORDINATOR_GROUPS", ["relevance-coordinators"])
OIDC_ASSESSOR_GROUPS = env_groups("OIDC_ASSESSOR_GROUPS", ["relevance-assessors"])
OIDC_CAMPAIGN_GROUP_PATTERN = env_str(
    "OIDC_CAMPAIGN_GROUP_PATTERN", r"^relevance-campaign-(?P<campaign>[0-9]+)-(?P<role>assessor|coordinator)$"
)
# The longest the server waits for the provider (discovery, keys, the token exchange).
OIDC_TIMEOUT_SECONDS = env_float("OIDC_TIMEOUT_SECONDS", 10.0)
PASSWORD_SIGN_IN = env_bool("PASSWORD_SIGN_IN", True)
PUBLIC_URL = env_str("PUBLIC_URL", "").rstrip("/")
if OIDC_ISSUER and not (OIDC_CLIENT_ID and OIDC_CLIENT_SECRET):
    raise ImproperlyConfigured("OIDC_ISSUER is set: set OIDC_CLIENT_ID and OIDC_CLIENT_SECRET too")
if not PASSWORD_SIGN_IN and not OIDC_ISSUER:
    raise ImproperlyConfigured("PASSWORD_SIGN_IN is off and OIDC_ISSUER is not set: nobody could sign in")
if not 0 < OIDC_TIMEOUT_SECONDS <= 60:
    raise ImproperlyConfigured("OIDC_TIMEOUT_SECONDS must be above 0 and at most 60")
try:
    _campaign_groups = re.compile(OIDC_CAMPAIGN_GROUP_PATTERN)
except re.error as error:
    raise ImproperlyConfigured(f"OIDC_CAMPAIGN_GROUP_PATTERN is no regular expression: {error}") from None
if not {"campaign", "role"} <= set(_campaign_groups.groupindex):
    raise ImproperlyConfigured(
        "OIDC_CAMPAIGN_GROUP_PATTERN needs the named groups (?P<campaign>...) and (?P<role>...)"
    )
for _name, _url in (("OIDC_ISSUER", OIDC_ISSUER), ("PUBLIC_URL", PUBLIC_URL)):
    if _url and not re.match(r"^https?://[^/?#]+(/[^?#]*)?$", _url):
        raise ImproperlyConfigured(f"{_name}={_url!r} is not an http(s) address")
_issuer_origin = "/".join(OIDC_ISSUER.split("/", 3)[:3])
# Over plain HTTP anyone on the path could swap the discovery document and the signing keys.
if (
    PRODUCTION
    and OIDC_ISSUER.startswith("http://")
    and not re.match(r"^http://(127\.[0-9.]+|localhost|\[::1\])[:/]", OIDC_ISSUER)
):
    raise ImproperlyConfigured(
        "OIDC_ISSUER must be an https:// address in production (http only on this machine)"
    )

LOGIN_TRUSTED_PROXY_COUNT = env_int(
    "LOGIN_TRUSTED_PROXY_COUNT", 1 if PRODUCTION and env_bool("BEHIND_HTTPS_PROXY", True) else 0
)


def env_networks(name: str, default: list[str]) -> tuple[str, ...]:
    """A comma-separated list of IP addresses and CIDR networks (no names: a peer is an address)."""
    networks = []
    for entry in env_list(name, default):
        try:
            networks.append(str(ipaddress.ip_network(entry, strict=False)))
        except ValueError:
            raise ImproperlyConfigured(
                f"{name}: {entry!r} is not an IP address or network (e.g. 127.0.0.1, 10.0.0.0/24, ::1)"
            ) from None
    return tuple(networks)


# The reverse proxies in front of gunicorn: only a request whose peer (REMOTE_ADDR) is one of these
# keeps its X-Forwarded-For, -Proto and -Host headers (operations.proxies); from any other peer
# they are dropped, so a client reaching gunicorn directly cannot pick its own address for the
# login limits or claim HTTPS. Default: this machine (a proxy on the same host).
TRUSTED_PROXIES = env_networks("TRUSTED_PROXIES", ["127.0.0.0/8", "::1"])

# GET /api/health/ answers 503 "stale" when a campaign's recomputed state is behind its answers
# for longer than this (operations.freshness): a few recompute spacings, so one slow recompute or
# the first answer after a pause does not page anyone.
HEALTH_STALE_SECONDS = env_float("HEALTH_STALE_SECONDS", 120.0)

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"] if (BASE_DIR / "static").is_dir() else []
# Hashed names, gzip copies and year-long caching (whitenoise's compressed manifest storage), so a
# page after the first loads its scripts and styles from the browser's cache. They need
# collectstatic first: production and `make run` collect (STATIC_HASHED=1); tests and `make dev`
# serve the files straight from the app and static folders, as they are edited.
HASHED_STATIC_STORAGE = "whitenoise.storage.CompressedManifestStaticFilesStorage"
STATIC_HASHED = env_bool("STATIC_HASHED", PRODUCTION)
WHITENOISE_USE_FINDERS = not STATIC_HASHED
WHITENOISE_AUTOREFRESH = DEBUG
if not PRODUCTION:
    STATIC_ROOT.mkdir(exist_ok=True)  # whitenoise warns on every request when it is missing
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            HASHED_STATIC_STORAGE
            if STATIC_HASHED
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}

# Uploads above this size go to a temporary file, so a large run file never sits in memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024

REDIS_URL = os.environ.get("REDIS_URL", "")
# Without Redis, the cache (recompute markers and counts) and the broker are files under VAR_DIR,
# which only the processes of one machine share. Production must say so, or it could start a
# second node that silently never meets the first.
SINGLE_NODE = env_bool("SINGLE_NODE", False)
if PRODUCTION and not REDIS_URL and not SINGLE_NODE:
    raise ImproperlyConfigured(
        "PRODUCTION=1 needs REDIS_URL (the broker and cache every web node and worker share); "
        "to run everything on this one machine with the file cache and file broker under VAR_DIR, "
        "set SINGLE_NODE=1"
    )

# The cache holds the recompute markers (labeling.recompute), which the web processes set and
# the worker clears, so every process must see the same cache: Redis, or else files under VAR_DIR
# (a per-process memory cache would keep each web process's marker out of the worker's reach).
CACHE_TIMEOUT_SECONDS = 0.05
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            # A hung or unreachable Redis costs a caller at most this, never the whole outage
            # (redis-py's default is to wait forever). Callers treat a timeout as "unavailable".
            "OPTIONS": {
                "socket_connect_timeout": CACHE_TIMEOUT_SECONDS,
                "socket_timeout": CACHE_TIMEOUT_SECONDS,
            },
        }
    }
else:
    CACHES = {
        "default": {
            # Django's file cache with counters that cost one appended byte (the recompute
            # pipeline counts every judgment's request: infrastructure/file_cache.py).
            "BACKEND": "infrastructure.file_cache.CountingFileCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }

# Celery: Redis when REDIS_URL is set, otherwise kombu's filesystem transport (no server needed).
CELERY_QUEUE_DIR = VAR_DIR / "celery"
# One immediate retry, then report an unreachable broker (kombu's default first pause is 2 s):
# a judgment request must not wait on a broker that is down.
REDIS_TRANSPORT_OPTIONS: dict[str, object] = {
    # A message a worker took and never acknowledged (it died) goes to another worker after this
    # long. It must outlast the longest task (a big campaign's recompute, a judge run's step);
    # recomputes and judge runs do not wait for it: live workers' sweeps pick them up.
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT_SECONDS", 3600),
    "socket_connect_timeout": 2,
    "socket_timeout": 5,
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 1,
}
if REDIS_URL:
    CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
    CELERY_RESULT_BACKEND: str | None = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = REDIS_TRANSPORT_OPTIONS
else:
    # A host in the URL, though the filesystem transport ignores it: without one kombu warns at
    # every connection ("No hostname was supplied").
    CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://localhost/")
    CELERY_RESULT_BACKEND = None
    for _folder in ("queue", "processed", "control"):
        (CELERY_QUEUE_DIR / _folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_QUEUE_DIR / "queue"),
        "data_folder_out": str(CELERY_QUEUE_DIR / "queue"),
        "processed_folder": str(CELERY_QUEUE_DIR / "processed"),
        # Broadcast (pidbox) exchanges; kombu's default is ./control in the working directory.
        "control_folder": str(CELERY_QUEUE_DIR / "control"),
        "store_processed": False,
    }
# Webhook deliveries go to their own queue, which `serve_with_worker` gives its own worker (the
# tasks keep the names they had in the core app, so messages queued before the move still run).
WEBHOOKS_QUEUE = "webhooks"
CELERY_TASK_ROUTES = {
    "labeling.tasks.webhook_deliver": {"queue": WEBHOOKS_QUEUE},
    "labeling.tasks.webhook_deliveries_resume": {"queue": WEBHOOKS_QUEUE},
}
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TASK_IGNORE_RESULT = True
# A judgment request must not wait for a broker that is down: publish once, fail fast, log.
CELERY_TASK_PUBLISH_RETRY = False
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ACKS_LATE = True

# Outbound calls (endpoint judges and webhooks, every caller through outbound/policy.py): the only
# hosts and networks the server connects to, checked on the addresses a name resolves to (a
# coordinator types the URL; the worker must not become their client for the operator's key,
# the cloud's metadata address or the services of its network). Entries: host names, IP
# addresses, CIDR networks, each with an optional :port. Outside production loopback only; in
# production nothing until listed. See docs/operations.md.
LOOPBACK_HOSTS = ["127.0.0.0/8", "::1", "localhost"]
# Webhooks: one attempt's wall-clock deadline (connect, send, the answer's status; the body is
# never read), the webhooks worker's delivery slots (threads: one slow receiver holds one, and
# each receiver gets one attempt at a time), webhooks per campaign, and attempts per receiver
# per minute (past it, deliveries wait for the next minute).
WEBHOOK_ATTEMPT_SECONDS = env_float("WEBHOOK_ATTEMPT_SECONDS", 10.0)
WEBHOOK_DELIVERY_SLOTS = env_int("WEBHOOK_DELIVERY_SLOTS", 4)
WEBHOOKS_MAX_PER_CAMPAIGN = env_int("WEBHOOKS_MAX_PER_CAMPAIGN", 10)
WEBHOOK_MAX_PER_MINUTE = env_int("WEBHOOK_MAX_PER_MINUTE", 60)
if (
    WEBHOOK_ATTEMPT_SECONDS <= 0
    or min(WEBHOOK_DELIVERY_SLOTS, WEBHOOKS_MAX_PER_CAMPAIGN, WEBHOOK_MAX_PER_MINUTE) < 1
):
    raise ImproperlyConfigured("the WEBHOOK* settings must be above 0")
OUTBOUND_ALLOWED_HOSTS = env_hosts("OUTBOUND_ALLOWED_HOSTS", [] if PRODUCTION else LOOPBACK_HOSTS)
# An endpoint judge's API key is read from an environment variable of the worker; a judge names
# which one. Only the variables bound here may be named, and each key is sent only to the hosts
# it is bound to (an OpenAI key to OpenAI, never to a server a coordinator typed), on top of
# OUTBOUND_ALLOWED_HOSTS: VARIABLE=host[,host...];VARIABLE=...
if os.environ.get("JUDGE_API_KEY_VARIABLES"):
    raise ImproperlyConfigured(
        "JUDGE_API_KEY_VARIABLES is replaced by JUDGE_API_KEY_HOSTS, which binds each variable to the "
        "hosts its key may be sent to, e.g. JUDGE_API_KEY_HOSTS=OPENAI_API_KEY=api.openai.com"
    )
JUDGE_API_KEY_HOSTS = env_key_hosts(
    "JUDGE_API_KEY_HOSTS",
    {} if PRODUCTION else {"JUDGE_API_KEY": LOOPBACK_HOSTS, "OPENAI_API_KEY": ["api.openai.com"]},
)
# A judge run works in chunks of about this many seconds, then queues its next chunk, so that
# recomputes after judgments are never stuck behind a long run; its lease lasts three chunks.
JUDGE_RUN_CHUNK_SECONDS = env_int("JUDGE_RUN_CHUNK_SECONDS", 20)
# One request's whole deadline (connecting, sending, every read of the answer), not per read.
JUDGE_REQUEST_TIMEOUT_SECONDS = env_int("JUDGE_REQUEST_TIMEOUT_SECONDS", 60)
# Retries on 429/5xx/timeouts wait up to this, doubled per attempt (full jitter), 5 attempts.
JUDGE_RETRY_BACKOFF_SECONDS = env_float("JUDGE_RETRY_BACKOFF_SECONDS", 1.0)
# Ceilings on what a coordinator may set on a judge (the operator's worker and money): no
# request starts after JUDGE_RUN_CHUNK_SECONDS, and a step (rate limiter, retries and the
# requests in flight included) ends by JUDGE_STEP_MAX_SECONDS, requests still open are cut.
JUDGE_STEP_MAX_SECONDS = env_float(
    "JUDGE_STEP_MAX_SECONDS", JUDGE_RUN_CHUNK_SECONDS + JUDGE_REQUEST_TIMEOUT_SECONDS
)
JUDGE_MAX_CONCURRENCY = env_int("JUDGE_MAX_CONCURRENCY", 16)
JUDGE_MAX_TOKENS_CEILING = env_int("JUDGE_MAX_TOKENS_CEILING", 2048)
# requests_per_minute is 0 (no limit) or at least this: one request's wait stays inside a step.
# (Default: 6, or more for steps shorter than 20 s: two requests' spacing fits in a step.)
JUDGE_MIN_REQUESTS_PER_MINUTE = env_float(
    "JUDGE_MIN_REQUESTS_PER_MINUTE", max(6.0, 2 * 60 / max(1, JUDGE_RUN_CHUNK_SECONDS))
)
JUDGE_PROMPT_MAX_CHARS = env_int("JUDGE_PROMPT_MAX_CHARS", 50_000)
JUDGE_ANSWER_MAX_BYTES = env_int("JUDGE_ANSWER_MAX_BYTES", 2_000_000)
JUDGE_MAX_PRICE_PER_1K = env_float("JUDGE_MAX_PRICE_PER_1K", 100.0)
JUDGE_MAX_COST_CAP = env_float("JUDGE_MAX_COST_CAP", 1_000_000.0)
# Requests failing after all retries, one after another across steps, that fail a run.
JUDGE_FAILURES_IN_A_ROW = env_int("JUDGE_FAILURES_IN_A_ROW", 5)
# A request started within the chunk must get its whole timeout: cut by the step instead, it
# would be asked again at every step, and a slow endpoint would never fail the run.
if JUDGE_STEP_MAX_SECONDS < JUDGE_RUN_CHUNK_SECONDS + JUDGE_REQUEST_TIMEOUT_SECONDS:
    raise ImproperlyConfigured(
        "JUDGE_STEP_MAX_SECONDS must be at least JUDGE_RUN_CHUNK_SECONDS + JUDGE_REQUEST_TIMEOUT_SECONDS"
    )
if JUDGE_MIN_REQUESTS_PER_MINUTE <= 0 or 60 / JUDGE_MIN_REQUESTS_PER_MINUTE >= JUDGE_RUN_CHUNK_SECONDS:
    raise ImproperlyConfigured(
        "JUDGE_MIN_REQUESTS_PER_MINUTE must space requests less than JUDGE_RUN_CHUNK_SECONDS apart "
        f"(more than {60 / JUDGE_RUN_CHUNK_SECONDS:g})"
    )
if min(JUDGE_MAX_CONCURRENCY, JUDGE_MAX_TOKENS_CEILING, JUDGE_PROMPT_MAX_CHARS, JUDGE_ANSWER_MAX_BYTES) < 1:
    raise ImproperlyConfigured("the JUDGE_MAX_* and JUDGE_*_MAX_* ceilings must be at least 1")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        # Scoped tokens (rat_...) before personal ones: their scopes are checked here, for every
        # API view (operations/scoped_tokens.py).
        "operations.scoped_tokens.ScopedTokenAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # One JSON parser refuses hostile bodies (depth, size, non-objects, overflowing numbers)
    # with a 400 for every endpoint.
    "DEFAULT_PARSER_CLASSES": [
        "labeling.parsers.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + (["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Relevance assessment API",
    # No list of the modes here: they are plug-ins, and a list by hand goes stale.
    "DESCRIPTION": "Campaigns, TREC imports, judging in every mode, skips, estimates and release "
    "verdicts, learned DCG, training-data rounds, webhooks and exports. Log in to the site and the "
    "calls below use your session; scripts use a token from /api/auth/token/.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # One name for a choice set that several fields use (`verdict_rule` on a campaign, `rule` on an
    # arrival): without it the schema warns at every load and names the set after one field.
    "ENUM_NAME_OVERRIDES": {
        "VerdictRuleEnum": "labeling.models.Campaign.VerdictRule",
        "VerdictQuestionEnum": "labeling.models.Campaign.VerdictQuestion",
    },
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "COMPONENT_SPLIT_REQUEST": True,
    # /api/docs/ loads Swagger UI from the sidecar's static files, never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Deep links put a link inside each operation's toggle button, two controls in one that
    # keyboards and screen readers cannot tell apart (WCAG 4.1.2, axe's nested-interactive).
    "SWAGGER_UI_SETTINGS": {"deepLinking": False},
}

# Judging settings: how long a leased item stays reserved, how long an undo is allowed.
LABELING_LEASE_SECONDS = env_int("LABELING_LEASE_SECONDS", 600)
LABELING_UNDO_SECONDS = env_int("LABELING_UNDO_SECONDS", 30)
# An item whose judging tab is hidden stays reserved this long (labeling.leases.lease_hold); a
# closed page gives its item back at once.
LABELING_IDLE_LEASE_SECONDS = env_int("LABELING_IDLE_LEASE_SECONDS", 120)
# The queue of draws: open tasks kept drawn ahead, LABELING_QUEUE_PER_ASSESSOR for each assessor
# who leased a task in the last LABELING_ACTIVE_MINUTES, never fewer than LABELING_QUEUE_TARGET.
LABELING_QUEUE_TARGET = env_int("LABELING_QUEUE_TARGET", 50)
LABELING_QUEUE_PER_ASSESSOR = env_int("LABELING_QUEUE_PER_ASSESSOR", 5)
LABELING_ACTIVE_MINUTES = env_int("LABELING_ACTIVE_MINUTES", 10)
# Recomputes (refit, resample, snapshot) of one campaign start at least this many seconds apart
# (LABELING_REFRESH_MIN_SECONDS before the rename, still read).
LABELING_RECOMPUTE_MIN_SECONDS = env_int(
    env_renamed("LABELING_RECOMPUTE_MIN_SECONDS", "LABELING_REFRESH_MIN_SECONDS"), 10
)
# Every live worker checks this often for work a dead worker left (labeling.sweeper): a recompute
# owed and not coming, a judge run whose lease expired.
LABELING_SWEEP_SECONDS = env_int("LABELING_SWEEP_SECONDS", 5)

# Limits on what an upload or a request may hold (uploads.formats, labeling.parsers). Every
# refusal names its limit. One line must hold the longest document of a JSONL file.
LABELING_UPLOAD_MAX_LINE_BYTES = env_int("LABELING_UPLOAD_MAX_LINE_BYTES", 8 * 1024 * 1024)
# Counted after decompression, so a small .gz cannot expand without bound.
LABELING_UPLOAD_MAX_BYTES = env_int("LABELING_UPLOAD_MAX_BYTES", 2 * 1024 * 1024 * 1024)
# Lines of one uploaded file, blank ones included: uploads are read whole before anything is
# stored, so this bounds a web worker's time and memory on one file (a 58 KB gzip holds 60
# million empty lines). Runs are bounded by bytes only (they are staged to the database).
LABELING_UPLOAD_MAX_LINES = env_int("LABELING_UPLOAD_MAX_LINES", 2_000_000)
# Training feature pools are dense float32 matrices, one column per feature index up to the
# largest named: these bound the largest index and the matrix (rows x columns x 4 bytes).
TRAINING_MAX_FEATURE_INDEX = env_int("TRAINING_MAX_FEATURE_INDEX", 1000)
TRAINING_MAX_FEATURE_BYTES = env_int("TRAINING_MAX_FEATURE_BYTES", 1024 * 1024 * 1024)
# The largest budget a campaign may have, in its budget unit (its top-ups included): checked on
# create, on every change and when a run arrives with a top-up (labeling.budgets).
LABELING_MAX_BUDGET = env_float("LABELING_MAX_BUDGET", 1_000_000.0)
# Runs that arrive in one campaign, and runs pooled in one campaign (arrivals included): each
# pooled run adds to every recompute's arrays and to the arrivals list.
LABELING_MAX_ARRIVALS = env_int("LABELING_MAX_ARRIVALS", 500)
LABELING_MAX_POOLED_RUNS = env_int("LABELING_MAX_POOLED_RUNS", 1000)
# Lines of one run file (a TREC run of 1,000 documents on 5,000 topics is 5 million).
LABELING_MAX_RUN_LINES = env_int("LABELING_MAX_RUN_LINES", 10_000_000)
_ARRIVAL_CEILINGS = (LABELING_MAX_ARRIVALS, LABELING_MAX_POOLED_RUNS, LABELING_MAX_RUN_LINES)
if LABELING_MAX_BUDGET <= 0 or min(_ARRIVAL_CEILINGS) < 1:
    raise ImproperlyConfigured(
        "LABELING_MAX_BUDGET must be above 0, and the arrival and run ceilings at least 1"
    )
LABELING_MAX_TITLE_CHARS = env_int("LABELING_MAX_TITLE_CHARS", 1000)
# A document's text, a topic's description or narrative.
LABELING_MAX_TEXT_CHARS = env_int("LABELING_MAX_TEXT_CHARS", 1_000_000)
LABELING_JSON_MAX_BYTES = env_int("LABELING_JSON_MAX_BYTES", 1024 * 1024)
LABELING_JSON_MAX_DEPTH = env_int("LABELING_JSON_MAX_DEPTH", 32)

# Side-by-side refits of learned DCG (sxs.services.learning), on the worker all campaigns share.
# A refit repeats its whole fit per bootstrap replicate for every value of C (and of C_t when it
# is chosen on its own) on every fold: fit settings whose count of fits (grid x folds x
# replicates, estimation.learned_dcg.budget.refit_fits) is above SXS_REFIT_MAX_FITS are refused
# when saved and, should the ceiling have been lowered since, by the worker. A fit's cost grows
# with the answers, so SXS_REFIT_SECONDS bounds the wall time too: the bootstrap stops there
# with the replicates made (the dashboard says how many), a cross-validation that cannot finish
# stores no fit.
SXS_REFIT_MAX_FITS = env_int("SXS_REFIT_MAX_FITS", 20_000)
SXS_REFIT_SECONDS = env_float("SXS_REFIT_SECONDS", 120.0)
if SXS_REFIT_MAX_FITS < 1 or SXS_REFIT_SECONDS <= 0:
    raise ImproperlyConfigured("SXS_REFIT_MAX_FITS must be at least 1 and SXS_REFIT_SECONDS above 0")

# Content-Security-Policy (django-csp), in development too so the browser tests see what
# production does. Scripts only from our static files: the templates have no inline script
# and no on* handler (json_script data blocks are not executed). style-src-attr allows the
# templates' style="..." attributes (and the progress bars' widths) but no <style> element.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        # The provider's origin too: signing out sends the browser on to its end-session page.
        "form-action": ["'self'", *([_issuer_origin] if OIDC_ISSUER else [])],
        "frame-ancestors": ["'none'"],
    }
}

SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
if PRODUCTION:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # A monitor on the web machine asks gunicorn directly, over plain HTTP (docs/operations.md,
    # Monitoring); the health check says nothing secret and sets no cookie.
    SECURE_REDIRECT_EXEMPT = [r"^api/health/$"]
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        # Preloading is a domain-wide, hard-to-undo decision the operator opts into.
        SILENCED_SYSTEM_CHECKS = ["security.W021"]
    if env_bool("BEHIND_HTTPS_PROXY", True):
        # The usual deployment: gunicorn behind a TLS-terminating proxy that sets this header.
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# One line per event: Django's loggers write through the root's handler only (Django's own
# defaults gave them a second console handler under DEBUG), and a 403 or 404 is logged as one
# warning line without the traceback of the PermissionDenied or Http404 behind it.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"no_client_error_tracebacks": {"()": "config.logging_filters.NoClientErrorTracebacks"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["no_client_error_tracebacks"]},
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "django.server": {"handlers": [], "level": "INFO", "propagate": True},
    },
}
