//! SELECT into a `Query` and a projection.
//!
//! Owns: FROM and JOIN ... ON, WHERE (split per namespace at its top-level ANDs), the
//! select list (fields, `*`, `COUNT(*)`, aggregate functions, and the full-text `rank()`,
//! `highlight(f)`, `snippet(f)`), GROUP BY as a facet, ORDER BY (`rank()` too), LIMIT and
//! OFFSET. Never: accept a clause it would ignore (HAVING, DISTINCT, window
//! functions, subqueries, several FROM tables): each is an error at its position.

use crate::cond::{Scope, Side, chain, comparison, conjuncts, field, function_args, literal, turned_around};
use crate::{Projection, Select, SqlError, error_at, shown, start};
use hotset_core::query::{Facet, Highlight, Join, JoinKind, JoinOn, RANK, Snippet, SortKey};
use hotset_core::text::Markers;
use hotset_core::{Aggregation, Query};
use sqlparser::ast::{
    BinaryOperator, DuplicateTreatment, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr,
    JoinConstraint, JoinOperator, LimitClause, OrderByKind, SelectItem, SetExpr, Spanned, TableFactor,
};
use sqlparser::tokenizer::Span;

/// What one item of the select list asks for.
enum Item {
    Star,
    Field {
        path: String,
        name: String,
    },
    CountAll {
        name: String,
    },
    Aggregate {
        aggregation: Aggregation,
        name: String,
    },
    /// `rank()`, `highlight(f)`, `snippet(f)`: an extra of each row (with the markup to
    /// ask the query for: kind, field, markers).
    Text {
        path: String,
        name: String,
        markup: Option<(String, String, Markers)>,
    },
}

/// Where a query starts: its SELECT keyword (`Spanned::span` would walk every expression
/// in it). Other bodies point nowhere, and the caller names the statement's first word.
fn query_start(statement: &sqlparser::ast::Query) -> Span {
    match &*statement.body {
        SetExpr::Select(select) => select.select_token.0.span,
        _ => Span::empty(),
    }
}

pub(crate) fn select(statement: &sqlparser::ast::Query) -> Result<Select, SqlError> {
    let unsupported = |what: &str| error_at(query_start(statement), format!("{what} is not supported"));
    if statement.with.is_some() {
        return Err(unsupported("WITH"));
    }
    if statement.fetch.is_some() || !statement.locks.is_empty() {
        return Err(unsupported("FETCH / FOR UPDATE"));
    }
    let SetExpr::Select(select) = &*statement.body else {
        return Err(error_at(query_start(statement), "only a plain SELECT is supported (no UNION, VALUES, subquery)"));
    };
    if select.distinct.is_some() {
        return Err(error_at(
            select.select_token.0.span,
            "SELECT DISTINCT is not supported; use GROUP BY or COUNT(DISTINCT field)",
        ));
    }
    if let Some(having) = &select.having {
        return Err(error_at(start(having), "HAVING is not supported"));
    }
    let [from] = select.from.as_slice() else {
        return Err(error_at(
            select.select_token.0.span,
            "SELECT needs exactly one FROM namespace (use JOIN for more)",
        ));
    };
    let (namespace, alias) = table(&from.relation)?;
    let mut scope = Scope { main: vec![namespace.clone()], joins: Vec::new() };
    scope.main.extend(alias);
    let mut joined = Vec::new();
    for join in &from.joins {
        let (name, alias) = table(&join.relation)?;
        scope.joins.push(alias.unwrap_or_else(|| name.clone()));
        joined.push(name);
    }
    let mut query = Query::new(&namespace);
    for (position, join) in from.joins.iter().enumerate() {
        let (kind, constraint) = match &join.join_operator {
            JoinOperator::Join(c) | JoinOperator::Inner(c) => (JoinKind::Inner, c),
            JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (JoinKind::Left, c),
            _ => return Err(error_at(join.relation.span(), "only INNER and LEFT joins are supported")),
        };
        let JoinConstraint::On(on) = constraint else {
            return Err(error_at(join.relation.span(), "a join needs ON conditions"));
        };
        let mut conditions = Vec::new();
        join_on(on, &scope, position, &mut conditions)?;
        query.joins.push(Join {
            kind,
            on: conditions,
            alias: scope.joins[position].clone(),
            query: Query::new(&joined[position]),
        });
    }
    if let Some(selection) = &select.selection {
        let mut parts = Vec::new();
        conjuncts(selection, &scope, &mut parts)?;
        for (side, cond) in parts {
            match side {
                Side::Main => query = query.filter(cond),
                Side::Join(i) => {
                    let joined = std::mem::take(&mut query.joins[i].query);
                    query.joins[i].query = joined.filter(cond);
                }
            }
        }
    }
    let items = select.projection.iter().map(|item| select_item(item, &scope)).collect::<Result<Vec<_>, _>>()?;
    let group_by = match &select.group_by {
        GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => {
            exprs.iter().map(|e| main_field(e, &scope)).collect::<Result<Vec<_>, _>>()?
        }
        other => return Err(error_at(select.select_token.0.span, format!("unsupported GROUP BY {}", shown(other)))),
    };
    let sort = order_by(statement, &scope)?;
    let (limit, offset) = limit_offset(statement)?;
    let projection = if group_by.is_empty() {
        plain(&mut query, items, sort, limit, offset, statement)?
    } else {
        grouped(&mut query, items, group_by, sort, limit, offset, statement)?
    };
    Ok(Select { query, projection })
}

