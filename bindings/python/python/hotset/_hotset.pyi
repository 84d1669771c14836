"""Type stubs for hotset's native module (the classes are re-exported by ``hotset``)."""

from os import PathLike
from types import TracebackType
from typing import Any, Iterable, Iterator, Literal, Optional, Sequence, Tuple, Union, final, overload

__all__ = [
    "AlreadyExistsError", "AuthError", "ClosedError", "ConnectionError", "Database", "DocumentError", "Error",
    "LimitError", "ManualClock", "NotFoundError", "Query", "QueryError", "QueryTimeoutError", "ReadOnlyError",
    "Result", "SchemaError", "StorageError", "Transaction", "connect", "open",
]

_Document = dict[str, Any]
_Key = Union[int, str, float, bool, Tuple[Any, ...], list[Any]]
_JoinOn = Union[Tuple[str, str], Tuple[str, str, str]]
_Condition = Union[Tuple[str, str], Tuple[str, str, Any], dict[str, Any]]

def open(
    path: Union[str, PathLike[str], None] = None,
    *,
    fsync: Literal["always", "periodic", "never"] = "periodic",
    clock: Optional[ManualClock] = None,
) -> Database:
    """Opens a database in this process: on the folder ``path`` (recovered, then every write
    logged), or in memory only when ``path`` is None. ``clock`` replaces the system's time
    for key expiry, ``ttl`` indexes and query time limits (tests move it)."""

@final
class ManualClock:
    """A clock that moves only when told to: milliseconds since the Unix epoch."""

    def __init__(self, now_ms: Optional[int] = None) -> None: ...
    def advance(self, ms: int) -> int:
        """Moves the clock forward; returns the new time."""
    def set(self, now_ms: int) -> None: ...
    @property
    def now_ms(self) -> int: ...

def connect(url: str, *, timeout: Optional[float] = None) -> Database:
    """Connects to a running server: ``hotset://[:password@]host[:port]`` (port 7379 by default)."""

@final
class Database:
    """A Hotset database, embedded or a server's client; the same calls either way."""

    @property
    def closed(self) -> bool: ...
    def create_namespace(self, name: str, indexes: Optional[Iterable[dict[str, Any]]] = None) -> None:
        """Creates a namespace; ``indexes`` as the HTTP API takes them, one with ``"pk": True``."""
    def drop_namespace(self, name: str) -> None: ...
    def truncate(self, name: str) -> None: ...
    def namespaces(self) -> list[str]: ...
    def describe(self, name: str) -> dict[str, Any]:
        """Indexes, document count and memory of a namespace."""
    def add_index(self, namespace: str, index: dict[str, Any]) -> None: ...
    def drop_index(self, namespace: str, index: str) -> None: ...
    def insert(self, namespace: str, doc: _Document) -> None:
        """Inserts; an existing primary key raises AlreadyExistsError."""
    def update(self, namespace: str, doc: _Document) -> None:
        """Replaces; a missing primary key raises NotFoundError."""
    def upsert(self, namespace: str, doc: _Document) -> None: ...
    def insert_many(self, namespace: str, docs: Iterable[_Document]) -> int:
        """All or nothing; returns how many were written."""
    def update_many(self, namespace: str, docs: Iterable[_Document]) -> int: ...
    def upsert_many(self, namespace: str, docs: Iterable[_Document]) -> int: ...
    def delete(self, namespace: str, key: _Key) -> bool:
        """Whether a document with that primary key was deleted."""
    def get(self, namespace: str, key: _Key) -> Optional[_Document]: ...
    def query(self, namespace: str) -> Query: ...
    def sql(self, text: str) -> Result:
        """Runs one SQL statement (SELECT, INSERT, UPDATE, DELETE, DDL, EXPLAIN)."""
    def search(self, search: dict[str, Any]) -> Result:
        """Full-text search across namespaces, merged by rank (the /api/v1/search body)."""
    def transaction(self, namespace: str) -> Transaction: ...
    def call(self, name: str, *args: Any) -> Any:
        """Calls function ``name`` of a loaded Lua library (a procedure) and returns its
        return value as Python objects (the JSON ``DOC.CALL`` and ``POST
        /api/v1/functions/{name}`` answer). A str or bytes argument is passed as it is,
        anything else as its JSON text. Its document writes are applied together, or not at
        all. Embedded, it runs in this process (``redis.call`` is refused: no keys)."""
    def function_load(self, code: Union[str, bytes], replace: bool = False) -> str:
        """Loads a Lua function library (``#!lua name=<library>``), as FUNCTION LOAD
        [REPLACE]; returns its name. Kept with the database."""
    def functions(self) -> list[dict[str, Any]]:
        """Every library and its functions: ``[{"library_name", "engine", "functions":
        [{"name", "description", "flags"}]}]``."""
    def run_maintenance(self) -> dict[str, int]:
        """Runs the background work due on the database's clock now (key expiry, ``ttl``
        index expiry, snapshots); returns what each job did. Embedded only."""
    def close(self) -> None:
        """Closes the database (a client closes its connections); later calls raise
        ClosedError; closing again does nothing."""
    def __enter__(self) -> Database: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> bool: ...

