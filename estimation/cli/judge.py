"""``python -m estimation judge``: label a pool with a model judge, outside the app.

The same client the app's judge runs use (`estimation.judges.endpoint`): an OpenAI-compatible
chat-completions endpoint, or with ``--lexical`` the built-in BM25 judge (no network). Writes the
judge-labels JSONL the app and ``evaluate --judge`` read, one line per pair::

    {"qid": ..., "docid": ..., "grade": 2, "probs": [...], "rationale": ..., "seconds": ..., "cost": ...}

Refusals (no grade of the scale in the answer) and errors go to stderr, never to the labels.
With ``--cache FILE`` every label and refusal is also kept in FILE as it arrives, and a later run
on the same inputs (same endpoint, model, prompt and scale) asks only the pairs without one
(`estimation.cli.judge_cache`). The closing line on stderr counts labels, refusals, errors, the
requests sent, the tokens the endpoint reported and their cost.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from typing import TextIO

import numpy as np

from estimation.cli.judge_cache import AnswerCache, answer_fingerprint
from estimation.formats.texts import read_document_texts, read_topic_texts
from estimation.formats.trec import InputFileError, read_run
from estimation.judges.answers import JudgeAnswer
from estimation.judges.endpoint import EndpointClient, EndpointSettings, answer_cost
from estimation.judges.lexical import Bm25Collection, fit_thresholds, lexical_query, pool_scores, rationale
from estimation.judges.prompts import DocumentText, TopicText, check_template, default_prompt, render_prompt

EPILOG = """\
examples:
  JUDGE_API_KEY=... python -m estimation judge --endpoint https://api.openai.com/v1 --model gpt-4o-mini \\
      --topics queries.tsv --docs collection.tsv --pool run1.txt run2.txt --depth 10 > labels.jsonl
  python -m estimation judge --endpoint http://localhost:11434/v1 --model llama3.1:8b \\
      --prompt umbrela.txt --topics topics.jsonl --docs corpus.jsonl --pool run1.txt > labels.jsonl
  python -m estimation judge --endpoint http://localhost:8000/v1 --model m --cache answers.cache \\
      --topics topics.jsonl --docs corpus.jsonl --pool run1.txt > labels.jsonl   # again: asks nothing twice
  python -m estimation judge --lexical --topics topics.jsonl --docs corpus.jsonl --pool run1.txt > bm25.jsonl
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``judge`` subcommand."""
    parser = subparsers.add_parser(
        "judge",
        help="label a pool with an LLM endpoint or the lexical judge (JSONL on stdout)",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--endpoint",
        metavar="URL",
        help="base URL of an OpenAI-compatible API, e.g. http://localhost:8000/v1",
    )
    source.add_argument(
        "--lexical", action="store_true", help="the built-in BM25 judge (a weak judge; no network)"
    )
    parser.add_argument("--model", default="", help="the model name the endpoint serves")
    parser.add_argument(
        "--prompt", metavar="FILE", help="prompt template (default: the UMBRELA-style 0-3 prompt)"
    )
    parser.add_argument("--topics", required=True, metavar="FILE", help="qid<TAB>query TSV or topics JSONL")
    parser.add_argument("--docs", required=True, metavar="FILE", help="docid<TAB>text TSV or documents JSONL")
    parser.add_argument(
        "--pool", nargs="+", required=True, metavar="RUN", help="TREC runs whose top --depth is judged"
    )
    parser.add_argument("--depth", type=int, default=10, help="pool depth per run (default 10)")
    parser.add_argument("--grades", type=int, default=4, help="grades 0..G-1 (default 4)")
    parser.add_argument(
        "--api-key-env",
        default="JUDGE_API_KEY",
        metavar="NAME",
        help="environment variable holding the API key (default JUDGE_API_KEY)",
    )
    parser.add_argument(
        "--probabilities", action="store_true", help="ask for log-probabilities and write probs"
    )
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rpm", type=float, default=0.0, help="requests per minute (0: no limit)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--price-in", type=float, default=0.0, help="price per 1,000 prompt tokens")
    parser.add_argument("--price-out", type=float, default=0.0, help="price per 1,000 answer tokens")
    parser.add_argument(
        "--cache",
        metavar="FILE",
        help="keep every answer in FILE and ask only the pairs it has no answer for (resume, rerun)",
    )
    parser.set_defaults(handler=run)


def _pool(paths: list[str], depth: int) -> dict[str, list[str]]:
    """qid -> the union of the runs' top `depth`, best rank first."""
    if depth < 1:
        raise ValueError("--depth must be at least 1")
    best: dict[str, dict[str, int]] = {}
    for path in paths:
        for qid, docnos in read_run(path).rankings.items():
            ranks = best.setdefault(qid, {})
            for rank, docno in enumerate(docnos[:depth]):
                ranks[docno] = min(rank, ranks.get(docno, rank))
    return {qid: sorted(ranks, key=lambda d: (ranks[d], d)) for qid, ranks in sorted(best.items())}


