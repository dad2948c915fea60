"""Endpoint judges against a real local chat-completions server (`tests.chat_server`): the answer
parser, retries on 429/5xx/timeouts, fatal answers, log-probabilities, the key only in the
header, bounded concurrency and stopping; the lexical judge; ``python -m estimation judge``."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from estimation.__main__ import main
from estimation.judges.endpoint import (
    EndpointClient,
    EndpointSettings,
    FatalEndpointError,
    RateLimiter,
    answer_cost,
)
from estimation.judges.lexical import Bm25Collection, default_shares, fit_thresholds, normalised, tokens
from estimation.judges.prompts import (
    DEFAULT_PROMPT,
    DocumentText,
    PromptError,
    TopicText,
    check_template,
    default_prompt,
    grade_probabilities,
    parse_grade,
    render_prompt,
)
from tests.chat_server import ChatServerState, chat_server, grade_of

TEMPLATE = "Grade [{qid}/{docno}] for {query}:\n{document}\nAnswer ##final score: N (0-{top_grade})."


def _settings(url: str, **extra: object) -> EndpointSettings:
    values: dict[str, object] = {
        "base_url": url,
        "model": "fake-judge",
        "backoff_seconds": 0.01,
        "timeout_seconds": 2.0,
    }
    values.update(extra)
    return EndpointSettings(**values)  # type: ignore[arg-type]


def _prompt(qid: str, docno: str) -> tuple[tuple[str, str], str]:
    return (qid, docno), render_prompt(
        TEMPLATE, TopicText(qid, "solar panels"), DocumentText(docno, "", "text"), n_grades=4
    )


@pytest.mark.parametrize(
    ("answer", "grade"),
    [
        ("##final score: 2", 2),
        ('{"Relevance Score": 1}', 1),
        ("3", 3),
        (" 0. ", 0),
        ("M: 2, T: 1, ##final score: 3", 3),
        ("Score: 1\nFinal score: 2", 2),
    ],
)
def test_the_parser_takes_an_explicit_grade(answer: str, grade: int) -> None:
    assert parse_grade(answer, n_grades=4).grade == grade


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("I cannot judge this passage.", "no grade"),
        ("It is a 2 or maybe a 3", "no explicit grade among 2 numbers"),
        ("##final score: 7", "outside the scale 0-3"),
        ("score: -1", "outside the scale"),
        ("final score: 2.5", "not a whole number"),
        ("", "no grade"),
    ],
)
def test_the_parser_refuses_anything_but_a_grade_of_the_scale(answer: str, reason: str) -> None:
    parsed = parse_grade(answer, n_grades=4)
    assert parsed.grade is None
    assert reason in parsed.refusal


def test_templates_are_checked_when_saved() -> None:
    check_template(DEFAULT_PROMPT)
    with pytest.raises(PromptError, match=r"unknown field\(s\) \{text\}"):
        check_template("Query: {query}\nPassage: {text}")
    with pytest.raises(PromptError, match="must contain"):
        check_template("Query: {query}")
    with pytest.raises(PromptError, match="broken brace"):
        check_template("{document} {")
    rendered = render_prompt(
        '{{"score": N}} {document}', TopicText("1", "q"), DocumentText("d", "T", "body"), n_grades=4
    )
    assert rendered == '{"score": N} T\nbody'
    assert "0 = bad,\n1 = fine,\n2 = great." in default_prompt(["bad", "fine", "great"])


def test_probabilities_come_from_the_grade_token() -> None:
    tokens_ = [{"##": 0.0}, {" 2": np.log(0.6), "3": np.log(0.3), "x": np.log(0.1)}]
    probs = grade_probabilities(tokens_, 2, n_grades=4)
    assert probs == pytest.approx([0, 0, 2 / 3, 1 / 3])
    assert grade_probabilities([{"1": 0.0}], 2, n_grades=4) is None


def test_a_round_trip_labels_every_pair_with_the_models_grade() -> None:
    with chat_server() as (url, state), EndpointClient(_settings(url, api_key="sk-test-secret")) as client:
        answers = list(client.ask_many(_prompt("7", f"d{i}") for i in range(12)))
    assert sorted(a.key[1] for a in answers) == sorted(f"d{i}" for i in range(12))
    assert all(a.grade == grade_of("7", a.key[1]) for a in answers)
    assert all(a.tokens_in > 0 and a.tokens_out == 5 for a in answers)
    request = state.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test-secret"
    assert request["body"]["temperature"] == 0 and request["body"]["model"] == "fake-judge"
    assert "logprobs" not in request["body"]
    assert "sk-test-secret" not in repr(client.settings) and "sk-test-secret" not in repr(answers)


def test_429_500_and_timeouts_are_retried_with_retry_after() -> None:
    state = ChatServerState(hang_seconds=1.5)
    state.scripts = {("1", "a"): ["429", "429"], ("1", "b"): ["500"], ("1", "c"): ["timeout"]}
    with chat_server(state) as (url, _), EndpointClient(_settings(url, timeout_seconds=0.5)) as client:
        answers = {a.key: a for a in client.ask_many(_prompt("1", d) for d in "abcd")}
    assert answers["1", "a"].grade == grade_of("1", "a") and answers["1", "a"].attempts == 3
    assert answers["1", "b"].attempts == 2 and answers["1", "c"].attempts == 2
    assert answers["1", "d"].attempts == 1
    assert state.asked() == {("1", "a"): 3, ("1", "b"): 2, ("1", "c"): 2, ("1", "d"): 1}


def test_errors_after_the_retries_are_reported_not_guessed() -> None:
    state = ChatServerState()
    state.scripts = {("1", "a"): ["500"] * 10}
    with chat_server(state) as (url, _), EndpointClient(_settings(url, max_retries=2)) as client:
        (answer,) = client.ask_many([_prompt("1", "a")])
    assert answer.grade is None and answer.outcome == "error" and "HTTP 500" in answer.error
    assert state.asked()["1", "a"] == 3


def test_malformed_and_out_of_scale_answers_are_refusals() -> None:
    state = ChatServerState()
    state.scripts = {
        ("1", "a"): ["malformed"],
        ("1", "b"): ["text:##final score: 9"],
        ("1", "c"): ["text:no idea"],
    }
    with chat_server(state) as (url, _), EndpointClient(_settings(url)) as client:
        answers = {a.key[1]: a for a in client.ask_many(_prompt("1", d) for d in "abc")}
    assert {d: a.outcome for d, a in answers.items()} == {"a": "refusal", "b": "refusal", "c": "refusal"}
    assert "malformed" in answers["a"].refusal and "outside the scale" in answers["b"].refusal


def test_a_wrong_key_stops_the_run() -> None:
    state = ChatServerState()
    state.scripts = {("1", "a"): ["401"]}
    with chat_server(state) as (url, _), EndpointClient(_settings(url, concurrency=1)) as client:
        with pytest.raises(FatalEndpointError, match="HTTP 401"):
            list(client.ask_many(_prompt("1", d) for d in "abcdef"))
    assert state.asked()["1", "a"] == 1 and len(state.requests) == 1


def test_log_probabilities_give_probs() -> None:
    with chat_server() as (url, state), EndpointClient(_settings(url, with_probabilities=True)) as client:
        (answer,) = client.ask_many([_prompt("3", "x")])
    assert state.requests[0]["body"]["logprobs"] is True
    assert answer.probabilities is not None and sum(answer.probabilities) == pytest.approx(1)
    assert int(np.argmax(answer.probabilities)) == answer.grade == grade_of("3", "x")


def test_concurrency_is_bounded_and_stopping_lets_the_flight_land() -> None:
    state = ChatServerState(delay_seconds=0.2)
    seen = {"max": 0}
    original = EndpointClient.ask

    active = {"n": 0}
    lock = threading.Lock()

    def counting(self: EndpointClient, key: object, prompt: str, deadline: float | None = None):  # type: ignore[no-untyped-def]
        with lock:
            active["n"] += 1
            seen["max"] = max(seen["max"], active["n"])
        try:
            return original(self, key, prompt, deadline)
        finally:
            with lock:
                active["n"] -= 1

    with chat_server(state) as (url, _):
        client = EndpointClient(_settings(url, concurrency=3))
        client.ask = counting.__get__(client)  # type: ignore[method-assign]
        got = []
        for answer in client.ask_many(
            (_prompt("1", f"d{i}") for i in range(20)), should_stop=lambda: len(got) >= 4
        ):
            got.append(answer)
        client.close()
    assert seen["max"] == 3
    # Stopped after 4 answers: the ones in flight then still came back, nothing new started.
    assert 4 <= len(got) <= 4 + 3 and len(state.requests) == len(got)


def test_the_rate_limiter_spaces_requests() -> None:
    limiter = RateLimiter(600)  # one every 0.1 s
    started = time.monotonic()
    for _ in range(4):
        limiter.wait()
    assert time.monotonic() - started >= 0.29
    assert RateLimiter(0).interval == 0


def test_cost_is_priced_per_thousand_tokens() -> None:
    from estimation.judges.answers import JudgeAnswer

    assert (
        answer_cost(JudgeAnswer(None, tokens_in=2000, tokens_out=500), per_1k_in=0.5, per_1k_out=2.0) == 2.0
    )


def test_bm25_ranks_the_matching_document_first() -> None:
    collection = Bm25Collection.of(
        {
            "a": "green roofs cool the urban heat island",
            "b": "the city budget meeting",
            "c": "heat waves and green roofs",
        }
    )
    scores = collection.scores("urban heat island green roofs", ["a", "b", "c", "missing"])
    assert scores[0] > scores[2] > scores[1] == 0 == scores[3]
    assert normalised(scores)[0] == 1.0
    assert tokens("The Heat-Island of the city") == ["heat", "island", "city"]


def test_thresholds_follow_the_human_grade_shares_or_the_default() -> None:
    rng = np.random.default_rng(4)
    scores = rng.uniform(size=400)
    grades = np.digitize(scores, [0.6, 0.8, 0.95])  # the truth: cuts at 0.6, 0.8, 0.95
    fitted = fit_thresholds(scores, scores[:200], grades[:200], n_grades=4)
    assert fitted.source == "human labels (200)"
    assert np.allclose(fitted.cuts, [0.6, 0.8, 0.95], atol=0.06)
    assert (fitted.classes(scores) == grades).mean() > 0.9
    default = fit_thresholds(scores, scores[:5], grades[:5], n_grades=4)
    assert default.source == "default shares"
    shares = np.bincount(default.classes(scores), minlength=4) / scores.size
    assert np.allclose(shares, default_shares(4), atol=0.01)
    # A document that shares no word with the topic never rises above grade 0.
    assert fit_thresholds(np.zeros(50), np.zeros(0), np.zeros(0), n_grades=4).classes(
        np.zeros(3)
    ).tolist() == [0, 0, 0]


@pytest.fixture
def collection_files(tmp_path: Path) -> dict[str, str]:
    files = {
        "topics.tsv": "1\turban heat island green roofs\n2\tprotected bicycle lanes\n",
        "docs.jsonl": "".join(
            json.dumps({"docid": d, "title": "", "text": t}) + "\n"
            for d, t in [
                ("a", "green roofs cool the urban heat island"),
                ("b", "a city budget meeting"),
                ("c", "protected bicycle lanes reduce injuries"),
                ("d", "bicycle sales"),
            ]
        ),
        "run.txt": "1 Q0 a 1 2 r\n1 Q0 b 2 1 r\n2 Q0 c 1 2 r\n2 Q0 d 2 1 r\n",
        "prompt.txt": TEMPLATE,
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return {name: str(tmp_path / name) for name in files}


def test_the_cli_labels_a_pool_through_the_endpoint(
    collection_files: dict[str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_JUDGE_KEY", "sk-cli-secret")
    state = ChatServerState()
    state.scripts = {("2", "d"): ["text:not sure"]}
    with chat_server(state) as (url, _):
        status = main(
            ["judge", "--endpoint", url, "--model", "m", "--prompt", collection_files["prompt.txt"],
             "--topics", collection_files["topics.tsv"], "--docs", collection_files["docs.jsonl"],
             "--pool", collection_files["run.txt"], "--api-key-env", "MY_JUDGE_KEY", "--probabilities",
             "--price-in", "1.0"]
        )  # fmt: skip
    out, err = capsys.readouterr()
    records = [json.loads(line) for line in out.splitlines()]
    assert status == 0
    assert {(r["qid"], r["docid"]): r["grade"] for r in records} == {
        pair: grade_of(*pair) for pair in [("1", "a"), ("1", "b"), ("2", "c")]
    }
    assert all(len(r["probs"]) == 4 and r["cost"] > 0 for r in records)
    assert "2 d: no grade in the answer" in err and "3 labels, 1 refusals" in err
    assert state.requests[0]["headers"]["Authorization"] == "Bearer sk-cli-secret"
    assert "sk-cli-secret" not in out + err


def test_the_cli_lexical_judge_needs_no_network(
    collection_files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(
        ["judge", "--lexical", "--topics", collection_files["topics.tsv"],
         "--docs", collection_files["docs.jsonl"], "--pool", collection_files["run.txt"], "--grades", "2"]
    )  # fmt: skip
    records = {(r["qid"], r["docid"]): r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert status == 0
    assert records["1", "a"]["grade"] == 1 and records["1", "b"]["grade"] == 0
    assert records["2", "c"]["grade"] == 1 and "BM25" in records["2", "c"]["rationale"]


def test_the_cli_names_a_bad_documents_line(
    collection_files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    Path(collection_files["docs.jsonl"]).write_text('{"docid": "a", "text": "x"}\n{"text": "no id"}\n')
    status = main(
        ["judge", "--lexical", "--topics", collection_files["topics.tsv"],
         "--docs", collection_files["docs.jsonl"], "--pool", collection_files["run.txt"]]
    )  # fmt: skip
    assert status == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("docs.jsonl:2: no identifier: expected one of docno, docid, _id, id, doc_id")
    )


def test_it_cuts_a_trickling_answer_at_the_request_deadline() -> None:
    """One byte every 0.2 s: each read is quick, so a per-read timeout never fires; the
    request's one deadline (1 s) does."""
    state = ChatServerState(trickle_seconds=0.2)
    state.scripts = {("1", "d1"): ["trickle"]}
    with (
        chat_server(state) as (url, _),
        EndpointClient(_settings(url, timeout_seconds=1.0, max_retries=0)) as client,
    ):
        started = time.monotonic()
        answer = client.ask(*_prompt("1", "d1"))
        elapsed = time.monotonic() - started
    assert answer.outcome == "error" and "timed out" in answer.error
    assert elapsed < 2.0


