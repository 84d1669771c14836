//! The full-text query language.
//!
//! Owns: turning query text into `TextQuery`, with errors that say what is wrong and
//! where. Never: look at an index (field names are checked by `search`).
//!
//! The language (elements separated by spaces; a document matches when it matches any
//! element that is not excluded, and every required one):
//! - `word`: the word, its other forms (same stem), synonyms, its transliteration and
//!   the same keys on the other keyboard layout; typos when the word itself is unknown;
//! - `word*` words starting with `word`, `*word` words ending with it, `*word*` both;
//! - `word~` up to 1 typo (2 from 8 letters), `word~0`..`word~2` an explicit limit;
//! - `"some exact words"` a phrase; `"some words"~3` the words in order with at most 3
//!   other words between neighbours;
//! - `+element` required, `-element` excluded;
//! - `element^2` weighs an element twice;
//! - `@title,description^2 element` searches the next element in those fields only,
//!   with per-field boosts (`@*` all fields).

use super::fold::{fold, words};
use std::fmt;

/// Whether an element must, may or must not match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// A plain element: a document matches when it matches this or another element.
    Optional,
    /// `+element`: a document must match it.
    Required,
    /// `-element`: a document that matches it is left out.
    Excluded,
}

/// One word of a query.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryWord {
    /// Folded.
    pub text: String,
    /// As typed (for the keyboard layout swap, whose keys include punctuation).
    pub raw: String,
    /// Written `word*`: index words starting with the word match.
    pub prefix: bool,
    /// Written `*word`: index words ending with the word match.
    pub suffix: bool,
    /// Typo limit asked for with `~` (`None`: automatic).
    pub typos: Option<u8>,
}

/// A word or a phrase with its operators.
#[derive(Debug, Clone, PartialEq)]
pub struct Element {
    /// The element's words, in order.
    pub words: Vec<QueryWord>,
    /// The words must stand in order: a quoted phrase, or one typed token that splits
    /// into several words (`wi-fi`).
    pub phrase: bool,
    /// Phrase: most other words allowed between neighbours.
    pub slop: u32,
    /// Whether the element must, may or must not match.
    pub presence: Presence,
    /// `@` fields with boosts (empty: the match's fields).
    pub fields: Vec<(String, f32)>,
    /// Factor on the element's score, written `element^2` (default 1).
    pub boost: f32,
}

/// A parsed full-text query.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TextQuery {
    /// The elements in the order written.
    pub elements: Vec<Element>,
}

/// A syntax error in query text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Where the error is: a character index (not bytes) into the query text, from 0.
    pub at: usize,
    /// What is wrong, in words.
    pub reason: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at character {})", self.reason, self.at + 1)
    }
}

/// Typo limit for `word~` without a number: 1, or 2 from 8 letters (the automatic
/// limits, applied to short and known words too).
pub fn forced_typos(word: &str) -> u8 {
    if word.chars().count() >= 8 { 2 } else { 1 }
}

/// Typo limit applied by itself: none up to 3 letters, 1 up to 7, then 2.
pub fn automatic_typos(word: &str) -> u8 {
    match word.chars().count() {
        0..=3 => 0,
        4..=7 => 1,
        _ => 2,
    }
}

struct Cursor<'a> {
    chars: Vec<(usize, char)>,
    at: usize,
    text: &'a str,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).map(|(_, c)| *c)
    }

    fn offset(&self) -> usize {
        self.chars.get(self.at).map_or(self.text.len(), |(o, _)| *o)
    }

    fn fail<T>(&self, reason: impl Into<String>) -> Result<T, ParseError> {
        Err(ParseError { at: self.at, reason: reason.into() })
    }

    /// Reads characters while `keep` holds; returns them.
    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> &str {
        let start = self.offset();
        while self.peek().is_some_and(&keep) {
            self.at += 1;
        }
        &self.text[start..self.offset()]
    }

    /// `~N` and `^B` after an element; `~` alone gives `Some(None)`.
    fn modifiers(&mut self) -> Result<(Option<Option<u32>>, f32), ParseError> {
        let (mut tilde, mut boost) = (None, 1.0);
        loop {
            match self.peek() {
                Some('~') => {
                    self.at += 1;
                    let digits = self.take_while(|c| c.is_ascii_digit());
                    tilde = Some(if digits.is_empty() {
                        None
                    } else {
                        Some(digits.parse().map_err(|_| ParseError { at: self.at, reason: "number too big".into() })?)
                    });
                }
                Some('^') => {
                    self.at += 1;
                    let number = self.take_while(|c| c.is_ascii_digit() || c == '.');
                    boost = match number.parse::<f32>() {
                        Ok(b) if b > 0.0 && b.is_finite() && b <= 1000.0 => b,
                        _ => return self.fail("'^' takes a weight above 0 and at most 1000, such as ^2"),
                    };
                }
                _ => return Ok((tilde, boost)),
            }
        }
    }
}

