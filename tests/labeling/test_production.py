"""Production is safe by default: DEBUG and weak keys refused, a Content-Security-Policy that
needs no inline script, a start-up error without collectstatic, excerpts in the admin."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory

from config.settings import DEV_SECRET_KEY, installation_secret_key, refuse_weak_secret_key
from labeling.checks import static_manifest_check
from labeling.services.campaigns import campaign_create
from tests.conftest import PASSWORD, REPO_ROOT
from tests.database_template import sqlite_database_from_template
from tests.servers import free_port

STRONG_KEY = "k7Qz-2vX_9pLm4Rt8sWy1bNc6dHf0gJe3aUo5iKq7ZxCvBnM2lPw"


@pytest.mark.parametrize("key", ["abc", DEV_SECRET_KEY, "django-insecure-" + STRONG_KEY, "ab" * 40])
def test_it_refuses_a_weak_secret_key(key: str) -> None:
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY"):
        refuse_weak_secret_key(key)


def test_it_takes_a_strong_secret_key() -> None:
    assert refuse_weak_secret_key(STRONG_KEY) == STRONG_KEY


def test_processes_starting_together_read_one_whole_installation_key(tmp_path: Path) -> None:
    """Eight processes make the key at once, as gunicorn's workers and a Celery worker do on a
    first start: every one gets the same key, none an empty one, and the file holds it, owner only."""
    code = (
        "import sys; from pathlib import Path; from config.settings import installation_secret_key; "
        "print(installation_secret_key(Path(sys.argv[1])))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    for attempt in range(5):
        folder = tmp_path / str(attempt)
        folder.mkdir()
        children = [
            subprocess.Popen(
                [sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE, text=True, env=env
            )
            for _ in range(8)
        ]
        keys = {child.communicate(timeout=60)[0].strip() for child in children}
        assert len(keys) == 1 and len(next(iter(keys))) >= 50, keys
        assert installation_secret_key(folder) == next(iter(keys))
        assert (folder / "secret_key").stat().st_mode & 0o777 == 0o600
        assert [path.name for path in folder.iterdir()] == ["secret_key"], "no temporary file left"


def _start(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-c", code], **env)


def _run(argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DEBUG", "PRODUCTION", "SECRET_KEY", "REDIS_URL", "SINGLE_NODE")
    }
    environment = {
        **base,
        "ALLOWED_HOSTS": "example.org",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SINGLE_NODE": "1",
        **env,
    }
    return subprocess.run(
        argv,
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_it_refuses_to_start_in_production_with_debug_or_a_weak_key() -> None:
    debug = _start("import config.settings", PRODUCTION="1", DEBUG="1", SECRET_KEY=STRONG_KEY)
    assert debug.returncode != 0 and "PRODUCTION=1 with DEBUG=1 is refused" in debug.stderr
    weak = _start("import config.settings", PRODUCTION="1", SECRET_KEY="abc")
    assert weak.returncode != 0 and "SECRET_KEY is too weak" in weak.stderr
    fine = _start("import config.settings as s; assert not s.DEBUG", PRODUCTION="1", SECRET_KEY=STRONG_KEY)
    assert fine.returncode == 0, fine.stderr


@pytest.mark.parametrize(
    ("program", "argv"),
    [
        ("manage.py", [sys.executable, "manage.py", "check"]),
        ("celery", [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo"]),
    ],
)
def test_a_refusal_to_start_is_one_line_and_status_2(program: str, argv: list[str]) -> None:
    refused = _run(argv, PRODUCTION="1", SECRET_KEY="abc")
    assert refused.returncode == 2, refused.stderr
    assert "Traceback" not in refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith(f"{program}: refused to start: SECRET_KEY is too weak"), line


def test_a_renamed_setting_is_still_read_under_its_old_name_with_a_deprecation_line() -> None:
    code = "import config.settings as s; print(s.LABELING_RECOMPUTE_MIN_SECONDS)"
    old = _start(code, LABELING_REFRESH_MIN_SECONDS="7")
    assert old.returncode == 0 and old.stdout.strip() == "7", old.stderr
    assert "LABELING_REFRESH_MIN_SECONDS is deprecated; set LABELING_RECOMPUTE_MIN_SECONDS" in old.stderr
    both = _start(code, LABELING_REFRESH_MIN_SECONDS="7", LABELING_RECOMPUTE_MIN_SECONDS="3")
    assert both.stdout.strip() == "3" and "deprecated" not in both.stderr


def test_production_without_redis_refuses_to_start_unless_it_is_declared_a_single_node() -> None:
    """Without REDIS_URL every node would keep its own file cache and file broker: a second node
    would silently never meet the first."""
    code = "import config.settings as s; print(s.CACHES['default']['BACKEND'], s.CELERY_BROKER_URL)"
    refused = _start(code, PRODUCTION="1", SECRET_KEY=STRONG_KEY, SINGLE_NODE="")
    assert refused.returncode != 0
    assert "PRODUCTION=1 needs REDIS_URL" in refused.stderr and "SINGLE_NODE=1" in refused.stderr
    single = _start(code, PRODUCTION="1", SECRET_KEY=STRONG_KEY)
    assert single.returncode == 0, single.stderr
    assert "CountingFileCache" in single.stdout and "filesystem://" in single.stdout
    shared = _start(
        code, PRODUCTION="1", SECRET_KEY=STRONG_KEY, SINGLE_NODE="", REDIS_URL="redis://127.0.0.1:1/0"
    )
    assert shared.returncode == 0, shared.stderr
    assert "RedisCache" in shared.stdout and "redis://127.0.0.1:1/0" in shared.stdout


def test_the_wsgi_application_refuses_to_start_without_collectstatic(tmp_path: Path) -> None:
    # An empty STATIC_ROOT: the checkout's own may hold a manifest (`make run` ran collectstatic).
    started = _start(
        "import config.wsgi",
        PRODUCTION="1",
        SECRET_KEY=STRONG_KEY,
        VAR_DIR=str(tmp_path),
        STATIC_ROOT=str(tmp_path / "staticfiles"),
    )
    assert started.returncode == 2 and "Traceback" not in started.stderr
    assert "labeling.E001" in started.stderr and "collectstatic" in started.stderr


@pytest.mark.parametrize("problem", ["no secret key", "no collectstatic"])
def test_gunicorn_stops_at_a_refused_start_instead_of_restarting_workers(
    problem: str, tmp_path: Path
) -> None:
    """gunicorn's master checks before it starts a worker: a refusal stops the server with status
    2 (which the documented unit does not restart), rather than workers dying over and over."""
    env = {"PRODUCTION": "1", "VAR_DIR": str(tmp_path), "STATIC_ROOT": str(tmp_path / "staticfiles")}
    if problem == "no collectstatic":
        env["SECRET_KEY"] = STRONG_KEY
    argv = [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        "config/gunicorn.py",
        "--bind",
        f"127.0.0.1:{free_port()}",
        "config.wsgi",
    ]
    started = _run(argv, **env)
    assert started.returncode == 2, started.stderr[-2000:]
    assert "Traceback" not in started.stderr and "Booting worker" not in started.stderr
    refusals = [line for line in started.stderr.splitlines() if line.startswith("gunicorn: ")]
    assert refusals and refusals[-1].startswith("gunicorn: refused to start: "), started.stderr


def test_production_migrates_before_collectstatic(tmp_path: Path) -> None:
    """The natural order of a fresh installation: `migrate`, then `collectstatic`. Migrate loads
    the URLconf for its checks, which once asked the manifest for the favicon's hashed name."""
    code = (
        "import django; django.setup(); from django.core.management import call_command; "
        "call_command('migrate', verbosity=0)"
    )
    database = f"sqlite:///{tmp_path / 'db.sqlite3'}"  # its own, also in the PostgreSQL pass
    # Migrated already when the suite has its template (migrate's checks, which load the URLconf,
    # run all the same), so the child does not redo the whole history for the point made here.
    sqlite_database_from_template(tmp_path / "db.sqlite3")
    migrated = _start(
        code, PRODUCTION="1", SECRET_KEY=STRONG_KEY, VAR_DIR=str(tmp_path), DATABASE_URL=database
    )
    assert migrated.returncode == 0, migrated.stderr[-2000:]


