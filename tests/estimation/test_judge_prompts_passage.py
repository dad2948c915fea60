"""Published prompts (UMBRELA) name the text to judge {passage}: it is another name of
{document}, accepted at save and rendered with the document's text."""

from __future__ import annotations

import pytest

from estimation.judges.prompts import DocumentText, PromptError, TopicText, check_template, render_prompt

UMBRELA_HEAD = "Query: {query}\nPassage: {passage}\nScore 0-{top_grade} as ##final score: N"


def test_passage_is_accepted_and_rendered_as_the_document() -> None:
    check_template(UMBRELA_HEAD, max_chars=100_000)
    topic = TopicText("1", "green roofs", "", "")
    prompt = render_prompt(UMBRELA_HEAD, topic, DocumentText("d1", "", "roofs cool cities"), n_grades=4)
    assert prompt == "Query: green roofs\nPassage: roofs cool cities\nScore 0-3 as ##final score: N"


def test_a_template_without_document_or_passage_is_still_refused() -> None:
    with pytest.raises(PromptError, match=r"must contain \{document\} or \{passage\}"):
        check_template("Query: {query}")


def test_passage_counts_as_a_document_for_the_length_ceiling() -> None:
    with pytest.raises(PromptError, match="JUDGE_PROMPT_MAX_CHARS"):
        check_template("{passage}" * 10, max_chars=50_000)
