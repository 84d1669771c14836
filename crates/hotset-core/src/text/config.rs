//! The options of a text index and their JSON form.
//!
//! Owns: `TextConfig` (field weights, languages, stop words, synonyms, typo tolerance)
//! and `Ranking` (BM25 parameters, the proximity weight and the factor each inexact kind
//! of match is scored with), with defaults and checks. Never: hold index data.
//!
//! ```json
//! {"weights": {"title": 3, "description": 1}, "languages": ["en", "ru"],
//!  "stop_words": true | false | ["a", "the"], "synonyms": [["tv", "television"]],
//!  "typos": true, "ranking": {"k1": 1.2, "b": 0.75, "proximity": 0.5, "stem": 0.8,
//!  "prefix": 0.6, "suffix": 0.5, "typo": 0.6, "translit": 0.7, "layout": 0.7, "synonym": 0.8}}
//! ```

use super::fold::fold;
use super::lang::Language;
use serde_json::{Map, Value, json};

/// Which words are left out of the index and of queries.
#[derive(Debug, Clone, PartialEq)]
pub enum StopWords {
    /// Every word is indexed.
    None,
    /// The built-in list of each enabled language.
    Builtin,
    /// The given (folded) words.
    List(Vec<String>),
}

/// How hits are scored. Factors multiply a match's BM25 score; 1 is an exact match.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranking {
    /// BM25's term frequency saturation: how much more a row scores for a word that
    /// occurs again (0: not at all).
    pub k1: f32,
    /// BM25's length normalisation, 0 to 1: how much a long field's score is lowered.
    pub b: f32,
    /// Weight of term proximity: a row whose query words stand next to each other scores
    /// up to `1 + proximity` times its BM25 sum.
    pub proximity: f32,
    /// Another form of the word (the same stem).
    pub stem: f32,
    /// A longer word found by a `word*` prefix.
    pub prefix: f32,
    /// A word found by a `*word` suffix.
    pub suffix: f32,
    /// Per edit: two edits score `typo²`.
    pub typo: f32,
    /// The word transliterated between Cyrillic and Latin letters.
    pub translit: f32,
    /// The same keys typed on the other keyboard layout (ЙЦУКЕН ↔ QWERTY).
    pub layout: f32,
    /// A synonym of the word (`TextConfig::synonyms`).
    pub synonym: f32,
}

impl Default for Ranking {
    fn default() -> Ranking {
        Ranking {
            k1: 1.2,
            b: 0.75,
            proximity: 0.5,
            stem: 0.8,
            prefix: 0.6,
            suffix: 0.5,
            typo: 0.6,
            translit: 0.7,
            layout: 0.7,
            synonym: 0.8,
        }
    }
}

/// The options of a text index over the fields of its definition.
#[derive(Debug, Clone, PartialEq)]
pub struct TextConfig {
    /// Weight per field of the index definition, in its order (default 1).
    pub weights: Vec<f32>,
    /// Languages whose stemmer and stop words apply (default English and Russian).
    pub languages: Vec<Language>,
    /// Words left out (default none).
    pub stop_words: StopWords,
    /// Groups of folded words that stand for each other.
    pub synonyms: Vec<Vec<String>>,
    /// Automatic typo tolerance for plain query words (`word~` asks for it regardless).
    pub typos: bool,
    /// How hits are scored.
    pub ranking: Ranking,
}

impl TextConfig {
    /// The defaults for an index over `fields` fields: weight 1 each, English and
    /// Russian, no stop words, no synonyms, automatic typos, default ranking.
    pub fn new(fields: usize) -> TextConfig {
        TextConfig {
            weights: vec![1.0; fields],
            languages: vec![Language::English, Language::Russian],
            stop_words: StopWords::None,
            synonyms: Vec::new(),
            typos: true,
            ranking: Ranking::default(),
        }
    }

    /// The JSON form; `fields` names the index's fields (weights are keyed by them).
    pub fn to_json(&self, fields: &[String]) -> Value {
        let weights: Map<String, Value> =
            fields.iter().zip(&self.weights).map(|(field, weight)| (field.clone(), json!(weight))).collect();
        let stop_words = match &self.stop_words {
            StopWords::None => json!(false),
            StopWords::Builtin => json!(true),
            StopWords::List(words) => json!(words),
        };
        let r = &self.ranking;
        json!({
            "weights": weights,
            "languages": self.languages.iter().map(|l| l.code()).collect::<Vec<_>>(),
            "stop_words": stop_words,
            "synonyms": self.synonyms,
            "typos": self.typos,
            "ranking": {"k1": r.k1, "b": r.b, "proximity": r.proximity, "stem": r.stem, "prefix": r.prefix,
                        "suffix": r.suffix, "typo": r.typo, "translit": r.translit, "layout": r.layout,
                        "synonym": r.synonym},
        })
    }

