"""The engine inside the Python process: data on a folder survives a restart and a crash,
the folder is locked while open, a closed database refuses work, and threads run queries
and writes at once. (That a call inside Rust lets other Python threads run is shown in
test_client.py, where a fake server holds the reply until another thread has run.)"""
import subprocess
import sys
import threading

import hotset
import pytest

from conftest import ITEM_INDEXES, sample_items


def test_a_restart_keeps_documents_indexes_and_text_search(tmp_path):
    docs = sample_items(300)
    with hotset.open(tmp_path) as db:
        db.create_namespace("items", indexes=ITEM_INDEXES)
        db.upsert_many("items", docs)
        db.delete("items", 4)
        with db.transaction("items") as tx:
            tx.upsert(dict(docs[5], name="moved"))
        db.sql("CREATE TABLE other (id INT PRIMARY KEY, v TEXT)")
        db.sql("INSERT INTO other (id, v) VALUES (1, 'x')")
        expected_boat = sorted(d["id"] for d in db.query("items").match("description", "boat").limit(1000).execute())
    assert db.closed
    with pytest.raises(hotset.ClosedError):
        db.get("items", 1)

    db = hotset.open(str(tmp_path))
    try:
        assert sorted(db.namespaces()) == ["items", "other"]
        assert db.describe("items")["documents"] == 299
        assert db.get("items", 4) is None
        assert db.get("items", 5)["name"] == "moved"
        assert db.get("items", 7) == docs[7]
        assert [i["name"] for i in db.describe("items")["indexes"]] == [i["field"] for i in ITEM_INDEXES]
        got = db.query("items").where("year", ">", 2020).sort("id").execute()
        assert [d["id"] for d in got] == [d["id"] for d in docs if d["year"] > 2020 and d["id"] != 4]
        assert sorted(d["id"] for d in db.query("items").match("description", "boat").limit(1000).execute()) == \
            expected_boat
        assert db.sql("SELECT v FROM other").items == [{"v": "x"}]
    finally:
        db.close()


def test_the_folder_is_locked_while_open(tmp_path):
    db = hotset.open(tmp_path)
    with pytest.raises(hotset.StorageError, match="lock"):
        hotset.open(tmp_path)
    db.close()
    hotset.open(tmp_path).close()  # free again once closed


CRASHING_WRITER = """
import os, sys, hotset
db = hotset.open(sys.argv[1], fsync="always")
db.create_namespace("n", indexes=[{"field": "id", "type": "int", "index": "hash", "pk": True}])
for i in range(200):
    db.upsert("n", {"id": i, "v": "x" * i})
db.delete("n", 3)
print("acknowledged", flush=True)
os.kill(os.getpid(), 9)
"""


def test_acknowledged_writes_survive_a_killed_process(tmp_path):
    run = subprocess.run([sys.executable, "-c", CRASHING_WRITER, str(tmp_path)], capture_output=True, text=True)
    assert run.returncode == -9 and "acknowledged" in run.stdout, run.stderr
    with hotset.open(tmp_path) as db:
        assert db.describe("n")["documents"] == 199
        assert db.get("n", 3) is None
        assert db.get("n", 199) == {"id": 199, "v": "x" * 199}


def test_open_arguments_are_checked(tmp_path):
    with pytest.raises(ValueError, match="fsync"):
        hotset.open(tmp_path, fsync="sometimes")
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(hotset.StorageError):
        hotset.open(blocker)
    assert "in memory" in repr(hotset.open())


def test_threads_query_in_parallel_and_agree_with_one_thread():
    db = hotset.open()
    docs = sample_items(2000)
    db.create_namespace("items", indexes=ITEM_INDEXES)
    db.upsert_many("items", docs)
    names = [f"name{i}" for i in range(7)]

    def ask(name):
        r = db.query("items").where("name", "=", name).where("year", ">", 2010).sort("year").sort("id") \
            .limit(10).total().execute()
        return [d["id"] for d in r], r.total

    expected = {name: ask(name) for name in names}
    errors, done = [], []

    def worker(k):
        try:
            for i in range(300):
                name = names[(i + k) % 7]
                assert ask(name) == expected[name]
                if i % 50 == 0:  # writers too: upserts of unrelated documents
                    db.upsert("items", {"id": 10_000 + k * 1000 + i, "name": "other", "year": 1990})
            done.append(k)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and sorted(done) == list(range(8))
    assert db.query("items").where("name", "=", "other").total().limit(0).execute().total == 8 * 6