/// Parses query text. Text with no words gives an empty query (it matches nothing).
pub fn parse(text: &str) -> Result<TextQuery, ParseError> {
    let mut cursor = Cursor { chars: text.char_indices().collect(), at: 0, text };
    let mut query = TextQuery::default();
    let mut fields: Vec<(String, f32)> = Vec::new();
    loop {
        cursor.take_while(char::is_whitespace);
        let Some(first) = cursor.peek() else { break };
        if first == '@' {
            cursor.at += 1;
            let spec = cursor.take_while(|c| !c.is_whitespace()).to_string();
            fields = field_list(&spec).map_err(|reason| ParseError { at: cursor.at, reason })?;
            continue;
        }
        let presence = match first {
            '+' => Presence::Required,
            '-' => Presence::Excluded,
            _ => Presence::Optional,
        };
        if presence != Presence::Optional {
            cursor.at += 1;
        }
        let element = if cursor.peek() == Some('"') {
            cursor.at += 1;
            let inside = cursor.take_while(|c| c != '"').to_string();
            if cursor.peek() != Some('"') {
                return cursor.fail("a phrase is not closed with '\"'");
            }
            cursor.at += 1;
            let (tilde, boost) = cursor.modifiers()?;
            let slop = tilde.map_or(0, |n| n.unwrap_or(1));
            let words: Vec<QueryWord> = words(&inside)
                .map(|w| QueryWord {
                    raw: inside[w.start..w.end].to_string(),
                    text: w.text,
                    prefix: false,
                    suffix: false,
                    typos: Some(0),
                })
                .collect();
            Element { phrase: true, words, slop, presence, fields: Vec::new(), boost }
        } else {
            let raw = cursor.take_while(|c| !c.is_whitespace() && c != '~' && c != '^' && c != '"').to_string();
            let (tilde, boost) = cursor.modifiers()?;
            let suffix = raw.starts_with('*');
            let prefix = raw.len() > 1 && raw.ends_with('*');
            let core = raw.trim_start_matches('*').trim_end_matches('*');
            let typos = match tilde {
                None => None,
                Some(None) => Some(forced_typos(&fold(core))),
                Some(Some(n)) if n <= 2 => Some(n as u8),
                Some(Some(_)) => return cursor.fail("at most 2 typos can be asked for (word~2)"),
            };
            let mut found: Vec<QueryWord> = words(core)
                .map(|w| QueryWord { text: w.text, raw: core.to_string(), prefix: false, suffix: false, typos })
                .collect();
            let several = found.len() > 1;
            if let Some(last) = found.last_mut() {
                last.prefix = prefix;
            }
            if let Some(first) = found.first_mut() {
                first.suffix = suffix;
            }
            if several {
                // `wi-fi` is the phrase "wi fi"; its parts are not keyboard-swapped.
                for word in &mut found {
                    word.raw = word.text.clone();
                }
            }
            Element { phrase: several, words: found, slop: 0, presence, fields: Vec::new(), boost }
        };
        if element.words.is_empty() {
            fields.clear();
            continue;
        }
        if query.elements.len() == ELEMENTS_MAX {
            return cursor.fail(format!("a query has at most {ELEMENTS_MAX} words and phrases"));
        }
        query.elements.push(Element { fields: std::mem::take(&mut fields), ..element });
    }
    Ok(query)
}

/// Most words and phrases in one query (each is a bit of a mask while matching).
pub const ELEMENTS_MAX: usize = 64;

fn field_list(spec: &str) -> Result<Vec<(String, f32)>, String> {
    if spec.is_empty() {
        return Err("'@' needs field names, such as @title or @title^2,description".to_string());
    }
    if spec == "*" {
        return Ok(Vec::new());
    }
    spec.split(',')
        .map(|part| {
            let (name, boost) = match part.split_once('^') {
                None => (part, 1.0),
                Some((name, boost)) => match boost.parse::<f32>() {
                    Ok(b) if b > 0.0 && b.is_finite() && b <= 1000.0 => (name, b),
                    _ => return Err(format!("'@{part}': the weight after '^' must be above 0 and at most 1000")),
                },
            };
            if name.is_empty() {
                return Err(format!("'@{spec}' has an empty field name"));
            }
            Ok((name.to_string(), boost))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Element {
        let query = parse(text).expect("parses");
        assert_eq!(query.elements.len(), 1, "{text}");
        query.elements.into_iter().next().expect("one")
    }

    #[test]
    fn reads_every_operator() {
        let e = one("+Head*^2");
        assert_eq!(
            (e.presence, e.words[0].text.as_str(), e.words[0].prefix, e.boost),
            (Presence::Required, "head", true, 2.0)
        );
        let e = one("-*phone");
        assert_eq!((e.presence, e.words[0].suffix, e.words[0].prefix), (Presence::Excluded, true, false));
        assert_eq!(one("wireles~").words[0].typos, Some(1));
        assert_eq!(one("wirelesss~").words[0].typos, Some(2));
        assert_eq!(one("cat~1").words[0].typos, Some(1));
        assert_eq!(one("cat").words[0].typos, None);
        let e = one("\"Frying  Pan\"~2");
        assert_eq!((e.phrase, e.slop, e.words.len()), (true, 2, 2));
        let e = one("@title^3,description shoes");
        assert_eq!(e.fields, [("title".to_string(), 3.0), ("description".to_string(), 1.0)]);
        let e = one("wi-fi");
        assert!(e.phrase);
        assert_eq!(one("[kt,").words[0].raw, "[kt,");
    }

    #[test]
    fn fields_apply_to_the_next_element_only() {
        let q = parse("@title red shoes").expect("parses");
        assert_eq!(q.elements[0].fields.len(), 1);
        assert!(q.elements[1].fields.is_empty());
    }

    #[test]
    fn refuses_broken_syntax_with_a_place() {
        assert_eq!(parse("\"open phrase").unwrap_err().reason, "a phrase is not closed with '\"'");
        assert!(parse("word~3").is_err());
        assert!(parse("word^0").is_err());
        assert!(parse("word^x").is_err());
        assert!(parse("@ word").is_err());
        assert!(parse("@title^-1 word").is_err());
        assert_eq!(parse("  ... ").expect("no words is not an error").elements.len(), 0);
        let many = vec!["w"; ELEMENTS_MAX].join(" ");
        assert_eq!(parse(&many).expect("the most words").elements.len(), ELEMENTS_MAX);
        assert!(parse(&format!("{many} one")).unwrap_err().reason.contains("at most 64"));
    }
}
