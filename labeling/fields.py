"""One rule per stored field, checked by every reader before the database sees a value.

SQLite stores an over-long string or a 20-digit integer without complaint while PostgreSQL
refuses it (and refuses NUL characters, and text that is not valid UTF-8), so a file accepted
on one database would fail on the other, or fail as a 500 halfway through an import. The
limits are read from the models, so a migration that widens a column widens the rule; the
caps on free text (titles, descriptions, document texts) are settings.
"""

from __future__ import annotations

from django.conf import settings

from estimation.formats.trec import InputFileError
from labeling.models import Document, RankingEntry, System, Topic

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
"""The range of an IntegerField on PostgreSQL (SQLite would take 64 bits)."""

QID_MAX_CHARS: int = Topic._meta.get_field("qid").max_length  # type: ignore[assignment]  # a CharField's max_length is set: an int
DOCNO_MAX_CHARS: int = Document._meta.get_field("docno").max_length  # type: ignore[assignment]  # a CharField's max_length is set: an int
TAG_MAX_CHARS: int = System._meta.get_field("name").max_length  # type: ignore[assignment]  # a CharField's max_length is set: an int
URL_MAX_CHARS: int = Document._meta.get_field("url").max_length  # type: ignore[assignment]  # a CharField's max_length is set: an int
# What coordinators write for assessors: a grade's description (a tooltip and a line of the help)
# and the campaign's guidelines (a page of Markdown).
GRADE_DESCRIPTION_MAX_CHARS = 500
GUIDELINES_MAX_CHARS = 50_000
# An assessor's note on a judgment or a skip.
NOTE_MAX_CHARS = 2_000
assert RankingEntry._meta.get_field("rank").get_internal_type() == "IntegerField"


def title_max_chars() -> int:
    """The cap on a topic's or document's title (setting LABELING_MAX_TITLE_CHARS)."""
    return settings.LABELING_MAX_TITLE_CHARS


def text_max_chars() -> int:
    """The cap on a document's text and a topic's description or narrative (LABELING_MAX_TEXT_CHARS)."""
    return settings.LABELING_MAX_TEXT_CHARS


def has_lone_surrogate(text: str) -> bool:
    """Whether `text` holds a lone UTF-16 surrogate (a JSON "\\ud800" escape), which no
    UTF-8 database column can store."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def checked_text(value: str, what: str, max_chars: int, filename: str, line: int) -> str:
    """`value` if it fits its column: at most `max_chars` characters, no NUL, no lone surrogate."""
    if len(value) > max_chars:
        raise InputFileError(filename, line, f"{what} longer than {max_chars} characters (the limit)")
    if "\x00" in value:
        raise InputFileError(filename, line, f"{what} contains a NUL character")
    if has_lone_surrogate(value):
        raise InputFileError(filename, line, f"{what} contains a lone surrogate (not valid Unicode text)")
    return value
