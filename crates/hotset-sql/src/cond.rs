//! Field names, literal values, WHERE conditions and SET expressions.
//!
//! Owns: resolving a (possibly qualified) column to the namespace it belongs to, turning
//! SQL literals into JSON values, and SQL conditions into `Cond`. Never: accept an
//! expression it cannot map exactly (a function call, a subquery, a comparison of two
//! fields): those are errors pointing at the expression.

use crate::{SqlError, error_at, shown, start};
use hotset_core::limits::{CONDITION_DEPTH_MAX, EXPRESSION_DEPTH_MAX};
use hotset_core::query::{ArithOp, Expr as Computed};
use hotset_core::{Cond, Op};
use serde_json::Value;
use sqlparser::ast::{BinaryOperator, Expr, UnaryOperator, Value as Literal};

/// The names a statement's fields may be qualified with.
#[derive(Debug, Default)]
pub(crate) struct Scope {
    /// The main namespace's name and alias.
    pub main: Vec<String>,
    /// Each join's alias (its name when it has none), in join order.
    pub joins: Vec<String>,
}

/// Where a condition's field lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Main,
    Join(usize),
}

/// A column reference: `f`, `a.b` (a nested path, or `f` of namespace `a` when `a` names
/// one in scope).
pub(crate) fn field(expr: &Expr, scope: &Scope) -> Result<(Side, String), SqlError> {
    match expr {
        Expr::Identifier(ident) => Ok((Side::Main, ident.value.clone())),
        Expr::CompoundIdentifier(parts) => {
            let first = &parts[0].value;
            let rest = || parts[1..].iter().map(|p| p.value.as_str()).collect::<Vec<_>>().join(".");
            if scope.main.iter().any(|name| name == first) {
                Ok((Side::Main, rest()))
            } else if let Some(join) = scope.joins.iter().position(|alias| alias == first) {
                Ok((Side::Join(join), rest()))
            } else {
                Ok((Side::Main, parts.iter().map(|p| p.value.as_str()).collect::<Vec<_>>().join(".")))
            }
        }
        Expr::Nested(inner) => field(inner, scope),
        other => Err(error_at(start(other), format!("expected a field name, found {}", shown(other)))),
    }
}

/// A literal: number, string, boolean or NULL (a negative number too).
pub(crate) fn literal(expr: &Expr) -> Result<Value, SqlError> {
    match expr {
        Expr::Value(value) => match &value.value {
            Literal::Number(text, _) => {
                number(text).ok_or_else(|| error_at(value.span, format!("invalid number {text}")))
            }
            Literal::SingleQuotedString(text) | Literal::EscapedStringLiteral(text) => Ok(Value::String(text.clone())),
            Literal::Boolean(b) => Ok(Value::Bool(*b)),
            Literal::Null => Ok(Value::Null),
            other => Err(error_at(value.span, format!("unsupported literal {}", shown(other)))),
        },
        Expr::UnaryOp { op: UnaryOperator::Minus, expr: inner } => match literal(inner)? {
            Value::Number(n) => match (n.as_i64(), n.as_f64()) {
                (Some(i), _) if i != i64::MIN => Ok(Value::from(-i)),
                (_, Some(f)) => Ok(Value::from(-f)),
                _ => Err(error_at(start(expr), "invalid number")),
            },
            _ => Err(error_at(start(expr), "only numbers can be negative")),
        },
        Expr::Nested(inner) => literal(inner),
        other => Err(error_at(start(other), format!("expected a literal value, found {}", shown(other)))),
    }
}

/// A number as JSON: an integer when it is one, else a double.
fn number(text: &str) -> Option<Value> {
    if let Ok(i) = text.parse::<i64>() {
        return Some(Value::from(i));
    }
    text.parse::<f64>().ok().filter(|f| f.is_finite()).map(Value::from)
}

