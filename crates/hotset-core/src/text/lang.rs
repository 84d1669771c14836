//! Language knowledge of the text index: stems, stop words, transliteration, keyboard
//! layouts.
//!
//! Owns: `Language` (which stemmer a word gets: Russian for Cyrillic words, English for
//! Latin ones, when the index enables that language), the built-in stop word lists, and
//! the two rewritings a query word may need: Cyrillic ↔ Latin transliteration and the
//! ЙЦУКЕН ↔ QWERTY keyboard swap. Never: hold index state. Every function takes and
//! returns folded words (`fold::fold`).

use rust_stemmers::{Algorithm, Stemmer};
use std::sync::LazyLock;

/// A language the text index can stem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    /// English, the stemmer of words in Latin letters.
    English,
    /// Russian, the stemmer of words in Cyrillic letters.
    Russian,
}

impl Language {
    /// The language named by its code (`en`, `ru`) or its English name, in lower case.
    pub fn parse(name: &str) -> Option<Language> {
        match name {
            "en" | "english" => Some(Language::English),
            "ru" | "russian" => Some(Language::Russian),
            _ => None,
        }
    }

    /// The language's two-letter code (`en`, `ru`), as a text config's JSON writes it.
    pub fn code(self) -> &'static str {
        match self {
            Language::English => "en",
            Language::Russian => "ru",
        }
    }

    /// The language a folded word is written in, by its script: Cyrillic letters make it
    /// Russian, Latin letters English; digits alone make it neither.
    pub fn of(word: &str) -> Option<Language> {
        if word.chars().any(is_cyrillic) {
            Some(Language::Russian)
        } else if word.bytes().any(|b| b.is_ascii_alphabetic()) {
            Some(Language::English)
        } else {
            None
        }
    }

    fn stemmer(self) -> &'static Stemmer {
        static ENGLISH: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));
        static RUSSIAN: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::Russian));
        match self {
            Language::English => &ENGLISH,
            Language::Russian => &RUSSIAN,
        }
    }

    fn stop_words(self) -> &'static [&'static str] {
        match self {
            Language::English => STOP_EN,
            Language::Russian => STOP_RU,
        }
    }
}

/// Whether `c` is in the basic Cyrillic block (U+0400 to U+04FF).
pub fn is_cyrillic(c: char) -> bool {
    ('\u{0400}'..='\u{04FF}').contains(&c)
}

/// The stem of a folded word under the enabled languages: the stemmer of its script's
/// language when enabled, else the word itself.
pub fn stem(word: &str, languages: &[Language]) -> String {
    match Language::of(word) {
        Some(language) if languages.contains(&language) => language.stemmer().stem(word).into_owned(),
        _ => word.to_string(),
    }
}

/// Whether a folded word is on the built-in stop list of one of the languages.
pub fn is_builtin_stop_word(word: &str, languages: &[Language]) -> bool {
    languages.iter().any(|l| l.stop_words().contains(&word))
}

/// The Latin spelling of a Cyrillic word or the Cyrillic spelling of a Latin one (`None`
/// for a word in neither script, or in both). Latin is read greedily, longest letter
/// group first (`shch`, `zh`, `ya`...); `y` after a vowel and before a consonant or the
/// end is `й`, elsewhere `ы`.
pub fn transliterate(word: &str) -> Option<String> {
    let cyrillic = word.chars().any(is_cyrillic);
    let latin = word.bytes().any(|b| b.is_ascii_alphabetic());
    match (cyrillic, latin) {
        (true, false) => Some(word.chars().map(|c| cyr_to_lat(c).unwrap_or_else(|| c.to_string())).collect()),
        (false, true) => Some(lat_to_cyr(word)),
        _ => None,
    }
}

