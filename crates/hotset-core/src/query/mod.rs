//! Queries: the AST and builder, planning, execution, sorting, joins, aggregations,
//! update/delete by query, and results.
//!
//! The life of a query: `Pred::compile` resolves fields to columns and converts values;
//! `planner::plan` picks index scans (smallest first), residual checks and the way to
//! sort; `exec::run` builds the id set, checks residuals and inner joins per row, pages
//! (walking a tree index or partially sorting), counts the total, aggregates, and
//! splices the page's stored documents into the result.

pub(crate) mod aggregate;
pub mod ast;
pub(crate) mod deadline;
pub mod dsl;
pub(crate) mod exec;
pub(crate) mod fulltext;
pub(crate) mod join;
pub mod like;
pub(crate) mod planner;
pub(crate) mod pred;
pub mod result;
pub(crate) mod scan;
pub(crate) mod sort;
pub(crate) mod update;

pub use ast::{
    Aggregation, ArithOp, Cond, Expr, Facet, Highlight, Join, JoinKind, JoinOn, Op, Query, SetField, Snippet, SortKey,
};
pub use fulltext::RANK;
pub use planner::{Choice, PlanChoice, WalkChoice};
pub use result::{AggregationResult, Explain, ExplainStep, FacetGroup, Item, QueryResult, TextExtras};
