//! String collations: how indexed strings compare, turned into byte keys.
//!
//! Owns: the mapping from a string to its *collation key*, a byte string whose plain byte
//! order is the collation's order and whose equality is the collation's equality. Every
//! indexed string is stored as its key, so comparisons on hot paths are `memcmp`.
//! Never: allocate for the exact collation beyond one copy, or depend on the locale.
//!
//! - `None` (exact): the UTF-8 bytes; byte order equals code point order.
//! - `AsciiCi`: ASCII letters lower-cased; other characters kept.
//! - `Utf8Ci`: Unicode default case folding (`Ёлка` = `ёлка`, `Straße` = `STRASSE`).
//! - `Numeric`: runs of digits compare by value (`"2" < "10"`), other bytes exactly. A digit
//!   run becomes `'0'`, its length (one byte, leading zeros dropped) and its digits, so a
//!   shorter number sorts first and digits still sort before letters as in the exact order.

/// How an indexed string field compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Collation {
    #[default]
    None,
    AsciiCi,
    Utf8Ci,
    Numeric,
}

impl Collation {
    /// Parses the name used in index definitions (`none`, `ascii_ci`, `utf8_ci`, `numeric`).
    pub fn parse(name: &str) -> Option<Collation> {
        match name {
            "" | "none" => Some(Collation::None),
            "ascii_ci" | "ascii" => Some(Collation::AsciiCi),
            "utf8_ci" | "utf8" => Some(Collation::Utf8Ci),
            "numeric" => Some(Collation::Numeric),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Collation::None => "none",
            Collation::AsciiCi => "ascii_ci",
            Collation::Utf8Ci => "utf8_ci",
            Collation::Numeric => "numeric",
        }
    }

    /// The collation key of `text`.
    pub fn key(self, text: &str) -> Vec<u8> {
        match self {
            Collation::None => text.as_bytes().to_vec(),
            Collation::AsciiCi => text.to_ascii_lowercase().into_bytes(),
            Collation::Utf8Ci => fold_utf8(text).into_bytes(),
            Collation::Numeric => numeric_key(text),
        }
    }

    /// Folds a LIKE pattern or its literal pieces the way `key` folds values, so a pattern
    /// can be matched against stored keys. `Numeric` keys are not text, so LIKE on such a
    /// field matches the original string instead (see `matches_folded_text`).
    pub fn fold_text(self, text: &str) -> String {
        match self {
            Collation::None | Collation::Numeric => text.to_string(),
            Collation::AsciiCi => text.to_ascii_lowercase(),
            Collation::Utf8Ci => fold_utf8(text),
        }
    }

    /// True when the collation key is the folded text itself (LIKE can run on keys).
    pub fn keys_are_text(self) -> bool {
        !matches!(self, Collation::Numeric)
    }
}

fn fold_utf8(text: &str) -> String {
    if text.is_ascii() {
        // The common case: ASCII folding is lower-casing, without the Unicode tables.
        return text.to_ascii_lowercase();
    }
    caseless::default_case_fold_str(text)
}

fn numeric_key(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut key = Vec::with_capacity(bytes.len() + 4);
    let mut at = 0;
    while at < bytes.len() {
        if !bytes[at].is_ascii_digit() {
            key.push(bytes[at]);
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && bytes[at].is_ascii_digit() {
            at += 1;
        }
        let run = &bytes[start..at];
        let first_significant = run.iter().position(|&b| b != b'0').unwrap_or(run.len() - 1);
        let digits = &run[first_significant..];
        // Runs longer than 255 digits saturate the length byte; they still sort after
        // every shorter number, which is all real data needs.
        key.push(b'0');
        key.push(u8::try_from(digits.len()).unwrap_or(u8::MAX));
        key.extend_from_slice(digits);
    }
    key
}

/// The smallest byte string greater than every string starting with `prefix`, or `None`
/// when there is none (the prefix is all `0xFF`). Turns a prefix into a half-open range.
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut upper = prefix.to_vec();
    while let Some(last) = upper.pop() {
        if last < u8::MAX {
            upper.push(last + 1);
            return Some(upper);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_ci_folds_cyrillic_and_sharp_s() {
        let c = Collation::Utf8Ci;
        assert_eq!(c.key("Ёлка"), c.key("ёлка"));
        assert_eq!(c.key("STRASSE"), c.key("straße"));
        assert_ne!(c.key("Ёлка"), c.key("елка"));
        assert!(c.key("apple") < c.key("Banana"));
    }

    #[test]
    fn ascii_ci_keeps_non_ascii() {
        let c = Collation::AsciiCi;
        assert_eq!(c.key("HeLLo"), c.key("hello"));
        assert_ne!(c.key("Ё"), c.key("ё"));
    }

    #[test]
    fn numeric_orders_digit_runs_by_value() {
        let c = Collation::Numeric;
        assert!(c.key("2") < c.key("10"));
        assert!(c.key("item2") < c.key("item10"));
        assert_eq!(c.key("007"), c.key("7"));
        assert!(c.key("a9b") < c.key("a10a"));
        assert!(c.key("9") < c.key("a"));
        assert!(c.key("") < c.key("0"));
    }

    #[test]
    fn prefix_successor_bounds_prefix() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(&[b'a', 0xFF]), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(&[0xFF]), None);
    }
}