def test_the_static_manifest_check_passes_once_collectstatic_wrote_it(
    settings: object, tmp_path: Path
) -> None:
    settings.STATIC_HASHED = True  # type: ignore[attr-defined]
    settings.STATIC_ROOT = tmp_path  # type: ignore[attr-defined]
    settings.STORAGES = {  # type: ignore[attr-defined]
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
    [error] = static_manifest_check()
    assert error.id == "labeling.E001" and "collectstatic" in error.hint
    (tmp_path / "staticfiles.json").write_text('{"paths": {}, "version": "1.1"}')
    assert static_manifest_check() == []
    settings.STATIC_HASHED = False  # type: ignore[attr-defined]
    (tmp_path / "staticfiles.json").unlink()
    assert static_manifest_check() == []


def test_the_embedded_default_serves_hashed_gzipped_static_files_cached_for_a_year(
    settings: object, tmp_path: Path
) -> None:
    """`make run` (no PRODUCTION) collects with STATIC_HASHED=1: the judge page's script then has a
    hashed name, goes out gzipped and is cached for a year, so a repeat visit fetches none of it."""
    from django.templatetags.static import static
    from whitenoise.middleware import WhiteNoiseMiddleware

    collect = "import django; django.setup(); from django.core.management import call_command; "
    collected = _start(
        collect + "call_command('collectstatic', '--noinput', verbosity=0); "
        "from django.conf import settings; print(settings.STORAGES['staticfiles']['BACKEND'])",
        STATIC_HASHED="1",
        STATIC_ROOT=str(tmp_path),
        VAR_DIR=str(tmp_path / "var"),
    )
    assert collected.returncode == 0, collected.stderr[-2000:]
    backend = collected.stdout.strip().splitlines()[-1]
    settings.STATIC_ROOT = tmp_path  # type: ignore[attr-defined]
    settings.WHITENOISE_USE_FINDERS = False  # type: ignore[attr-defined]
    settings.STORAGES = {  # type: ignore[attr-defined]
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": backend},
    }
    url = static("labeling/judging-common.js")
    assert re.fullmatch(r"/static/labeling/judging-common\.[0-9a-f]{12}\.js", url), url
    serve = WhiteNoiseMiddleware(lambda request: None)  # type: ignore[arg-type, return-value]
    response = serve(RequestFactory().get(url, HTTP_ACCEPT_ENCODING="gzip, br"))
    assert response.status_code == 200
    assert response["Content-Encoding"] in ("gzip", "br")
    max_age = int(re.search(r"max-age=(\d+)", response["Cache-Control"]).group(1))  # type: ignore[union-attr]
    assert max_age >= 365 * 24 * 3600 and "immutable" in response["Cache-Control"]


def test_every_page_sends_a_content_security_policy_without_inline_scripts(client: Client) -> None:
    policy = client.get("/accounts/login/")["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives["script-src"] == "'self'" and directives["object-src"] == "'none'"
    assert "unsafe" not in directives["style-src"] and directives["frame-ancestors"] == "'none'"


def test_the_settled_policy_is_django_csps_and_a_response_of_its_own_still_gets_its_own() -> None:
    from csp.middleware import CSPMiddleware

    from labeling.middleware import SettledContentSecurityPolicy

    def page(request: HttpRequest) -> HttpResponse:
        response = HttpResponse("ok")
        if "update" in request.GET:
            response._csp_update = {"img-src": ["https://images.example"]}  # type: ignore[attr-defined]
        if "nonce" in request.GET:
            str(request.csp_nonce)  # type: ignore[attr-defined]
        return response

    ours, theirs = SettledContentSecurityPolicy(page), CSPMiddleware(page)
    for query in ("", "?update=1", "?nonce=1"):
        mine = ours(RequestFactory().get("/x/" + query))["Content-Security-Policy"]
        assert mine == theirs(RequestFactory().get("/x/" + query))["Content-Security-Policy"], query
    assert "https://images.example" in ours(RequestFactory().get("/x/?update=1"))["Content-Security-Policy"]
    plain = RequestFactory().get("/x/")
    ours(plain)
    with pytest.raises(Exception, match="not available after the CSP header"):
        str(plain.csp_nonce)  # type: ignore[attr-defined]


def test_no_template_holds_an_executable_inline_script_or_event_handler() -> None:
    offenders = []
    for template in sorted((REPO_ROOT / "templates").rglob("*.html")):
        text = template.read_text()
        for tag in re.findall(r"<script\b[^>]*>", text):
            if "src=" not in tag:
                offenders.append(f"{template.name}: {tag}")
        offenders += [f"{template.name}: {m}" for m in re.findall(r"<[^>]*\son[a-z]+\s*=[^>]*>", text)]
        offenders += [f"{template.name}: {m}" for m in re.findall(r"javascript:", text)]
    assert offenders == []


def test_the_admin_lists_title_excerpts_not_whole_texts(coordinator: AbstractBaseUser) -> None:
    campaign = campaign_create(creator=coordinator, name="big", metric="DCG@5", grades=["0", "1"], budget=5)
    long_title = "title-" + "x" * 990
    campaign.topics.create(qid="1", title=long_title, description="d" * 50_000)
    campaign.documents.create(docno="d1", title=long_title, text="t" * 50_000)
    root = get_user_model().objects.create_superuser("root", password=PASSWORD)
    client = Client()
    client.force_login(root)
    for page in ("/admin/labeling/topic/", "/admin/labeling/document/"):
        response = client.get(page)
        assert response.status_code == 200
        assert b"title-xxx" in response.content and long_title.encode() not in response.content
        assert len(response.content) < 40_000


def test_without_production_or_debug_it_runs_without_debug_on_a_key_of_its_own(tmp_path: Path) -> None:
    read = "import config.settings as s; print(s.DEBUG, s.SECRET_KEY)"
    first = _start(read, VAR_DIR=str(tmp_path))
    again = _start(read, VAR_DIR=str(tmp_path))
    assert first.returncode == 0, first.stderr
    debug, key = first.stdout.split()
    assert debug == "False" and refuse_weak_secret_key(key) == key
    assert again.stdout == first.stdout, "the installation keeps its key across restarts"
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600
    other = _start(read, VAR_DIR=str(tmp_path / "elsewhere"))
    assert other.stdout.split()[1] != key, "every installation makes its own"
    asked = _start(read, VAR_DIR=str(tmp_path), DEBUG="1")
    assert asked.stdout.split()[0] == "True"


def test_a_weak_key_is_refused_outside_production_too(tmp_path: Path) -> None:
    weak = _start("import config.settings", VAR_DIR=str(tmp_path), SECRET_KEY=DEV_SECRET_KEY)
    assert weak.returncode != 0 and "published development key" in weak.stderr


def test_make_run_listens_where_host_and_port_say() -> None:
    import shutil

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    dry = subprocess.run(
        ["make", "-n", "-W", ".venv/.installed", "run", "PORT=8731", "HOST=0.0.0.0"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "serve_with_worker 0.0.0.0:8731" in dry.stdout, dry.stdout + dry.stderr
    dev = subprocess.run(
        ["make", "-n", "-W", ".venv/.installed", "dev"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "DEBUG=1" in dev.stdout and "--dev 127.0.0.1:8000" in dev.stdout


def test_gunicorn_workers_ask_a_computing_thread_to_yield_after_half_a_millisecond() -> None:
    # A request thread beside an upload being checked waits this long for the interpreter lock
    # at each database call (bench/bench_upload_lock.py): CPython's default is 5 ms.
    import runpy

    config = runpy.run_path(str(REPO_ROOT / "config" / "gunicorn.py"))
    before = sys.getswitchinterval()
    try:
        config["post_worker_init"](None)
        assert sys.getswitchinterval() == pytest.approx(0.0005)
    finally:
        sys.setswitchinterval(before)


def test_gunicorn_listens_on_loopback_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the proxy on this machine reaches it by default: a direct client cannot reach the
    headers it would forge."""
    import runpy

    monkeypatch.delenv("GUNICORN_BIND", raising=False)
    assert runpy.run_path(str(REPO_ROOT / "config" / "gunicorn.py"))["bind"] == "127.0.0.1:8000"
    monkeypatch.setenv("GUNICORN_BIND", "0.0.0.0:8000")
    assert runpy.run_path(str(REPO_ROOT / "config" / "gunicorn.py"))["bind"] == "0.0.0.0:8000"
