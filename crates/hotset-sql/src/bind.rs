//! Positional parameters: a statement's placeholders (`?`, `?N`, `$N`) replaced by
//! parameters written as SQL literals, before the text is parsed.
//!
//! Owns: `bind`. The placeholders are found by sqlparser's own tokenizer (so a `?` inside
//! a string literal, a quoted name or a comment is not one), and each is replaced by a
//! literal that reads back as exactly the parameter: a string quoted with its quotes
//! doubled (the generic dialect has no backslash escapes), a number as JSON writes it
//! (a negative one in brackets, so `x=-?` cannot become a `--` comment), `TRUE`, `FALSE`,
//! `NULL`, an object as the string of its JSON text (`INSERT INTO ns VALUES (?)`), an
//! array as its elements separated by commas (`IN (?)`). Every substitution has a space on
//! each side, so it cannot join the tokens around it. Never: parse the statement (the
//! parser does, on the text this returns), or leave a parameter unused or a placeholder
//! unfilled (both are errors).

use crate::{SqlError, error_at};
use hotset_core::error::ErrorCode;
use serde_json::Value;
use sqlparser::dialect::GenericDialect;
use sqlparser::tokenizer::{Location, Token, Tokenizer};

/// `sql` with its placeholders replaced by `parameters`: `?` takes the next one in order,
/// `?N` and `$N` the Nth (from 1). Without parameters the text is returned as it is.
pub fn bind(sql: &str, parameters: &[Value]) -> Result<String, SqlError> {
    if parameters.is_empty() {
        return Ok(sql.to_string());
    }
    let tokens = Tokenizer::new(&GenericDialect {}, sql).tokenize_with_location().map_err(|error| SqlError {
        message: error.message.clone(),
        line: error.location.line,
        column: error.location.column,
        code: ErrorCode::BadQuery,
    })?;
    let lines = line_starts(sql);
    let mut bound = String::with_capacity(sql.len() + 16 * parameters.len());
    let mut copied = 0;
    let mut next = 0;
    let mut used = vec![false; parameters.len()];
    for token in &tokens {
        let Token::Placeholder(name) = &token.token else { continue };
        let span = token.span;
        let index = match name.as_str() {
            "?" => {
                next += 1;
                next - 1
            }
            numbered => numbered[1..]
                .parse::<usize>()
                .ok()
                .filter(|&n| n >= 1)
                .map(|n| n - 1)
                .ok_or_else(|| error_at(span, format!("placeholder {name}: use ?, ?N or $N (N from 1)")))?,
        };
        let Some(parameter) = parameters.get(index) else {
            let message = format!("placeholder {name} has no parameter ({} given)", parameters.len());
            return Err(error_at(span, message));
        };
        let at = offset(sql, &lines, span.start)
            .filter(|&at| sql[at..].starts_with(name.as_str()))
            .ok_or_else(|| error_at(span, format!("placeholder {name} could not be located")))?;
        used[index] = true;
        bound.push_str(&sql[copied..at]);
        bound.push(' ');
        literal(parameter, &mut bound, true).map_err(|message| error_at(span, message))?;
        bound.push(' ');
        copied = at + name.len();
    }
    bound.push_str(&sql[copied..]);
    if let Some(unused) = used.iter().position(|used| !used) {
        let message = format!("parameter {} is not used: the statement has no placeholder for it", unused + 1);
        return Err(SqlError::whole(message));
    }
    Ok(bound)
}

/// The byte offset where each line starts (lines end at `\n`, as the tokenizer counts).
fn line_starts(sql: &str) -> Vec<usize> {
    std::iter::once(0).chain(sql.match_indices('\n').map(|(at, _)| at + 1)).collect()
}

/// The byte offset of a tokenizer location (1-based line, 1-based column in characters).
fn offset(sql: &str, lines: &[usize], location: Location) -> Option<usize> {
    let line = usize::try_from(location.line).ok()?.checked_sub(1)?;
    let column = usize::try_from(location.column).ok()?.checked_sub(1)?;
    let start = *lines.get(line)?;
    let rest = &sql[start..];
    match rest.char_indices().nth(column) {
        Some((at, _)) => Some(start + at),
        None if rest.chars().count() == column => Some(sql.len()),
        None => None,
    }
}

