"""Hotset: an in-memory document database, embedded in this process or as a server's client.

    import hotset

    db = hotset.open("data")                 # embedded, on a folder (hotset.open() for memory only)
    db = hotset.connect("hotset://127.0.0.1:7379")   # or a running server: the same calls

    db.create_namespace("items", indexes=[
        {"field": "id", "type": "int", "index": "hash", "pk": True},
        {"field": "year", "type": "int", "index": "tree"},
        {"field": "description", "index": "text"},
    ])
    db.upsert("items", {"id": 1, "year": 2012, "description": "a red bike"})
    result = (db.query("items").where("year", ">", 2010).match("description", "bike")
              .sort("year").limit(10).total().execute())
    result.items, result.total

Every error is a subclass of ``hotset.Error``.
"""

import collections.abc

from ._hotset import (
    AlreadyExistsError,
    AuthError,
    ClosedError,
    ConnectionError,
    Database,
    DocumentError,
    Error,
    LimitError,
    ManualClock,
    NotFoundError,
    Query,
    QueryError,
    QueryTimeoutError,
    ReadOnlyError,
    Result,
    SchemaError,
    StorageError,
    Transaction,
    connect,
    open,
)

# A result is a read-only sequence of its items.
collections.abc.Sequence.register(Result)

__all__ = [
    "AlreadyExistsError",
    "AuthError",
    "ClosedError",
    "ConnectionError",
    "Database",
    "DocumentError",
    "Error",
    "LimitError",
    "ManualClock",
    "NotFoundError",
    "Query",
    "QueryError",
    "QueryTimeoutError",
    "ReadOnlyError",
    "Result",
    "SchemaError",
    "StorageError",
    "Transaction",
    "connect",
    "open",
]
