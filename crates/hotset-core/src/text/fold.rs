//! Words of a text: splitting by Unicode word rules and folding case and diacritics.
//!
//! Owns: `words` (each word of a text with its position and byte range) and `fold` (the
//! one form a word is indexed and searched under). Both the index and the query parser
//! go through here, so a word is always folded the same way. Never: stem or look up
//! words (that is `lang` and `vocab`).

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;
use unicode_segmentation::UnicodeSegmentation;

/// Longest word kept, in bytes of its folded form: longer runs (base64, hashes) are not
/// words anyone types, and bounding them bounds the typo search's work.
pub const WORD_BYTES_MAX: usize = 64;

/// One word of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// Folded form (`fold`).
    pub text: String,
    /// Byte range in the original text.
    pub start: usize,
    /// End of the byte range (exclusive).
    pub end: usize,
}

/// The words of `text` in order, folded; runs without a letter or digit are not words.
pub fn words(text: &str) -> impl Iterator<Item = Word> + '_ {
    text.unicode_word_indices().filter_map(|(start, word)| {
        let folded = fold(word);
        (!folded.is_empty() && folded.len() <= WORD_BYTES_MAX).then(|| Word {
            text: folded,
            start,
            end: start + word.len(),
        })
    })
}

/// Calls `f` with each word of `text` folded (into one reused buffer) and its byte range,
/// in order: `words` without an allocation per word, for indexing.
pub fn each_word(text: &str, mut f: impl FnMut(&str, usize, usize)) {
    let mut folded = String::new();
    for (start, word) in text.unicode_word_indices() {
        folded.clear();
        fold_into(word, &mut folded);
        if !folded.is_empty() && folded.len() <= WORD_BYTES_MAX {
            f(&folded, start, start + word.len());
        }
    }
}

/// The folded form of a word: lower case, diacritics removed (`café` → `cafe`), `ё` as
/// `е` and `ß` as `ss`. `й` keeps its breve: in Russian it is a letter of its own, not
/// an accented `и`. Apostrophes inside words (`don't`) are dropped.
pub fn fold(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    fold_into(word, &mut out);
    out
}

/// `fold`, appended to `out`.
fn fold_into(word: &str, out: &mut String) {
    if word.bytes().all(|b| b.is_ascii_alphanumeric()) {
        out.extend(word.bytes().map(|b| b.to_ascii_lowercase() as char));
        return;
    }
    for c in word.chars().flat_map(char::to_lowercase) {
        match c {
            'ё' => out.push('е'),
            'й' => out.push('й'),
            'ß' => out.push_str("ss"),
            '\'' | '’' | '\u{00AD}' => {}
            c if c.is_ascii() => out.push(c),
            c => out.extend(std::iter::once(c).nfd().filter(|c| !is_combining_mark(*c))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        words(text).map(|w| w.text).collect()
    }

    #[test]
    fn splits_by_word_rules_and_folds() {
        assert_eq!(texts("Crème Brûlée, 2 CAFÉS!"), ["creme", "brulee", "2", "cafes"]);
        assert_eq!(texts("Ёлка и Йогурт"), ["елка", "и", "йогурт"]);
        assert_eq!(texts("Straße don't wi-fi"), ["strasse", "dont", "wi", "fi"]);
        assert_eq!(texts("  ... -- "), Vec::<String>::new());
    }

    #[test]
    fn keeps_byte_ranges_of_the_original() {
        let text = "Привет, Мир";
        let found: Vec<&str> = words(text).map(|w| &text[w.start..w.end]).collect();
        assert_eq!(found, ["Привет", "Мир"]);
    }

    #[test]
    fn drops_overlong_runs() {
        let long = "a".repeat(WORD_BYTES_MAX + 1);
        assert_eq!(texts(&format!("x {long} y")), ["x", "y"]);
    }
}