/// Writes `value` as a SQL literal; `list` lets an array become its elements.
fn literal(value: &Value, out: &mut String, list: bool) -> Result<(), String> {
    match value {
        Value::Null => out.push_str("NULL"),
        Value::Bool(true) => out.push_str("TRUE"),
        Value::Bool(false) => out.push_str("FALSE"),
        Value::Number(number) => {
            let text = number.to_string();
            if text.starts_with('-') {
                out.push('(');
                out.push_str(&text);
                out.push(')');
            } else {
                out.push_str(&text);
            }
        }
        Value::String(text) => quoted(text, out),
        Value::Object(_) => quoted(&value.to_string(), out),
        Value::Array(elements) if list => {
            if elements.is_empty() {
                return Err("an empty array is no list of values".into());
            }
            for (i, element) in elements.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                literal(element, out, false)?;
            }
        }
        Value::Array(_) => return Err("an array inside an array has no SQL literal".into()),
    }
    Ok(())
}

fn quoted(text: &str, out: &mut String) {
    out.push('\'');
    out.push_str(&text.replace('\'', "''"));
    out.push('\'');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placeholders_become_literals_that_read_back_exactly() {
        let bound =
            bind("SELECT * FROM t WHERE a = ? AND b = ? AND c IN (?)", &[json!("it's"), json!(-5), json!([1, "x"])]);
        assert_eq!(bound.unwrap(), "SELECT * FROM t WHERE a =  'it''s'  AND b =  (-5)  AND c IN ( 1, 'x' )");
        assert_eq!(
            bind("SELECT * FROM t WHERE a = $2 OR b = ?1", &[json!(1), json!(null)]).unwrap(),
            "SELECT * FROM t WHERE a =  NULL  OR b =  1 "
        );
        assert_eq!(bind("x", &[]).unwrap(), "x");
        let object = bind("INSERT INTO t VALUES (?)", &[json!({"id": 9_007_199_254_740_993i64, "n": "a'b"})]).unwrap();
        assert_eq!(object, r#"INSERT INTO t VALUES ( '{"id":9007199254740993,"n":"a''b"}' )"#);
    }

    #[test]
    fn question_marks_in_strings_names_and_comments_are_not_placeholders() {
        let sql = "SELECT * FROM t -- why?\nWHERE \"a?\" = '?' AND b = ?";
        assert_eq!(bind(sql, &[json!(true)]).unwrap(), "SELECT * FROM t -- why?\nWHERE \"a?\" = '?' AND b =  TRUE ");
        assert_eq!(
            bind("SELECT * FROM t WHERE n = 'é' AND m = ?", &[json!(2)]).unwrap(),
            "SELECT * FROM t WHERE n = 'é' AND m =  2 "
        );
    }

    #[test]
    fn a_missing_or_unused_parameter_is_an_error() {
        assert!(
            bind("SELECT * FROM t WHERE a = ? AND b = ?", &[json!(1)]).unwrap_err().message.contains("no parameter")
        );
        assert!(
            bind("SELECT * FROM t WHERE a = ?", &[json!(1), json!(2)])
                .unwrap_err()
                .message
                .contains("parameter 2 is not used")
        );
        assert!(bind("SELECT * FROM t WHERE a = $0", &[json!(1)]).is_err());
        assert!(bind("SELECT * FROM t WHERE a IN (?)", &[json!([[1]])]).is_err());
        assert!(bind("SELECT * FROM t WHERE a = 'unterminated", &[json!(1)]).is_err());
    }

    #[test]
    fn bound_text_parses_to_the_values_given() {
        let text =
            bind("SELECT * FROM t WHERE a = ? AND b > ?", &[json!("x'); DROP TABLE t; --"), json!(-2.5)]).unwrap();
        let statement = crate::parse(&text).unwrap();
        let crate::Statement::Select(select) = statement else { panic!("a select") };
        let shown = format!("{:?}", select.query.filter);
        assert!(shown.contains("x'); DROP TABLE t; --") && shown.contains("-2.5"), "{shown}");
    }
}
