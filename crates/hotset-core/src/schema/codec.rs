//! The binary form of an index definition in log records and snapshot blocks (format 2
//! on; format 1 held the HTTP API's JSON, read by `schema::json_v1`).
//!
//! Owns: `encode` and `decode` of every field of `IndexDef`, text options included, and
//! the numbers that stand for each enum variant on disk. Never: use the API's JSON or its
//! checks (`IndexDef::from_json`, `TextConfig::from_json`), so the API can be tightened
//! without making an old file unreadable; use Rust discriminants or serde's derive, whose
//! numbering moves when a variant is added or reordered; judge whether a definition makes
//! sense (that is `IndexDef::validate`, when the change is applied); panic on any input.
//!
//! Adding a field or a variant means a new format version: the layout below is fixed for
//! format 2, and a reader of format 2 must keep reading it.
//!
//! ```text
//! definition = name:bytes  fields:count field:bytes*  kind:u8  field_type:u8
//!              field_types:count type:u8*  flags:u8  collate:u8
//!              expire_after:(0 | 1 seconds:varint)  text:(0 | 1 text_options)
//!   kind        1 hash  2 tree  3 store  4 text
//!   type        1 int  2 double  3 string  4 bool
//!   flags       bit 0 pk, bit 1 array, bit 2 sparse (other bits 0)
//!   collate     0 none  1 ascii_ci  2 utf8_ci  3 numeric
//! text_options = weights:count f32*  languages:count language:u8*
//!                stop_words:(0 none | 1 built-in | 2 count word:bytes*)
//!                synonyms:count (count word:bytes*)*  typos:u8 (0 | 1)
//!                ranking: f32 x 10 (k1 b proximity stem prefix suffix typo translit layout synonym)
//!   language    1 en  2 ru
//!   f32         IEEE 754 bits, little-endian
//! ```
//! Counts and lengths are LEB128 varints, as everywhere in `change`.

use super::{IndexDef, IndexKind};
use crate::collate::Collation;
use crate::error::{Error, Result};
use crate::text::{Language, Ranking, StopWords, TextConfig};
use crate::value::FieldType;
use crate::wire::{Reader, put_bytes, put_f32, put_varint};

mod tag {
    pub const KIND_HASH: u8 = 1;
    pub const KIND_TREE: u8 = 2;
    pub const KIND_STORE: u8 = 3;
    pub const KIND_TEXT: u8 = 4;
    pub const TYPE_INT: u8 = 1;
    pub const TYPE_DOUBLE: u8 = 2;
    pub const TYPE_STRING: u8 = 3;
    pub const TYPE_BOOL: u8 = 4;
    pub const FLAG_PK: u8 = 1;
    pub const FLAG_ARRAY: u8 = 2;
    pub const FLAG_SPARSE: u8 = 4;
    pub const COLLATE_NONE: u8 = 0;
    pub const COLLATE_ASCII_CI: u8 = 1;
    pub const COLLATE_UTF8_CI: u8 = 2;
    pub const COLLATE_NUMERIC: u8 = 3;
    pub const ABSENT: u8 = 0;
    pub const PRESENT: u8 = 1;
    pub const LANGUAGE_EN: u8 = 1;
    pub const LANGUAGE_RU: u8 = 2;
    pub const STOP_WORDS_NONE: u8 = 0;
    pub const STOP_WORDS_BUILTIN: u8 = 1;
    pub const STOP_WORDS_LIST: u8 = 2;
}

