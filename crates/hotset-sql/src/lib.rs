//! SQL text into the engine's query AST, and running it.
//!
//! Owns: parsing SQL with the `sqlparser` crate (generic dialect), translating the parts
//! Hotset supports into `hotset_core` values (`Query`, conditions, updates, documents),
//! refusing everything else with an error that points at the line and column, and
//! `execute`, which runs a statement and writes its answer as JSON; and `StatementCache`
//! (`template.rs`), which keeps parsed SELECTs by their text with the string literals taken
//! out, so repeated shapes skip the parser; and `bind` (`bind.rs`): positional parameters
//! (`?`, `?N`, `$N`) written into the text as literals, for callers holding values (Lua
//! procedures' `hotset.sql`). Never: evaluate a query itself (the engine
//! does), or accept SQL it would silently half-understand.
//!
//! Supported:
//! - `SELECT * | field, ... | COUNT(*) | SUM/AVG/MIN/MAX(field) | COUNT(DISTINCT field)
//!   FROM ns [AS a] [[INNER|LEFT] JOIN other [AS b] ON a.f = b.g [AND ...]]
//!   [WHERE cond] [GROUP BY field, ...] [ORDER BY field [ASC|DESC], ...] [LIMIT n] [OFFSET n]`;
//!   `COUNT(*)` beside `*` or fields asks for the exact total; with `GROUP BY` the selected
//!   fields and `COUNT(*)` become a facet (one row per group).
//! - Conditions: `= != <> < <= > >=` (field against a literal, either side), `AND OR NOT`,
//!   brackets, `IN (...)`, `NOT IN`, `BETWEEN ... AND ...`, `LIKE`, `NOT LIKE`,
//!   `IS NULL` (empty), `IS NOT NULL`.
//! - `INSERT INTO ns (a, "b.c") VALUES (...), ...` (a quoted dotted name makes a nested
//!   field) and `INSERT INTO ns VALUES ('{json}')`: a stored key fails the statement;
//!   upserts by name: `ON CONFLICT [(pk)] DO NOTHING | DO UPDATE SET ...` (`EXCLUDED.x`),
//!   `INSERT IGNORE`, `ON DUPLICATE KEY UPDATE ...` (`VALUES(x)`, a row alias),
//!   `REPLACE INTO`, `INSERT OR REPLACE | IGNORE | ABORT` (`Conflict`);
//!   `UPDATE ns SET f = expr, ... [WHERE ...]` (`+ - * /` over literals and fields);
//!   `DELETE FROM ns [WHERE ...]`; `EXPLAIN SELECT ...`.
//! - `CREATE TABLE [IF NOT EXISTS] ns (id INT PRIMARY KEY, year INT NOT NULL, name TEXT
//!   COLLATE utf8_ci, tags TEXT[], "meta.tag" TEXT, ...)`, or with one `[CONSTRAINT c]
//!   PRIMARY KEY (a, b)`: the namespace, its hash primary key over the key column(s), and a
//!   typed store-only index per other column (`ddl.rs` has the type mapping). A table needs
//!   a primary key. `NOT NULL` is accepted but enforced for the key only.
//! - `CREATE INDEX [IF NOT EXISTS] [name] ON ns [USING BTREE|HASH] (field, "a.b", ...)
//!   [USING BTREE|HASH] [WITH (type = 'int', collate = 'utf8_ci', array = true, sparse =
//!   true)]`: a tree unless HASH, composite over several fields, named
//!   `<ns>_<field>_..._idx` when unnamed. Each field's type, collation and array flag come
//!   from the first index on it (a CREATE TABLE column); `WITH (type = ...)` types the
//!   fields nothing declares, and a `WITH` option contradicting a declaration is refused
//!   (`index.rs`).
//! - `DROP TABLE [IF EXISTS] ns, ... [RESTRICT]`; `DROP INDEX [IF EXISTS] ns.index` or
//!   `DROP INDEX [IF EXISTS] index ON ns`; `TRUNCATE [TABLE] [ONLY] ns, ...`. Several
//!   namespaces: all exist (or IF EXISTS) or nothing changes.
//! - DDL answers `{"items": [], "affected": N}`: the namespaces or indexes created, dropped
//!   or truncated (0 when IF [NOT] EXISTS found nothing to do). Refused with their position:
//!   UNIQUE, DEFAULT, REFERENCES/FOREIGN KEY, CHECK, other column options and table options,
//!   CREATE TABLE AS/LIKE, expression, partial and INCLUDE indexes, ASC/DESC on index fields,
//!   CASCADE, column types other than integers, floating and decimal numbers, text,
//!   booleans and arrays of them, and EXPLAIN of anything but SELECT.

