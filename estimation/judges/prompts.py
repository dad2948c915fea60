"""What an LLM judge is asked and how its answer becomes a grade.

A prompt template is plain text with named fields in braces: ``{query}`` (the topic's title, or
its description when it has no title), ``{title}``, ``{description}``, ``{narrative}``,
``{document}`` (the document's title and text; ``{passage}`` is another name of it, as the
published UMBRELA prompt writes it), ``{doc_title}``, ``{docno}``, ``{qid}`` and
``{top_grade}``. ``{{`` and ``}}`` are literal braces (Python's ``str.format`` rules, as in the
published UMBRELA and LLMJudge prompts). An unknown field, a format spec or conversion
(``{document:>200000000}``, ``{document!r}``) and a template that renders longer than the
operator's ceiling are refused when the template is saved, not when the first request is sent:
the check renders it once with sample texts of the longest size a pair can bring.

The answer parser never guesses: it takes a grade only from an explicit ``final score: N``,
``"relevance score": N`` or ``score: N`` (the last one wins), or from an answer that is nothing
but one integer; anything else (no number, several numbers, a fraction, a grade outside the
campaign's scale) is a refusal with its reason, counted and shown, and the pair gets no label.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

FIELDS = (
    "query", "title", "description", "narrative",
    "document", "passage", "doc_title", "docno", "qid", "top_grade",
)  # fmt: skip
DOCUMENT_FIELDS = frozenset({"document", "passage"})
"""The names of the text to judge: ``{passage}`` as UMBRELA's prompt calls it, ``{document}``."""
DOCUMENT_MAX_CHARS = 20_000
"""Longer documents are cut here (about 5,000 tokens): judges read passages, and a cap keeps the
cost of one request bounded whatever the collection holds."""

DEFAULT_PROMPT = """\
Given a query and a passage, you must provide a score on an integer scale of 0 to {top_grade} \
with the following meanings:
0 = the passage has nothing to do with the query,
1 = the passage seems related to the query but does not answer it,
2 = the passage has some answer for the query, but the answer may be a bit unclear, or hidden \
amongst extraneous information,
3 = the passage is dedicated to the query and contains the exact answer.

Important instruction: assign category 1 if the passage is somewhat related to the topic but \
not completely, category 2 if the passage presents something very important related to the \
entire topic but also has some extra information, and category 3 if the passage only and \
entirely refers to the topic. If none of the above satisfies, give it category 0.

Query: {query}
Passage: {document}

Split this problem into steps: consider the underlying intent of the search, measure how well \
the content matches a likely intent of the query (M), measure how trustworthy the passage is \
(T), and consider these aspects to decide on a final score (O). The final score must be an \
integer value only. Do not provide any code or reasoning in the result. Answer in the format \
"##final score: N".
"""
"""An UMBRELA-style 0-3 prompt (Upadhyay et al. 2024, after Thomas et al. 2023), written for this
product; the published prompts of the TREC 2024 LLMJudge challenge are in the shared data."""

# ASCII digits only: an answer's "٣" or "²" is no grade (and int() of some such raises).
_EXPLICIT = re.compile(
    r"""(?:final\s*score|relevance\s*score|score|grade|relevance)["']?\s*[:=]\s*["']?(-?\d+(?:\.\d+)?)""",
    re.IGNORECASE | re.ASCII,
)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?", re.ASCII)
SAMPLE_TOPIC_CHARS = 1_000
"""The length of each sample topic text a template is rendered with at save (topics are short;
a longer one is refused per pair when its prompt passes the ceiling)."""
_WRAPPING = string.whitespace + "\"'`.*#{}[]()"


class PromptError(ValueError):
    """A template that cannot be rendered (an unknown field, an unmatched brace)."""


@dataclass(frozen=True)
class TopicText:
    qid: str
    title: str = ""
    description: str = ""
    narrative: str = ""

    @property
    def query(self) -> str:
        return self.title or self.description or self.narrative


@dataclass(frozen=True)
class DocumentText:
    docno: str
    title: str = ""
    text: str = ""

    @property
    def body(self) -> str:
        joined = f"{self.title}\n{self.text}" if self.title and self.text else self.title or self.text
        return joined[:DOCUMENT_MAX_CHARS]


@dataclass(frozen=True)
class ParsedAnswer:
    """A grade, or a refusal with its reason (``grade`` is None then)."""

    grade: int | None
    refusal: str = ""


def default_prompt(grade_names: Sequence[str]) -> str:
    """The UMBRELA-style prompt for a 0-3 scale; for another scale the same prompt with the
    campaign's own grade names as the meanings."""
    if len(grade_names) == 4:
        return DEFAULT_PROMPT
    meanings = "\n".join(f"{grade} = {name}," for grade, name in enumerate(grade_names))
    head, _, rest = DEFAULT_PROMPT.partition("0 = the passage")
    _, _, tail = rest.partition("Query: {query}")
    return f"{head}{meanings.rstrip(',')}.\n\nQuery: {{query}}{tail}"