/// Appends the definition's encoding to `out`.
pub fn encode(def: &IndexDef, out: &mut Vec<u8>) {
    put_bytes(out, def.name.as_bytes());
    put_words(out, &def.fields);
    out.push(kind_tag(def.kind));
    out.push(type_tag(def.field_type));
    put_varint(out, def.field_types.len() as u64);
    out.extend(def.field_types.iter().map(|&t| type_tag(t)));
    let flags = [(def.pk, tag::FLAG_PK), (def.array, tag::FLAG_ARRAY), (def.sparse, tag::FLAG_SPARSE)];
    out.push(flags.iter().filter(|(on, _)| *on).map(|(_, bit)| bit).sum());
    out.push(collate_tag(def.collate));
    match def.expire_after {
        None => out.push(tag::ABSENT),
        Some(seconds) => {
            out.push(tag::PRESENT);
            put_varint(out, seconds);
        }
    }
    match &def.text {
        None => out.push(tag::ABSENT),
        Some(config) => {
            out.push(tag::PRESENT);
            encode_text(config, out);
        }
    }
}

/// Reads one definition that fills all of `bytes`: an error (never a panic) for bytes that
/// are cut short, run over, or hold a number no variant has.
pub fn decode(bytes: &[u8]) -> Result<IndexDef> {
    let mut reader = Reader::new(bytes, "index definition");
    let name = reader.text()?.to_string();
    let fields = decode_words(&mut reader)?;
    let kind = decode_kind(&mut reader)?;
    let field_type = decode_type(&mut reader)?;
    let count = reader.count(1, "field types")?;
    let field_types = (0..count).map(|_| decode_type(&mut reader)).collect::<Result<Vec<_>>>()?;
    let flags = reader.byte()?;
    if flags & !(tag::FLAG_PK | tag::FLAG_ARRAY | tag::FLAG_SPARSE) != 0 {
        return reader.fail(&format!("unknown index flags {flags:#04x}"));
    }
    let collate = decode_collation(&mut reader)?;
    let expire_after = match reader.byte()? {
        tag::ABSENT => None,
        tag::PRESENT => Some(reader.varint()?),
        other => return reader.fail(&format!("expire_after is marked {other}, neither absent (0) nor present (1)")),
    };
    let text = match reader.byte()? {
        tag::ABSENT => None,
        tag::PRESENT => Some(Box::new(decode_text(&mut reader)?)),
        other => return reader.fail(&format!("text options are marked {other}, neither absent (0) nor present (1)")),
    };
    reader.finish()?;
    Ok(IndexDef {
        name,
        fields,
        kind,
        field_type,
        field_types,
        pk: flags & tag::FLAG_PK != 0,
        array: flags & tag::FLAG_ARRAY != 0,
        sparse: flags & tag::FLAG_SPARSE != 0,
        collate,
        expire_after,
        text,
    })
}

fn encode_text(config: &TextConfig, out: &mut Vec<u8>) {
    put_varint(out, config.weights.len() as u64);
    for &weight in &config.weights {
        put_f32(out, weight);
    }
    put_varint(out, config.languages.len() as u64);
    out.extend(config.languages.iter().map(|&language| language_tag(language)));
    match &config.stop_words {
        StopWords::None => out.push(tag::STOP_WORDS_NONE),
        StopWords::Builtin => out.push(tag::STOP_WORDS_BUILTIN),
        StopWords::List(words) => {
            out.push(tag::STOP_WORDS_LIST);
            put_words(out, words);
        }
    }
    put_varint(out, config.synonyms.len() as u64);
    for group in &config.synonyms {
        put_words(out, group);
    }
    out.push(u8::from(config.typos));
    for factor in ranking_factors(&config.ranking) {
        put_f32(out, factor);
    }
}