mod bind;
mod cond;
mod ddl;
mod exec;
mod index;
mod select;
mod template;
mod write;

pub use bind::bind;
pub use exec::execute;
pub use index::IndexSpec;
pub use template::{StatementCache, TEMPLATES_MAX};

use hotset_core::Query;
use hotset_core::error::ErrorCode;
use hotset_core::query::SetField;
use serde_json::Value;
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Span;

/// A statement Hotset can run.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    Select(Select),
    /// `INSERT` (and `REPLACE INTO`): documents, and what to do with one whose primary key
    /// is already stored.
    Insert {
        namespace: String,
        docs: Vec<Value>,
        conflict: Conflict,
    },
    Update {
        query: Query,
        sets: Vec<SetField>,
    },
    Delete {
        query: Query,
    },
    /// `CREATE TABLE`: a namespace and its index definitions.
    CreateNamespace {
        name: String,
        indexes: Vec<hotset_core::IndexDef>,
        if_not_exists: bool,
    },
    /// `CREATE INDEX`: the index asked for, completed from the namespace's declared
    /// fields when it runs.
    CreateIndex {
        namespace: String,
        index: IndexSpec,
        if_not_exists: bool,
    },
    /// `DROP TABLE`: all named namespaces exist (or `if_exists`) or none is dropped.
    DropNamespaces {
        names: Vec<String>,
        if_exists: bool,
    },
    DropIndex {
        namespace: String,
        index: String,
        if_exists: bool,
    },
    /// `TRUNCATE`: all named namespaces exist or none is emptied.
    Truncate {
        namespaces: Vec<String>,
    },
}

/// What an `INSERT` does with a document whose primary key is already stored.
#[derive(Debug, Clone, PartialEq)]
pub enum Conflict {
    /// A plain `INSERT` (or `INSERT OR ABORT`): the statement fails with the duplicate key
    /// error and inserts nothing.
    Refuse,
    /// `REPLACE INTO`, `INSERT OR REPLACE`: the new document takes the stored one's place.
    Replace,
    /// `ON CONFLICT DO NOTHING`, `INSERT IGNORE`, `INSERT OR IGNORE`: the stored document
    /// stays; the new one is skipped (and not counted).
    Ignore { target: Option<Vec<String>> },
    /// `ON CONFLICT ... DO UPDATE SET`, `ON DUPLICATE KEY UPDATE`: the stored document is
    /// changed by the assignments, one list per document (values of the inserted row,
    /// `EXCLUDED.x` or `VALUES(x)`, filled in).
    Update { target: Option<Vec<String>>, sets: Vec<Vec<SetField>> },
}

/// A SELECT: the engine query and how to shape its rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    pub query: Query,
    pub projection: Projection,
}

/// What each result row holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Projection {
    /// Whole documents (joined documents nested under their alias).
    All,
    /// These fields (dotted paths), under these names.
    Fields(Vec<(String, String)>),
    /// Only aggregates: one row, each named value the total (`None`, from `COUNT(*)`) or
    /// the aggregation at that position.
    Aggregates(Vec<(String, Option<usize>)>),
    /// GROUP BY: one row per group, the grouped fields and their count (`count_as`).
    Groups { fields: Vec<String>, count_as: Option<String> },
}

/// A SQL text that cannot be run, with where the problem is (1-based; 0 when unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlError {
    pub message: String,
    pub line: u64,
    pub column: u64,
    /// The stable code every interface reports: `bad_query` for SQL that cannot be read,
    /// and the code the same mistake gets through the document API where the statement
    /// reads but says something that API refuses (a column type no index takes: `schema`;
    /// a row that is no document: `bad_document`).
    pub code: ErrorCode,
}

impl std::fmt::Display for SqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{} at line {}, column {}", self.message, self.line, self.column)
        }
    }
}

impl std::error::Error for SqlError {}

/// An error at `span`.
pub(crate) fn error_at(span: Span, message: impl Into<String>) -> SqlError {
    SqlError { message: message.into(), line: span.start.line, column: span.start.column, code: ErrorCode::BadQuery }
}