def test_it_stops_reading_an_answer_past_the_size_cap() -> None:
    state = ChatServerState(huge_bytes=3_000_000)
    state.scripts = {("1", "d1"): ["huge"]}
    with chat_server(state) as (url, _), EndpointClient(_settings(url, answer_max_bytes=100_000)) as client:
        answer = client.ask(*_prompt("1", "d1"))
    assert answer.outcome == "refusal" and "longer than 100,000 bytes" in answer.refusal
    # Charged at the most the endpoint may bill: a cost cap still counts it.
    assert answer.tokens_in > 0 and answer.tokens_out == 64


def _completion(content: str, usage: object, logprobs: object = None) -> str:
    choice: dict[str, object] = {"message": {"content": content}}
    if logprobs is not None:
        choice["logprobs"] = logprobs
    return "json:" + json.dumps({"choices": [choice], "usage": usage})


def test_it_checks_every_value_a_hostile_endpoint_sends() -> None:
    """Token counts past any model, log-probabilities above 0 or not numbers, a grade token that
    is a digit only outside ASCII: refused or ignored, never a crash, every number finite."""
    top = [{"token": "2", "logprob": -0.1}, {"token": "1", "logprob": -2.0}]
    state = ChatServerState()
    state.scripts = {
        ("1", "huge-usage"): [
            _completion("##final score: 2", {"prompt_tokens": 1e300, "completion_tokens": 5})
        ],
        ("1", "float-usage"): [
            _completion("##final score: 2", {"prompt_tokens": 1.5, "completion_tokens": 5})
        ],
        ("1", "logprob-1000"): [
            _completion("2", {}, {"content": [{"token": "2", "logprob": 1000, "top_logprobs": top}]})
        ],
        ("1", "logprob-x"): [
            _completion(
                "2",
                {},
                {
                    "content": [
                        {"token": "2", "logprob": "x", "top_logprobs": [*top, {"token": "3", "logprob": "x"}]}
                    ]
                },
            )
        ],
        ("1", "superscript"): [
            _completion(
                "2",
                {},
                {
                    "content": [
                        {
                            "token": "2",
                            "logprob": -0.1,
                            "top_logprobs": [*top, {"token": "²", "logprob": -0.5}],
                        }
                    ]
                },
            )
        ],
        ("1", "not-text"): ['json:{"choices": [{"message": {"content": 7}}]}'],
        ("1", "arabic"): [_completion("final score: ٣", {})],
    }
    with chat_server(state) as (url, _), EndpointClient(_settings(url, with_probabilities=True)) as client:
        answers = {
            answer.key[1]: answer
            for answer in client.ask_many(_prompt("1", d) for d in [*{k[1] for k in state.scripts}])
        }
    for name in ("huge-usage", "float-usage"):
        assert answers[name].outcome == "refusal" and "usage" in answers[name].refusal
        assert answers[name].tokens_in < 10_000  # the prompt's length, not 1e300
    for name in ("logprob-1000", "logprob-x", "superscript"):
        assert answers[name].grade == 2
        probs = answers[name].probabilities
        assert probs is not None and all(np.isfinite(probs)) and sum(probs) == pytest.approx(1.0)
    assert answers["superscript"].probabilities == pytest.approx(answers["logprob-1000"].probabilities)
    assert answers["not-text"].outcome == "refusal" and "malformed" in answers["not-text"].refusal
    assert answers["arabic"].outcome == "refusal"