fn decode_text(reader: &mut Reader<'_>) -> Result<TextConfig> {
    let count = reader.count(4, "text weights")?;
    let weights = (0..count).map(|_| reader.f32()).collect::<Result<Vec<_>, _>>()?;
    let count = reader.count(1, "text languages")?;
    let languages = (0..count).map(|_| decode_language(reader)).collect::<Result<Vec<_>>>()?;
    let stop_words = match reader.byte()? {
        tag::STOP_WORDS_NONE => StopWords::None,
        tag::STOP_WORDS_BUILTIN => StopWords::Builtin,
        tag::STOP_WORDS_LIST => StopWords::List(decode_words(reader)?),
        other => return reader.fail(&format!("unknown stop words kind {other}")),
    };
    let count = reader.count(1, "synonym groups")?;
    let synonyms = (0..count).map(|_| decode_words(reader)).collect::<Result<Vec<_>>>()?;
    let typos = reader.flag("typos")?;
    let mut factors = [0f32; RANKING_FACTORS];
    for factor in &mut factors {
        *factor = reader.f32()?;
    }
    let [k1, b, proximity, stem, prefix, suffix, typo, translit, layout, synonym] = factors;
    let ranking = Ranking { k1, b, proximity, stem, prefix, suffix, typo, translit, layout, synonym };
    Ok(TextConfig { weights, languages, stop_words, synonyms, typos, ranking })
}

/// The ranking's factors in their fixed order on disk. Destructured without `..`, so a
/// factor added to `Ranking` fails to compile here instead of being left out of the format.
const RANKING_FACTORS: usize = 10;
fn ranking_factors(ranking: &Ranking) -> [f32; RANKING_FACTORS] {
    let Ranking { k1, b, proximity, stem, prefix, suffix, typo, translit, layout, synonym } = *ranking;
    [k1, b, proximity, stem, prefix, suffix, typo, translit, layout, synonym]
}

fn put_words(out: &mut Vec<u8>, words: &[String]) {
    put_varint(out, words.len() as u64);
    for word in words {
        put_bytes(out, word.as_bytes());
    }
}

fn decode_words(reader: &mut Reader<'_>) -> Result<Vec<String>> {
    let count = reader.count(1, "names or words")?;
    (0..count).map(|_| reader.text().map(str::to_string).map_err(Error::from)).collect()
}

// Each enum's numbers are written out both ways, by hand: a variant added to an enum
// fails to compile in its `*_tag` match until it is given a number of its own.

fn kind_tag(kind: IndexKind) -> u8 {
    match kind {
        IndexKind::Hash => tag::KIND_HASH,
        IndexKind::Tree => tag::KIND_TREE,
        IndexKind::Store => tag::KIND_STORE,
        IndexKind::Text => tag::KIND_TEXT,
    }
}

fn decode_kind(reader: &mut Reader<'_>) -> Result<IndexKind> {
    Ok(match reader.byte()? {
        tag::KIND_HASH => IndexKind::Hash,
        tag::KIND_TREE => IndexKind::Tree,
        tag::KIND_STORE => IndexKind::Store,
        tag::KIND_TEXT => IndexKind::Text,
        other => return reader.fail(&format!("unknown index kind {other}")),
    })
}

fn type_tag(field_type: FieldType) -> u8 {
    match field_type {
        FieldType::Int => tag::TYPE_INT,
        FieldType::Double => tag::TYPE_DOUBLE,
        FieldType::String => tag::TYPE_STRING,
        FieldType::Bool => tag::TYPE_BOOL,
    }
}

fn decode_type(reader: &mut Reader<'_>) -> Result<FieldType> {
    Ok(match reader.byte()? {
        tag::TYPE_INT => FieldType::Int,
        tag::TYPE_DOUBLE => FieldType::Double,
        tag::TYPE_STRING => FieldType::String,
        tag::TYPE_BOOL => FieldType::Bool,
        other => return reader.fail(&format!("unknown field type {other}")),
    })
}

fn collate_tag(collate: Collation) -> u8 {
    match collate {
        Collation::None => tag::COLLATE_NONE,
        Collation::AsciiCi => tag::COLLATE_ASCII_CI,
        Collation::Utf8Ci => tag::COLLATE_UTF8_CI,
        Collation::Numeric => tag::COLLATE_NUMERIC,
    }
}