/// The select list of a query without GROUP BY.
fn plain(
    query: &mut Query,
    items: Vec<Item>,
    sort: Vec<SortKey>,
    limit: Option<usize>,
    offset: usize,
    statement: &sqlparser::ast::Query,
) -> Result<Projection, SqlError> {
    query.sort = sort;
    query.limit = limit;
    query.offset = offset;
    let rows = items.iter().any(|i| matches!(i, Item::Star | Item::Field { .. } | Item::Text { .. }));
    let mut fields = Vec::new();
    let mut aggregates = Vec::new();
    let mut star = false;
    let mut extras = Vec::new();
    for item in items {
        match item {
            Item::Star => star = true,
            Item::Field { path, name } => fields.push((path, name)),
            Item::Text { path, name, markup } => {
                ask_markup(query, markup);
                extras.push((path, name));
            }
            Item::CountAll { name } => {
                query.total = true;
                aggregates.push((name, None));
            }
            Item::Aggregate { aggregation, name } => {
                aggregates.push((name, Some(query.aggregations.len())));
                query.aggregations.push(aggregation);
            }
        }
    }
    if rows {
        if star && !fields.is_empty() {
            return Err(error_at(query_start(statement), "select either * or a list of fields, not both"));
        }
        // With `*` the extras come as the documents' `_rank`, `_highlight`, `_snippet`.
        fields.extend(extras);
        return Ok(if star { Projection::All } else { Projection::Fields(fields) });
    }
    // Only aggregates: one row of them, and no documents.
    query.limit = Some(0);
    query.offset = 0;
    Ok(Projection::Aggregates(aggregates))
}

/// Asks the query for the highlight or snippet of a field a select item names.
fn ask_markup(query: &mut Query, markup: Option<(String, String, Markers)>) {
    let Some((kind, field, markers)) = markup else { return };
    if kind == "highlight" {
        let highlight =
            query.highlight.get_or_insert_with(|| Highlight { fields: Vec::new(), markers: markers.clone() });
        highlight.fields.push(field);
        highlight.markers = markers;
    } else {
        let snippet = query.snippet.get_or_insert_with(Snippet::default);
        snippet.fields.push(field);
        snippet.markers = markers;
    }
}

