//! Full-text search through the real server: text indexes created over HTTP, searched
//! with the JSON DSL, SQL, the multi-namespace search and RESP (redis-cli), kept across a
//! restart, and bad searches refused without harm.

mod common;

use common::Server;
use serde_json::{Value, json};

fn call(server: &Server, method: &str, path: &str, body: Option<&[u8]>) -> (u16, Value) {
    let (status, body) = common::curl(server, method, path, body);
    (status, serde_json::from_str(&body).unwrap_or(Value::String(body)))
}

fn post(server: &Server, path: &str, body: &Value) -> (u16, Value) {
    call(server, "POST", path, Some(body.to_string().as_bytes()))
}

/// The ids of an answer's items. An answer without `items` (an error, say) fails the test:
/// an error must never pass for "no hits".
fn ids(result: &Value) -> Vec<i64> {
    let items = result["items"].as_array().unwrap_or_else(|| panic!("an answer without items: {result}"));
    items.iter().map(|d| d["id"].as_i64().unwrap_or_else(|| panic!("an item without an int id: {d}"))).collect()
}

/// Runs a query on `products` and returns the ids it found, asserting the call succeeded.
fn hits(server: &Server, query: &Value) -> Vec<i64> {
    let (status, result) = post(server, "/api/v1/namespaces/products/query", query);
    assert_eq!(status, 200, "{query}: {result}");
    ids(&result)
}

/// A GET that must succeed, with its answer.
fn get(server: &Server, path: &str) -> Value {
    let (status, result) = call(server, "GET", path, None);
    assert_eq!(status, 200, "GET {path}: {result}");
    result
}

fn setup(server: &Server) {
    let products = json!({"name": "products", "indexes": [
        {"field": "id", "type": "int", "index": "hash", "pk": true},
        {"field": "price", "type": "int", "index": "tree"},
        {"name": "search", "field": ["title", "description"], "index": "text",
         "text": {"weights": {"title": 3}, "synonyms": [["tv", "television"]]}},
    ]});
    let (status, created) = post(server, "/api/v1/namespaces", &products);
    assert_eq!(status, 201, "{created}");
    let articles = json!({"name": "articles", "indexes": [
        {"field": "id", "type": "int", "index": "hash", "pk": true},
        {"field": "body", "index": "text"},
    ]});
    assert_eq!(post(server, "/api/v1/namespaces", &articles).0, 201);
    let products = [
        json!({"id": 1, "price": 120, "title": "Wireless headphones", "description": "Noise cancelling, 30 hours"}),
        json!({"id": 2, "price": 40, "title": "Headphone stand", "description": "Walnut stand for a headset"}),
        json!({"id": 3, "price": 900, "title": "Television 55 inch", "description": "A big TV for the living room"}),
        json!({"id": 4, "price": 15, "title": "Путеводитель по Москве", "description": "Книга о музеях"}),
    ];
    let lines: String = products.iter().map(|p| p.to_string() + "\n").collect();
    assert_eq!(call(server, "POST", "/api/v1/namespaces/products/items", Some(lines.as_bytes())).0, 200);
    let article = json!({"id": 10, "body": "How to choose wireless headphones for running"});
    assert_eq!(call(server, "POST", "/api/v1/namespaces/articles/items", Some(article.to_string().as_bytes())).0, 200);
}