    /// Reads the JSON form (`None`: every default). Errors name the offending key.
    pub fn from_json(value: Option<&Value>, fields: &[String]) -> Result<TextConfig, String> {
        let mut config = TextConfig::new(fields.len());
        let Some(value) = value else { return Ok(config) };
        let object = value.as_object().ok_or("\"text\" must be an object")?;
        const KNOWN: [&str; 6] = ["weights", "languages", "stop_words", "synonyms", "typos", "ranking"];
        if let Some(unknown) = object.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(format!("unknown key \"text.{unknown}\""));
        }
        if let Some(weights) = object.get("weights") {
            let weights = weights.as_object().ok_or("\"text.weights\" must map field names to numbers")?;
            for (field, weight) in weights {
                let position = fields
                    .iter()
                    .position(|f| f == field)
                    .ok_or_else(|| format!("\"text.weights\" names '{field}', which the index does not cover"))?;
                config.weights[position] = positive(weight, &format!("text.weights.{field}"))?;
            }
        }
        if let Some(languages) = object.get("languages") {
            let list = languages.as_array().ok_or("\"text.languages\" must be a list such as [\"en\", \"ru\"]")?;
            config.languages = list
                .iter()
                .map(|l| {
                    l.as_str()
                        .and_then(Language::parse)
                        .ok_or_else(|| format!("unknown language {l} in \"text.languages\" (known: en, ru)"))
                })
                .collect::<Result<_, _>>()?;
        }
        config.stop_words = match object.get("stop_words") {
            None | Some(Value::Bool(false)) => StopWords::None,
            Some(Value::Bool(true)) => StopWords::Builtin,
            Some(Value::Array(words)) => StopWords::List(words_of(words, "text.stop_words")?),
            Some(_) => return Err("\"text.stop_words\" must be true, false or a list of words".to_string()),
        };
        if let Some(groups) = object.get("synonyms") {
            let groups = groups.as_array().ok_or("\"text.synonyms\" must be a list of word lists")?;
            config.synonyms = groups
                .iter()
                .map(|group| {
                    let words = group.as_array().ok_or("each synonym group is a list of words")?;
                    let words = words_of(words, "text.synonyms")?;
                    if words.len() < 2 {
                        return Err("a synonym group needs at least two words".to_string());
                    }
                    Ok(words)
                })
                .collect::<Result<_, String>>()?;
        }
        match object.get("typos") {
            None => {}
            Some(Value::Bool(on)) => config.typos = *on,
            Some(_) => return Err("\"text.typos\" must be true or false".to_string()),
        }
        if let Some(ranking) = object.get("ranking") {
            config.ranking = ranking_from_json(ranking)?;
        }
        Ok(config)
    }
}

fn ranking_from_json(value: &Value) -> Result<Ranking, String> {
    let object = value.as_object().ok_or("\"text.ranking\" must be an object")?;
    let mut ranking = Ranking::default();
    for (key, value) in object {
        let path = format!("text.ranking.{key}");
        let number = value.as_f64().filter(|n| n.is_finite()).ok_or_else(|| format!("\"{path}\" must be a number"))?;
        let slot = match key.as_str() {
            "k1" => &mut ranking.k1,
            "b" => &mut ranking.b,
            "proximity" => &mut ranking.proximity,
            "stem" => &mut ranking.stem,
            "prefix" => &mut ranking.prefix,
            "suffix" => &mut ranking.suffix,
            "typo" => &mut ranking.typo,
            "translit" => &mut ranking.translit,
            "layout" => &mut ranking.layout,
            "synonym" => &mut ranking.synonym,
            _ => return Err(format!("unknown key \"{path}\"")),
        };
        let allowed = match key.as_str() {
            "k1" => 0.0..=10.0,
            "proximity" => 0.0..=10.0,
            _ => 0.0..=1.0,
        };
        if !allowed.contains(&number) {
            return Err(format!("\"{path}\" must be within {}..={}", allowed.start(), allowed.end()));
        }
        *slot = number as f32;
    }
    Ok(ranking)
}

fn positive(value: &Value, path: &str) -> Result<f32, String> {
    value
        .as_f64()
        .filter(|n| n.is_finite() && *n > 0.0 && *n <= 1000.0)
        .map(|n| n as f32)
        .ok_or_else(|| format!("\"{path}\" must be a number above 0 and at most 1000"))
}

/// Folded single words from a JSON list; a phrase or an empty entry is refused.
fn words_of(list: &[Value], path: &str) -> Result<Vec<String>, String> {
    list.iter()
        .map(|w| {
            let text = w.as_str().ok_or_else(|| format!("\"{path}\" holds words (strings)"))?;
            let words: Vec<_> = super::fold::words(text).collect();
            match words.as_slice() {
                [one] if one.text == fold(text.trim()) => Ok(one.text.clone()),
                _ => Err(format!("\"{path}\": '{text}' is not one word")),
            }
        })
        .collect()
}