@final
class Query:
    """A query on one namespace; every builder call returns the query itself."""

    def where(self, field: str, op: str, value: Any = None) -> Query:
        """``op``: = != < <= > >= in allset range like match empty any."""
    def where_not(self, field: str, op: str, value: Any = None) -> Query: ...
    def where_any(self, *conditions: _Condition) -> Query:
        """OR of conditions: ``(field, op, value)`` tuples or JSON DSL dicts."""
    def filter(self, condition: _Condition) -> Query:
        """A condition in the JSON DSL form (``{"or": [...]}``, ``{"not": {...}}``...)."""
    def match(self, field: str, text: str) -> Query:
        """Full-text match on the text index named (or covering) ``field``."""
    def highlight(self, fields: Optional[Sequence[str]] = None, pre: Optional[str] = None, post: Optional[str] = None) -> Query: ...
    def snippet(
        self,
        fields: Optional[Sequence[str]] = None,
        pre: Optional[str] = None,
        post: Optional[str] = None,
        around: Optional[int] = None,
        fragments: Optional[int] = None,
        separator: Optional[str] = None,
    ) -> Query: ...
    def sort(self, field: str, desc: bool = False) -> Query:
        """``"rank()"`` sorts by full-text rank."""
    def limit(self, limit: int) -> Query: ...
    def offset(self, offset: int) -> Query: ...
    def total(self) -> Query:
        """Asks for Result.total, the number of matches whatever the limit."""
    def timeout(self, ms: int) -> Query:
        """The query's own time limit in milliseconds (0: none of its own; a server still applies its limit)."""
    def aggregate_count(self) -> Query: ...
    def aggregate_sum(self, field: str) -> Query: ...
    def aggregate_avg(self, field: str) -> Query: ...
    def aggregate_min(self, field: str) -> Query: ...
    def aggregate_max(self, field: str) -> Query: ...
    def distinct(self, field: str) -> Query: ...
    def facet(self, fields: Sequence[str], sort: Optional[Sequence[str]] = None, offset: int = 0, limit: Optional[int] = None) -> Query: ...
    def join(self, other: Query, on: Sequence[_JoinOn], alias: Optional[str] = None, kind: Literal["left", "inner"] = "left") -> Query: ...
    def inner_join(self, other: Query, on: Sequence[_JoinOn], alias: Optional[str] = None) -> Query: ...
    def after(self, source: str, position: str) -> Query:
        """Waits before running until live-sync source `source` has applied `position` (server only)."""
    def execute(self) -> Result:
        """Runs the query without holding the GIL."""
    def explain(self) -> Result:
        """Runs the query recording its plan and step timings (Result.explain)."""
    def to_dict(self) -> dict[str, Any]:
        """The query in the JSON DSL form."""

@final
class Result(Sequence[_Document]):
    """What a query, SQL statement or search answered; a sequence of its items."""

    @property
    def items(self) -> list[_Document]: ...
    @property
    def total(self) -> Optional[int]: ...
    @property
    def aggregations(self) -> list[dict[str, Any]]: ...
    @property
    def explain(self) -> Optional[dict[str, Any]]: ...
    @property
    def affected(self) -> Optional[int]: ...
    @property
    def positions(self) -> dict[str, str]:
        """Live-sync source -> position each source's namespaces were read at (at least)."""
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[_Document]: ...
    @overload
    def __getitem__(self, index: int, /) -> _Document: ...
    @overload
    def __getitem__(self, index: slice, /) -> list[_Document]: ...

@final
class Transaction:
    """Writes applied all together by commit(), in one commit across every namespace they
    name (the transaction's own unless an operation gives ``namespace``); a context manager."""

    @property
    def namespace(self) -> str: ...
    def insert(self, doc: _Document, *, namespace: Optional[str] = None) -> None: ...
    def update(self, doc: _Document, *, namespace: Optional[str] = None) -> None: ...
    def upsert(self, doc: _Document, *, namespace: Optional[str] = None) -> None: ...
    def delete(self, key: _Key, *, namespace: Optional[str] = None) -> None: ...
    def commit(self) -> int: ...
    def rollback(self) -> None: ...
    def __len__(self) -> int: ...
    def __enter__(self) -> Transaction: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> bool: ...

class Error(Exception):
    """Base class of every error Hotset raises. The class follows ``code`` alone; the
    attributes are the error's context, None where it names nothing of the kind, and the
    same embedded and as a client."""

    code: Optional[str]
    """The stable code: ``not_found``, ``already_exists``, ``bad_document``, ``bad_query``,
    ``schema``, ``limit``, ``timeout``, ``storage``, ``bad_change``, ``bad_request``, ``read_only``."""
    namespace: Optional[str]
    index: Optional[str]
    field: Optional[str]
    key: Optional[str]
    pattern: Optional[str]
    limit_name: Optional[str]
    limit: Optional[int]
    actual: Optional[int]
    limit_ms: Optional[int]
    line: Optional[int]
    column: Optional[int]

class NotFoundError(Error): ...
class AlreadyExistsError(Error): ...
class DocumentError(Error): ...
class SchemaError(Error): ...
class QueryError(Error): ...
class LimitError(Error): ...
class QueryTimeoutError(Error): ...
class StorageError(Error): ...
class ReadOnlyError(Error): ...
class ConnectionError(Error): ...
class AuthError(ConnectionError): ...
class ClosedError(Error): ...