impl SqlError {
    /// A SQL error that is not unreadable SQL, at the place `span` names.
    pub fn with_code(span: Span, code: ErrorCode, message: impl Into<String>) -> SqlError {
        SqlError { code, ..error_at(span, message) }
    }

    /// An error of the statement as a whole (no place), `bad_query`.
    pub fn whole(message: impl Into<String>) -> SqlError {
        SqlError { message: message.into(), line: 0, column: 0, code: ErrorCode::BadQuery }
    }
}

/// Longest SQL text `parse` takes (bulk loads go through the document API, not SQL).
pub const SQL_BYTES_MAX: usize = 16 << 20;

/// Stack a parse may need per byte of SQL text. sqlparser builds a chain of operators
/// (`a OR b OR ...`, `1+1+...`, `x IS NULL IS NULL ...`) as a left-deep tree, one level per
/// operator, and building, translating and dropping that tree each recurse once per level:
/// measured here at about 70 bytes a level in a release build (twice that is budgeted), and
/// a level can cost as little as two bytes of text (`+1`). Debug builds use several times more per frame.
const STACK_BYTES_PER_SQL_BYTE: usize = if cfg!(debug_assertions) { 512 } else { 128 };
/// Stack kept free for what runs on top of the deepest level.
const STACK_BYTES_BASE: usize = 256 << 10;

/// Whether `sql` only reads: its first word (after blanks and comments) is `SELECT` or
/// `EXPLAIN`. A cheap look ahead of parsing, for an interface choosing where to run the
/// statement; the statement itself is still parsed and checked in full.
pub fn reads_only(sql: &str) -> bool {
    let mut rest = sql;
    loop {
        rest = rest.trim_start();
        if let Some(line) = rest.strip_prefix("--") {
            rest = line.split_once('\n').map_or("", |(_, after)| after);
        } else if let Some(block) = rest.strip_prefix("/*") {
            rest = block.split_once("*/").map_or("", |(_, after)| after);
        } else if let Some(bracketed) = rest.strip_prefix('(') {
            rest = bracketed;
        } else {
            break;
        }
    }
    let word: String = rest.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    word.eq_ignore_ascii_case("select") || word.eq_ignore_ascii_case("explain")
}

/// Parses one SQL statement.
///
/// Whatever the text, this never exhausts the caller's stack: when the thread it runs on
/// has less stack left than the text could need, the parse runs on a stack allocated for
/// it (`stacker`), sized by the text's length (memory is committed only as deep as the
/// tree actually goes). The tree's depth is then bounded again where it becomes an
/// engine query (`condition_depth_max`, `expression_depth_max`).
pub fn parse(sql: &str) -> Result<Statement, SqlError> {
    if sql.len() > SQL_BYTES_MAX {
        return Err(SqlError {
            message: format!("the SQL text is {} bytes, over the limit sql_bytes_max ({SQL_BYTES_MAX})", sql.len()),
            line: 0,
            column: 0,
            code: ErrorCode::Limit,
        });
    }
    let needed = STACK_BYTES_BASE + sql.len() * STACK_BYTES_PER_SQL_BYTE;
    stacker::maybe_grow(needed, needed, || parse_on_this_stack(sql))
}

fn parse_on_this_stack(sql: &str) -> Result<Statement, SqlError> {
    let statements = Parser::parse_sql(&GenericDialect {}, sql).map_err(|error| parser_error(error, sql))?;
    let statement = match statements.as_slice() {
        [one] => one,
        [] => return Err(SqlError::whole("no SQL statement")),
        _ => return Err(SqlError::whole("one statement at a time")),
    };
    translate(statement, false, sql).map_err(|error| match error.line {
        // A refusal of the statement as a whole points at its first word.
        0 => {
            let (line, column) = start_of(sql);
            SqlError { line, column, ..error }
        }
        _ => error,
    })
}

