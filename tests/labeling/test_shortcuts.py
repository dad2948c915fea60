"""Per-assessor keyboard shortcuts (WCAG 2.1.4): the registry's validation, the service, the
REST endpoint and the settings page."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from graded.views import GRADED_PAGE as GRADED
from labeling.models import AssessorPreferences
from labeling.modes import shortcut_actions as actions
from labeling.services.preferences import shortcuts_update
from labeling.shortcuts import ShortcutsInvalid
from labeling.shortcuts import judge_shortcuts as keys_of_page
from labeling.shortcuts import keys_validate as validate_against
from pairwise.shortcuts import PAIR
from tests.conftest import PASSWORD

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql


def keys_validate(overrides: dict[str, str]) -> dict[str, str]:
    """The key rules against every registered mode's actions (as the service checks them)."""
    return validate_against(overrides, actions())


def judge_shortcuts(pages: set[str], overrides: dict[str, str], enabled: bool, grade_keys: list[str] = ()):  # noqa: ANN201
    """A page's keys against every registered mode's actions (as the judge pages get them)."""
    return keys_of_page(pages, overrides, enabled, grade_keys, every_action=actions())


def test_it_keeps_todays_keys_as_defaults() -> None:
    defaults = {action.name: action.default for action in actions()}
    assert {name: defaults[name] for name in ("pause", "undo", "skip", "help", "note")} == {
        "pause": "p",
        "undo": "u",
        "skip": "s",
        "help": "?",
        "note": "n",
    }
    assert [defaults[f"grade_{value}"] for value in range(5)] == ["0", "1", "2", "3", "4"]
    assert (defaults["pair_left_bad"], defaults["pair_right_bad"], defaults["pair_tie_letter"]) == (
        "q",
        "w",
        "t",
    )
    assert [defaults[f"sxs_{name}"] for name in ("left_much", "left", "same", "right", "right_much")] == list(
        "12345"
    )
    assert keys_validate({}) == {}


@pytest.mark.parametrize(
    ("overrides", "action", "words"),
    [
        ({"jump": "j"}, "jump", "no such action"),
        ({"grade_1": "s"}, "grade_1", "already the key of “Skip"),
        ({"grade_1": "x", "grade_2": "X"}, "grade_2", "already the key"),
        ({"pause": "Tab"}, "pause", "Tab keeps its usual meaning"),
        ({"pause": " "}, "pause", "Space keeps its usual meaning"),
        ({"undo": "Enter"}, "undo", "Enter keeps"),
        ({"help": "Escape"}, "help", "Escape keeps"),
        ({"pause": "pp"}, "pause", "use one character"),
        # "İ".lower() is "i" and a combining dot: two code points no key press matches.
        ({"pause": "İ"}, "pause", "has no one-character lower case"),
        ({"pause": ""}, "pause", "type one key"),
        ({"pause": 3}, "pause", "must be text"),
    ],
)
def test_it_refuses_bad_keys_naming_the_action(overrides: dict, action: str, words: str) -> None:
    with pytest.raises(ShortcutsInvalid) as refused:
        keys_validate(overrides)
    assert words in refused.value.errors[action], refused.value.errors


def test_it_allows_one_key_on_pages_that_never_meet() -> None:
    # "1" answers "left much better" on a comparison and grade 1 on a graded page.
    assert keys_validate({"pause": "ArrowUp", "grade_1": "j", "sxs_left": "j", "undo": "home"}) == {
        "pause": "ArrowUp",
        "grade_1": "j",
        "sxs_left": "j",
        "undo": "Home",
    }
    assert keys_validate({"pair_left": "→", "pair_right": "←"}) == {
        "pair_left": "ArrowRight",
        "pair_right": "ArrowLeft",
    }
    assert keys_validate({"pause": "P", "grade_0": "0"}) == {}  # the defaults are not stored


def test_a_page_map_puts_the_assessor_over_the_campaign_over_the_defaults() -> None:
    page = judge_shortcuts({GRADED}, {"grade_1": "j"}, True, ["a", "b", "c"])
    assert (page.keys["grade_0"], page.keys["grade_1"], page.keys["grade_2"]) == ("a", "j", "c")
    assert "grade_3" not in page.keys and "pair_left" not in page.keys
    assert page.shown["grade_1"] == "J"
    # A campaign key on "p" takes pause's default: pause then has no key rather than two meanings.
    assert judge_shortcuts({GRADED}, {}, True, ["p", "q"]).keys["pause"] == ""
    off = judge_shortcuts({PAIR}, {}, False)
    assert off.keys["pair_left"] == "ArrowLeft" and off.shown["pair_left"] == ""
    assert off.as_json()["enabled"] is False


