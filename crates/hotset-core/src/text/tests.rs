//! Each matching feature of the text index on small hand-made rows: which rows match and
//! in what order.

use super::*;
use crate::value::Scalar;
use std::sync::Arc;

fn s(text: &str) -> Scalar {
    Scalar::Str(Arc::from(text.as_bytes()))
}

/// An index over (title, description) with the given options (JSON), rows numbered from 0.
fn build(options: serde_json::Value, rows: &[(&str, &str)]) -> TextIndex {
    let fields = vec!["title".to_string(), "description".to_string()];
    let config = TextConfig::from_json(Some(&options), &fields).expect("valid options");
    let mut index = TextIndex::new(fields, config);
    for (row, (title, description)) in rows.iter().enumerate() {
        let values = [vec![s(title)], vec![s(description)]];
        index.insert(row as u32, values.iter().map(Vec::as_slice));
    }
    index
}

/// Rows by rank, best first (ties by row).
fn ranked(index: &TextIndex, query: &str) -> Vec<u32> {
    let hits = search(index, &parse(query).expect("query parses"), u64::MAX).expect("search runs");
    let mut rows: Vec<(u32, f32)> = hits.rows.iter().map(|r| (r, hits.ranks[&r])).collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    rows.into_iter().map(|(r, _)| r).collect()
}

fn catalogue() -> TextIndex {
    build(
        serde_json::json!({}),
        &[
            ("Wireless headphones", "Over-ear headphones with noise cancelling and a long battery"),
            ("Running shoes", "Light shoes for the runner who runs every morning"),
            ("Cast iron frying pan", "A heavy pan for frying, searing and baking"),
            ("Путеводитель по Москве", "Книга о музеях и улицах Москвы"),
            ("Открытка Привет", "Открытка с надписью привет для друзей"),
            ("Pan lid", "Glass lid that fits a frying or sauce pan"),
            ("Headphone stand", "A wooden stand for one pair of headphones"),
            ("Детские книги", "Набор книг для детей"),
        ],
    )
}

#[test]
fn exact_words_rank_by_bm25() {
    let index = catalogue();
    // "headphones" twice in row 0, once in row 6; row 6 also has the singular form.
    assert_eq!(ranked(&index, "headphones"), [0, 6]);
    assert_eq!(ranked(&index, "nothing-like-this"), Vec::<u32>::new());
}

#[test]
fn english_stems_match_other_forms_below_exact_ones() {
    let index = catalogue();
    assert_eq!(ranked(&index, "runs"), [1]);
    assert_eq!(ranked(&index, "running"), [1]);
    // "headphone" is exact in row 6's title and a stem match in row 0.
    assert_eq!(ranked(&index, "headphone")[0], 6);
}

#[test]
fn russian_stems_match_other_forms() {
    let index = catalogue();
    assert_eq!(sorted(ranked(&index, "книга")), [3, 7]);
    assert_eq!(ranked(&index, "москва"), [3]);
}

#[test]
fn typos_are_tolerated_when_the_word_is_unknown() {
    let index = catalogue();
    assert_eq!(ranked(&index, "hedphones"), [0, 6]);
    assert_eq!(ranked(&index, "wireles"), [0]);
    // Two edits from 8 letters on.
    assert_eq!(sorted(ranked(&index, "hedphonez")), [0, 6]);
    // Short words get none by themselves, but `~` asks for one.
    assert_eq!(ranked(&index, "lod"), Vec::<u32>::new());
    assert_eq!(ranked(&index, "lod~"), [5]);
    // A known word does not drag in its neighbours: "pan" is not "pain" or "man".
    assert_eq!(ranked(&index, "pan"), [5, 2]);
}

fn sorted(mut rows: Vec<u32>) -> Vec<u32> {
    rows.sort();
    rows
}

#[test]
fn exact_forms_beat_stems() {
    let index = build(serde_json::json!({}), &[("", "книги для детей"), ("", "книга для детей")]);
    assert_eq!(ranked(&index, "книга"), [1, 0]);
    assert_eq!(ranked(&index, "книги"), [0, 1]);
    let index = build(serde_json::json!({}), &[("", "runs daily"), ("", "running daily")]);
    assert_eq!(ranked(&index, "running"), [1, 0]);
}

