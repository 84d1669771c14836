//! The statements of query events a sync acts on: an event group's BEGIN/COMMIT/ROLLBACK
//! (and XA's ends), TRUNCATE of a table (logged as a statement even in ROW format),
//! ALTER TABLE (after which a table's columns are read again), and DROP TABLE and RENAME
//! TABLE (after which a followed table is no longer there to follow).
//!
//! Owns: a tokenizer that skips comments and reads identifiers (backquoted or bare,
//! `db.table` or `table`), and `classify`. Never: guess at a statement it does not
//! recognise (it is `Other`, and row events carry its effects when there are any).

/// What a query event's statement means to a sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Statement {
    /// `BEGIN` (or `START TRANSACTION`, `XA START`): the group goes on.
    Begin,
    /// `COMMIT`, `ROLLBACK`, `XA PREPARE/COMMIT/ROLLBACK`: the group ends here.
    End,
    /// `TRUNCATE [TABLE] name`.
    Truncate(String, String),
    /// `ALTER [ONLINE] [IGNORE] TABLE [IF EXISTS] name ...`.
    Alter(String, String),
    /// `DROP TABLE [IF EXISTS] name, ...` or `RENAME TABLE[S] name TO other, ...`: the
    /// tables no longer there under their names.
    Gone(Vec<(String, String)>),
    /// Anything else.
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    Dot,
    Comma,
    Other,
}

/// What `query` means, names without a database taken in `default_database`.
pub(crate) fn classify(query: &str, default_database: &str) -> Statement {
    let tokens = tokenize(query, 16);
    let word = |i: usize| match tokens.get(i) {
        Some(Token::Word(w)) => w.to_ascii_uppercase(),
        _ => String::new(),
    };
    match word(0).as_str() {
        "BEGIN" => Statement::Begin,
        "START" if word(1) == "TRANSACTION" => Statement::Begin,
        "COMMIT" | "ROLLBACK" => Statement::End,
        "XA" if word(1) == "START" || word(1) == "BEGIN" => Statement::Begin,
        "XA" if matches!(word(1).as_str(), "PREPARE" | "COMMIT" | "ROLLBACK") => Statement::End,
        "TRUNCATE" => {
            let at = if word(1) == "TABLE" { 2 } else { 1 };
            table_name(&tokens, at, default_database).map_or(Statement::Other, |(d, t)| Statement::Truncate(d, t))
        }
        "ALTER" => {
            let mut at = 1;
            while matches!(word(at).as_str(), "ONLINE" | "IGNORE") {
                at += 1;
            }
            if word(at) != "TABLE" {
                return Statement::Other;
            }
            at += 1;
            if word(at) == "IF" && word(at + 1) == "EXISTS" {
                at += 2;
            }
            table_name(&tokens, at, default_database).map_or(Statement::Other, |(d, t)| Statement::Alter(d, t))
        }
        "DROP" if word(1) == "TABLE" => {
            let tokens = tokenize(query, LIST_TOKENS_MAX);
            let at = if word(2) == "IF" && word(3) == "EXISTS" { 4 } else { 2 };
            Statement::Gone(table_list(&tokens, at, default_database))
        }
        "RENAME" if word(1) == "TABLE" || word(1) == "TABLES" => {
            let tokens = tokenize(query, LIST_TOKENS_MAX);
            let at = if word(2) == "IF" && word(3) == "EXISTS" { 4 } else { 2 };
            Statement::Gone(table_list(&tokens, at, default_database))
        }
        _ => Statement::Other,
    }
}

/// Tokens read of a DROP or RENAME statement's list of tables (a list longer than this
/// is not followed to its end).
const LIST_TOKENS_MAX: usize = 4096;

/// The tables of a comma-separated list from token `at`: each item's first name (a
/// rename's `old TO new` gives the old one).
fn table_list(tokens: &[Token], mut at: usize, default_database: &str) -> Vec<(String, String)> {
    let mut names = Vec::new();
    while let Some(name) = table_name(tokens, at, default_database) {
        at += if tokens.get(at + 1) == Some(&Token::Dot) { 3 } else { 1 };
        names.push(name);
        // Past the item: to the comma that ends it (a rename's `TO new`, `WAIT n`...).
        while at < tokens.len() && tokens[at] != Token::Comma {
            at += 1;
        }
        at += 1;
    }
    names
}

