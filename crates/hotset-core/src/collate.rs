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
//!   run becomes `'0'`, its number of significant digits (one byte below 255, else `0xFF`
//!   and a big-endian u64) and those digits, so a shorter number sorts first and digits
//!   still sort before letters as in the exact order.

/// How an indexed string field compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Collation {
    /// Exact: strings compare by their UTF-8 bytes (code point order).
    #[default]
    None,
    /// ASCII letters compare without case; other characters exactly.
    AsciiCi,
    /// Unicode case folding: `Ёлка` equals `ёлка`, `Straße` equals `STRASSE`.
    Utf8Ci,
    /// Runs of digits compare by their value (`"2" < "10"`), other bytes exactly.
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

    /// The collation's canonical name, as index definitions write it.
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
        key.push(b'0');
        push_digit_count(&mut key, digits.len());
        key.extend_from_slice(digits);
    }
    key
}

/// Appends the number of significant digits of a run so that byte order is numeric order:
/// one byte up to 254, else `0xFF` and the count as a big-endian u64. (A one-byte count
/// that saturated at 255 made every run of 255 digits or more compare digit by digit, so
/// a 256-digit number sorted before a 255-digit one with a larger first digit.)
fn push_digit_count(key: &mut Vec<u8>, count: usize) {
    match u8::try_from(count) {
        Ok(short) if short < u8::MAX => key.push(short),
        _ => {
            key.push(u8::MAX);
            key.extend_from_slice(&(count as u64).to_be_bytes());
        }
    }
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

    /// The ASCII fast path of `utf8_ci` (lower-casing) folds as the Unicode tables do.
    /// (It was once guarded by `is_empty` instead of `is_ascii`, so every ASCII name went
    /// through the tables: a speed loss, which the recovery benchmark shows, not a test.)
    #[test]
    fn utf8_ci_folds_ascii_as_the_unicode_tables_do() {
        let every_ascii: String = (0u8..128).map(char::from).collect();
        assert_eq!(fold_utf8(&every_ascii), caseless::default_case_fold_str(&every_ascii));
        assert_eq!(fold_utf8("Kirori Huzu"), "kirori huzu");
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

    /// Regression: the digit count was one saturating byte, so runs of 255 significant
    /// digits or more compared digit by digit (found by `keys_order_as_the_naive_comparators`).
    #[test]
    fn numeric_orders_runs_of_255_digits_and_more_by_value() {
        let c = Collation::Numeric;
        let nines = |n: usize| "9".repeat(n);
        let power = |n: usize| format!("1{}", "0".repeat(n - 1));
        assert!(c.key(&nines(254)) < c.key(&power(255)));
        assert!(c.key(&nines(255)) < c.key(&power(256)));
        assert!(c.key(&nines(300)) < c.key(&power(301)));
        assert!(c.key(&format!("a{}b", nines(255))) < c.key(&format!("a{}a", power(256))));
        assert_eq!(c.key(&format!("00{}", nines(260))), c.key(&nines(260)));
        assert!(c.key(&nines(255)) > c.key(&nines(254)));
    }

    #[test]
    fn prefix_successor_bounds_prefix() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(&[b'a', 0xFF]), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(&[0xFF]), None);
    }
}

/// `Collation::key` against comparators written here from the documented rules alone
/// (the reference model of the property tests reuses `key`, so it cannot catch a key that
/// orders wrongly). Each comparator works on characters, never on keys: exact is code
/// point order; ascii_ci lowers ASCII letters only; utf8_ci is Unicode full case folding,
/// taken as std's `char::to_lowercase` except where folding differs from lowering (the
/// table below, listed from Python's `str.casefold`, a third implementation); numeric
/// compares maximal runs of ASCII digits by value and everything else by code point.
#[cfg(test)]
mod naive_order {
    use super::Collation;
    use proptest::prelude::*;
    use std::cmp::Ordering;

