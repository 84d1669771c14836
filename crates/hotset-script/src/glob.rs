//! Redis' glob patterns (`stringmatchlen`): `*`, `?`, `[...]` with ranges and `^`, and `\`
//! escapes, optionally without regard to case. FUNCTION LIST LIBRARYNAME uses it. This module
//! must never recurse without bound: nested stars are bounded by the pattern's length.

/// Whether `text` matches `pattern`.
pub fn matches(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    match_from(pattern, text, nocase, 0)
}

const NESTING_MAX: usize = 1000;

fn same(a: u8, b: u8, nocase: bool) -> bool {
    if nocase { a.eq_ignore_ascii_case(&b) } else { a == b }
}

fn match_from(mut pattern: &[u8], mut text: &[u8], nocase: bool, nesting: usize) -> bool {
    if nesting > NESTING_MAX {
        return false;
    }
    while let Some(&first) = pattern.first() {
        match first {
            b'*' => {
                while pattern.len() > 1 && pattern[1] == b'*' {
                    pattern = &pattern[1..];
                }
                if pattern.len() == 1 {
                    return true;
                }
                for start in 0..=text.len() {
                    if match_from(&pattern[1..], &text[start..], nocase, nesting + 1) {
                        return true;
                    }
                }
                return false;
            }
            b'?' => {
                if text.is_empty() {
                    return false;
                }
                text = &text[1..];
            }
            b'[' => {
                let Some(&character) = text.first() else { return false };
                let (matched, rest) = match_class(&pattern[1..], character, nocase);
                if !matched {
                    return false;
                }
                pattern = rest;
                text = &text[1..];
                continue;
            }
            b'\\' if pattern.len() >= 2 => {
                pattern = &pattern[1..];
                if text.first().is_none_or(|&character| !same(pattern[0], character, nocase)) {
                    return false;
                }
                text = &text[1..];
            }
            literal => {
                if text.first().is_none_or(|&character| !same(literal, character, nocase)) {
                    return false;
                }
                text = &text[1..];
            }
        }
        pattern = &pattern[1..];
    }
    text.is_empty()
}

/// Matches `character` against a class whose body starts `pattern` (after `[`); returns the
/// outcome and the pattern after the closing `]`.
fn match_class(mut pattern: &[u8], character: u8, nocase: bool) -> (bool, &[u8]) {
    let negate = pattern.first() == Some(&b'^');
    if negate {
        pattern = &pattern[1..];
    }
    let mut matched = false;
    loop {
        match pattern {
            [] => break,
            [b']', rest @ ..] => {
                pattern = rest;
                break;
            }
            [b'\\', escaped, rest @ ..] => {
                matched |= same(*escaped, character, nocase);
                pattern = rest;
            }
            [low, b'-', high, rest @ ..] if *high != b']' => {
                let (mut low, mut high, mut character) = (*low, *high, character);
                if low > high {
                    std::mem::swap(&mut low, &mut high);
                }
                if nocase {
                    low = low.to_ascii_lowercase();
                    high = high.to_ascii_lowercase();
                    character = character.to_ascii_lowercase();
                }
                matched |= (low..=high).contains(&character);
                pattern = rest;
            }
            [single, rest @ ..] => {
                matched |= same(*single, character, nocase);
                pattern = rest;
            }
        }
    }
    (matched != negate, pattern)
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs_like_redis() {
        assert!(matches(b"lib*", b"library", false));
        assert!(matches(b"LIB*", b"library", true));
        assert!(!matches(b"LIB*", b"library", false));
        assert!(matches(b"l?b", b"lib", false));
        assert!(matches(b"l[a-z]b", b"lib", false));
        assert!(!matches(b"l[^i]b", b"lib", false));
        assert!(matches(b"a\\*b", b"a*b", false));
        assert!(!matches(b"a\\*b", b"axb", false));
        assert!(matches(b"*", b"", false));
        assert!(!matches(b"?", b"", false));
        assert!(matches(b"*a*b*c*", b"xxaxxbxxcxx", false));
    }
}