#[test]
fn exact_beats_typo() {
    let index = build(serde_json::json!({}), &[("", "a grey coat"), ("", "a grey cost"), ("", "a grey goat")]);
    assert_eq!(ranked(&index, "coat~1"), [0, 1]);
    assert_eq!(ranked(&index, "cost~1"), [1, 0]);
    // A typo in the first letter counts as two.
    assert_eq!(ranked(&index, "goat~2"), [2, 0]);
}

#[test]
fn prefixes_and_suffixes() {
    let index = catalogue();
    assert_eq!(ranked(&index, "headph*"), [6, 0]);
    assert_eq!(ranked(&index, "*phones"), [0, 6]);
    // Row 7 has two forms of the word, one in its short title.
    assert_eq!(ranked(&index, "кни*"), [7, 3]);
    assert_eq!(ranked(&index, "*eadphon*"), [6, 0]);
}

#[test]
fn phrases_need_the_words_in_order() {
    let index = catalogue();
    // Row 5 has "frying or sauce pan": the words, but not the phrase.
    assert_eq!(ranked(&index, "\"frying pan\""), [2]);
    assert_eq!(ranked(&index, "\"frying pan\"~2"), [2, 5]);
    assert_eq!(ranked(&index, "\"pan frying\""), Vec::<u32>::new());
}

#[test]
fn proximity_lifts_rows_where_words_stand_together() {
    let index = build(
        serde_json::json!({}),
        &[
            ("", "red apples and many other fruits from the garden of a friend, all green"),
            ("", "green apples and many other fruits from the garden of a friend, all red"),
        ],
    );
    assert_eq!(ranked(&index, "green apples"), [1, 0]);
    assert_eq!(ranked(&index, "red apples"), [0, 1]);
}

#[test]
fn transliteration_finds_the_other_script() {
    let index = catalogue();
    assert_eq!(ranked(&index, "moskva"), [3]);
    assert_eq!(ranked(&index, "privet"), [4]);
    assert_eq!(ranked(&index, "putevoditel"), [3]);
    let latin = build(serde_json::json!({}), &[("", "Moscow and Moskva river")]);
    assert_eq!(ranked(&latin, "москва"), [0]);
}

#[test]
fn wrong_keyboard_layout_is_read_as_the_other() {
    let index = catalogue();
    assert_eq!(ranked(&index, "ghbdtn"), [4]);
    assert_eq!(sorted(ranked(&index, "rybuf")), [3, 7]);
    assert_eq!(ranked(&index, "руфвзрщтуы"), [0, 6]);
}

#[test]
fn synonyms_stand_for_each_other_below_exact_words() {
    let index = build(
        serde_json::json!({"synonyms": [["tv", "television"]]}),
        &[("Television set", ""), ("TV stand", ""), ("Radio", "")],
    );
    assert_eq!(ranked(&index, "tv"), [1, 0]);
    assert_eq!(ranked(&index, "television"), [0, 1]);
}

#[test]
fn field_weights_and_boosts_order_hits() {
    let rows = [("Pan", "a lid"), ("Lid", "for a pan")];
    let plain = build(serde_json::json!({}), &rows);
    assert_eq!(ranked(&plain, "pan"), [0, 1]);
    let weighted = build(serde_json::json!({"weights": {"description": 5}}), &rows);
    assert_eq!(ranked(&weighted, "pan"), [1, 0]);
    assert_eq!(ranked(&plain, "@description^10,title pan"), [1, 0]);
    assert_eq!(ranked(&plain, "@title pan"), [0]);
    let error = search(&plain, &parse("@price pan").expect("parses"), u64::MAX).unwrap_err();
    assert!(error.contains("title, description"), "{error}");
}

#[test]
fn required_and_excluded_elements() {
    let index = catalogue();
    assert_eq!(ranked(&index, "pan lid"), [5, 2]);
    assert_eq!(ranked(&index, "pan -lid"), [2]);
    assert_eq!(ranked(&index, "+lid pan"), [5]);
    assert_eq!(ranked(&index, "-lid"), Vec::<u32>::new());
    // Excluding a word excludes its other forms too.
    assert_eq!(ranked(&index, "headphones -headphone"), Vec::<u32>::new());
}