    /// Where full case folding differs from lower-casing, for the characters the
    /// generator below draws (Cherokee is handled in `fold_char`: it folds to upper case).
    const FOLD_EXCEPTIONS: &[(char, &str)] = &[
        ('\u{B5}', "\u{3BC}"),
        ('\u{DF}', "ss"),
        ('\u{149}', "\u{2BC}n"),
        ('\u{17F}', "s"),
        ('\u{1F0}', "j\u{30C}"),
        ('\u{345}', "\u{3B9}"),
        ('\u{390}', "\u{3B9}\u{308}\u{301}"),
        ('\u{3B0}', "\u{3C5}\u{308}\u{301}"),
        ('\u{3C2}', "\u{3C3}"),
        ('\u{3D0}', "\u{3B2}"),
        ('\u{3D1}', "\u{3B8}"),
        ('\u{3D5}', "\u{3C6}"),
        ('\u{3D6}', "\u{3C0}"),
        ('\u{3F0}', "\u{3BA}"),
        ('\u{3F1}', "\u{3C1}"),
        ('\u{3F5}', "\u{3B5}"),
        ('\u{587}', "\u{565}\u{582}"),
        ('\u{1E96}', "h\u{331}"),
        ('\u{1E97}', "t\u{308}"),
        ('\u{1E98}', "w\u{30A}"),
        ('\u{1E99}', "y\u{30A}"),
        ('\u{1E9A}', "a\u{2BE}"),
        ('\u{1E9B}', "\u{1E61}"),
        ('\u{1E9E}', "ss"),
        ('\u{1FB3}', "\u{3B1}\u{3B9}"),
        ('\u{1FBC}', "\u{3B1}\u{3B9}"),
        ('\u{1FC3}', "\u{3B7}\u{3B9}"),
        ('\u{FB00}', "ff"),
        ('\u{FB01}', "fi"),
        ('\u{FB02}', "fl"),
        ('\u{FB03}', "ffi"),
        ('\u{FB04}', "ffl"),
        ('\u{FB05}', "st"),
        ('\u{FB06}', "st"),
        ('\u{FB13}', "\u{574}\u{576}"),
        ('\u{FB14}', "\u{574}\u{565}"),
        ('\u{FB15}', "\u{574}\u{56B}"),
        ('\u{FB16}', "\u{57E}\u{576}"),
        ('\u{FB17}', "\u{574}\u{56D}"),
    ];

    fn fold_char(c: char, out: &mut Vec<char>) {
        let code = c as u32;
        match code {
            // Cherokee folds to its capital letters, the older ones.
            0x13A0..=0x13F5 => out.push(c),
            0x13F8..=0x13FD => out.push(char::from_u32(code - 8).expect("a Cherokee capital")),
            0xAB70..=0xABBF => out.push(char::from_u32(code - 0xAB70 + 0x13A0).expect("a Cherokee capital")),
            _ => match FOLD_EXCEPTIONS.iter().find(|(from, _)| *from == c) {
                Some((_, to)) => out.extend(to.chars()),
                None => out.extend(c.to_lowercase()),
            },
        }
    }

    fn folded(text: &str) -> Vec<char> {
        let mut out = Vec::new();
        for c in text.chars() {
            fold_char(c, &mut out);
        }
        out
    }

    /// A piece of a string under the numeric collation.
    #[derive(Debug)]
    enum Token {
        /// A maximal run of ASCII digits: its first digit and its significant digits
        /// ("0" for a run of zeros).
        Number {
            first: char,
            digits: String,
        },
        Other(char),
    }