fn identifier(token: Option<&Token>) -> Option<String> {
    match token? {
        Token::Word(w) | Token::Quoted(w) => Some(w.clone()),
        _ => None,
    }
}

fn table_name(tokens: &[Token], at: usize, default_database: &str) -> Option<(String, String)> {
    let first = identifier(tokens.get(at))?;
    if tokens.get(at + 1) == Some(&Token::Dot) {
        return Some((first, identifier(tokens.get(at + 2))?));
    }
    Some((default_database.to_string(), first))
}

/// The first `limit` tokens of `query`, comments skipped (`/* */`, MariaDB's versioned
/// `/*!...*/` and `/*M!...*/` too, `-- ` and `#` to the line's end).
fn tokenize(query: &str, limit: usize) -> Vec<Token> {
    let chars: Vec<char> = query.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() && tokens.len() < limit {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('*') {
            i = find(&chars, i + 2, &['*', '/']).map_or(chars.len(), |end| end + 2);
        } else if c == '#' || (c == '-' && next == Some('-')) {
            i = find(&chars, i, &['\n']).map_or(chars.len(), |end| end + 1);
        } else if c == '`' {
            let mut name = String::new();
            i += 1;
            while i < chars.len() {
                if chars[i] == '`' && chars.get(i + 1) == Some(&'`') {
                    name.push('`');
                    i += 2;
                } else if chars[i] == '`' {
                    i += 1;
                    break;
                } else {
                    name.push(chars[i]);
                    i += 1;
                }
            }
            tokens.push(Token::Quoted(name));
        } else if c.is_alphanumeric() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$') {
                i += 1;
            }
            tokens.push(Token::Word(chars[start..i].iter().collect()));
        } else {
            tokens.push(match c {
                '.' => Token::Dot,
                ',' => Token::Comma,
                _ => Token::Other,
            });
            i += 1;
        }
    }
    tokens
}

fn find(chars: &[char], from: usize, needle: &[char]) -> Option<usize> {
    (from..chars.len()).find(|&i| chars[i..].starts_with(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(d: &str, n: &str) -> (String, String) {
        (d.to_string(), n.to_string())
    }

    #[test]
    fn group_boundaries() {
        assert_eq!(classify("BEGIN", "app"), Statement::Begin);
        assert_eq!(classify("COMMIT", "app"), Statement::End);
        assert_eq!(classify("XA PREPARE 'x'", "app"), Statement::End);
        assert_eq!(classify("/* hi */ commit", "app"), Statement::End);
    }

    #[test]
    fn truncates_and_alters() {
        let (d, n) = t("app", "items");
        assert_eq!(classify("TRUNCATE TABLE items", "app"), Statement::Truncate(d.clone(), n.clone()));
        assert_eq!(classify("truncate `app`.`items`", "other"), Statement::Truncate(d.clone(), n.clone()));
        assert_eq!(classify("TRUNCATE app . items", "x"), Statement::Truncate(d.clone(), n.clone()));
        assert_eq!(
            classify("-- c\nALTER ONLINE TABLE `it``s` ADD c INT", "app"),
            Statement::Alter(d.clone(), "it`s".into())
        );
        assert_eq!(classify("ALTER TABLE IF EXISTS items DROP c", "app"), Statement::Alter(d, n));
        assert_eq!(classify("ALTER DATABASE app CHARSET utf8mb4", "app"), Statement::Other);
        assert_eq!(classify("CREATE TABLE t (id INT)", "app"), Statement::Other);
        assert_eq!(classify("", "app"), Statement::Other);
    }

    #[test]
    fn drops_and_renames_name_the_tables_gone() {
        assert_eq!(
            classify("DROP TABLE `items` /* generated by server */", "app"),
            Statement::Gone(vec![t("app", "items")])
        );
        assert_eq!(
            classify("DROP TABLE IF EXISTS a, other.b , `c`", "app"),
            Statement::Gone(vec![t("app", "a"), t("other", "b"), t("app", "c")])
        );
        assert_eq!(
            classify("RENAME TABLE items TO old_items, app.x TO y", "app"),
            Statement::Gone(vec![t("app", "items"), t("app", "x")])
        );
        assert_eq!(classify("RENAME TABLE a WAIT 5 TO b", "app"), Statement::Gone(vec![t("app", "a")]));
        assert_eq!(classify("DROP TEMPORARY TABLE a", "app"), Statement::Other);
        assert_eq!(classify("DROP DATABASE app", "app"), Statement::Other);
    }
}
