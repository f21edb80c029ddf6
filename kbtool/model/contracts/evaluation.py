"""The contract of `kb eval`: each search mode's metrics on gold queries, with intervals.

Each metric (recall@k, hit@k, mrr@10, ndcg@10) is given overall and per query class, with a bootstrap
interval. Every mode is resampled with the same queries, so the ratio of hybrid search to a plain BM25 is taken
in pairs. The report names its seed and resamples: the same seed gives the same intervals."""

from __future__ import annotations

from pydantic import Field

from kbtool.model.contracts.base import Payload


class Interval(Payload):
    """A point estimate over the queries and its bootstrap percentile interval."""

    value: float = Field(description="over the queries as given")
    low: float = Field(description="the interval's lower bound")
    high: float = Field(description="the interval's upper bound")


class ModeScores(Payload):
    """One mode's metrics (recall@k, hit@k, mrr@10, ndcg@10), each the mean over the queries."""

    metrics: dict[str, Interval]
    missed: list[str] = Field(description="the queries with no relevant entry in the top k")


class GroupScores(Payload):
    """The scores of a group of queries (all of them, or one class)."""

    queries: int
    modes: dict[str, ModeScores] = Field(description="bm25, vector, hybrid and plain bm25")
    ratio: dict[str, Interval | None] = Field(
        description="per metric, hybrid's mean over plain bm25's, resampled in pairs; null where plain bm25 is 0"
    )


class EvalReport(Payload):
    """`kb eval --json`."""

    queries: int
    k: int = Field(description="the k of recall@k and hit@k")
    split: str | None = Field(description="dev, test, or null for every query")
    confidence: float = Field(description="the intervals' confidence level")
    resamples: int = Field(description="bootstrap resamples of the queries (with replacement) per group")
    seed: int = Field(description="the resamples' random seed: the same seed gives the same intervals")
    overall: GroupScores
    classes: dict[str, GroupScores] = Field(description="per query class (the gold line's class); unclassed: none")