/// The select list of a GROUP BY query: the grouped fields and COUNT(*), as a facet.
fn grouped(
    query: &mut Query,
    items: Vec<Item>,
    fields: Vec<String>,
    sort: Vec<SortKey>,
    limit: Option<usize>,
    offset: usize,
    statement: &sqlparser::ast::Query,
) -> Result<Projection, SqlError> {
    let mut count_as = None;
    for item in items {
        match item {
            Item::Field { path, .. } if fields.contains(&path) => {}
            Item::CountAll { name } => count_as = Some(name),
            _ => {
                return Err(error_at(
                    query_start(statement),
                    "with GROUP BY, select the grouped fields and COUNT(*) only",
                ));
            }
        }
    }
    for key in &sort {
        if key.field != "count" && !fields.contains(&key.field) {
            return Err(error_at(
                query_start(statement),
                format!("ORDER BY {} is neither grouped nor COUNT(*)", key.field),
            ));
        }
    }
    query.aggregations.push(Aggregation::Facet(Facet { fields: fields.clone(), sort, offset, limit }));
    query.limit = Some(0);
    Ok(Projection::Groups { fields, count_as })
}

/// `name [AS alias]` of FROM or JOIN.
fn table(relation: &TableFactor) -> Result<(String, Option<String>), SqlError> {
    match relation {
        TableFactor::Table { name, alias, args: None, .. } if name.0.len() == 1 => {
            Ok((name.0[0].to_string().trim_matches('"').to_string(), alias.as_ref().map(|a| a.name.value.clone())))
        }
        other => Err(error_at(other.span(), "expected a namespace name")),
    }
}

/// The ON conditions of join `position`: comparisons of a main field with a joined one.
fn join_on(expr: &Expr, scope: &Scope, position: usize, out: &mut Vec<JoinOn>) -> Result<(), SqlError> {
    match expr {
        Expr::Nested(inner) => join_on(inner, scope, position, out),
        Expr::BinaryOp { op: BinaryOperator::And, .. } => {
            chain(expr, &BinaryOperator::And).into_iter().try_for_each(|part| join_on(part, scope, position, out))
        }
        Expr::BinaryOp { left, op, right } => {
            let op = comparison(op).ok_or_else(|| error_at(start(expr), format!("unsupported operator {op} in ON")))?;
            let (l, r) = (field(left, scope)?, field(right, scope)?);
            let joined = Side::Join(position);
            let on = match (l, r) {
                ((Side::Main, main), (side, other)) if side == joined => {
                    JoinOn { left_field: main, op, right_field: other }
                }
                ((side, other), (Side::Main, main)) if side == joined => {
                    JoinOn { left_field: main, op: turned_around(op), right_field: other }
                }
                _ => {
                    return Err(error_at(
                        start(expr),
                        "ON compares a field of the main namespace with a field of the joined one (qualify them)",
                    ));
                }
            };
            out.push(on);
            Ok(())
        }
        other => Err(error_at(start(other), format!("unsupported ON condition {}", shown(other)))),
    }
}

fn select_item(item: &SelectItem, scope: &Scope) -> Result<Item, SqlError> {
    let (expr, alias) = match item {
        SelectItem::Wildcard(_) => return Ok(Item::Star),
        SelectItem::UnnamedExpr(expr) => (expr, None),
        SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.clone())),
        other => return Err(error_at(other.span(), format!("unsupported select item {}", shown(other)))),
    };
    if let Some(item) = text_item(expr, alias.clone())? {
        return Ok(item);
    }
    if let Expr::Function(function) = expr {
        let name = function.name.to_string().to_ascii_lowercase();
        let FunctionArguments::List(list) = &function.args else {
            return Err(error_at(start(expr), format!("{name} needs arguments")));
        };
        let distinct = matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct));
        let argument = match list.args.as_slice() {
            [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] => None,
            [FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))] => Some(main_field(arg, scope)?),
            _ => return Err(error_at(start(expr), format!("{name} takes one field or *"))),
        };
        let label = alias.unwrap_or_else(|| expr.to_string().to_ascii_lowercase());
        let aggregation = match (name.as_str(), argument, distinct) {
            ("count", None, false) => return Ok(Item::CountAll { name: label }),
            ("count", Some(field), true) => Aggregation::Distinct(field),
            ("sum", Some(field), false) => Aggregation::Sum(field),
            ("avg", Some(field), false) => Aggregation::Avg(field),
            ("min", Some(field), false) => Aggregation::Min(field),
            ("max", Some(field), false) => Aggregation::Max(field),
            _ => {
                return Err(error_at(
                    start(expr),
                    format!("unsupported function {} (COUNT(*), COUNT(DISTINCT f), SUM, AVG, MIN, MAX)", shown(expr)),
                ));
            }
        };
        return Ok(Item::Aggregate { aggregation, name: label });
    }
    let path = main_field(expr, scope)?;
    Ok(Item::Field { name: alias.unwrap_or_else(|| path.clone()), path })
}