#[test]
fn stop_words_are_left_out_but_keep_their_place() {
    let rows = [("", "cup of tea"), ("", "cup tea"), ("", "the of and")];
    let index = build(serde_json::json!({"stop_words": true}), &rows);
    assert_eq!(ranked(&index, "the"), Vec::<u32>::new());
    assert_eq!(ranked(&index, "\"cup of tea\""), [0]);
    assert_eq!(index.rows(), 2, "a row of stop words only is not indexed");
    let listed = build(serde_json::json!({"stop_words": ["tea"]}), &rows);
    assert_eq!(ranked(&listed, "tea"), Vec::<u32>::new());
    assert_eq!(ranked(&listed, "the"), [2]);
}

#[test]
fn rows_are_searchable_as_soon_as_they_change() {
    let mut index = catalogue();
    index.remove(0);
    assert_eq!(ranked(&index, "headphones"), [6]);
    let values = [vec![s("Studio headphones")], vec![s("Closed back")]];
    index.insert(0, values.iter().map(Vec::as_slice));
    assert_eq!(ranked(&index, "studio"), [0]);
    assert_eq!(ranked(&index, "wireless"), Vec::<u32>::new());
    index.insert(20, [vec![s("brand new word")], vec![]].iter().map(Vec::as_slice));
    assert_eq!(ranked(&index, "brnd~"), [20]);
    let before = index.stats();
    index.remove(20);
    assert_eq!(index.stats().hits, before.hits - 3);
}

#[test]
fn array_values_do_not_form_phrases_across_items() {
    let fields = vec!["tags".to_string()];
    let mut index = TextIndex::new(fields.clone(), TextConfig::new(1));
    index.insert(0, [vec![s("frying"), s("pan")]].iter().map(Vec::as_slice));
    assert_eq!(ranked(&index, "pan"), [0]);
    assert_eq!(ranked(&index, "\"frying pan\""), Vec::<u32>::new());
}

#[test]
fn highlights_and_snippets_mark_every_matched_form() {
    let index = catalogue();
    let hits = search(&index, &parse("runs hedphones").expect("parses"), u64::MAX).expect("runs");
    let markers = Markers::default();
    let text = "Light shoes for the runner who runs every morning";
    assert_eq!(
        markup::highlight(text, &index, &hits.terms, &markers),
        "Light shoes for the runner who <b>runs</b> every morning"
    );
    let long = "one two three four headphones six seven eight nine ten eleven twelve runs fourteen";
    assert_eq!(
        markup::snippet(long, &index, &hits.terms, &markers, 1, 3, " … "),
        "four <b>headphones</b> six … twelve <b>runs</b> fourteen"
    );
    assert_eq!(markup::snippet("no match here at all", &index, &hits.terms, &markers, 1, 3, " … "), "no match here");
}

#[test]
fn options_are_checked_by_name() {
    let fields = vec!["title".to_string()];
    for (options, expected) in [
        (serde_json::json!({"weights": {"body": 2}}), "does not cover"),
        (serde_json::json!({"weights": {"title": 0}}), "above 0"),
        (serde_json::json!({"languages": ["xx"]}), "unknown language"),
        (serde_json::json!({"synonyms": [["one"]]}), "at least two"),
        (serde_json::json!({"synonyms": [["two words", "x"]]}), "not one word"),
        (serde_json::json!({"ranking": {"typo": 2}}), "within"),
        (serde_json::json!({"ranking": {"speed": 1}}), "unknown key"),
        (serde_json::json!({"colour": 1}), "unknown key"),
    ] {
        let error = TextConfig::from_json(Some(&options), &fields).unwrap_err();
        assert!(error.contains(expected), "{options}: {error}");
    }
    let config =
        TextConfig::from_json(Some(&serde_json::json!({"weights": {"title": 2}, "stop_words": ["a"]})), &fields)
            .expect("valid");
    assert_eq!(TextConfig::from_json(Some(&config.to_json(&fields)), &fields).expect("round trip"), config);
}
