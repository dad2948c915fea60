"""What a repeat visit of the judge page transfers in the embedded default (`make run`).

Runs what `make run` runs (STATIC_HASHED=1: collectstatic, migrate, the demo, `manage.py
serve_with_worker` with SQLite and no Redis) in a temporary VAR_DIR, logs in as the demo
assessor in Debian's headless Chromium (Playwright, never a browser download) and opens the
graded demo campaign's judge page twice in one browser profile. Per visit it sums the bytes
the Resource Timing API reports as transferred (``transferSize``: 0 for a file served from
the browser's cache) for the page itself, its static files, and its API calls, and reads the
static files' ``Content-Encoding`` and ``Cache-Control`` headers.

Usage: ``python bench/bench_repeat_visit.py`` (about a minute). Prints a table; writes
``bench/results/repeat_visit.json`` and ``.md``.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "bench"))

from bench_team import make_run_server  # noqa: E402

DEMO_PASSWORD = "labeling-demo"  # demo.loading's (importing it needs Django set up)

RESULTS = REPO_ROOT / "bench" / "results" / "repeat_visit"


def manage(env: dict[str, str], *args: str) -> None:
    subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO_ROOT, env=env, check=True, capture_output=True
    )


def visit(page, url: str) -> dict:
    headers: dict[str, dict[str, str]] = {}
    page.on("response", lambda response: headers.__setitem__(response.url, response.headers))
    page.goto(url)
    page.locator("#topic-title").wait_for()
    page.wait_for_load_state("networkidle")
    entries = page.evaluate(
        """() => [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')]
            .map(e => ({name: e.name, type: e.entryType, bytes: e.transferSize}))"""
    )
    totals = {"page": 0, "static": 0, "api": 0, "other": 0}
    static = []
    for entry in entries:
        kind = (
            "page"
            if entry["type"] == "navigation"
            else "static"
            if "/static/" in entry["name"]
            else "api"
            if "/api/" in entry["name"]
            else "other"
        )
        totals[kind] += entry["bytes"]
        if kind == "static":
            seen = headers.get(entry["name"], {})
            static.append(
                {
                    "file": entry["name"].split("/static/", 1)[1],
                    "transferred": entry["bytes"],
                    "content_encoding": seen.get("content-encoding"),
                    "cache_control": seen.get("cache-control"),
                }
            )
    return {"bytes": totals, "static_files": static}


def graded(page, url: str) -> bool:
    """A judge page with a graded item on screen (the first visit then warms nothing: the
    cache is cleared below)."""
    page.goto(url)
    page.wait_for_load_state("networkidle")
    return page.locator("#topic-title").count() > 0 and page.locator("#grades").count() > 0


def main() -> None:
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium") or "/usr/bin/chromium"
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("DATABASE_URL", "REDIS_URL", "PRODUCTION", "DEBUG")
        }
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "config.settings",
                "VAR_DIR": str(workdir / "var"),
                "STATIC_HASHED": "1",
            }
        )
        manage(env, "collectstatic", "--noinput", "--verbosity", "0")
        manage(env, "migrate", "--noinput")
        manage(env, "demo")
        with make_run_server(env, workdir, None, None) as port, sync_playwright() as playwright:
            base = f"http://127.0.0.1:{port}"
            browser = playwright.chromium.launch(executable_path=executable)
            context = browser.new_context()
            page = context.new_page()
            page.goto(f"{base}/accounts/login/")
            page.fill("#id_username", "demo-assessor")
            page.fill("#id_password", DEMO_PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_load_state("load")
            links = [a.get_attribute("href") for a in page.locator("a[href^='/judge/']").all()]
            link = next(
                href for href in links if href and href.rstrip("/") != "/judge" and graded(page, base + href)
            )
            client = context.new_cdp_session(page)
            client.send("Network.clearBrowserCache")
            visits = [visit(page, base + link) for _ in range(2)]
            browser.close()
    result = {
        "python": platform.python_version(),
        "judge_page": link,
        "first": visits[0],
        "repeat": visits[1],
    }
    lines = [
        "`python bench/bench_repeat_visit.py`: the judge page in the embedded default (`make run`), bytes "
        "transferred (Resource Timing `transferSize`; 0 = from the browser's cache)",
        "",
        "| visit | page (HTML) | static files | API calls |",
        "|---|---|---|---|",
    ]
    for name, data in (("first", visits[0]), ("repeat", visits[1])):
        b = data["bytes"]
        lines.append(f"| {name} | {b['page']:,} | {b['static']:,} | {b['api']:,} |")
    lines += [
        "",
        "| static file (first visit) | bytes | Content-Encoding | Cache-Control |",
        "|---|---|---|---|",
    ]
    for item in visits[0]["static_files"]:
        encoding, cache = item["content_encoding"], item["cache_control"]
        lines.append(f"| {item['file']} | {item['transferred']:,} | {encoding} | {cache} |")
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.with_suffix(".json").write_text(json.dumps(result, indent=1))
    RESULTS.with_suffix(".md").write_text(text)


if __name__ == "__main__":
    main()