def test_it_never_lets_the_rate_limiter_sleep_past_a_deadline_or_a_stop() -> None:
    for per_minute in (0.001, 1e-300):  # one request per 17 hours; an interval past any clock
        limiter = RateLimiter(per_minute)
        started = time.monotonic()
        assert limiter.wait(deadline=started + 5)  # the first start is now
        assert not limiter.wait(deadline=started + 5)  # the next one is after the deadline
        assert time.monotonic() - started < 0.5
    limiter = RateLimiter(60)  # one a second
    limiter.wait()
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    started = time.monotonic()
    assert not limiter.wait(stop=stop)
    assert time.monotonic() - started < 0.6


def test_it_gives_back_what_a_deadline_cut_unasked() -> None:
    """rpm 6 (one request every 10 s), a deadline in 0.5 s: the first pair is asked, the second
    comes back unfinished at once instead of the worker sleeping 10 s."""
    with (
        chat_server() as (url, state),
        EndpointClient(_settings(url, requests_per_minute=6, concurrency=2)) as client,
    ):
        started = time.monotonic()
        answers = list(client.ask_many([_prompt("1", "d1"), _prompt("1", "d2")], deadline=started + 0.5))
        elapsed = time.monotonic() - started
    assert sorted(answer.finished for answer in answers) == [False, True]
    assert len(state.requests) == 1 and elapsed < 1.0
