//! Parsed SELECTs kept by their shape, so a statement that differs from an earlier one only
//! in its string literals is not parsed again.
//!
//! Owns: `StatementCache`: the SQL text with each `'string'` literal replaced by a
//! numbered placeholder (the statement's *shape*) → the statement parsed from that shape,
//! whose placeholders are then swapped for the literals of each text that has the shape.
//! Parsing with `sqlparser` costs about twice what running a one-word full-text query
//! does; a hit costs a scan of the text and a clone. Never: answer differently from
//! `parse` (errors included: a text that fails is parsed in full every time).
//!
//! Why the swap is exact: translation never looks inside a string literal (it takes it as
//! a JSON string; `MATCH`, `LIKE` and comparisons keep it as a condition's value), and
//! sqlparser reads a literal as one token whatever it holds. A shape is only kept when its
//! placeholders all land as whole values of the filter's conditions, each once, and
//! nowhere else (counted in the statement's `Debug` form, which shows every string it
//! holds), and when filling it with the first text's literals gives exactly what parsing
//! that text gave; otherwise the shape is remembered as one to parse in full. Texts the
//! scan cannot read with certainty (quoted identifiers, comments, backslashes, prefixed
//! literals such as `E'..'`) are parsed in full.

use crate::{Select, SqlError, Statement, parse};
use hotset_core::query::Cond;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Most shapes kept; once full, the cache starts over (a workload has few shapes, and an
/// unbounded one must not grow without end).
pub const TEMPLATES_MAX: usize = 256;

/// What a placeholder for literal `i` reads; a text holding this marker is not cached.
const MARK: &str = "hotset-literal-";

fn placeholder(i: usize) -> String {
    format!("{{{MARK}{i}}}")
}

/// Parsed statements by shape (see the module doc). Shared between threads.
#[derive(Debug, Default)]
pub struct StatementCache {
    /// `None`: a shape whose texts are parsed in full.
    templates: Mutex<HashMap<String, Option<Arc<Statement>>>>,
}

impl StatementCache {
    /// What `parse(sql)` answers.
    pub fn parse(&self, sql: &str) -> Result<Statement, SqlError> {
        let Some((shape, literals)) = shape_of(sql) else { return parse(sql) };
        let known = self.templates.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get(&shape).cloned();
        match known {
            Some(Some(template)) => return Ok(fill(&template, &literals)),
            Some(None) => return parse(sql),
            None => {}
        }
        let statement = parse(sql)?;
        let template = parse(&shape)
            .ok()
            .filter(|template| holds_placeholders_only_in_conditions(template, literals.len()))
            .filter(|template| fill(template, &literals) == statement)
            .map(Arc::new);
        let mut templates = self.templates.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if templates.len() >= TEMPLATES_MAX {
            templates.clear();
        }
        templates.insert(shape, template);
        Ok(statement)
    }

    /// Shapes kept (those parsed in full included).
    pub fn len(&self) -> usize {
        self.templates.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shapes kept with a template (not parsed in full).
    #[cfg(test)]
    fn filled(&self) -> usize {
        self.templates.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).values().flatten().count()
    }
}

/// The text with its string literals replaced by placeholders, and the literals' values;
/// `None` for a text the scan cannot read with certainty.
fn shape_of(sql: &str) -> Option<(String, Vec<String>)> {
    const UNSURE: [char; 7] = ['"', '`', '[', '$', '\\', '#', '\u{0}'];
    if sql.contains(UNSURE) || sql.contains("--") || sql.contains("/*") || sql.contains(MARK) {
        return None;
    }
    let mut shape = String::with_capacity(sql.len() + 16);
    let mut literals: Vec<String> = Vec::new();
    let mut chars = sql.chars().peekable();
    let mut previous = ' ';
    while let Some(c) = chars.next() {
        if c != '\'' {
            shape.push(c);
            previous = c;
            continue;
        }
        // `E'..'`, `N'..'`, `X'..'` and the like read their text differently.
        if previous.is_alphanumeric() || previous == '_' {
            return None;
        }
        let mut literal = String::new();
        loop {
            match chars.next()? {
                '\'' if chars.peek() == Some(&'\'') => {
                    chars.next();
                    literal.push('\'');
                }
                '\'' => break,
                other => literal.push(other),
            }
        }
        shape.push('\'');
        shape.push_str(&placeholder(literals.len()));
        shape.push('\'');
        literals.push(literal);
        previous = '\'';
    }
    Some((shape, literals))
}

/// Whether the statement is a SELECT whose `count` placeholders each stand once as a whole
/// value of a filter condition, and appear nowhere else.
fn holds_placeholders_only_in_conditions(statement: &Statement, count: usize) -> bool {
    let Statement::Select(Select { query, .. }) = statement else { return false };
    let shown = format!("{statement:?}");
    let mut seen = vec![0usize; count];
    if let Some(filter) = &query.filter {
        each_value(filter, &mut |value| {
            if let Some(i) = value.as_str().and_then(placeholder_number).filter(|&i| i < count) {
                seen[i] += 1;
            }
        });
    }
    (0..count).all(|i| seen[i] == 1 && shown.matches(&placeholder(i)).count() == 1)
        && !shown.contains(&placeholder(count))
}

fn placeholder_number(text: &str) -> Option<usize> {
    text.strip_prefix('{')?.strip_suffix('}')?.strip_prefix(MARK)?.parse().ok()
}

fn each_value(cond: &Cond, f: &mut dyn FnMut(&Value)) {
    match cond {
        Cond::Field { values, .. } => values.iter().for_each(&mut *f),
        Cond::And(all) | Cond::Or(all) => all.iter().for_each(|c| each_value(c, f)),
        Cond::Not(inner) => each_value(inner, f),
    }
}

fn each_value_mut(cond: &mut Cond, f: &mut dyn FnMut(&mut Value)) {
    match cond {
        Cond::Field { values, .. } => values.iter_mut().for_each(&mut *f),
        Cond::And(all) | Cond::Or(all) => all.iter_mut().for_each(|c| each_value_mut(c, f)),
        Cond::Not(inner) => each_value_mut(inner, f),
    }
}

/// The template with each placeholder replaced by its literal.
fn fill(template: &Statement, literals: &[String]) -> Statement {
    let mut statement = template.clone();
    if let Statement::Select(Select { query, .. }) = &mut statement
        && let Some(filter) = &mut query.filter
    {
        each_value_mut(filter, &mut |value| {
            if let Some(i) = value.as_str().and_then(placeholder_number).filter(|&i| i < literals.len()) {
                *value = Value::String(literals[i].clone());
            }
        });
    }
    statement
}

#[cfg(test)]
mod tests {
    use super::*;
    use hotset_core::query::Op;

    /// Every text through the cache twice (a miss, then a hit for its shape) answers as
    /// `parse` does, errors included.
    fn agrees(cache: &StatementCache, sql: &str) {
        assert_eq!(cache.parse(sql), parse(sql), "first: {sql}");
        assert_eq!(cache.parse(sql), parse(sql), "again: {sql}");
    }

    #[test]
    fn literals_are_swapped_into_the_shape_exactly() {
        let cache = StatementCache::default();
        let texts = [
            "SELECT * FROM items WHERE MATCH(description, 'boat') LIMIT 10",
            "SELECT * FROM items WHERE MATCH(description, 'lake~ +sail*') LIMIT 10",
            "SELECT * FROM items WHERE MATCH(description, 'it''s') LIMIT 10",
            "SELECT * FROM items WHERE MATCH(description, '') LIMIT 10",
            "SELECT * FROM items WHERE MATCH(description, 'кофе ''x''') LIMIT 10",
            "SELECT * FROM items WHERE name IN ('a', 'b', 'c''d') AND year BETWEEN 2000 AND 2010 ORDER BY year DESC, id LIMIT 10 OFFSET 10",
            "SELECT * FROM items WHERE name IN ('x', 'y', 'z') AND year BETWEEN 2000 AND 2010 ORDER BY year DESC, id LIMIT 10 OFFSET 10",
            "SELECT id, name FROM items WHERE name LIKE 'ab%' OR NOT (name = 'q')",
            "SELECT id, name FROM items WHERE name LIKE 'zz_' OR NOT (name = 'r')",
            "SELECT *, COUNT(*) FROM items WHERE 'w' = name",
        ];
        for sql in texts {
            agrees(&cache, sql);
        }
        // Four shapes: the MATCH texts, the IN lists, the LIKEs, the literal on the left.
        assert_eq!((cache.len(), cache.filled()), (4, 4));
        let Ok(Statement::Select(Select { query, .. })) =
            cache.parse("SELECT * FROM items WHERE MATCH(description, 'one') LIMIT 10")
        else {
            panic!("a select")
        };
        assert_eq!(
            query.filter,
            Some(Cond::Field { field: "description".into(), op: Op::Match, values: vec!["one".into()] })
        );
    }

    #[test]
    fn texts_it_cannot_read_or_shapes_it_cannot_fill_are_parsed_in_full() {
        let cache = StatementCache::default();
        for sql in [
            // Literals outside the filter: in the selected items, a write, markers.
            "SELECT highlight(description, '<', '>') FROM items WHERE MATCH(description, 'boat')",
            "UPDATE items SET name = 'x' WHERE name = 'y'",
            "INSERT INTO items (id, name) VALUES (1, 'x')",
            "DELETE FROM items WHERE name = 'gone'",
            // What the scan does not read.
            "SELECT * FROM items WHERE \"name\" = 'it''s'",
            "SELECT * FROM items WHERE name = E'a\\'b'",
            "SELECT * FROM items WHERE name = 'a' -- 'comment'",
            "SELECT * FROM items WHERE name = '{hotset-literal-0}'",
            // Errors, each time.
            "SELECT * FROM items WHERE name = 'unterminated",
            "SELECT * FROM items WHERE MATCH(description, 'x', 'y')",
            "SELEKT 'x'",
        ] {
            agrees(&cache, sql);
        }
        assert_eq!(cache.filled(), 0);
    }

    /// Seeded random literals (quotes, wildcards, query syntax, non-ASCII) in a few shapes:
    /// after each shape's first text every one is a hit, and each answers as `parse` does.
    #[test]
    fn random_literals_answer_as_the_parser_does() {
        let mut state = 11u64;
        let mut next = move |n: usize| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) as usize) % n
        };
        let alphabet: Vec<char> = "ab z'%_~*+-\"é кё{}()".chars().collect();
        let shapes = [
            "SELECT * FROM items WHERE MATCH(description, '{0}') LIMIT 10",
            "SELECT *, COUNT(*) FROM items WHERE name IN ('{0}', '{1}') AND year > 3 ORDER BY year DESC, id LIMIT 10 OFFSET 10",
            "SELECT id FROM items WHERE name LIKE '{0}' OR (name != '{1}' AND NOT name = '{0}')",
        ];
        let cache = StatementCache::default();
        for _ in 0..600 {
            let mut literal = || -> String {
                let text: String = (0..next(8)).map(|_| alphabet[next(alphabet.len())]).collect();
                text.replace('\'', "''")
            };
            let (first, second) = (literal(), literal());
            let sql = shapes[next(shapes.len())].replace("{0}", &first).replace("{1}", &second);
            assert_eq!(cache.parse(&sql), parse(&sql), "{sql}");
        }
        assert_eq!((cache.len(), cache.filled()), (3, 3));
    }

    #[test]
    fn the_cache_starts_over_when_full() {
        let cache = StatementCache::default();
        for limit in 0..TEMPLATES_MAX + 3 {
            agrees(&cache, &format!("SELECT * FROM items WHERE name = 'n' LIMIT {limit}"));
        }
        assert!(cache.len() <= TEMPLATES_MAX && !cache.is_empty());
    }
}
