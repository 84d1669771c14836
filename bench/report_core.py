#!/usr/bin/env python3
"""Renders the JSON line of run_core.py as the Markdown tables of BENCHMARKS.md.

usage: bench/run_core.py -r 3 > core.json && bench/report_core.py core.json
"""
import json
import sys

QUERIES = [
    ("a_get_by_id", "a) get by id", "a_get_by_id[builder]", "a_get_by_id"),
    ("b_name_year", "b) name = ? AND year > 2010 ORDER BY year LIMIT 10, total", "b_name_year[builder]", "b_name_year"),
    ("c_year_range", "c) year 2010..2020 ORDER BY year DESC LIMIT 20 OFFSET 100", "c_year_range[builder]", "c_year_range"),
    ("e_upsert", "e) upsert by id", "e_upsert", "e_upsert"),
]


def fmt(x, digits=1):
    return f"{x:,.{digits}f}" if isinstance(x, (int, float)) else "–"


def main():
    r = json.load(open(sys.argv[1]))
    h = r["hotset"]
    peers = r.get("peers", {})
    small = h["items_100k"]["results"]
    print("| query | Hotset p50 µs | Hotset ops/s | Reindexer p50 µs | Reindexer ops/s | SQLite p50 µs | SQLite ops/s | Hotset / Reindexer ops/s |")
    print("|---|---|---|---|---|---|---|---|")
    for key, label, rx_key, sq_key in QUERIES:
        ours = small[key]
        rx = peers.get("reindexer", {}).get("results", {}).get(rx_key, {})
        sq = peers.get("sqlite", {}).get("results", {}).get(sq_key, {})
        ratio = ours["ops_s"] / rx["ops_s"] if rx.get("ops_s") else None
        print(f"| {label} | {fmt(ours['p50_us'])} | {fmt(ours['ops_s'], 0)} | {fmt(rx.get('p50_us'))} | {fmt(rx.get('ops_s'), 0)} | "
              f"{fmt(sq.get('p50_us'))} | {fmt(sq.get('ops_s'), 0)} | {fmt(ratio)}× |")
    bulk_rx = peers.get("reindexer", {}).get("results", {}).get("f_bulk_insert_tx", {})
    bulk_sq = peers.get("sqlite", {}).get("results", {}).get("f_bulk_insert_tx", {})
    ours = small["f_bulk_insert_tx"]
    ratio = ours["rows_s"] / bulk_rx["rows_s"] if bulk_rx.get("rows_s") else None
    print(f"| f) bulk insert of 100k (one transaction), rows/s | – | {fmt(ours['rows_s'], 0)} | – | {fmt(bulk_rx.get('rows_s'), 0)} | – | "
          f"{fmt(bulk_sq.get('rows_s'), 0)} | {fmt(ratio)}× |")
    print()
    print("| query | p50 µs at 100k | p50 µs at 1M | 1M / 100k |")
    print("|---|---|---|---|")
    rows = [("items", k, label) for k, label, _, _ in QUERIES] + [
        ("items", "b_name_year_composite", "b) with a composite tree index on (name, year)"),
        ("users", "g_prefix_page", "g) first_name LIKE 'pre%' (utf8_ci) ORDER BY first_name, last_name, page of 10"),
        ("users", "g_prefix_page_total", "g) the same with the exact total"),
    ]
    for kind, key, label in rows:
        a, b = h[f"{kind}_100k"]["results"][key]["p50_us"], h[f"{kind}_1m"]["results"][key]["p50_us"]
        print(f"| {label} | {fmt(a)} | {fmt(b)} | {fmt(b / a, 2)}× |")
    print()
    print("| data set | JSON bytes/doc | engine bytes/doc (accounted) | engine / JSON | process RSS growth while loading, MB |")
    print("|---|---|---|---|---|")
    for name in ["items_100k", "items_1m", "users_100k", "users_1m"]:
        d = h[name]
        print(f"| {name} | {fmt(d['json_bytes_per_doc'], 0)} | {fmt(d['engine_bytes_per_doc'], 0)} | "
              f"{fmt(d['engine_bytes_per_doc'] / d['json_bytes_per_doc'], 2)}× | "
              f"{fmt(d['rss_mb_after_load'] - d['rss_mb_before_load'])} |")
    print()
    for name in ["items_100k", "items_1m"]:
        res = h[name]["results"]
        print(f"- {name}: bulk insert {fmt(res['f_bulk_insert_tx']['rows_s'], 0)} rows/s in one transaction, "
              f"{fmt(res['f_bulk_insert_loop']['rows_s'], 0)} rows/s one JSON line per call; "
              f"adding the (name, year) index to the live namespace took {res['add_index_name_year']['seconds']} s")
    for name in ["users_100k", "users_1m"]:
        print(f"- {name}: loaded at {fmt(h[name]['results']['load']['rows_s'], 0)} rows/s")
    if peers:
        rx = peers["reindexer"]
        sq = peers["sqlite"]
        print(f"- RSS growth while loading the 100k catalogue: Reindexer {fmt(rx['rss_mb_after_load'] - rx['rss_mb_before_load'])} MB "
              f"(with its full-text index on description), SQLite {fmt(sq['rss_mb_after_load'] - sq['rss_mb_before_load'])} MB (with FTS5)")


if __name__ == "__main__":
    main()
