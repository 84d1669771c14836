//! The fuzz targets' checks, one module per target (named as its binary in `fuzz/`), each
//! with `run(data)`: Ok for any input, a panic naming what broke otherwise.

pub mod document;
pub mod dsl;
pub mod fulltext_query;
pub mod resp_frame;
pub mod snapshot_block;
pub mod sql;
pub mod wal_record;

/// A target's checks on one input.
pub type Run = fn(&[u8]);

/// Every target by its name: the corpus replay walks this list, and checks that it names
/// exactly the binaries under `fuzz/fuzz_targets/`.
pub const ALL: [(&str, Run); 7] = [
    ("document", document::run),
    ("dsl", dsl::run),
    ("fulltext_query", fulltext_query::run),
    ("resp_frame", resp_frame::run),
    ("snapshot_block", snapshot_block::run),
    ("sql", sql::run),
    ("wal_record", wal_record::run),
];