fn cyr_to_lat(c: char) -> Option<String> {
    let latin = match c {
        'а' => "a",
        'б' => "b",
        'в' => "v",
        'г' => "g",
        'д' => "d",
        'е' | 'ё' | 'э' => "e",
        'ж' => "zh",
        'з' => "z",
        'и' => "i",
        'й' | 'ы' => "y",
        'к' => "k",
        'л' => "l",
        'м' => "m",
        'н' => "n",
        'о' => "o",
        'п' => "p",
        'р' => "r",
        'с' => "s",
        'т' => "t",
        'у' => "u",
        'ф' => "f",
        'х' => "kh",
        'ц' => "ts",
        'ч' => "ch",
        'ш' => "sh",
        'щ' => "shch",
        'ъ' | 'ь' => "",
        'ю' => "yu",
        'я' => "ya",
        _ => return None,
    };
    Some(latin.to_string())
}

fn lat_to_cyr(word: &str) -> String {
    const GROUPS: [(&str, char); 14] = [
        ("shch", 'щ'),
        ("sch", 'щ'),
        ("zh", 'ж'),
        ("kh", 'х'),
        ("ts", 'ц'),
        ("ch", 'ч'),
        ("sh", 'ш'),
        ("yu", 'ю'),
        ("ju", 'ю'),
        ("ya", 'я'),
        ("ja", 'я'),
        ("yo", 'е'),
        ("jo", 'е'),
        ("ye", 'е'),
    ];
    let bytes = word.as_bytes();
    let mut out = String::with_capacity(word.len() * 2);
    let mut i = 0;
    while i < bytes.len() {
        let rest = &word[i..];
        if let Some((group, letter)) = GROUPS.iter().find(|(group, _)| rest.starts_with(group)) {
            out.push(*letter);
            i += group.len();
            continue;
        }
        let Some(c) = rest.chars().next() else { break };
        let vowel = |b: u8| b"aeiou".contains(&b);
        let letter = match c {
            'a' => 'а',
            'b' => 'б',
            'c' | 'k' | 'q' => 'к',
            'd' => 'д',
            'e' => 'е',
            'f' => 'ф',
            'g' => 'г',
            'h' => 'х',
            'i' => 'и',
            'j' => 'й',
            'l' => 'л',
            'm' => 'м',
            'n' => 'н',
            'o' => 'о',
            'p' => 'п',
            'r' => 'р',
            's' => 'с',
            't' => 'т',
            'u' => 'у',
            'v' | 'w' => 'в',
            'x' => {
                out.push('к');
                'с'
            }
            'y' => {
                let after_vowel = i > 0 && vowel(bytes[i - 1]);
                let before_consonant_or_end = bytes.get(i + 1).is_none_or(|&b| !vowel(b));
                if after_vowel && before_consonant_or_end { 'й' } else { 'ы' }
            }
            'z' => 'з',
            other => other,
        };
        out.push(letter);
        i += c.len_utf8();
    }
    out
}

/// Keys of the Russian ЙЦУКЕН layout and the QWERTY keys in the same places.
const LAYOUT: [(char, char); 33] = [
    ('й', 'q'),
    ('ц', 'w'),
    ('у', 'e'),
    ('к', 'r'),
    ('е', 't'),
    ('н', 'y'),
    ('г', 'u'),
    ('ш', 'i'),
    ('щ', 'o'),
    ('з', 'p'),
    ('х', '['),
    ('ъ', ']'),
    ('ф', 'a'),
    ('ы', 's'),
    ('в', 'd'),
    ('а', 'f'),
    ('п', 'g'),
    ('р', 'h'),
    ('о', 'j'),
    ('л', 'k'),
    ('д', 'l'),
    ('ж', ';'),
    ('э', '\''),
    ('я', 'z'),
    ('ч', 'x'),
    ('с', 'c'),
    ('м', 'v'),
    ('и', 'b'),
    ('т', 'n'),
    ('ь', 'm'),
    ('б', ','),
    ('ю', '.'),
    ('ё', '`'),
];

