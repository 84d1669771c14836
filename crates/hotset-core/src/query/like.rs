//! SQL LIKE patterns: parsing, matching, and the literal prefix an index can use.
//!
//! Owns: `LikePattern` (`%` any run of characters, `_` exactly one character, `\`
//! escapes the next character). Never: fold case (the caller folds the pattern with the
//! field's collation before compiling, and matches against folded values).

use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Char(char),
    One,
    Any,
}

/// A compiled LIKE pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct LikePattern {
    tokens: Vec<Token>,
    /// The literal prefix's UTF-8 bytes: every match starts with them.
    prefix: Vec<u8>,
    /// The pattern is `prefix%` (or `%`): starting with `prefix` is the whole test.
    prefix_only: bool,
}

/// Patterns longer than this are refused: matching is O(pattern × text) in the worst
/// case, and no real prefix search needs more.
pub const LIKE_PATTERN_CHARS_MAX: usize = 4096;

impl LikePattern {
    /// Compiles a pattern: `%` any run of characters, `_` one character, `\` escapes
    /// the next one. `Error::InvalidPattern` for a trailing `\` or a pattern over
    /// `LIKE_PATTERN_CHARS_MAX` characters.
    pub fn parse(pattern: &str) -> Result<LikePattern> {
        if pattern.chars().count() > LIKE_PATTERN_CHARS_MAX {
            return Err(Error::InvalidPattern {
                pattern: pattern.chars().take(64).collect(),
                reason: "the pattern is too long",
            });
        }
        let mut tokens = Vec::new();
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            let token = match c {
                '%' => Token::Any,
                '_' => Token::One,
                '\\' => Token::Char(chars.next().ok_or_else(|| Error::InvalidPattern {
                    pattern: pattern.to_string(),
                    reason: "it ends with an escape character",
                })?),
                c => Token::Char(c),
            };
            // Runs of `%` mean the same as one.
            if !(token == Token::Any && tokens.last() == Some(&Token::Any)) {
                tokens.push(token);
            }
        }
        let literal = tokens.iter().take_while(|t| matches!(t, Token::Char(_))).count();
        let prefix_only = matches!(&tokens[literal..], [Token::Any]);
        let prefix = tokens[..literal]
            .iter()
            .map(|t| match t {
                Token::Char(c) => *c,
                _ => unreachable!("the literal run holds characters only"),
            })
            .collect::<String>()
            .into_bytes();
        Ok(LikePattern { tokens, prefix, prefix_only })
    }

    /// The literal text every match starts with.
    pub fn prefix(&self) -> &str {
        std::str::from_utf8(&self.prefix).expect("made from characters")
    }

    /// True when the pattern is `prefix%` (or just `prefix`, or `%`): a prefix range
    /// answers it exactly, with no check per row.
    pub fn is_prefix_only(&self) -> bool {
        self.prefix_only
    }

    /// Whether UTF-8 `text` matches (text that is not UTF-8 never does). A row check:
    /// it allocates nothing, and a `prefix%` pattern is one byte comparison.
    pub fn matches_bytes(&self, text: &[u8]) -> bool {
        if !text.starts_with(&self.prefix) {
            return false;
        }
        if self.prefix_only {
            // The rest is `%`; `text` is a column value, so the rest is whole characters
            // after a whole-character prefix. Valid UTF-8 is checked where values enter.
            return true;
        }
        std::str::from_utf8(text).is_ok_and(|text| self.matches(text))
    }

    /// Whether the whole of `text` matches (not a part of it). Compares characters as
    /// they are: the caller folds pattern and text for a case-insensitive collation.
    pub fn matches(&self, text: &str) -> bool {
        // Greedy matching with one backtrack point (the last `%`): linear for typical
        // patterns, O(pattern × text) at worst, never exponential. `t` is a byte offset.
        let next = |t: usize| text[t..].chars().next().expect("an offset before the end");
        let (mut t, mut p) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while t < text.len() {
            let c = next(t);
            match self.tokens.get(p) {
                Some(Token::Char(want)) if *want == c => {
                    t += c.len_utf8();
                    p += 1;
                }
                Some(Token::One) => {
                    t += c.len_utf8();
                    p += 1;
                }
                Some(Token::Any) => {
                    star = Some((p, t));
                    p += 1;
                }
                _ => match star {
                    Some((star_p, star_t)) => {
                        let skipped = star_t + next(star_t).len_utf8();
                        p = star_p + 1;
                        t = skipped;
                        star = Some((star_p, skipped));
                    }
                    None => return false,
                },
            }
        }
        self.tokens[p..].iter().all(|t| *t == Token::Any)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn like(p: &str, t: &str) -> bool {
        LikePattern::parse(p).unwrap().matches(t)
    }

    #[test]
    fn wildcards_and_escapes() {
        assert!(like("ab%", "abc") && like("ab%", "ab") && !like("ab%", "a"));
        assert!(like("%b%", "abc") && !like("%d%", "abc"));
        assert!(like("a_c", "abc") && !like("a_c", "ac") && like("a_c", "aёc"));
        assert!(like("%", "") && !like("_", ""));
        assert!(like("a\\%", "a%") && !like("a\\%", "ab"));
        assert!(like("%a%b%c", "xxaybzc") && !like("%a%b%c", "xxaybzcd"));
        assert!(like("a%%b", "ab"));
        assert!(matches!(LikePattern::parse("ab\\"), Err(Error::InvalidPattern { .. })));
    }

    #[test]
    fn prefix_analysis() {
        let p = LikePattern::parse("ab%").unwrap();
        assert_eq!(p.prefix(), "ab");
        assert!(p.is_prefix_only());
        let p = LikePattern::parse("ab%c").unwrap();
        assert!(!p.is_prefix_only());
        let p = LikePattern::parse("ab").unwrap();
        assert!(!p.is_prefix_only());
        assert_eq!(LikePattern::parse("_b%").unwrap().prefix(), "");
    }
}
