"""Background work in the embedded engine: ``ttl`` indexes expire documents and snapshots
are taken the way the server does it, paced by the database's clock. A ``ManualClock``
moves time and ``run_maintenance`` runs what became due, so nothing here sleeps."""

import time

import pytest

import hotset

START_MS = 1_700_000_000_000
NOW_S = START_MS // 1000


def sessions(db):
    db.create_namespace("sessions", indexes=[
        {"field": "id", "type": "int", "index": "hash", "pk": True},
        {"field": "created", "type": "int", "index": "ttl", "expire_after": 60},
    ])
    db.insert_many("sessions", [
        {"id": 1, "created": NOW_S - 58},
        {"id": 2, "created": NOW_S - 20},
        {"id": 3, "created": NOW_S},
        {"id": 4},
    ])


def ids(db):
    return sorted(doc["id"] for doc in db.query("sessions").execute())


@pytest.mark.parametrize("on_folder", [False, True])
def test_ttl_documents_expire_as_the_clock_passes_them(tmp_path, on_folder):
    clock = hotset.ManualClock(START_MS)
    db = hotset.open(tmp_path / "db" if on_folder else None, clock=clock)
    sessions(db)
    assert db.run_maintenance() == {}, "nothing is due before a period has passed"
    clock.advance(1_000)
    assert db.run_maintenance()["ttl expiry"] == 0
    assert ids(db) == [1, 2, 3, 4]
    clock.advance(30_000)
    assert db.run_maintenance()["ttl expiry"] == 1
    assert ids(db) == [2, 3, 4]
    clock.advance(60_000)
    assert db.run_maintenance()["ttl expiry"] == 2
    assert ids(db) == [4], "a document without the field never expires"
    db.close()
    with pytest.raises(hotset.ClosedError):
        db.run_maintenance()


def test_expired_documents_stay_gone_after_a_restart(tmp_path):
    clock = hotset.ManualClock(START_MS)
    with hotset.open(tmp_path, clock=clock) as db:
        sessions(db)
        clock.advance(50_000)
        assert db.run_maintenance()["ttl expiry"] == 2
    with hotset.open(tmp_path, clock=hotset.ManualClock(START_MS)) as db:
        assert ids(db) == [3, 4]


def test_a_snapshot_is_taken_when_the_clock_says_it_is_old(tmp_path):
    clock = hotset.ManualClock(START_MS)
    with hotset.open(tmp_path, clock=clock) as db:
        sessions(db)
        assert not list((tmp_path / "snapshots").iterdir())
        clock.advance(3_600_000)
        assert db.run_maintenance()["snapshot"] == 1
        assert len(list((tmp_path / "snapshots").iterdir())) == 1


def test_the_background_thread_expires_by_itself():
    clock = hotset.ManualClock(START_MS)
    db = hotset.open(clock=clock)
    sessions(db)
    clock.advance(120_000)
    # The thread looks at the clock at least every 100 ms; poll the outcome, with a
    # deadline far above that.
    deadline = time.monotonic() + 20
    while ids(db) != [4]:
        assert time.monotonic() < deadline, "the maintenance thread did not expire the documents"
    db.close()


def test_a_client_has_no_maintenance_to_run(server):
    with hotset.connect(server.url) as db:
        with pytest.raises(hotset.Error, match="embedded"):
            db.run_maintenance()


def test_the_manual_clock_moves_only_when_told():
    clock = hotset.ManualClock(5)
    assert clock.now_ms == 5
    assert clock.advance(10) == 15
    clock.set(1)
    assert clock.now_ms == 1
    assert abs(hotset.ManualClock().now_ms - time.time() * 1000) < 60_000