/// The word as typed with the other keyboard layout active: QWERTY keys read as ЙЦУКЕН
/// (`ghbdtn` → `привет`) or the reverse. Takes the raw query text, since some Russian
/// letters sit on punctuation keys (`[` is `х`). `None` when the text has no letter
/// of either layout, or a mix of both scripts.
pub fn swap_layout(raw: &str) -> Option<String> {
    let lower: String = raw.chars().flat_map(char::to_lowercase).collect();
    let cyrillic = lower.chars().any(is_cyrillic);
    let latin = lower.chars().any(|c| c.is_ascii_alphabetic());
    if cyrillic == latin {
        return None;
    }
    let swapped: String = lower
        .chars()
        .map(|c| {
            let found = if cyrillic {
                LAYOUT.iter().find(|(cyr, _)| *cyr == c).map(|(_, lat)| *lat)
            } else {
                LAYOUT.iter().find(|(_, lat)| *lat == c).map(|(cyr, _)| *cyr)
            };
            found.unwrap_or(c)
        })
        .collect();
    Some(swapped)
}

const STOP_EN: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been",
    "before", "being", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "each",
    "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how",
    "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "no", "nor", "not",
    "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "out", "over", "own", "same", "she",
    "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "then", "there", "these", "they",
    "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when",
    "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours",
];

const STOP_RU: &[&str] = &[
    "а",
    "без",
    "более",
    "бы",
    "был",
    "была",
    "были",
    "было",
    "быть",
    "в",
    "вам",
    "вас",
    "весь",
    "во",
    "вот",
    "все",
    "всего",
    "всех",
    "вы",
    "где",
    "да",
    "даже",
    "для",
    "до",
    "его",
    "ее",
    "ей",
    "если",
    "есть",
    "еще",
    "же",
    "за",
    "здесь",
    "и",
    "из",
    "или",
    "им",
    "их",
    "к",
    "как",
    "когда",
    "кто",
    "ли",
    "либо",
    "мне",
    "может",
    "мы",
    "на",
    "над",
    "надо",
    "наш",
    "не",
    "него",
    "нее",
    "нет",
    "ни",
    "них",
    "но",
    "ну",
    "о",
    "об",
    "однако",
    "он",
    "она",
    "они",
    "оно",
    "от",
    "очень",
    "по",
    "под",
    "при",
    "с",
    "со",
    "так",
    "также",
    "такой",
    "там",
    "те",
    "тем",
    "то",
    "того",
    "тоже",
    "той",
    "только",
    "том",
    "ты",
    "у",
    "уже",
    "хотя",
    "чего",
    "чей",
    "чем",
    "что",
    "чтобы",
    "чье",
    "эта",
    "эти",
    "это",
    "я",
];

#[cfg(test)]
mod tests {
    use super::*;

    const BOTH: &[Language] = &[Language::English, Language::Russian];

    #[test]
    fn stems_by_script() {
        assert_eq!(stem("running", BOTH), stem("runs", BOTH));
        assert_eq!(stem("книги", BOTH), stem("книга", BOTH));
        assert_eq!(stem("книги", &[Language::English]), "книги");
        assert_eq!(stem("1080", BOTH), "1080");
    }

    #[test]
    fn transliterates_both_ways() {
        assert_eq!(transliterate("москва").as_deref(), Some("moskva"));
        assert_eq!(transliterate("moskva").as_deref(), Some("москва"));
        assert_eq!(transliterate("privet").as_deref(), Some("привет"));
        assert_eq!(transliterate("shchuka").as_deref(), Some("щука"));
        assert_eq!(transliterate("tolstoy").as_deref(), Some("толстой"));
        assert_eq!(transliterate("ryba").as_deref(), Some("рыба"));
        assert_eq!(transliterate("2024"), None);
    }

    #[test]
    fn swaps_keyboard_layouts() {
        assert_eq!(swap_layout("ghbdtn").as_deref(), Some("привет"));
        assert_eq!(swap_layout("Vjcrdf").as_deref(), Some("москва"));
        assert_eq!(swap_layout("[kt,").as_deref(), Some("хлеб"));
        assert_eq!(swap_layout("руддщ").as_deref(), Some("hello"));
        assert_eq!(swap_layout("123"), None);
    }

    #[test]
    fn knows_stop_words_per_language() {
        assert!(is_builtin_stop_word("the", BOTH));
        assert!(is_builtin_stop_word("и", &[Language::Russian]));
        assert!(!is_builtin_stop_word("и", &[Language::English]));
        assert!(!is_builtin_stop_word("coffee", BOTH));
    }
}