#[test]
fn text_search_over_every_protocol_and_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    setup(&server);

    // The DSL: a typo, a filter, ranks, highlights.
    let query = json!({"filter": [{"field": "search", "op": "match", "value": "hedphones"},
                                  {"field": "price", "op": "<", "value": 100}],
                       "total": true, "highlight": {"fields": ["title"], "pre": "[", "post": "]"}});
    let (status, result) = post(&server, "/api/v1/namespaces/products/query", &query);
    assert_eq!(status, 200, "{result}");
    assert_eq!((ids(&result), result["total"].clone()), (vec![2], json!(1)));
    assert_eq!(result["items"][0]["_highlight"]["title"], "[Headphone] stand");
    assert!(result["items"][0]["_rank"].as_f64().unwrap() > 0.0);
    let moscow = json!({"filter": {"field": "search", "op": "match", "value": "moskva"}});
    assert_eq!(hits(&server, &moscow), [4], "transliterated");
    let tv = json!({"filter": {"field": "search", "op": "match", "value": "tv"}});
    assert_eq!(hits(&server, &tv), [3], "synonyms");

    // SQL, best rank first; the title's weight puts the title match first.
    let (status, sql) = call(
        &server,
        "POST",
        "/api/v1/sql",
        Some(b"SELECT id, rank() FROM products WHERE MATCH(search, 'headphones') ORDER BY rank() DESC"),
    );
    assert_eq!(status, 200, "{sql}");
    assert_eq!(ids(&sql), [1, 2]);

    // Several namespaces merged by rank.
    let search = json!({"query": "wireless headphones", "namespaces": ["products", "articles"], "limit": 10});
    let (status, merged) = post(&server, "/api/v1/search", &search);
    assert_eq!(status, 200, "{merged}");
    assert_eq!(merged["total"], 3);
    let ranks: Vec<f64> = merged["items"].as_array().unwrap().iter().map(|i| i["_rank"].as_f64().unwrap()).collect();
    assert!(ranks.windows(2).all(|w| w[0] >= w[1]), "merged best first: {ranks:?}");
    let namespaces: Vec<&str> =
        merged["items"].as_array().unwrap().iter().map(|i| i["_namespace"].as_str().unwrap()).collect();
    assert!(namespaces.contains(&"articles") && namespaces.contains(&"products"), "{merged}");

    // RESP: the same search and a DSL query through redis-cli.
    let reply = common::redis_cli(&server, &["DOC.SEARCH", &search.to_string()]);
    let over_resp: Value = serde_json::from_str(reply.trim()).unwrap_or_else(|e| panic!("{reply}: {e}"));
    assert_eq!(over_resp, merged);
    let reply = common::redis_cli(&server, &["DOC.SQL", "SELECT id FROM articles WHERE MATCH(body, 'runn*')"]);
    assert_eq!(serde_json::from_str::<Value>(reply.trim()).unwrap()["items"], json!([{"id": 10}]), "{reply}");

    // Describe and metrics show the text index.
    let described = get(&server, "/api/v1/namespaces/products");
    assert_eq!(described["text_indexes"]["search"]["rows"], 4, "{described}");
    assert!(described["text_indexes"]["search"]["typo_table_bytes"].as_u64().unwrap() > 0, "{described}");
    assert!(described["index_memory_bytes"]["search"].as_u64().unwrap() > 0);
    let metrics = get(&server, "/metrics");
    let metrics = metrics.as_str().unwrap_or_else(|| panic!("metrics are text: {metrics}")).to_string();
    assert!(metrics.contains("hotset_index_memory_bytes{namespace=\"products\",index=\"search\"}"), "{metrics}");

    // Changes are searchable at once: an update, a delete.
    let update = json!({"id": 2, "price": 40, "title": "Speaker stand", "description": "Oak"});
    assert_eq!(call(&server, "POST", "/api/v1/namespaces/products/items", Some(update.to_string().as_bytes())).0, 200);
    assert_eq!(call(&server, "DELETE", "/api/v1/namespaces/products/items/1", None).0, 200);
    let headphones = json!({"filter": {"field": "search", "op": "match", "value": "headphones"}});
    assert_eq!(hits(&server, &headphones), Vec::<i64>::new());
    server.stop();

    // After a restart the index is rebuilt from the documents.
    let server = Server::start(dir.path(), &[]);
    let speaker = json!({"filter": {"field": "search", "op": "match", "value": "speaker"}});
    assert_eq!(hits(&server, &speaker), [2]);
    assert_eq!(hits(&server, &headphones), Vec::<i64>::new());
    let described = get(&server, "/api/v1/namespaces/products");
    assert_eq!(described["indexes"][2]["text"]["weights"]["title"], 3.0, "options persist: {described}");
    server.stop();
}

#[test]
fn bad_searches_get_clear_errors_and_harm_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    setup(&server);
    let query = |filter: Value| json!({"filter": filter});
    for (body, path, expected) in [
        (
            query(json!({"field": "search", "op": "match", "value": "\"open phrase"})),
            "/api/v1/namespaces/products/query",
            "not closed",
        ),
        (
            query(json!({"field": "search", "op": "match", "value": "word~9"})),
            "/api/v1/namespaces/products/query",
            "at most 2 typos",
        ),
        (
            query(json!({"field": "search", "op": "match", "value": 5})),
            "/api/v1/namespaces/products/query",
            "one string",
        ),
        (
            query(json!({"field": "price", "op": "match", "value": "x"})),
            "/api/v1/namespaces/products/query",
            "no text index",
        ),
        (
            query(json!({"field": "search", "op": "match", "value": "@color red"})),
            "/api/v1/namespaces/products/query",
            "covers title, description",
        ),
        (json!({"sort": "rank()"}), "/api/v1/namespaces/products/query", "needs a full-text MATCH"),
        (json!({"query": "x", "namespaces": ["nope"]}), "/api/v1/search", "nope"),
        (json!({"query": "x", "namespaces": []}), "/api/v1/search", "at least one namespace"),
        (json!({"query": 1, "namespaces": ["products"]}), "/api/v1/search", "query"),
        (json!({"query": "x", "namespaces": ["products"], "colour": 1}), "/api/v1/search", "unknown key"),
    ] {
        let (status, error) = post(&server, path, &body);
        assert!(status == 400 || status == 404, "{body}: {status} {error}");
        assert!(error["error"].as_str().unwrap_or_default().contains(expected), "{body}: {error}");
    }
    let bad_index = json!({"field": "title", "type": "int", "index": "text"});
    let (status, error) = post(&server, "/api/v1/namespaces/products/indexes", &bad_index);
    assert_eq!(status, 400, "{error}");
    let bad_options = json!({"field": "title", "index": "text", "text": {"languages": ["xx"]}});
    let (status, error) = post(&server, "/api/v1/namespaces/products/indexes", &bad_options);
    assert_eq!(status, 400);
    assert!(error["error"].as_str().unwrap().contains("unknown language"), "{error}");
    let not_text = json!({"id": 9, "title": 5});
    let (status, _) = call(&server, "POST", "/api/v1/namespaces/products/items", Some(not_text.to_string().as_bytes()));
    assert_eq!(status, 400, "a number where the text index reads a string");
    let reply = common::redis_cli(&server, &["DOC.SEARCH", "{not json"]);
    assert!(reply.starts_with("BAD_QUERY "), "{reply}");
    // Everything stored is still there and searchable.
    let (status, all) = post(&server, "/api/v1/search", &json!({"query": "headphones", "namespaces": ["products"]}));
    assert_eq!(status, 200, "{all}");
    assert_eq!(ids(&all), [1, 2]);
    server.stop();
}
