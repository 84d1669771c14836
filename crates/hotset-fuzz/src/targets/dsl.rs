//! The JSON query DSL (`query_from_json`) and the search request (`Search::from_json`)
//! on any JSON value, and every query they accept run on the fixture database.
//!
//! Checks: Ok or Err, never a panic; `query_to_json` of an accepted query reads back as
//! the same query; running it returns Ok or Err and its answer is JSON.

use crate::{check_dsl_round_trip, check_json_answer, fixture};
use hotset_core::query::dsl;
use hotset_core::{Database, Search};
use serde_json::Value;
use std::sync::OnceLock;

/// Queries only read, so one fixture serves every input.
fn database() -> &'static Database {
    static DATABASE: OnceLock<Database> = OnceLock::new();
    DATABASE.get_or_init(fixture)
}

/// One input of the target.
pub fn run(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else { return };
    let db = database();
    if let Ok(query) = dsl::query_from_json(&value, None) {
        check_dsl_round_trip(&query, "DSL");
        if let Ok(result) = db.query(&query) {
            let mut answer = Vec::new();
            dsl::write_result_json(&result, &mut answer);
            check_json_answer(&answer, "DSL query");
        }
    }
    // The same object under a route that names the namespace.
    if let Ok(query) = dsl::query_from_json(&value, Some(crate::ITEMS)) {
        check_dsl_round_trip(&query, "DSL with the namespace given");
    }
    if let Ok(search) = Search::from_json(&value) {
        let _ = db.search(&search);
    }
}