/// The operands of a chain of one operator (`a OR b OR c`, also through parentheses around
/// the same operator), in order, collected without recursion. sqlparser builds such a chain
/// as a left-deep tree, one level per operator: a generated filter with 100,000 `OR`s is
/// 100,000 levels deep there, and one flat list here.
pub(crate) fn chain<'a>(expr: &'a Expr, op: &BinaryOperator) -> Vec<&'a Expr> {
    let mut operands = Vec::new();
    let mut pending = vec![expr];
    while let Some(expr) = pending.pop() {
        match expr {
            Expr::BinaryOp { left, op: this, right } if this == op => {
                // The right operand goes on the stack first so the left one comes out first.
                pending.push(right);
                pending.push(left);
            }
            Expr::Nested(inner) if matches!(&**inner, Expr::BinaryOp { op: this, .. } if this == op) => {
                pending.push(inner)
            }
            other => operands.push(other),
        }
    }
    operands
}

/// The top-level AND-ed parts of a condition, each with the side its fields are on.
pub(crate) fn conjuncts(expr: &Expr, scope: &Scope, out: &mut Vec<(Side, Cond)>) -> Result<(), SqlError> {
    for part in chain(expr, &BinaryOperator::And) {
        out.push(condition(part, scope)?);
    }
    Ok(())
}

/// One condition; every field in it must be on the same side.
pub(crate) fn condition(expr: &Expr, scope: &Scope) -> Result<(Side, Cond), SqlError> {
    condition_at(expr, scope, 1)
}

/// A condition `depth` levels down: AND/OR chains are one level however long they are,
/// each NOT or differently-grouped bracket another, up to the engine's own bound.
fn condition_at(expr: &Expr, scope: &Scope, depth: usize) -> Result<(Side, Cond), SqlError> {
    if depth > CONDITION_DEPTH_MAX {
        return Err(error_at(
            start(expr),
            format!("conditions nest deeper than condition_depth_max ({CONDITION_DEPTH_MAX} levels)"),
        ));
    }
    let combine = |parts: Vec<(Side, Cond)>, make: fn(Vec<Cond>) -> Cond| -> Result<(Side, Cond), SqlError> {
        let side = parts[0].0;
        if parts.iter().any(|(s, _)| *s != side) {
            return Err(error_at(
                start(expr),
                "conditions on different namespaces can only be combined with AND at the top of WHERE",
            ));
        }
        Ok((side, make(parts.into_iter().map(|(_, c)| c).collect())))
    };
    match expr {
        Expr::Nested(inner) => condition_at(inner, scope, depth + 1),
        Expr::BinaryOp { op: op @ (BinaryOperator::And | BinaryOperator::Or), .. } => {
            let parts = chain(expr, op)
                .into_iter()
                .map(|part| condition_at(part, scope, depth + 1))
                .collect::<Result<Vec<_>, _>>()?;
            combine(parts, if *op == BinaryOperator::And { Cond::And } else { Cond::Or })
        }
        Expr::UnaryOp { op: UnaryOperator::Not, expr: inner } => {
            let (side, cond) = condition_at(inner, scope, depth + 1)?;
            Ok((side, Cond::Not(Box::new(cond))))
        }
        Expr::BinaryOp { left, op, right } => {
            let op = comparison(op).ok_or_else(|| error_at(start(expr), format!("unsupported operator {op}")))?;
            // `field op literal`, or `literal op field` with the operator turned around.
            let (side, field, op, value) = match (field(left, scope), literal(right)) {
                (Ok((side, name)), Ok(value)) => (side, name, op, value),
                _ => {
                    let (side, name) = field(right, scope).map_err(|_| {
                        error_at(start(expr), "a comparison needs a field on one side and a literal on the other")
                    })?;
                    let flipped = turned_around(op);
                    let value = literal(left).map_err(|_| {
                        error_at(start(expr), "a comparison needs a field on one side and a literal on the other")
                    })?;
                    (side, name, flipped, value)
                }
            };
            if value.is_null() {
                return Err(error_at(start(expr), "compare with NULL using IS NULL or IS NOT NULL"));
            }
            Ok((side, Cond::Field { field, op, values: vec![value] }))
        }
        Expr::InList { expr: target, list, negated } => {
            let (side, name) = field(target, scope)?;
            let values = list.iter().map(literal).collect::<Result<Vec<_>, _>>()?;
            Ok((side, negate(Cond::Field { field: name, op: Op::In, values }, *negated)))
        }
        Expr::Between { expr: target, negated, low, high } => {
            let (side, name) = field(target, scope)?;
            let values = vec![literal(low)?, literal(high)?];
            Ok((side, negate(Cond::Field { field: name, op: Op::Range, values }, *negated)))
        }
        Expr::Like { negated, any: false, expr: target, pattern, escape_char: None } => {
            let (side, name) = field(target, scope)?;
            let pattern = literal(pattern)?;
            if !pattern.is_string() {
                return Err(error_at(start(expr), "LIKE needs a string pattern"));
            }
            Ok((side, negate(Cond::Field { field: name, op: Op::Like, values: vec![pattern] }, *negated)))
        }
        Expr::Function(function) if function.name.to_string().eq_ignore_ascii_case("match") => {
            let args = function_args(expr, function)?;
            let [target, text] = args.as_slice() else {
                return Err(error_at(start(expr), "MATCH takes a field (or text index name) and the query text"));
            };
            let (side, name) = field(target, scope)?;
            let text = literal(text)?;
            if !text.is_string() {
                return Err(error_at(start(expr), "MATCH needs the query text as a string"));
            }
            Ok((side, Cond::Field { field: name, op: Op::Match, values: vec![text] }))
        }
        Expr::MatchAgainst { columns, match_value, opt_search_modifier: _ } => {
            let [column] = columns.as_slice() else {
                return Err(error_at(
                    start(expr),
                    "MATCH (...) AGAINST takes one field or text index name (MATCH(field, 'text') works too)",
                ));
            };
            let name = column.to_string();
            let text = literal(&Expr::value(match_value.clone()))?;
            if !text.is_string() {
                return Err(error_at(start(expr), "AGAINST needs the query text as a string"));
            }
            Ok((Side::Main, Cond::Field { field: name, op: Op::Match, values: vec![text] }))
        }
        Expr::IsNull(target) | Expr::IsNotNull(target) => {
            let (side, name) = field(target, scope)?;
            let op = if matches!(expr, Expr::IsNull(_)) { Op::Empty } else { Op::Any };
            Ok((side, Cond::Field { field: name, op, values: Vec::new() }))
        }
        other => Err(error_at(start(other), format!("unsupported condition {}", shown(other)))),
    }
}

