//! The query AST: one description of a query, whichever language wrote it.
//!
//! Owns: `Query`, `Cond` (conditions with AND / OR / NOT), sorting, paging, totals,
//! aggregations, joins and update/delete by query, plus the builder methods that make
//! them pleasant to write from Rust. SQL and the JSON DSL produce these same values.
//! Never: look at data or indexes (that is the planner's job).

use serde_json::Value;

/// A condition operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Some value of the field equals the value.
    Eq,
    /// No value of the field equals the value (so an absent field matches).
    Ne,
    /// Some value of the field is less than the value.
    Lt,
    /// Some value of the field is less than or equal to the value.
    Le,
    /// Some value of the field is greater than the value.
    Gt,
    /// Some value of the field is greater than or equal to the value.
    Ge,
    /// Inclusive range: two values, low and high.
    Range,
    /// Any of the values.
    In,
    /// Every one of the values (for array fields).
    AllSet,
    /// The field is absent, null or an empty array.
    Empty,
    /// The field has at least one value.
    Any,
    /// SQL LIKE: `%` any run of characters, `_` one character, `\` escapes.
    Like,
    /// Full-text match: one value, the query text (see `text::parse`), on a text index
    /// named by the field (the index's name, or one of its fields).
    Match,
}

impl Op {
    /// Parses the operator as SQL writes it (case-insensitive for words).
    pub fn parse(text: &str) -> Option<Op> {
        Some(match text.to_ascii_lowercase().as_str() {
            "=" | "==" | "eq" => Op::Eq,
            "!=" | "<>" | "ne" => Op::Ne,
            "<" | "lt" => Op::Lt,
            "<=" | "le" => Op::Le,
            ">" | "gt" => Op::Gt,
            ">=" | "ge" => Op::Ge,
            "range" | "between" => Op::Range,
            "in" | "set" => Op::In,
            "allset" => Op::AllSet,
            "empty" | "is null" => Op::Empty,
            "any" | "is not null" => Op::Any,
            "like" => Op::Like,
            "match" => Op::Match,
            _ => return None,
        })
    }

    /// The operator as SQL writes it (`<=`, `IN`), for messages and `EXPLAIN`.
    pub fn name(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Range => "RANGE",
            Op::In => "IN",
            Op::AllSet => "ALLSET",
            Op::Empty => "EMPTY",
            Op::Any => "ANY",
            Op::Like => "LIKE",
            Op::Match => "MATCH",
        }
    }
}

/// A filter: field conditions combined with AND / OR / NOT.
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    /// One field compared with values; `Cond::new` builds it.
    Field {
        /// The field's path, dotted for nested fields (`meta.tag`).
        field: String,
        /// How the field's values are compared.
        op: Op,
        /// The operand: one value for most operators, two for `Range`, any number for
        /// `In`/`AllSet`, none for `Empty`/`Any`.
        values: Vec<Value>,
    },
    /// Every condition holds.
    And(Vec<Cond>),
    /// At least one condition holds.
    Or(Vec<Cond>),
    /// The condition does not hold.
    Not(Box<Cond>),
}

impl Cond {
    /// `field op value`; for `In`/`AllSet` pass a JSON array, for `Range` a two-item
    /// array, for `Empty`/`Any` anything (ignored).
    pub fn new(field: &str, op: Op, value: impl Into<Value>) -> Cond {
        let value = value.into();
        let values = match (op, value) {
            (Op::Empty | Op::Any, _) => Vec::new(),
            (Op::In | Op::AllSet | Op::Range, Value::Array(items)) => items,
            (_, value) => vec![value],
        };
        Cond::Field { field: field.to_string(), op, values }
    }

    /// `field = value`.
    pub fn eq(field: &str, value: impl Into<Value>) -> Cond {
        Cond::new(field, Op::Eq, value)
    }

    /// Both conditions; ANDing onto an `And` appends to it instead of nesting.
    pub fn and(self, other: Cond) -> Cond {
        match self {
            Cond::And(mut items) => {
                items.push(other);
                Cond::And(items)
            }
            first => Cond::And(vec![first, other]),
        }
    }

    /// Either condition; ORing onto an `Or` appends to it instead of nesting.
    pub fn or(self, other: Cond) -> Cond {
        match self {
            Cond::Or(mut items) => {
                items.push(other);
                Cond::Or(items)
            }
            first => Cond::Or(vec![first, other]),
        }
    }