def test_the_service_merges_resets_and_stores_nothing_when_refused(assessor: AbstractBaseUser) -> None:
    shortcuts_update(user=assessor, keys={"grade_1": "j", "pause": "k"})
    shortcuts_update(user=assessor, keys={"undo": "z"}, reset=("pause",), enabled=False)
    stored = AssessorPreferences.objects.get(user=assessor)
    assert stored.shortcut_keys == {"grade_1": "j", "undo": "z"} and stored.shortcuts_enabled is False
    with pytest.raises(ShortcutsInvalid):
        shortcuts_update(user=assessor, keys={"grade_2": "j"}, enabled=True)
    stored.refresh_from_db()
    assert stored.shortcut_keys == {"grade_1": "j", "undo": "z"} and stored.shortcuts_enabled is False


def _api(user: AbstractBaseUser | None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def test_the_api_round_trip_changes_only_your_own_keys(
    assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    url = reverse("api-shortcuts")
    assert _api(None).get(url).status_code in (401, 403)
    assert _api(None).put(url, {"keys": {"pause": "k"}}, format="json").status_code in (401, 403)

    first = _api(assessor).get(url).json()
    assert first["enabled"] is True and first["keys"] == {}
    assert {row["name"]: row["key"] for row in first["actions"]}["pause"] == "p"

    answer = _api(assessor).put(url, {"enabled": False, "keys": {"grade_1": "J"}}, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["enabled"] is False and answer.json()["keys"] == {"grade_1": "j"}
    patched = _api(assessor).patch(url, {"keys": {"pause": "ArrowUp"}}, format="json").json()
    assert patched["keys"] == {"grade_1": "j", "pause": "ArrowUp"}
    assert _api(assessor).get(url).json()["keys"] == {"grade_1": "j", "pause": "ArrowUp"}

    refused = _api(assessor).put(url, {"keys": {"grade_1": "s", "jump": "x"}}, format="json")
    assert refused.status_code == 400 and set(refused.json()["keys"]) == {"jump"}
    refused = _api(assessor).put(url, {"keys": {"grade_1": "s"}}, format="json")
    assert refused.status_code == 400 and "Skip" in refused.json()["keys"]["grade_1"]
    assert _api(assessor).put(url, {"enabled": "no"}, format="json").status_code == 400

    # The other assessor's keys are untouched: the endpoint only ever reads and writes your own.
    other = _api(second_assessor).get(url).json()
    assert other["enabled"] is True and other["keys"] == {}


def _client(user: AbstractBaseUser) -> Client:
    client = Client()
    assert client.login(username=user.get_username(), password=PASSWORD)
    return client


def test_the_settings_page_renders_saves_resets_and_shows_errors_by_their_fields(
    assessor: AbstractBaseUser,
) -> None:
    client = _client(assessor)
    url = reverse("labeling:keyboard_settings")
    page = client.get(url).content.decode()
    assert 'href="/account/keyboard/"' in page  # the top bar's link
    assert '<label for="id_key_pause">Pause or resume the timer</label>' in page
    assert 'aria-describedby="id_key_pause_helptext"' in page
    assert 'name="shortcuts_enabled"' in page and "checked" in page

    form = {f"key_{action.name}": "" for action in actions()} | {"key_pause": "p", "key_grade_1": "j"}
    saved = client.post(url, form)  # the switch unticked: shortcuts off
    assert saved.status_code == 302
    stored = AssessorPreferences.objects.get(user=assessor)
    assert stored.shortcut_keys == {"grade_1": "j"} and stored.shortcuts_enabled is False

    refused = client.post(url, form | {"key_grade_2": "J", "shortcuts_enabled": "on"})
    assert refused.status_code == 400
    html = refused.content.decode()
    assert 'id="id_key_grade_2_error"' in html and "already the key of" in html
    assert 'aria-describedby="id_key_grade_2_error id_key_grade_2_helptext"' in html
    assert 'aria-invalid="true"' in html
    stored.refresh_from_db()
    assert stored.shortcuts_enabled is False  # nothing stored

    assert client.post(url, {"reset": "grade_1"}).status_code == 302
    stored.refresh_from_db()
    assert stored.shortcut_keys == {}
