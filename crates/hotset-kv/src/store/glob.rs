//! Redis glob-style pattern matching (KEYS, SCAN MATCH, HSCAN MATCH).
//!
//! Owns: [`Glob`], a pattern compiled once and matched against many keys.
//!
//! Must never: recurse or backtrack exponentially. Matching is the classic
//! single-backtrack-point wildcard algorithm, O(pattern × text) worst case,
//! so a hostile pattern cannot stall a shard lock the way Redis' recursive
//! matcher can.
//!
//! Invariants (byte-for-byte Redis `stringmatchlen` semantics):
//! - `*` any run of bytes, `?` exactly one byte, `\x` the literal `x`
//!   (a trailing lone `\` is a literal backslash).
//! - `[...]` one byte from a set: `^` first negates, `a-z` is an inclusive
//!   range (reversed bounds are swapped), `\x` inside is literal, `[]`
//!   matches nothing, and an unterminated class runs to the pattern's end.
//!   Like Redis, `[a-]` reads `-]` as a range up to `]` and keeps going.
//! - An empty text matches only the empty pattern (a Redis quirk); the
//!   exact pattern `*` is special-cased to match everything, as KEYS and
//!   SCAN do in Redis.

/// One compiled pattern element.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Star,
    AnyByte,
    Literal(u8),
    Class { negated: bool, ranges: Vec<(u8, u8)> },
}

impl Token {
    fn matches(&self, byte: u8) -> bool {
        match self {
            Token::Star => true,
            Token::AnyByte => true,
            Token::Literal(b) => *b == byte,
            Token::Class { negated, ranges } => ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&byte)) != *negated,
        }
    }
}

/// A compiled glob pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    tokens: Vec<Token>,
    match_all: bool,
}

impl Glob {
    /// Compiles `pattern`.
    pub fn new(pattern: &[u8]) -> Self {
        Self { tokens: compile(pattern), match_all: pattern == b"*" }
    }

    /// A glob for an optional pattern; `None` matches everything.
    pub fn optional(pattern: Option<&[u8]>) -> Self {
        Self::new(pattern.unwrap_or(b"*"))
    }

    /// Whether the pattern matches everything (lets callers skip matching).
    pub fn matches_all(&self) -> bool {
        self.match_all
    }

    /// Whether `text` matches.
    pub fn matches(&self, text: &[u8]) -> bool {
        if self.match_all {
            return true;
        }
        if text.is_empty() {
            return self.tokens.is_empty();
        }
        match_tokens(&self.tokens, text)
    }
}

/// Convenience: compile `pattern` and match `text` once.
pub fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    Glob::new(pattern).matches(text)
}

fn compile(pattern: &[u8]) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < pattern.len() {
        let token = match pattern[i] {
            b'*' => {
                // Consecutive stars are one star.
                if tokens.last() != Some(&Token::Star) {
                    tokens.push(Token::Star);
                }
                i += 1;
                continue;
            }
            b'?' => Token::AnyByte,
            b'[' => {
                let (class, end) = compile_class(pattern, i + 1);
                i = end;
                class
            }
            b'\\' if i + 1 < pattern.len() => {
                i += 1;
                Token::Literal(pattern[i])
            }
            b => Token::Literal(b),
        };
        tokens.push(token);
        i += 1;
    }
    tokens
}

/// Parses a class whose body starts at `start`; returns the token and the
/// index of its closing `]` (or the last index when unterminated).
fn compile_class(pattern: &[u8], start: usize) -> (Token, usize) {
    let negated = pattern.get(start) == Some(&b'^');
    let mut i = start + usize::from(negated);
    let mut ranges = Vec::new();
    loop {
        match pattern.get(i) {
            None => return (Token::Class { negated, ranges }, pattern.len() - 1),
            Some(b']') => return (Token::Class { negated, ranges }, i),
            Some(b'\\') if i + 1 < pattern.len() => {
                ranges.push((pattern[i + 1], pattern[i + 1]));
                i += 2;
            }
            Some(&lo) if i + 2 < pattern.len() && pattern[i + 1] == b'-' => {
                let hi = pattern[i + 2];
                ranges.push((lo.min(hi), lo.max(hi)));
                i += 3;
            }
            Some(&b) => {
                ranges.push((b, b));
                i += 1;
            }
        }
    }
}

/// Wildcard matching with one backtrack point: on a mismatch, retry from
/// the most recent `*` consuming one more byte. A later `*` supersedes an
/// earlier one because it can absorb anything the earlier one could.
fn match_tokens(tokens: &[Token], text: &[u8]) -> bool {
    let (mut t, mut s) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while s < text.len() {
        match tokens.get(t) {
            Some(Token::Star) => {
                backtrack = Some((t + 1, s));
                t += 1;
                continue;
            }
            Some(token) if token.matches(text[s]) => {
                t += 1;
                s += 1;
                continue;
            }
            _ => {}
        }
        let Some((star_next, star_text)) = backtrack else {
            return false;
        };
        t = star_next;
        s = star_text + 1;
        backtrack = Some((star_next, s));
    }
    tokens[t..].iter().all(|tok| *tok == Token::Star)
}
