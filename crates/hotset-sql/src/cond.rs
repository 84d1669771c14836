//! Field names, literal values, WHERE conditions and SET expressions.
//!
//! Owns: resolving a (possibly qualified) column to the namespace it belongs to, turning
//! SQL literals into JSON values, and SQL conditions into `Cond`. Never: accept an
//! expression it cannot map exactly (a function call, a subquery, a comparison of two
//! fields): those are errors pointing at the expression.

use crate::{SqlError, error_at};
use hotset_core::query::{ArithOp, Expr as Computed};
use hotset_core::{Cond, Op};
use serde_json::Value;
use sqlparser::ast::{BinaryOperator, Expr, Spanned, UnaryOperator, Value as Literal};

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
        other => Err(error_at(other.span(), format!("expected a field name, found {other}"))),
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
            other => Err(error_at(value.span, format!("unsupported literal {other}"))),
        },
        Expr::UnaryOp { op: UnaryOperator::Minus, expr: inner } => match literal(inner)? {
            Value::Number(n) => match (n.as_i64(), n.as_f64()) {
                (Some(i), _) if i != i64::MIN => Ok(Value::from(-i)),
                (_, Some(f)) => Ok(Value::from(-f)),
                _ => Err(error_at(expr.span(), "invalid number")),
            },
            _ => Err(error_at(expr.span(), "only numbers can be negative")),
        },
        Expr::Nested(inner) => literal(inner),
        other => Err(error_at(other.span(), format!("expected a literal value, found {other}"))),
    }
}

/// A number as JSON: an integer when it is one, else a double.
fn number(text: &str) -> Option<Value> {
    if let Ok(i) = text.parse::<i64>() {
        return Some(Value::from(i));
    }
    text.parse::<f64>().ok().filter(|f| f.is_finite()).map(Value::from)
}

/// The top-level AND-ed parts of a condition, each with the side its fields are on.
pub(crate) fn conjuncts(expr: &Expr, scope: &Scope, out: &mut Vec<(Side, Cond)>) -> Result<(), SqlError> {
    match expr {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            conjuncts(left, scope, out)?;
            conjuncts(right, scope, out)
        }
        Expr::Nested(inner) if matches!(**inner, Expr::BinaryOp { op: BinaryOperator::And, .. }) => {
            conjuncts(inner, scope, out)
        }
        other => {
            out.push(condition(other, scope)?);
            Ok(())
        }
    }
}

/// One condition; every field in it must be on the same side.
pub(crate) fn condition(expr: &Expr, scope: &Scope) -> Result<(Side, Cond), SqlError> {
    let combine = |parts: Vec<(Side, Cond)>, make: fn(Vec<Cond>) -> Cond| -> Result<(Side, Cond), SqlError> {
        let side = parts[0].0;
        if parts.iter().any(|(s, _)| *s != side) {
            return Err(error_at(
                expr.span(),
                "conditions on different namespaces can only be combined with AND at the top of WHERE",
            ));
        }
        Ok((side, make(parts.into_iter().map(|(_, c)| c).collect())))
    };
    match expr {
        Expr::Nested(inner) => condition(inner, scope),
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            combine(vec![condition(left, scope)?, condition(right, scope)?], Cond::And)
        }
        Expr::BinaryOp { left, op: BinaryOperator::Or, right } => {
            combine(vec![condition(left, scope)?, condition(right, scope)?], Cond::Or)
        }
        Expr::UnaryOp { op: UnaryOperator::Not, expr: inner } => {
            let (side, cond) = condition(inner, scope)?;
            Ok((side, Cond::Not(Box::new(cond))))
        }
        Expr::BinaryOp { left, op, right } => {
            let op = comparison(op).ok_or_else(|| error_at(expr.span(), format!("unsupported operator {op}")))?;
            // `field op literal`, or `literal op field` with the operator turned around.
            let (side, field, op, value) = match (field(left, scope), literal(right)) {
                (Ok((side, name)), Ok(value)) => (side, name, op, value),
                _ => {
                    let (side, name) = field(right, scope).map_err(|_| {
                        error_at(expr.span(), "a comparison needs a field on one side and a literal on the other")
                    })?;
                    let flipped = turned_around(op);
                    let value = literal(left).map_err(|_| {
                        error_at(expr.span(), "a comparison needs a field on one side and a literal on the other")
                    })?;
                    (side, name, flipped, value)
                }
            };
            if value.is_null() {
                return Err(error_at(expr.span(), "compare with NULL using IS NULL or IS NOT NULL"));
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
                return Err(error_at(expr.span(), "LIKE needs a string pattern"));
            }
            Ok((side, negate(Cond::Field { field: name, op: Op::Like, values: vec![pattern] }, *negated)))
        }
        Expr::Function(function) if function.name.to_string().eq_ignore_ascii_case("match") => {
            let args = function_args(expr, function)?;
            let [target, text] = args.as_slice() else {
                return Err(error_at(expr.span(), "MATCH takes a field (or text index name) and the query text"));
            };
            let (side, name) = field(target, scope)?;
            let text = literal(text)?;
            if !text.is_string() {
                return Err(error_at(expr.span(), "MATCH needs the query text as a string"));
            }
            Ok((side, Cond::Field { field: name, op: Op::Match, values: vec![text] }))
        }
        Expr::MatchAgainst { columns, match_value, opt_search_modifier: _ } => {
            let [column] = columns.as_slice() else {
                return Err(error_at(
                    expr.span(),
                    "MATCH (...) AGAINST takes one field or text index name (MATCH(field, 'text') works too)",
                ));
            };
            let name = column.to_string();
            let text = literal(&Expr::value(match_value.clone()))?;
            if !text.is_string() {
                return Err(error_at(expr.span(), "AGAINST needs the query text as a string"));
            }
            Ok((Side::Main, Cond::Field { field: name, op: Op::Match, values: vec![text] }))
        }
        Expr::IsNull(target) | Expr::IsNotNull(target) => {
            let (side, name) = field(target, scope)?;
            let op = if matches!(expr, Expr::IsNull(_)) { Op::Empty } else { Op::Any };
            Ok((side, Cond::Field { field: name, op, values: Vec::new() }))
        }
        other => Err(error_at(other.span(), format!("unsupported condition {other}"))),
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
                _ => Err(error_at(expr.span(), format!("{name}: unsupported argument {arg}"))),
            })
            .collect(),
        _ => Err(error_at(expr.span(), format!("{name}: unsupported arguments"))),
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
    match expr {
        Expr::Nested(inner) => computed(inner, scope),
        Expr::BinaryOp { left, op, right } => {
            let op = match op {
                BinaryOperator::Plus => ArithOp::Add,
                BinaryOperator::Minus => ArithOp::Sub,
                BinaryOperator::Multiply => ArithOp::Mul,
                BinaryOperator::Divide => ArithOp::Div,
                other => return Err(error_at(expr.span(), format!("unsupported operator {other} in SET"))),
            };
            Ok(computed(left, scope)?.binary(op, computed(right, scope)?))
        }
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => match field(expr, scope)? {
            (Side::Main, name) => Ok(Computed::field(&name)),
            (Side::Join(_), _) => Err(error_at(expr.span(), "SET can only read the updated document's fields")),
        },
        other => literal(other).map(Computed::value),
    }
}