/// The plain arguments of a function call (`f(a, b)`), or an error at the call.
pub(crate) fn function_args<'a>(
    expr: &Expr,
    function: &'a sqlparser::ast::Function,
) -> Result<Vec<&'a Expr>, SqlError> {
    use sqlparser::ast::{FunctionArg, FunctionArgExpr, FunctionArguments};
    let name = function.name.to_string();
    match &function.args {
        FunctionArguments::None => Ok(Vec::new()),
        FunctionArguments::List(list) if list.duplicate_treatment.is_none() && list.clauses.is_empty() => list
            .args
            .iter()
            .map(|arg| match arg {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e),
                _ => Err(error_at(start(expr), format!("{name}: unsupported argument {}", shown(arg)))),
            })
            .collect(),
        _ => Err(error_at(start(expr), format!("{name}: unsupported arguments"))),
    }
}

/// The engine operator of a SQL comparison, if it is one.
pub(crate) fn comparison(op: &BinaryOperator) -> Option<Op> {
    Some(match op {
        BinaryOperator::Eq => Op::Eq,
        BinaryOperator::NotEq => Op::Ne,
        BinaryOperator::Lt => Op::Lt,
        BinaryOperator::LtEq => Op::Le,
        BinaryOperator::Gt => Op::Gt,
        BinaryOperator::GtEq => Op::Ge,
        _ => return None,
    })
}

/// The operator with its sides swapped: `a < b` is `b > a`.
pub(crate) fn turned_around(op: Op) -> Op {
    match op {
        Op::Lt => Op::Gt,
        Op::Le => Op::Ge,
        Op::Gt => Op::Lt,
        Op::Ge => Op::Le,
        same => same,
    }
}

fn negate(cond: Cond, negated: bool) -> Cond {
    if negated { Cond::Not(Box::new(cond)) } else { cond }
}