fn decode_collation(reader: &mut Reader<'_>) -> Result<Collation> {
    Ok(match reader.byte()? {
        tag::COLLATE_NONE => Collation::None,
        tag::COLLATE_ASCII_CI => Collation::AsciiCi,
        tag::COLLATE_UTF8_CI => Collation::Utf8Ci,
        tag::COLLATE_NUMERIC => Collation::Numeric,
        other => return reader.fail(&format!("unknown collation {other}")),
    })
}

fn language_tag(language: Language) -> u8 {
    match language {
        Language::English => tag::LANGUAGE_EN,
        Language::Russian => tag::LANGUAGE_RU,
    }
}

fn decode_language(reader: &mut Reader<'_>) -> Result<Language> {
    Ok(match reader.byte()? {
        tag::LANGUAGE_EN => Language::English,
        tag::LANGUAGE_RU => Language::Russian,
        other => return reader.fail(&format!("unknown language {other}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A definition of every kind, with every option and every variant of every enum
    /// somewhere, text options away from their defaults included.
    fn samples() -> Vec<IndexDef> {
        let mut text = TextConfig::new(2);
        text.weights = vec![3.0, 0.25];
        text.languages = vec![Language::Russian, Language::English];
        text.stop_words = StopWords::List(vec!["the".into(), "и".into()]);
        text.synonyms = vec![vec!["tv".into(), "television".into()], vec![]];
        text.typos = false;
        text.ranking = Ranking {
            k1: 0.0,
            b: 1.0,
            proximity: 10.0,
            stem: 0.1,
            prefix: 0.2,
            suffix: 0.3,
            typo: 0.4,
            translit: 0.5,
            layout: 0.6,
            synonym: f32::MIN_POSITIVE,
        };
        let mut builtin = TextConfig::new(1);
        builtin.stop_words = StopWords::Builtin;
        builtin.languages = vec![];
        vec![
            IndexDef::hash("id", FieldType::Int).pk(),
            IndexDef::tree("year", FieldType::Int).expire_after(3600),
            IndexDef::tree("at", FieldType::Int).expire_after(u64::MAX).sparse(),
            IndexDef::store("price", FieldType::Double),
            IndexDef::hash("on", FieldType::Bool).sparse(),
            IndexDef::tree("tags", FieldType::String).array().sparse().collate(Collation::AsciiCi),
            IndexDef::composite_typed(
                &[("name", FieldType::String), ("year", FieldType::Int), ("ok", FieldType::Bool)],
                IndexKind::Tree,
            )
            .collate(Collation::Utf8Ci),
            IndexDef::composite(&["a", "b.c"], IndexKind::Hash, FieldType::String).collate(Collation::Numeric),
            IndexDef::text(&["title", "body"]).text_config(text).named("search"),
            IndexDef::text(&["body"]).text_config(builtin),
            IndexDef::text(&["plain"]),
            // Not a valid definition, but the codec's job is the bytes, not the rules:
            // whatever it is given comes back the same.
            IndexDef { pk: true, array: true, sparse: true, ..IndexDef::text(&[]) },
        ]
    }

    #[test]
    fn every_definition_round_trips() {
        for def in samples() {
            let mut bytes = Vec::new();
            encode(&def, &mut bytes);
            assert_eq!(decode(&bytes).unwrap(), def, "{def:?}");
        }
    }

    /// Floats round trip bit for bit (a NaN and a negative zero included), not only by value.
    #[test]
    fn floats_round_trip_exactly() {
        let mut config = TextConfig::new(1);
        config.weights = vec![f32::from_bits(0x7fc0_0001)];
        config.ranking.k1 = -0.0;
        let def = IndexDef::text(&["body"]).text_config(config);
        let mut bytes = Vec::new();
        encode(&def, &mut bytes);
        let text = decode(&bytes).unwrap().text.unwrap();
        assert_eq!(text.weights[0].to_bits(), 0x7fc0_0001);
        assert_eq!(text.ranking.k1.to_bits(), (-0.0f32).to_bits());
    }

    /// Each cut of each encoding, and each encoding with a byte more, is an error (a
    /// definition fills its bytes exactly, so no cut can be read as a shorter one).
    #[test]
    fn every_cut_and_stray_byte_is_an_error_not_a_panic() {
        for def in samples() {
            let mut bytes = Vec::new();
            encode(&def, &mut bytes);
            for cut in 0..bytes.len() {
                assert!(decode(&bytes[..cut]).is_err(), "{def:?} cut at {cut}");
            }
            bytes.push(0);
            assert!(decode(&bytes).is_err(), "{def:?} with a stray byte");
        }
    }

    /// Every byte changed to a spread of values: an error or some definition, never a
    /// panic; and a number no variant has is refused, naming what it is.
    #[test]
    fn damaged_bytes_are_errors_not_panics() {
        for def in samples() {
            let mut bytes = Vec::new();
            encode(&def, &mut bytes);
            for at in 0..bytes.len() {
                for value in [0u8, 1, 2, 5, 0x7f, 0x80, 0xff] {
                    let mut damaged = bytes.clone();
                    damaged[at] = value;
                    let _ = decode(&damaged);
                }
            }
        }
        let mut bytes = Vec::new();
        encode(&IndexDef::hash("id", FieldType::Int), &mut bytes);
        // name (3 bytes), fields (4 bytes), then the kind.
        let kind_at = 7;
        assert_eq!(bytes[kind_at], tag::KIND_HASH);
        bytes[kind_at] = 9;
        let error = decode(&bytes).unwrap_err().to_string();
        assert!(error.contains("unknown index kind 9"), "{error}");
        bytes[kind_at] = tag::KIND_HASH;
        bytes[kind_at + 1] = 0;
        assert!(decode(&bytes).unwrap_err().to_string().contains("unknown field type 0"));
        bytes[kind_at + 1] = tag::TYPE_INT;
        bytes[kind_at + 3] = 0x08;
        assert!(decode(&bytes).unwrap_err().to_string().contains("unknown index flags"));
        // A count of fields far beyond the bytes is refused before anything is allocated.
        let huge = [1, b'x', 0xff, 0xff, 0xff, 0xff, 0x0f];
        assert!(decode(&huge).unwrap_err().to_string().contains("larger than"));
    }

    /// The numbers on disk are fixed: this pins one encoding byte for byte, so a change
    /// to the layout or to a tag fails here and not in a user's recovery.
    #[test]
    fn the_layout_is_pinned() {
        let def = IndexDef::composite_typed(&[("n", FieldType::String), ("y", FieldType::Double)], IndexKind::Tree)
            .collate(Collation::Numeric)
            .sparse()
            .expire_after(300);
        let mut bytes = Vec::new();
        encode(&def, &mut bytes);
        let expected: &[u8] = &[
            3, b'n', b'+', b'y', // name
            2, 1, b'n', 1, b'y', // fields
            2,    // kind: tree
            3,    // field_type: string
            2, 3, 2, // field_types: string, double
            4, // flags: sparse
            3, // collate: numeric
            1, 0xac, 0x02, // expire_after: 300
            0,    // no text options
        ];
        assert_eq!(bytes, expected);
        let mut text = Vec::new();
        encode(&IndexDef::text(&["t"]), &mut text);
        let options = &text[text.len() - (1 + 1 + 4 + 1 + 2 + 1 + 1 + 1 + 40)..];
        let mut expected = vec![1, 1, 0, 0, 0x80, 0x3f, 2, 1, 2, 0, 0, 1];
        for factor in [1.2f32, 0.75, 0.5, 0.8, 0.6, 0.5, 0.6, 0.7, 0.7, 0.8] {
            expected.extend_from_slice(&factor.to_bits().to_le_bytes());
        }
        assert_eq!(options, expected, "text options: present, weights [1.0], en ru, no stop words, no synonyms, typos");
    }
}