    /// The negation of this condition.
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Cond {
        Cond::Not(Box::new(self))
    }
}

/// One sort key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    /// The field's path; `rank()` sorts by full-text rank, and in a facet's sort
    /// `count` sorts by the group's count.
    pub field: String,
    /// Descending (largest first) instead of ascending.
    pub desc: bool,
}

/// An aggregation over every document the filter matches (not just the page).
#[derive(Debug, Clone, PartialEq)]
pub enum Aggregation {
    /// The number of matching documents.
    Count,
    /// The sum of every numeric value of the field (each element of an array): an
    /// integer while it is exact, else a double; `null` when there is none.
    Sum(String),
    /// The mean of the field's numeric values, a double; `null` when there is none.
    Avg(String),
    /// The smallest numeric value of the field; `null` when there is none.
    Min(String),
    /// The largest numeric value of the field; `null` when there is none.
    Max(String),
    /// Counts per distinct combination of the fields' values.
    Facet(Facet),
    /// The distinct values of a field.
    Distinct(String),
}

/// A facet: document counts grouped by one or more fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Facet {
    /// The fields to group by. With one field each distinct value a document has is a
    /// group; with several, documents group by the first value of each field.
    pub fields: Vec<String>,
    /// Sort of the groups: by `count` or by one of the fields; default by count desc.
    pub sort: Vec<SortKey>,
    /// Groups skipped before the first one returned.
    pub offset: usize,
    /// Most groups returned (`None`: all of them).
    pub limit: Option<usize>,
}

/// How a join combines documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    /// Keeps only documents with at least one joined document.
    Inner,
    /// Keeps every document; the joined list may be empty.
    Left,
}

/// One `ON` condition: `left_field op right_field`.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinOn {
    /// A field of the queried namespace's documents.
    pub left_field: String,
    /// One of `=`, `!=`, `<`, `<=`, `>`, `>=`; the condition holds when some value of
    /// each side compares so.
    pub op: Op,
    /// A field of the joined namespace's documents; strings compare with its collation.
    pub right_field: String,
}

/// A join of another namespace; joined documents appear under `alias` in each result.
#[derive(Debug, Clone, PartialEq)]
pub struct Join {
    /// Whether documents without a joined document are kept.
    pub kind: JoinKind,
    /// The `ON` conditions, all of which must hold (at least one).
    pub on: Vec<JoinOn>,
    /// The name the joined documents appear under in each result item.
    pub alias: String,
    /// The joined namespace, with its own filter, sort and limit per result.
    pub query: Query,
}

/// A query over one namespace.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Query {
    /// The namespace queried.
    pub namespace: String,
    /// The condition documents must meet (`None`: every document).
    pub filter: Option<Cond>,
    /// Sort keys, the first the most significant. Empty: by rank when there is a
    /// `MATCH`, else in no promised order.
    pub sort: Vec<SortKey>,
    /// Matches skipped before the first one returned.
    pub offset: usize,
    /// Most documents returned (`None`: all of them).
    pub limit: Option<usize>,
    /// Ask for the exact number of matches, independent of `limit`/`offset`.
    pub total: bool,
    /// Aggregations over every match, not only the returned page.
    pub aggregations: Vec<Aggregation>,
    /// Other namespaces joined to each returned document.
    pub joins: Vec<Join>,
    /// Record the plan and per-step timings in the result.
    pub explain: bool,
    /// Mark matched words in whole fields (`_highlight` of each item).
    pub highlight: Option<Highlight>,
    /// Cut the text around matched words (`_snippet` of each item).
    pub snippet: Option<Snippet>,
    /// Most time the query may run, measured on the database's monotonic clock
    /// (`Clock::monotonic`); past it the query stops and fails with `Error::Timeout`
    /// (`None`: no limit). Checked between rows, so one step that does not loop over rows
    /// (a sort, building an index set) finishes before the check.
    pub timeout: Option<std::time::Duration>,
}

impl Query {
    /// A query of every document of `namespace`, with nothing else set.
    pub fn new(namespace: &str) -> Query {
        Query { namespace: namespace.to_string(), ..Query::default() }
    }

    /// Adds a condition, ANDed with the filter so far.
    pub fn filter(mut self, cond: Cond) -> Query {
        self.filter = Some(match self.filter.take() {
            None => cond,
            Some(existing) => existing.and(cond),
        });
        self
    }

