#!/usr/bin/env python3
"""Writes the seeded query parameters of ../shared/bench/bench_common.py as JSON, so the
Rust runner asks exactly the queries the peer scripts ask.

usage: params.py items ITEMS.jsonl OUT.json
       params.py users USERS.jsonl OUT.json   (name prefixes for the prefix search)
"""
import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "bench"))
from bench_common import Params, read_lines  # noqa: E402


def main():
    kind, source, out = sys.argv[1:4]
    lines = read_lines(source)
    if kind == "items":
        p = Params(lines)
        obj = {"ids": p.ids, "names": p.names, "words": p.words, "upserts": p.upserts}
    else:
        rng = random.Random(11)
        prefixes = []
        for _ in range(2000):
            user = json.loads(lines[rng.randrange(len(lines))])
            name = user["first_name"].lower()
            prefixes.append({"prefix": name[: rng.choice([2, 3])], "page": rng.randrange(5)})
        obj = {"prefixes": prefixes}
    with open(out, "w") as f:
        json.dump(obj, f)


if __name__ == "__main__":
    main()
