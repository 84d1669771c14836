"""The Python class each stable error code raises (hotset.Error itself for bad_request):
one table for the tests that check classes by code."""
import hotset

CLASS_OF_CODE = {
    "not_found": hotset.NotFoundError,
    "already_exists": hotset.AlreadyExistsError,
    "bad_document": hotset.DocumentError,
    "bad_query": hotset.QueryError,
    "schema": hotset.SchemaError,
    "limit": hotset.LimitError,
    "timeout": hotset.QueryTimeoutError,
    "storage": hotset.StorageError,
    "bad_change": hotset.StorageError,
    "read_only": hotset.ReadOnlyError,
    "auth": hotset.AuthError,
    "oom": hotset.LimitError,
    "bad_request": hotset.Error,
}