    fn tokens(text: &str) -> Vec<Token> {
        let mut out = Vec::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if !c.is_ascii_digit() {
                out.push(Token::Other(c));
                continue;
            }
            let mut run = String::from(c);
            while let Some(&next) = chars.peek().filter(|d| d.is_ascii_digit()) {
                run.push(next);
                chars.next();
            }
            let significant = run.trim_start_matches('0');
            let digits = if significant.is_empty() { "0".to_string() } else { significant.to_string() };
            out.push(Token::Number { first: c, digits });
        }
        out
    }

    fn token_order(a: &Token, b: &Token) -> Ordering {
        match (a, b) {
            // By value: more significant digits is bigger; then digit by digit.
            (Token::Number { digits: x, .. }, Token::Number { digits: y, .. }) => {
                x.len().cmp(&y.len()).then_with(|| x.cmp(y))
            }
            // A number stands where its digits stand in the exact order.
            (Token::Number { first, .. }, Token::Other(c)) => first.cmp(c),
            (Token::Other(c), Token::Number { first, .. }) => c.cmp(first),
            (Token::Other(x), Token::Other(y)) => x.cmp(y),
        }
    }

    fn naive_cmp(collation: Collation, a: &str, b: &str) -> Ordering {
        match collation {
            Collation::None => a.chars().cmp(b.chars()),
            Collation::AsciiCi => {
                let lower = |c: char| if c.is_ascii_uppercase() { char::from(c as u8 + 32) } else { c };
                a.chars().map(lower).cmp(b.chars().map(lower))
            }
            Collation::Utf8Ci => folded(a).cmp(&folded(b)),
            Collation::Numeric => {
                let (x, y) = (tokens(a), tokens(b));
                for (p, q) in x.iter().zip(&y) {
                    let order = token_order(p, q);
                    if order.is_ne() {
                        return order;
                    }
                }
                x.len().cmp(&y.len())
            }
        }
    }

    /// Characters chosen for their case rules: pairs that fold together, ones that fold
    /// to several characters, ones whose lower case is not their folding, look-alikes
    /// that stay apart, and bytes around the digits.
    const TRICKY: &[char] = &[
        'a', 'A', 'b', 'B', 'k', 'K', 's', 'S', 'z', 'Z', 'i', 'I', 'j', 'J', 'n', 'f', 'F', 'l', 't', ' ', '\0', '!',
        '%', '/', ':', '_', '~', '\u{7F}', 'ß', 'ẞ', 'ſ', 'K', 'Å', 'å', 'Ω', 'ω', 'µ', 'μ', 'Μ', 'ς', 'σ', 'Σ', 'ΐ',
        'ϐ', 'β', 'ͅ', 'ι', 'ᾳ', 'ᾼ', 'İ', 'ı', 'ǰ', 'ŉ', 'ﬁ', 'ﬀ', 'ﬃ', 'ﬆ', 'Ꭰ', 'ꭰ', 'Ᏸ', 'ᏸ', 'ё', 'Ё', 'е', 'é',
        'É', 'ǅ', 'ǆ', 'Ǆ', '中', '😀', '𐐀', '𐐨', 'և',
    ];

    /// Blocks where the test's folding is complete: Latin, Greek and Coptic, Cyrillic,
    /// Armenian, Cherokee, Latin Extended Additional, letterlike symbols, ligatures, Deseret.
    const RANGES: &[(char, char)] = &[
        ('\u{20}', '\u{7E}'),
        ('\u{A0}', '\u{24F}'),
        ('\u{300}', '\u{4FF}'),
        ('\u{531}', '\u{58F}'),
        ('\u{13A0}', '\u{13FD}'),
        ('\u{AB70}', '\u{ABBF}'),
        ('\u{1E00}', '\u{1EFF}'),
        ('\u{2100}', '\u{214F}'),
        ('\u{FB00}', '\u{FB17}'),
        ('\u{10400}', '\u{1044F}'),
    ];

    /// A run of `significant` digits (the first one not zero) after 0–2 leading zeros.
    fn digit_run(significant: impl Strategy<Value = usize>) -> impl Strategy<Value = String> {
        (0usize..3, 1u8..10, significant.prop_flat_map(|n| proptest::collection::vec(0u8..10, n - 1))).prop_map(
            |(zeros, first, rest)| {
                let mut run = "0".repeat(zeros);
                run.push(char::from(b'0' + first));
                run.extend(rest.into_iter().map(|d| char::from(b'0' + d)));
                run
            },
        )
    }

    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            6 => proptest::sample::select(TRICKY).prop_map(String::from),
            3 => proptest::char::ranges(RANGES.iter().map(|&(low, high)| low..=high).collect::<Vec<_>>().into())
                .prop_map(String::from),
            2 => digit_run(1usize..=4),
            1 => Just("0".to_string()),
            // Around 255 significant digits, where a one-byte count would saturate.
            1 => long_run(),
        ]
    }

    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(piece(), 0..8).prop_map(|pieces| pieces.concat())
    }

    /// Strings close to `text`, so that equal and nearly equal keys are common.
    fn variant_of(text: String) -> impl Strategy<Value = String> {
        let (upper, lower) = (text.to_uppercase(), text.to_lowercase());
        let padded: String = {
            // Leading zeros before every digit run: equal under numeric.
            let mut out = String::new();
            let mut previous_digit = false;
            for c in text.chars() {
                if c.is_ascii_digit() && !previous_digit {
                    out.push('0');
                }
                previous_digit = c.is_ascii_digit();
                out.push(c);
            }
            out
        };
        let chars: Vec<char> = text.chars().collect();
        prop_oneof![
            Just(upper),
            Just(lower),
            Just(padded),
            Just(text.clone()),
            (Just(text.clone()), piece()).prop_map(|(t, p)| t + &p),
            (0..=chars.len()).prop_map(move |cut| chars[..cut].iter().collect()),
        ]
    }

    /// Long digit runs of nearby lengths, often enough that two meet at one position.
    fn long_run() -> impl Strategy<Value = String> {
        digit_run(proptest::sample::select(&[254usize, 255, 256, 257, 300][..]))
    }

    fn pair() -> impl Strategy<Value = (String, String)> {
        let fork = prop_oneof![2 => piece(), 1 => long_run()];
        prop_oneof![
            (text(), text()),
            text().prop_flat_map(|a| (Just(a.clone()), variant_of(a))),
            // A common start, then each goes its own way.
            (text(), fork.clone(), fork, text(), text())
                .prop_map(|(start, x, y, a, b)| (format!("{start}{x}{a}"), format!("{start}{y}{b}"))),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn keys_order_as_the_naive_comparators((a, b) in pair()) {
            for collation in [Collation::None, Collation::AsciiCi, Collation::Utf8Ci, Collation::Numeric] {
                let keys = collation.key(&a).cmp(&collation.key(&b));
                prop_assert_eq!(keys, naive_cmp(collation, &a, &b), "{:?}: {:?} vs {:?}", collation, a, b);
            }
        }
    }
}
