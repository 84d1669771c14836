"""Seeded parameters of the Python comparison's extra shapes, shared by
bench/python_hotset.py and bench/query_pyreindexer_extra.py so both sides ask the same
queries in the same order.

  g_in_range   name IN (five names) AND year BETWEEN lo AND hi
               ORDER BY year DESC, id LIMIT 10 OFFSET 10, with the total
               (both sides have a composite tree index on name+year)
  h_fulltext   one dictionary word (bench_common's words), LIMIT 10, through SQL and
               through the query builder
"""
import random

# The composite index both sides add for g_in_range.
COMPOSITE = ("name", "year")
IN_NAMES = 5
LIMIT = 10
OFFSET = 10


def in_range_params(P, seed=13, pool=2000):
    """(names, lo, hi) triples: five distinct names of the data set's sample, a year span
    of 0..15 years inside 2000..2050."""
    rng = random.Random(seed)
    names = sorted(set(P.names))
    out = []
    for _ in range(pool):
        lo = rng.randint(2000, 2045)
        out.append((rng.sample(names, IN_NAMES), lo, min(2050, lo + rng.randint(0, 15))))
    return out
