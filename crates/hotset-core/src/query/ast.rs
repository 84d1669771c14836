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
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
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
    Field { field: String, op: Op, values: Vec<Value> },
    And(Vec<Cond>),
    Or(Vec<Cond>),
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

    pub fn eq(field: &str, value: impl Into<Value>) -> Cond {
        Cond::new(field, Op::Eq, value)
    }

    pub fn and(self, other: Cond) -> Cond {
        match self {
            Cond::And(mut items) => {
                items.push(other);
                Cond::And(items)
            }
            first => Cond::And(vec![first, other]),
        }
    }

    pub fn or(self, other: Cond) -> Cond {
        match self {
            Cond::Or(mut items) => {
                items.push(other);
                Cond::Or(items)
            }
            first => Cond::Or(vec![first, other]),
        }
    }

    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Cond {
        Cond::Not(Box::new(self))
    }
}

/// One sort key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    pub field: String,
    pub desc: bool,
}

/// An aggregation over every document the filter matches (not just the page).
#[derive(Debug, Clone, PartialEq)]
pub enum Aggregation {
    Count,
    Sum(String),
    Avg(String),
    Min(String),
    Max(String),
    /// Counts per distinct combination of the fields' values.
    Facet(Facet),
    /// The distinct values of a field.
    Distinct(String),
}

/// A facet: document counts grouped by one or more fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Facet {
    pub fields: Vec<String>,
    /// Sort of the groups: by `count` or by one of the fields; default by count desc.
    pub sort: Vec<SortKey>,
    pub offset: usize,
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
    pub left_field: String,
    pub op: Op,
    pub right_field: String,
}

/// A join of another namespace; joined documents appear under `alias` in each result.
#[derive(Debug, Clone, PartialEq)]
pub struct Join {
    pub kind: JoinKind,
    pub on: Vec<JoinOn>,
    pub alias: String,
    /// The joined namespace, with its own filter, sort and limit per result.
    pub query: Query,
}

/// A query over one namespace.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Query {
    pub namespace: String,
    pub filter: Option<Cond>,
    pub sort: Vec<SortKey>,
    pub offset: usize,
    pub limit: Option<usize>,
    /// Ask for the exact number of matches, independent of `limit`/`offset`.
    pub total: bool,
    pub aggregations: Vec<Aggregation>,
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

    pub fn sort(mut self, field: &str, desc: bool) -> Query {
        self.sort.push(SortKey { field: field.to_string(), desc });
        self
    }

    pub fn limit(mut self, limit: usize) -> Query {
        self.limit = Some(limit);
        self
    }

    pub fn offset(mut self, offset: usize) -> Query {
        self.offset = offset;
        self
    }

    pub fn with_total(mut self) -> Query {
        self.total = true;
        self
    }

    pub fn aggregate(mut self, aggregation: Aggregation) -> Query {
        self.aggregations.push(aggregation);
        self
    }

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
    pub markers: crate::text::Markers,
}

/// Snippets: the text around matched words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    /// Fields to cut (empty: every field of the matched text indexes).
    pub fields: Vec<String>,
    pub markers: crate::text::Markers,
    /// Words kept on each side of a match.
    pub around: usize,
    /// Most fragments per field.
    pub fragments: usize,
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
    Value(Value),
    Field(String),
    Binary(Box<Expr>, ArithOp, Box<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
}

impl Expr {
    pub fn field(name: &str) -> Expr {
        Expr::Field(name.to_string())
    }
    pub fn value(value: impl Into<Value>) -> Expr {
        Expr::Value(value.into())
    }
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