/// `rank()`, `highlight(field [, pre, post])` and `snippet(field [, pre, post])`: the
/// full-text extras of each row, read from its `_rank`, `_highlight` and `_snippet`.
fn text_item(expr: &Expr, alias: Option<String>) -> Result<Option<Item>, SqlError> {
    let Expr::Function(function) = expr else { return Ok(None) };
    let name = function.name.to_string().to_ascii_lowercase();
    if !matches!(name.as_str(), "rank" | "highlight" | "snippet") {
        return Ok(None);
    }
    let args = function_args(expr, function)?;
    let label = alias.unwrap_or_else(|| expr.to_string().to_ascii_lowercase());
    if name == "rank" {
        if !args.is_empty() {
            return Err(error_at(start(expr), "rank() takes no arguments"));
        }
        return Ok(Some(Item::Text { path: "_rank".to_string(), name: label, markup: None }));
    }
    let (field, markers) = match args.as_slice() {
        [field] => (field, None),
        [field, pre, post] => {
            let text = |e: &Expr| -> Result<String, SqlError> {
                literal(e)?.as_str().map(str::to_string).ok_or_else(|| error_at(start(e), "markers are strings"))
            };
            (field, Some(Markers { pre: text(pre)?, post: text(post)? }))
        }
        _ => return Err(error_at(start(expr), format!("{name}(field) or {name}(field, 'pre', 'post')"))),
    };
    let (Expr::Identifier(_) | Expr::CompoundIdentifier(_)) = field else {
        return Err(error_at(start(field), format!("{name} takes a field name")));
    };
    let field = field.to_string();
    let path = format!("_{name}.{field}");
    Ok(Some(Item::Text { path, name: label, markup: Some((name, field, markers.unwrap_or_default())) }))
}

/// A field of the main namespace.
fn main_field(expr: &Expr, scope: &Scope) -> Result<String, SqlError> {
    match field(expr, scope)? {
        (Side::Main, name) => Ok(name),
        (Side::Join(_), _) => Err(error_at(start(expr), "only fields of the main namespace can be used here")),
    }
}

fn order_by(statement: &sqlparser::ast::Query, scope: &Scope) -> Result<Vec<SortKey>, SqlError> {
    let Some(order_by) = &statement.order_by else { return Ok(Vec::new()) };
    let OrderByKind::Expressions(exprs) = &order_by.kind else {
        return Err(error_at(query_start(statement), "ORDER BY ALL is not supported"));
    };
    exprs
        .iter()
        .map(|key| {
            let desc = key.options.asc == Some(false);
            let field = match &key.expr {
                Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("count") => "count".to_string(),
                Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("rank") => RANK.to_string(),
                other => main_field(other, scope)?,
            };
            Ok(SortKey { field, desc })
        })
        .collect()
}

fn limit_offset(statement: &sqlparser::ast::Query) -> Result<(Option<usize>, usize), SqlError> {
    let count = |expr: &Expr| -> Result<usize, SqlError> {
        literal(expr)?
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| error_at(start(expr), "LIMIT and OFFSET take a whole number, 0 or more"))
    };
    match &statement.limit_clause {
        None => Ok((None, 0)),
        Some(LimitClause::LimitOffset { limit, offset, limit_by }) => {
            if let Some(by) = limit_by.first() {
                return Err(error_at(start(by), "LIMIT BY is not supported"));
            }
            let limit = limit.as_ref().map(count).transpose()?;
            let offset = offset.as_ref().map(|o| count(&o.value)).transpose()?.unwrap_or(0);
            Ok((limit, offset))
        }
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => Ok((Some(count(limit)?), count(offset)?)),
    }
}