def run(args: argparse.Namespace) -> int:
    if args.grades < 2:
        raise ValueError("--grades must be at least 2")
    pool = _pool(args.pool, args.depth)
    topics = read_topic_texts(args.topics)
    wanted = {docno for docnos in pool.values() for docno in docnos}
    documents = read_document_texts(args.docs, wanted if not args.lexical else None)
    missing_topics = sorted(set(pool) - set(topics))
    if missing_topics:
        raise InputFileError(
            args.topics, None, f"no text for {len(missing_topics)} pooled topic(s), e.g. {missing_topics[0]}"
        )
    out = sys.stdout
    if args.lexical:
        return _lexical(pool, topics, documents, args.grades, out)
    template = default_prompt([str(g) for g in range(args.grades)])
    if args.prompt:
        with open(args.prompt, encoding="utf-8") as handle:
            template = handle.read()
    check_template(template)
    if not args.model:
        raise ValueError("--endpoint needs --model")
    settings = EndpointSettings(
        base_url=args.endpoint,
        model=args.model,
        api_key=os.environ.get(args.api_key_env, ""),
        n_grades=args.grades,
        with_probabilities=args.probabilities,
        concurrency=args.concurrency,
        requests_per_minute=args.rpm,
        timeout_seconds=args.timeout,
        max_tokens=args.max_tokens,
    )

    pairs = [(qid, docno) for qid, docnos in pool.items() for docno in docnos]
    cache = None
    if args.cache:
        fingerprint = answer_fingerprint(
            endpoint=args.endpoint,
            model=args.model,
            template=template,
            n_grades=args.grades,
            with_probabilities=args.probabilities,
            max_tokens=args.max_tokens,
        )
        cache = AnswerCache(args.cache, fingerprint)

    def prompts() -> Iterator[tuple[tuple[str, str], str]]:
        for qid, docno in cache.missing(pairs) if cache is not None else pairs:
            document = documents.get(docno, DocumentText(docno))
            yield (qid, docno), render_prompt(template, topics[qid], document, n_grades=args.grades)

    tally = _Tally()
    if cache is not None:
        for pair in pairs:
            cached = cache.answers.get(pair)
            if cached is not None:
                tally.write(cached.answer, cached.cost, out, cached=True)
    try:
        with EndpointClient(settings) as client:
            for answer in client.ask_many(prompts()):
                price = answer_cost(answer, per_1k_in=args.price_in, per_1k_out=args.price_out)
                if cache is not None:
                    cache.store(answer, price)
                tally.write(answer, price, out, cached=False)
    finally:
        if cache is not None:
            cache.close()
    print(tally.summary(), file=sys.stderr)
    return 0 if tally.counts["label"] else 1


class _Tally:
    """What a run wrote and spent: outcomes, requests, tokens and cost, this run's and the cache's."""

    def __init__(self) -> None:
        self.counts = {"label": 0, "refusal": 0, "error": 0}
        self.from_cache = 0
        self.requests = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self.cost = 0.0
        self.cached_cost = 0.0

    def write(self, answer: JudgeAnswer, price: float, out: TextIO, *, cached: bool) -> None:
        """Count an answer; a label goes to `out`, a refusal or an error to stderr."""
        self.counts[answer.outcome] += 1
        if cached:
            self.from_cache += 1
            self.cached_cost += price
        else:
            self.requests += answer.attempts
            self.tokens_in += answer.tokens_in
            self.tokens_out += answer.tokens_out
            self.cost += price
        qid, docno = answer.key
        if answer.grade is None:
            origin = " (cached)" if cached else ""
            print(f"{qid} {docno}: {answer.refusal or answer.error}{origin}", file=sys.stderr)
            return
        record: dict[str, object] = {"qid": qid, "docid": docno, "grade": answer.grade}
        if answer.probabilities is not None:
            record["probs"] = answer.probabilities
        record.update(rationale=answer.text, seconds=round(answer.seconds, 3), cost=price)
        out.write(json.dumps(record) + "\n")

    def summary(self) -> str:
        cache = ""
        if self.from_cache:
            cache = f" ({self.from_cache} answers from the cache, cost {self.cached_cost:.4f})"
        return (
            f"judge: {self.counts['label']} labels, {self.counts['refusal']} refusals, "
            f"{self.counts['error']} errors; {self.requests} requests sent, tokens {self.tokens_in} in, "
            f"{self.tokens_out} out, cost {self.cost:.4f}{cache}"
        )


def _lexical(
    pool: dict[str, list[str]],
    topics: dict[str, TopicText],
    documents: dict[str, DocumentText],
    n_grades: int,
    out: TextIO,
) -> int:
    collection = Bm25Collection.of({docno: document.body for docno, document in documents.items()})
    scores = pool_scores(
        collection, {qid: lexical_query(t.title, t.description) for qid, t in topics.items()}, pool
    )
    every = np.concatenate([s for s in scores.values()]) if scores else np.zeros(0)
    thresholds = fit_thresholds(every, np.zeros(0), np.zeros(0, dtype=np.int64), n_grades=n_grades)
    for qid, docnos in pool.items():
        classes = thresholds.classes(scores[qid])
        for docno, score, grade in zip(docnos, scores[qid], classes, strict=True):
            record = {
                "qid": qid,
                "docid": docno,
                "grade": int(grade),
                "rationale": rationale(float(score), thresholds),
            }
            out.write(json.dumps(record) + "\n")
    return 0
