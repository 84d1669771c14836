//! INFO over RESP reports what the server holds.

mod common;

use common::Server;

fn field(info: &str, name: &str) -> usize {
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("INFO has no {name}: {info}"))
        .trim()
        .parse()
        .unwrap()
}

/// Regression: `used_memory` counted key-value keys only (15 KB reported with a 75 MB
/// namespace loaded). It is now the allocator's count, which holds both.
#[test]
fn used_memory_counts_documents_and_keys() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut redis = server.client();
    let empty: String = redis::cmd("INFO").arg("memory").query(&mut redis).unwrap();
    let indexes =
        r#"[{"field":"id","type":"int","index":"hash","pk":true},{"field":"name","type":"string","index":"tree"}]"#;
    let () = redis::cmd("DOC.NSCREATE").arg("people").arg(indexes).query(&mut redis).unwrap();
    let text = "x".repeat(400);
    let mut stored = 0;
    for batch in 0..20 {
        let docs: Vec<String> =
            (0..100).map(|i| format!(r#"{{"id":{},"name":"n{i}","text":"{text}"}}"#, batch * 100 + i)).collect();
        stored += docs.iter().map(String::len).sum::<usize>();
        let written: usize = redis::cmd("DOC.UPSERT").arg("people").arg(&docs).query(&mut redis).unwrap();
        assert_eq!(written, 100);
    }
    let () = redis::cmd("SET").arg("k").arg("v".repeat(10_000)).query(&mut redis).unwrap();
    let info: String = redis::cmd("INFO").arg("memory").query(&mut redis).unwrap();
    let (used, namespaces, keyspaces) =
        (field(&info, "used_memory"), field(&info, "used_memory_namespaces"), field(&info, "used_memory_keyspaces"));
    // used_memory is the allocator's count of everything the process holds; the engines'
    // own counts of documents and keys are part of it.
    assert!(used >= namespaces + keyspaces, "{info}");
    assert!(namespaces >= stored, "documents of {stored} bytes, namespaces counted {namespaces}: {info}");
    assert!(keyspaces >= 10_000, "{info}");
    assert!(used > field(&empty, "used_memory") + stored, "{info}");
    server.stop();
}
