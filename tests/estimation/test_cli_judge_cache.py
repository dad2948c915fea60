"""``python -m estimation judge --cache``: a second run on the same inputs asks nothing again, a
run cut short resumes, another prompt asks again; the closing line reports tokens and cost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimation.__main__ import main
from estimation.cli.judge_cache import AnswerCache, answer_fingerprint
from estimation.judges.answers import JudgeAnswer
from tests.chat_server import ChatServerState, chat_server, grade_of

TEMPLATE = "[{qid}/{docno}] Query: {query}\nPassage: {document}\nGrade 0-3 as ##final score: N"
RUN = "1 Q0 a 1 2 r\n1 Q0 b 2 1 r\n2 Q0 c 1 2 r\n2 Q0 d 2 1 r\n"
PAIRS = [("1", "a"), ("1", "b"), ("2", "c"), ("2", "d")]


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, str]:
    files = {
        "topics.tsv": "1\tgreen roofs\n2\tbicycle lanes\n",
        "docs.tsv": "a\tgreen roofs cool cities\nb\ta budget meeting\nc\tbicycle lanes\nd\tbicycle sales\n",
        "run.txt": RUN,
        "prompt.txt": TEMPLATE,
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    paths = {name: str(tmp_path / name) for name in files}
    paths["cache"] = str(tmp_path / "answers.cache")
    return paths


def _judge(url: str, inputs: dict[str, str], *extra: str) -> list[str]:
    return [
        "judge", "--endpoint", url, "--model", "m", "--prompt", inputs["prompt.txt"],
        "--topics", inputs["topics.tsv"], "--docs", inputs["docs.tsv"], "--pool", inputs["run.txt"],
        "--cache", inputs["cache"], "--price-in", "1.0", "--price-out", "2.0", *extra,
    ]  # fmt: skip


def _labels(out: str) -> dict[tuple[str, str], int]:
    return {(r["qid"], r["docid"]): r["grade"] for r in map(json.loads, out.splitlines())}


def test_it_asks_nothing_twice_and_writes_every_label_again(
    inputs: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    state = ChatServerState()
    state.scripts = {("2", "d"): ["text:not sure"]}
    with chat_server(state) as (url, _):
        assert main(_judge(url, inputs)) == 0
        first_out, first_err = capsys.readouterr()
        assert main(_judge(url, inputs)) == 0
        second_out, second_err = capsys.readouterr()
    # Three labels and one refusal, each asked once over both runs.
    assert sorted(state.asked().values()) == [1, 1, 1, 1]
    assert _labels(second_out) == _labels(first_out) == {pair: grade_of(*pair) for pair in PAIRS[:3]}
    assert "4 requests sent" in first_err and "0 requests sent" in second_err
    assert "2 d: no grade in the answer (cached)" in second_err
    assert "4 answers from the cache" in second_err


def test_the_closing_line_reports_tokens_and_cost(
    inputs: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    with chat_server() as (url, state):
        assert main(_judge(url, inputs)) == 0
    err = capsys.readouterr().err
    # The local server reports the prompt's words as prompt tokens and 5 completion tokens.
    tokens_in = sum(len(request["body"]["messages"][0]["content"].split()) for request in state.requests)
    cost = tokens_in / 1000 * 1.0 + 4 * 5 / 1000 * 2.0
    assert f"tokens {tokens_in} in, 20 out, cost {cost:.4f}" in err


def test_a_run_cut_short_resumes_and_another_prompt_asks_again(
    inputs: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    with chat_server() as (url, state):
        assert main(_judge(url, inputs)) == 0
        lines = Path(inputs["cache"]).read_text().splitlines()
        # A kill after two answers, in the middle of writing the third.
        Path(inputs["cache"]).write_text("\n".join(lines[:2]) + "\n" + lines[2][:20])
        capsys.readouterr()
        assert main(_judge(url, inputs)) == 0
        assert "2 requests sent" in capsys.readouterr().err
        Path(inputs["prompt.txt"]).write_text(TEMPLATE + "\nBe strict.")
        assert main(_judge(url, inputs)) == 0
        assert "4 requests sent" in capsys.readouterr().err
    assert sum(state.asked().values()) == 4 + 2 + 4


def test_errors_are_not_cached_and_answers_are_keyed_by_what_was_asked(tmp_path: Path) -> None:
    path = str(tmp_path / "cache")
    asked = {"endpoint": "http://x/v1", "model": "m", "template": TEMPLATE, "n_grades": 4}
    fingerprint = answer_fingerprint(**asked, with_probabilities=False, max_tokens=64)
    cache = AnswerCache(path, fingerprint)
    cache.store(JudgeAnswer(("1", "a"), error="HTTP 500"), 0.0)
    cache.store(JudgeAnswer(("1", "b"), grade=2, text="##final score: 2", tokens_in=7), 0.5)
    cache.close()
    again = AnswerCache(path, fingerprint)
    assert again.missing(PAIRS) == [("1", "a"), ("2", "c"), ("2", "d")]
    assert again.answers[("1", "b")].answer.grade == 2 and again.answers[("1", "b")].cost == 0.5
    more_tokens = answer_fingerprint(**asked, with_probabilities=False, max_tokens=65)
    assert AnswerCache(path, more_tokens).missing(PAIRS) == PAIRS
