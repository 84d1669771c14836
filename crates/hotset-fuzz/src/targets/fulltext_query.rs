//! The full-text query language (`hotset_core::text::parse`) on any UTF-8 text, and every
//! query it accepts run against the fixture's text index with highlights and snippets.
//!
//! Checks: Ok or Err, never a panic; an accepted query keeps the language's bounds (at
//! most `ELEMENTS_MAX` elements, each with words, typo limits up to 2, weights in
//! (0, 1000]); an error points inside the text; parsing is deterministic; running the
//! query returns Ok or Err and its answer is JSON.

use crate::{ITEMS, TEXT_INDEX, check_json_answer, fixture};
use hotset_core::query::dsl;
use hotset_core::query::{Highlight, Snippet};
use hotset_core::text::{self, parse::ELEMENTS_MAX};
use hotset_core::{Database, Query, Search, SearchTarget};
use std::sync::OnceLock;

/// Searches only read, so one fixture serves every input.
fn database() -> &'static Database {
    static DATABASE: OnceLock<Database> = OnceLock::new();
    DATABASE.get_or_init(fixture)
}

/// One input of the target.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let parsed = text::parse(text);
    assert_eq!(text::parse(text), parsed, "parsing is not deterministic");
    let query = match parsed {
        Ok(query) => query,
        Err(error) => {
            assert!(error.at <= text.chars().count(), "error at character {} of {text:?}", error.at);
            return;
        }
    };
    assert!(query.elements.len() <= ELEMENTS_MAX, "{} elements", query.elements.len());
    for element in &query.elements {
        assert!(!element.words.is_empty(), "an element without words in {text:?}");
        assert!(element.boost > 0.0 && element.boost <= 1000.0, "weight {} in {text:?}", element.boost);
        for word in &element.words {
            assert!(word.typos.is_none_or(|n| n <= 2), "typo limit {:?} in {text:?}", word.typos);
        }
        for (field, boost) in &element.fields {
            assert!(!field.is_empty() && *boost > 0.0 && *boost <= 1000.0, "field {field:?}^{boost} in {text:?}");
        }
    }
    let db = database();
    let mut query = Query::new(ITEMS).matching(TEXT_INDEX, text).limit(10).with_total();
    query.highlight = Some(Highlight::default());
    query.snippet = Some(Snippet::default());
    if let Ok(result) = db.query(&query) {
        let mut answer = Vec::new();
        dsl::write_result_json(&result, &mut answer);
        check_json_answer(&answer, "full-text query");
    }
    let search = Search {
        text: text.to_string(),
        targets: vec![SearchTarget { namespace: ITEMS.to_string(), field: None, filter: None }],
        offset: 0,
        limit: 5,
        highlight: None,
        snippet: None,
        timeout: None,
    };
    let _ = db.search(&search);
}