def check_template(template: str, *, max_chars: int | None = None) -> None:
    """PromptError naming the first unknown field, format spec or broken brace; a template must
    also show the document (else every pair gets the same answer). With `max_chars`, the
    template is rendered once with sample texts of the longest document a pair sends and
    refused when that prompt is longer."""
    try:
        parsed = [
            (name, conversion, spec)
            for _, name, spec, conversion in string.Formatter().parse(template)
            if name is not None
        ]
    except ValueError as error:
        raise PromptError(
            f"the prompt template has a broken brace: {error} (write {{{{ for a literal brace)"
        ) from None
    fields = {name for name, _, _ in parsed}
    for name, conversion, spec in parsed:
        if conversion or spec:
            shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise PromptError(
                f"the prompt template's field {shown[:60]} has a format spec or conversion; "
                "write the bare field, e.g. {document}"
            )
    unknown = sorted(name for name in fields if name not in FIELDS)
    if unknown:
        raise PromptError(
            f"the prompt template names unknown field(s) {', '.join('{' + n + '}' for n in unknown)}; "
            f"known fields: {', '.join('{' + n + '}' for n in FIELDS)}"
        )
    if not fields & DOCUMENT_FIELDS:
        raise PromptError("the prompt template must contain {document} or {passage} (the text to judge)")
    if max_chars is None:
        return
    # Bounded before rendering: ten thousand {document} fields must not build gigabytes here.
    longest = sum(len(literal) for literal, _, _, _ in string.Formatter().parse(template)) + sum(
        DOCUMENT_MAX_CHARS if name in DOCUMENT_FIELDS else SAMPLE_TOPIC_CHARS for name, _, _ in parsed
    )
    if longest <= max_chars:
        sample = "x" * SAMPLE_TOPIC_CHARS
        longest = len(
            render_prompt(
                template,
                TopicText(sample, sample, sample, sample),
                DocumentText(sample, "", "x" * DOCUMENT_MAX_CHARS),
                n_grades=10,
            )
        )
    if longest > max_chars:
        raise PromptError(
            f"the prompt renders up to {longest:,} characters with the longest document, more than "
            f"the settings allow (JUDGE_PROMPT_MAX_CHARS: {max_chars:,})"
        )


def render_prompt(template: str, topic: TopicText, document: DocumentText, *, n_grades: int) -> str:
    """The prompt for one (topic, document) pair; PromptError if the template does not render
    (one saved before the checks of `check_template`)."""
    check_template(template)
    try:
        return template.format(
            query=topic.query,
            title=topic.title,
            description=topic.description,
            narrative=topic.narrative,
            document=document.body,
            passage=document.body,
            doc_title=document.title,
            docno=document.docno,
            qid=topic.qid,
            top_grade=n_grades - 1,
        )
    except (ValueError, KeyError, IndexError, AttributeError, TypeError) as error:
        raise PromptError(f"the prompt template does not render: {type(error).__name__}") from None


def parse_grade(answer: str, *, n_grades: int) -> ParsedAnswer:
    """The grade an answer states, or a refusal naming why none was taken."""
    explicit = _EXPLICIT.findall(answer)
    if explicit:
        return _in_scale(explicit[-1], n_grades)
    bare = answer.strip(_WRAPPING)
    if _NUMBER.fullmatch(bare):
        return _in_scale(bare, n_grades)
    numbers = _NUMBER.findall(answer)
    if not numbers:
        return ParsedAnswer(None, "no grade in the answer")
    return ParsedAnswer(None, f"no explicit grade among {len(numbers)} numbers in the answer")


def _in_scale(text: str, n_grades: int) -> ParsedAnswer:
    value = float(text)
    if not value.is_integer():
        return ParsedAnswer(None, f"grade {text} is not a whole number")
    grade = int(value)
    if not 0 <= grade < n_grades:
        return ParsedAnswer(None, f"grade {grade} is outside the scale 0-{n_grades - 1}")
    return ParsedAnswer(grade)


def grade_probabilities(
    token_alternatives: Sequence[Mapping[str, float]], grade: int, *, n_grades: int
) -> list[float] | None:
    """P(grade) from the log-probabilities of the answer token that carries the grade: the first
    token whose text is the stated grade, its alternatives that are grades of the scale,
    renormalised. None when no such token came back (the endpoint gave no log-probabilities)."""
    wanted = str(grade)
    for alternatives in token_alternatives:
        cleaned = {token.strip(_WRAPPING): logprob for token, logprob in alternatives.items()}
        if wanted not in cleaned:
            continue
        weights = [0.0] * n_grades
        for token, logprob in cleaned.items():
            if token.isascii() and token.isdigit() and int(token) < n_grades and math.isfinite(logprob):
                weights[int(token)] += math.exp(logprob)
        total = sum(weights)
        if total <= 0:
            return None
        return [weight / total for weight in weights]
    return None