/// A SET expression: literals and fields of the document combined with `+ - * /`.
pub(crate) fn computed(expr: &Expr, scope: &Scope) -> Result<Computed, SqlError> {
    computed_at(expr, scope, None, 1)
}

/// The row an `INSERT` proposed, as an upsert's SET reads it: `EXCLUDED.x` (PostgreSQL,
/// SQLite), `VALUES(x)` or `alias.x` after `VALUES (...) AS alias` (MySQL).
pub(crate) struct Inserted<'a> {
    /// Names that qualify the inserted row's columns (`excluded`, a row alias).
    pub qualifiers: &'a [String],
    pub doc: &'a Value,
}

impl Inserted<'_> {
    /// The inserted row's value at a column (`null` when it has none). A dotted name is
    /// a path, as `INSERT` made nested fields of it.
    fn value(&self, parts: &[sqlparser::ast::Ident]) -> Computed {
        let mut path = parts.iter().flat_map(|part| part.value.split('.'));
        let found = path.try_fold(self.doc, |at, part| at.get(part));
        Computed::value(found.cloned().unwrap_or(Value::Null))
    }

    /// The value an expression names, when it names the inserted row's column:
    /// `EXCLUDED.x`, `alias.x`, or `VALUES(x)` (`VALUES(ns.x)` too).
    fn named(&self, expr: &Expr, scope: &Scope) -> Option<Computed> {
        use sqlparser::ast::{FunctionArg, FunctionArgExpr, FunctionArguments};
        match expr {
            Expr::CompoundIdentifier(parts)
                if parts.len() > 1 && self.qualifiers.iter().any(|q| q.eq_ignore_ascii_case(&parts[0].value)) =>
            {
                Some(self.value(&parts[1..]))
            }
            Expr::Function(function) if function.name.to_string().eq_ignore_ascii_case("values") => {
                let FunctionArguments::List(list) = &function.args else { return None };
                let [FunctionArg::Unnamed(FunctionArgExpr::Expr(column))] = list.args.as_slice() else { return None };
                match column {
                    Expr::Identifier(name) => Some(self.value(std::slice::from_ref(name))),
                    Expr::CompoundIdentifier(parts) if scope.main.contains(&parts[0].value) => {
                        Some(self.value(&parts[1..]))
                    }
                    Expr::CompoundIdentifier(parts) => Some(self.value(parts)),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// `computed` for an upsert's SET, which may read the inserted row too.
pub(crate) fn computed_upsert(expr: &Expr, scope: &Scope, inserted: &Inserted<'_>) -> Result<Computed, SqlError> {
    computed_at(expr, scope, Some(inserted), 1)
}

fn computed_at(
    expr: &Expr,
    scope: &Scope,
    inserted: Option<&Inserted<'_>>,
    depth: usize,
) -> Result<Computed, SqlError> {
    if depth > EXPRESSION_DEPTH_MAX {
        return Err(error_at(
            start(expr),
            format!("the expression nests deeper than expression_depth_max ({EXPRESSION_DEPTH_MAX} levels)"),
        ));
    }
    if let Some(value) = inserted.and_then(|row| row.named(expr, scope)) {
        return Ok(value);
    }
    match expr {
        Expr::Nested(inner) => computed_at(inner, scope, inserted, depth + 1),
        Expr::BinaryOp { left, op, right } => {
            let op = match op {
                BinaryOperator::Plus => ArithOp::Add,
                BinaryOperator::Minus => ArithOp::Sub,
                BinaryOperator::Multiply => ArithOp::Mul,
                BinaryOperator::Divide => ArithOp::Div,
                other => return Err(error_at(start(expr), format!("unsupported operator {other} in SET"))),
            };
            let left = computed_at(left, scope, inserted, depth + 1)?;
            Ok(left.binary(op, computed_at(right, scope, inserted, depth + 1)?))
        }
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => match field(expr, scope)? {
            (Side::Main, name) => Ok(Computed::field(&name)),
            (Side::Join(_), _) => Err(error_at(start(expr), "SET can only read the updated document's fields")),
        },
        other => literal(other).map(Computed::value),
    }
}
