"""Input built to exhaust a stack, embedded and as a client: an answer or a clear error,
never a crash of the process. Regression: 5,000 chained ORs through `db.sql` made the
embedded package segfault (the interpreter died with it)."""
import threading

import pytest

import hotset


def or_chain(terms):
    return "SELECT COUNT(*) FROM t WHERE " + " OR ".join(f"id = {i}" for i in range(terms))


def test_long_or_chains_are_answered(db):
    db.create_namespace("t", indexes=[{"field": "id", "type": "int", "index": "hash", "pk": True}])
    db.upsert_many("t", [{"id": i} for i in range(30)])
    for terms in (5_000, 100_000):
        assert db.sql(or_chain(terms)).total == 30


def test_long_chains_on_a_small_thread_stack_are_answered(db):
    """A Python thread with a small stack (256 KiB) runs the same parse."""
    db.create_namespace("t", indexes=[{"field": "id", "type": "int", "index": "hash", "pk": True}])
    db.upsert_many("t", [{"id": i} for i in range(30)])
    answers = []
    previous = threading.stack_size(256 << 10)
    try:
        worker = threading.Thread(target=lambda: answers.append(db.sql(or_chain(50_000)).total))
        worker.start()
        worker.join()
    finally:
        threading.stack_size(previous)
    assert answers == [30]


@pytest.mark.parametrize("text", [
    "SELECT * FROM t WHERE " + "(" * 50_000 + "id = 1" + ")" * 50_000,
    "UPDATE t SET x = " + "+".join(["1"] * 100_000),
    "SELECT * FROM t WHERE x " + " ".join(["IS NULL"] * 50_000),
])
def test_nesting_past_the_bounds_is_a_query_error(db, text):
    db.create_namespace("t", indexes=[{"field": "id", "type": "int", "index": "hash", "pk": True}])
    db.upsert("t", {"id": 1})
    with pytest.raises(hotset.QueryError) as error:
        db.sql(text)
    assert len(str(error.value)) < 1_000
    assert db.get("t", 1) == {"id": 1}
