"""The judge pages' keyboard shortcuts: every action, the pages it acts on and its default key.

The one list both sides read: the settings page, the API and the help dialogs render it here,
and each judge page gets its resolved map as JSON (`judge_shortcuts`, read by
`static/labeling/judging-common.js`), so no page script names a letter of its own. Keys are
stored as the browser's `KeyboardEvent.key` names: a single character in lower case ("p", "?",
"3") or a named key ("ArrowLeft"). Tab, Enter, Escape and Space keep their standard meaning
(move, press the focused control, close) and are never shortcuts of their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

# The core's judge actions act on pages by what the page offers: every judge page pauses, undoes,
# skips and shows help; pages with a text box take a note; pages that grade take the grade keys.
# A mode names its pages and what each offers (`JudgingMode.shortcut_pages`) and declares its own
# actions (`JudgingMode.shortcut_actions`). Two actions of one page may not share a key.
EVERY, NOTE, GRADES = "every", "note", "grades"
GRADE_COUNT = 10  # a scale has at most ten grades (labeling.services.campaigns)


@dataclass(frozen=True)
class Action:
    name: str
    label: str  # what pressing the key does, in the settings page's and the help's words
    default: str
    pages: frozenset[str]
    group: str  # the settings page's section


def _core(
    name: str, label: str, default: str, offer: str, group: str = "Every judge page"
) -> tuple[Action, str]:
    return Action(name, label, default, frozenset(), group), offer


# The defaults are the keys the pages always had; each with the offer that gives it its pages.
_CORE_ACTIONS: tuple[tuple[Action, str], ...] = (
    _core("pause", "Pause or resume the timer", "p", EVERY),
    _core("undo", "Undo the last answer", "u", EVERY),
    _core("skip", "Skip: open the skip box", "s", EVERY),
    _core("help", "Show or hide the shortcuts help", "?", EVERY),
    _core("note", "Write a note (or a comment)", "n", NOTE),
    *(
        _core(f"grade_{value}", f"Grade {value} (counting from the lowest, 0)", str(value), GRADES, "Grades")
        for value in range(GRADE_COUNT)
    ),
)


def actions_of(
    modes_offer: Iterable[tuple[Mapping[str, Sequence[str]], Sequence[Action]]],
) -> tuple[Action, ...]:
    """Every judge action, in the settings page's order, from each mode's pages with what they
    offer and its own actions (`labeling.modes.shortcut_actions` passes the registered modes'):
    the core's actions with the pages that offer them, then the modes' own (once where two modes
    share them)."""
    offered = list(modes_offer)
    pages_offering: dict[str, set[str]] = {EVERY: set(), NOTE: set(), GRADES: set()}
    for pages, _ in offered:
        for page, offers in pages.items():
            for offer in offers:
                pages_offering[offer].add(page)
    found: dict[str, Action] = {
        action.name: replace(action, pages=frozenset(pages_offering[offer]))
        for action, offer in _CORE_ACTIONS
    }
    for _, own in offered:
        for action in own:
            found.setdefault(action.name, action)
    return tuple(found.values())


# Named keys an action may take, with how the pages show them.
NAMED_KEYS: dict[str, str] = {
    "ArrowLeft": "←",
    "ArrowRight": "→",
    "ArrowUp": "↑",
    "ArrowDown": "↓",
    "Home": "Home",
    "End": "End",
    "PageUp": "Page Up",
    "PageDown": "Page Down",
    "Backspace": "Backspace",
    "Delete": "Delete",
    "Insert": "Insert",
}
_NAMED_BY_LOWER = {name.lower(): name for name in NAMED_KEYS}
_NAMED_BY_SHOWN = {shown: name for name, shown in NAMED_KEYS.items() if len(shown) == 1}
# Keys that keep their standard meaning everywhere, by the names people type.
RESERVED = {
    "tab": "Tab",
    "enter": "Enter",
    "return": "Enter",
    "escape": "Escape",
    "esc": "Escape",
    " ": "Space",
    "space": "Space",
    "spacebar": "Space",
}


class ShortcutsInvalid(ValueError):
    """Refused keys: `errors` maps each action name (or "keys") to what is wrong with it."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        super().__init__("; ".join(f"{name}: {error}" for name, error in errors.items()))
        self.errors = dict(errors)


def key_normalize(key: str) -> str:
    """The stored name of a typed key: one character in lower case, or a named key's own
    spelling ("arrowleft" -> "ArrowLeft"). Raises ValueError with the reason when it cannot be one."""
    if not isinstance(key, str) or key == "":
        raise ValueError("type one key")
    if key.lower() in RESERVED:
        raise ValueError(f"{RESERVED[key.lower()]} keeps its usual meaning and cannot be a shortcut")
    if key in _NAMED_BY_SHOWN:  # "←" typed for ArrowLeft
        return _NAMED_BY_SHOWN[key]
    if len(key) == 1:
        if key.isspace() or not key.isprintable():
            raise ValueError("use a visible character or a named key such as ArrowLeft")
        lowered = key.lower()
        # The page matches `event.key.toLowerCase()`, and a few letters ("İ") lower-case to two
        # code points: stored, such a key would no longer be one key and could never be read back.
        if len(lowered) != 1:
            raise ValueError(f"{key} has no one-character lower case; choose another key")
        return lowered
    stripped = key.strip()
    if stripped.lower() in RESERVED:
        raise ValueError(f"{RESERVED[stripped.lower()]} keeps its usual meaning and cannot be a shortcut")
    if stripped.lower() in _NAMED_BY_LOWER:
        return _NAMED_BY_LOWER[stripped.lower()]
    if len(stripped) == 1:
        return key_normalize(stripped)
    raise ValueError(f"use one character or one of the named keys ({', '.join(NAMED_KEYS)}), not {key!r}")


def grade_key_normalize(key: str) -> str:
    """A campaign grade key as the judge pages match it; raises ValueError with the reason. A
    grade key is typed as one character (shown beside its grade) and then follows the rules of
    every shortcut key (`key_normalize`), so that no stored scale breaks a judge page."""
    if len(key) != 1 or key.isspace() or not key.isprintable():
        raise ValueError("must be a single visible character")
    return key_normalize(key)


def key_display(key: str) -> str:
    """How a stored key is shown: "P", "?", "←"."""
    return NAMED_KEYS.get(key, key.upper())


def keys_validate(overrides: Mapping[str, object], every_action: Sequence[Action]) -> dict[str, str]:
    """The overrides normalized, keeping only those that differ from the default; raises
    ShortcutsInvalid naming every action that is unknown, not one key, or clashing with another
    action of a page it shares."""
    errors: dict[str, str] = {}
    normalized: dict[str, str] = {}
    if not isinstance(overrides, Mapping):
        raise ShortcutsInvalid({"keys": "must be an object of action name to key"})
    for name, key in overrides.items():
        if all(action.name != name for action in every_action):
            known = ", ".join(action.name for action in every_action)
            errors[str(name)] = f"no such action (known: {known})"
            continue
        if not isinstance(key, str):
            errors[name] = 'the key must be text, such as "p" or "ArrowLeft"'
            continue
        try:
            normalized[name] = key_normalize(key)
        except ValueError as error:
            errors[name] = str(error)
    if errors:
        raise ShortcutsInvalid(errors)
    effective = {action.name: normalized.get(action.name, action.default) for action in every_action}
    for action in every_action:
        if action.name not in normalized:
            continue
        for other in clashes(action, effective, every_action):
            errors[action.name] = (
                f"{key_display(effective[action.name])} is already the key of "
                f"“{other.label}” on the same page; choose another key or change that one too"
            )
            break
    if errors:
        raise ShortcutsInvalid(errors)
    defaults = {action.name: action.default for action in every_action}
    return {name: key for name, key in normalized.items() if key != defaults[name]}


def clashes(action: Action, keys: Mapping[str, str], every_action: Sequence[Action]) -> list[Action]:
    """The other actions of `every_action` sharing a page and a key with `action` under `keys`."""
    key = keys.get(action.name)
    return [
        other
        for other in every_action
        if other is not action and key and keys.get(other.name) == key and other.pages & action.pages
    ]


@dataclass(frozen=True)
class PageShortcuts:
    """What a judge page needs: whether single keys act, and each action's key ("" when none)."""

    enabled: bool
    keys: dict[str, str]

    @property
    def shown(self) -> dict[str, str]:
        """Each action's key as the page shows it ("" when it has none or keys are off)."""
        return {name: key_display(key) if key and self.enabled else "" for name, key in self.keys.items()}

    def as_json(self) -> dict[str, object]:
        """What judging-common.js reads: keys to match `KeyboardEvent.key` and their labels."""
        return {"enabled": self.enabled, "keys": self.keys, "shown": self.shown}


def judge_shortcuts(
    pages: Iterable[str],
    overrides: Mapping[str, str],
    enabled: bool,
    grade_keys: Sequence[str] = (),
    *,
    every_action: Sequence[Action],
) -> PageShortcuts:
    """The key of every action of `pages` for one assessor. A campaign's own grade keys replace
    the default digits; the assessor's overrides win over both. A default key that another action
    now takes on the same page is dropped (that action has no key here) rather than acting twice."""
    pages = frozenset(pages)
    acting = [action for action in every_action if action.pages & pages]
    by_name = {action.name: action for action in acting}
    chosen = {action.name: overrides[action.name] for action in acting if action.name in overrides}
    defaults: dict[str, str] = {}
    for action in acting:
        if action.name in chosen:
            continue
        if action.name.startswith("grade_"):
            value = int(action.name.removeprefix("grade_"))
            if value >= len(grade_keys) and grade_keys:
                continue  # the campaign has fewer grades
            defaults[action.name] = _grade_default(grade_keys[value]) if grade_keys else action.default
        else:
            defaults[action.name] = action.default
    # Precedence: the assessor's choices, then the campaign's grade keys (they win over skip and
    # note today), then the other defaults.
    order = list(chosen) + sorted(defaults, key=lambda name: not name.startswith("grade_"))
    keys: dict[str, str] = {}
    for name in order:
        key = chosen.get(name) or defaults[name]
        action = by_name[name]
        if any(keys.get(other.name) == key for other in acting if other.pages & action.pages):
            keys[name] = ""
        else:
            keys[name] = key
    return PageShortcuts(enabled=enabled, keys=keys)


def _grade_default(key: str) -> str:
    """A campaign's grade key as a page default; "" (no key) for one stored before the rules of
    `grade_key_normalize` applied, rather than a judge page that cannot open."""
    try:
        return grade_key_normalize(key)
    except ValueError:
        return ""