/// The statement as the engine's; `sql` is its text, for naming what is not supported.
fn translate(statement: &sqlparser::ast::Statement, explain: bool, sql: &str) -> Result<Statement, SqlError> {
    use sqlparser::ast::Statement as S;
    match statement {
        S::Query(query) => {
            let mut select = select::select(query)?;
            select.query.explain = explain;
            Ok(Statement::Select(select))
        }
        S::Explain { statement, .. } if !explain => translate(statement, true, sql),
        S::Insert(insert) if !explain => write::insert(insert),
        S::Update { table, assignments, from, selection, returning, limit, .. } if !explain => {
            write::update(table, assignments, from.is_some(), selection.as_ref(), returning.is_some(), limit.as_ref())
        }
        S::Delete(delete) if !explain => write::delete(delete),
        S::CreateTable(table) if !explain => ddl::create_table(table),
        S::CreateIndex(index) if !explain => index::create_index(index),
        S::Drop { .. } if !explain => ddl::drop(statement),
        S::Truncate { .. } if !explain => ddl::truncate(statement),
        other if explain => Err(error_at(ddl::statement_span(other), "EXPLAIN explains SELECT only")),
        other => Err(error_at(
            ddl::statement_span(other),
            format!(
                "unsupported statement: {} (supported: SELECT, INSERT, UPDATE, DELETE, EXPLAIN SELECT, \
                 CREATE TABLE, CREATE INDEX, DROP TABLE, DROP INDEX, TRUNCATE)",
                // The text's own first words: displaying the statement could recurse as
                // deep as the statement nests.
                shown(sql.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
            ),
        )),
    }
}

/// An expression or value as error messages show it: its SQL text, cut short (a refused
/// expression may be a generated chain of thousands of terms).
pub(crate) fn shown(what: impl std::fmt::Display) -> String {
    const SHOWN_CHARS_MAX: usize = 96;
    let text = what.to_string();
    match text.char_indices().nth(SHOWN_CHARS_MAX) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// Where an expression starts, found without recursion. `Spanned::span` unions the spans
/// of a whole subtree recursively, so on a generated chain of 100,000 operators it alone
/// would need megabytes of stack; the start of a chain is the start of its first operand.
pub(crate) fn start(expr: &sqlparser::ast::Expr) -> Span {
    use sqlparser::ast::{Expr, Spanned};
    let mut expr = expr;
    loop {
        expr = match expr {
            Expr::BinaryOp { left, .. } => left,
            Expr::IsNull(inner)
            | Expr::IsNotNull(inner)
            | Expr::IsTrue(inner)
            | Expr::IsFalse(inner)
            | Expr::IsNotTrue(inner)
            | Expr::IsNotFalse(inner)
            | Expr::IsUnknown(inner)
            | Expr::IsNotUnknown(inner) => inner,
            Expr::Cast { expr, .. }
            | Expr::Collate { expr, .. }
            | Expr::InList { expr, .. }
            | Expr::Between { expr, .. }
            | Expr::Like { expr, .. }
            | Expr::ILike { expr, .. } => expr,
            Expr::Function(function) => return function.name.span(),
            other => return other.span(),
        };
    }
}

/// The position of the first character of `sql` that is not white space (1-based).
fn start_of(sql: &str) -> (u64, u64) {
    let skipped = &sql[..sql.len() - sql.trim_start().len()];
    let line = skipped.matches('\n').count() as u64 + 1;
    let column = skipped.rsplit('\n').next().unwrap_or("").chars().count() as u64 + 1;
    (line, column)
}

/// The position just past the last character of `sql` (1-based line and column).
fn end_of(sql: &str) -> (u64, u64) {
    let line = sql.lines().count().max(1) as u64 + u64::from(sql.ends_with('\n'));
    let last = if sql.ends_with('\n') { "" } else { sql.lines().last().unwrap_or("") };
    (line, last.chars().count() as u64 + 1)
}

/// sqlparser's error text carries "at Line: L, Column: C"; keep the position as numbers.
/// Errors at the end of the text ("found: EOF") carry none: they point past its end.
fn parser_error(error: sqlparser::parser::ParserError, sql: &str) -> SqlError {
    let text = error.to_string();
    let text = text.strip_prefix("sql parser error: ").unwrap_or(&text).to_string();
    let number_after = |label: &str| -> u64 {
        text.find(label)
            .map(|at| text[at + label.len()..].chars().take_while(char::is_ascii_digit).collect::<String>())
            .and_then(|digits| digits.parse().ok())
            .unwrap_or(0)
    };
    let (line, column) = match (number_after("Line: "), number_after("Column: ")) {
        (0, _) => end_of(sql),
        position => position,
    };
    let message = match text.find(" at Line: ") {
        Some(at) => text[..at].to_string(),
        None => text.clone(),
    };
    SqlError { message, line, column, code: ErrorCode::BadQuery }
}

#[cfg(test)]
mod tests;
