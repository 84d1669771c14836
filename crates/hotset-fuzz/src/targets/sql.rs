//! SQL text (any UTF-8) through `hotset_sql::parse`, and every statement it accepts run
//! on a fresh fixture database.
//!
//! Checks: parsing returns Ok or Err, never panics or overflows the stack; a SELECT's
//! query survives the JSON DSL round trip (the same query whichever language wrote it);
//! running a statement returns Ok or Err, its answer is JSON, and the database it leaves
//! keeps its indexes consistent and survives a snapshot.

use crate::{check_database, check_dsl_round_trip, check_json_answer, fixture};
use hotset_sql::Statement;

/// One input of the target.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let statement = match hotset_sql::parse(text) {
        Ok(statement) => statement,
        Err(error) => {
            assert!(!error.message.is_empty(), "an SQL error without a message");
            return;
        }
    };
    match &statement {
        Statement::Select(select) => check_dsl_round_trip(&select.query, "SELECT"),
        Statement::Update { query, .. } | Statement::Delete { query } => check_dsl_round_trip(query, "UPDATE/DELETE"),
        _ => {}
    }
    let db = fixture();
    if let Ok(answer) = hotset_sql::execute(&db, &statement, hotset_core::Durability::Wait) {
        check_json_answer(&answer, "SQL");
    }
    check_database(&db, "after an SQL statement");
}