    /// `where field op value` (see `Cond::new`).
    pub fn where_(self, field: &str, op: Op, value: impl Into<Value>) -> Query {
        self.filter(Cond::new(field, op, value))
    }

    /// `MATCH(field, text)`: full-text search on the text index named `field` or
    /// covering it, ANDed with the filter so far. Results sort by rank unless sorted.
    pub fn matching(self, field: &str, text: &str) -> Query {
        self.filter(Cond::new(field, Op::Match, text))
    }

    /// Adds a sort key after those already given.
    pub fn sort(mut self, field: &str, desc: bool) -> Query {
        self.sort.push(SortKey { field: field.to_string(), desc });
        self
    }

    /// Returns at most `limit` documents.
    pub fn limit(mut self, limit: usize) -> Query {
        self.limit = Some(limit);
        self
    }

    /// Skips the first `offset` matches.
    pub fn offset(mut self, offset: usize) -> Query {
        self.offset = offset;
        self
    }

    /// Asks for the exact number of matches (`QueryResult::total`).
    pub fn with_total(mut self) -> Query {
        self.total = true;
        self
    }

    /// Adds an aggregation over every match.
    pub fn aggregate(mut self, aggregation: Aggregation) -> Query {
        self.aggregations.push(aggregation);
        self
    }

    /// Joins `query`'s namespace on `(left field, op, right field)` conditions; the
    /// joined documents appear under `alias`.
    pub fn join(mut self, kind: JoinKind, query: Query, on: &[(&str, Op, &str)], alias: &str) -> Query {
        self.joins.push(Join {
            kind,
            on: on
                .iter()
                .map(|(left, op, right)| JoinOn {
                    left_field: left.to_string(),
                    op: *op,
                    right_field: right.to_string(),
                })
                .collect(),
            alias: alias.to_string(),
            query,
        });
        self
    }

    /// Records the plan and each step's time in the result (`QueryResult::explain`).
    pub fn explain(mut self) -> Query {
        self.explain = true;
        self
    }
}

/// Highlighting of matched words in whole fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Highlight {
    /// Fields to mark (empty: every field of the matched text indexes).
    pub fields: Vec<String>,
    /// What matched words are wrapped in (`<b>` and `</b>` by default).
    pub markers: crate::text::Markers,
}

/// Snippets: the text around matched words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    /// Fields to cut (empty: every field of the matched text indexes).
    pub fields: Vec<String>,
    /// What matched words are wrapped in (`<b>` and `</b>` by default).
    pub markers: crate::text::Markers,
    /// Words kept on each side of a match.
    pub around: usize,
    /// Most fragments per field.
    pub fragments: usize,
    /// What joins a field's fragments (` … ` by default).
    pub separator: String,
}

impl Default for Snippet {
    fn default() -> Snippet {
        Snippet {
            fields: Vec::new(),
            markers: crate::text::Markers::default(),
            around: 5,
            fragments: 3,
            separator: " … ".to_string(),
        }
    }
}

/// An arithmetic expression over a document's own fields, for update by query.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A constant.
    Value(Value),
    /// The field's first value in the document before the update; `null` when absent.
    Field(String),
    /// Arithmetic on two numbers. Integers stay exact (overflow is an error), a double
    /// on either side makes a double, and `null` on either side gives `null`.
    Binary(Box<Expr>, ArithOp, Box<Expr>),
}

/// An arithmetic operator of `Expr::Binary`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`: integers that do not divide exactly give a double; by zero is an error.
    Div,
}

impl Expr {
    /// The value of the field `name` (a dotted path).
    pub fn field(name: &str) -> Expr {
        Expr::Field(name.to_string())
    }
    /// A constant.
    pub fn value(value: impl Into<Value>) -> Expr {
        Expr::Value(value.into())
    }
    /// `self op right`.
    pub fn binary(self, op: ArithOp, right: Expr) -> Expr {
        Expr::Binary(Box::new(self), op, Box::new(right))
    }
}

/// A change made by update-by-query to each matching document.
#[derive(Debug, Clone, PartialEq)]
pub enum SetField {
    /// Set a (possibly nested) field to the value of an expression.
    Set(String, Expr),
    /// Remove a field.
    Drop(String),
}
