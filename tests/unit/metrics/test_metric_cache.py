"""MetricCache: each distinct item reaches the metric once; look-ups and hit rate are counted."""

from __future__ import annotations

from interp_heads.metrics import Accuracy, MetricCache, MetricItem


class Counting(Accuracy):
    def __init__(self):
        self.seen: list[MetricItem] = []

    def score(self, items):
        self.seen += items
        return super().score(items)


def test_distinct_items_scored_once_and_hit_rate():
    metric, cache = Counting(), MetricCache()
    a, b = MetricItem("q1", "Paris", "Paris"), MetricItem("q2", "12", "13")
    assert cache.score(metric, [a, b, a]) == [1.0, 0.0, 1.0]
    assert cache.score(metric, [b, a]) == [0.0, 1.0]
    assert metric.seen == [a, b]
    assert cache.stats()["accuracy"] == {"lookups": 5, "scored": 2, "hits": 3, "hit_rate": 0.6}
    other = MetricItem("q1", "Paris", "Paris", aliases=("paris",))  # aliases are part of the key
    cache.prime(metric, [other, a])
    assert metric.seen[-1] == other and cache.stats()["all"]["lookups"] == 5
    assert cache.score(metric, [other]) == [1.0] and cache.stats()["accuracy"]["scored"] == 3
