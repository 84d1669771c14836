//! Relevance of full-text search on a small hand-labelled set: nDCG@10.
//!
//! `fixtures/relevance_catalogue.json` holds 40 catalogue documents in English and Russian
//! and 32 queries, each with graded relevant documents (3: what the user wants, 2: clearly
//! relevant, 1: marginal), labelled by reading the texts before any engine ran on them.
//! The same product in the other language counts as relevant although no engine without
//! translation finds it, so a perfect score is out of reach by design. The queries are of
//! seven kinds: plain words, other word forms, typos, transliteration, the wrong keyboard
//! layout, prefixes and phrases.
//!
//! The test runs each query on a text index over title (weight 2) and description, and
//! computes nDCG@10 with gains `2^grade - 1`. It measured a mean of 0.875 (every kind
//! between 0.81 and 0.95) when written. Why the thresholds (`MEAN_MIN`, `KIND_MIN`): each
//! kind has at least three queries whose grade-3 documents only that feature finds, so a
//! feature that stops working (say, layout swapping) drops its kind's mean to near 0, far
//! under 0.70; the overall mean is held at 0.82, a little under what was measured, so a
//! reordering of marginal documents does not fail it while losing a ranking signal (field
//! weights, the penalty of inexact matches, stems) costs several queries and does.

use hotset_core::query::Query;
use hotset_core::text::TextConfig;
use hotset_core::{Database, FieldType, IndexDef};
use serde_json::Value;
use std::collections::BTreeMap;

/// Mean nDCG@10 over all queries below which the test fails.
const MEAN_MIN: f64 = 0.82;
/// Mean nDCG@10 of each kind of query below which the test fails.
const KIND_MIN: f64 = 0.70;

fn ndcg_at_10(found: &[i64], grades: &BTreeMap<i64, u32>) -> f64 {
    let gain = |grade: u32| f64::from(2u32.pow(grade) - 1);
    let dcg: f64 = found
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, id)| gain(grades.get(id).copied().unwrap_or(0)) / (i as f64 + 2.0).log2())
        .sum();
    let mut ideal: Vec<u32> = grades.values().copied().collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal.iter().take(10).enumerate().map(|(i, &g)| gain(g) / (i as f64 + 2.0).log2()).sum();
    if idcg == 0.0 { 0.0 } else { dcg / idcg }
}

#[test]
fn ndcg_at_10_on_the_labelled_set() {
    let fixture: Value =
        serde_json::from_str(include_str!("fixtures/relevance_catalogue.json")).expect("the relevance set is JSON");
    let db = Database::new();
    let fields = ["title".to_string(), "description".to_string()];
    let config =
        TextConfig::from_json(Some(&serde_json::json!({"weights": {"title": 2}})), &fields).expect("valid options");
    db.create_namespace(
        "docs",
        vec![
            IndexDef::hash("id", FieldType::Int).pk(),
            IndexDef::text(&["title", "description"]).named("search").text_config(config),
        ],
    )
    .unwrap();
    for doc in fixture["documents"].as_array().expect("documents") {
        db.upsert("docs", doc).unwrap();
    }
    let mut by_kind: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut report = Vec::new();
    for query in fixture["queries"].as_array().expect("queries") {
        let text = query["q"].as_str().expect("query text");
        let kind = query["kind"].as_str().expect("query kind").to_string();
        let grades: BTreeMap<i64, u32> = query["relevant"]
            .as_object()
            .expect("graded documents")
            .iter()
            .map(|(id, grade)| (id.parse().expect("ids are numbers"), grade.as_u64().expect("grades") as u32))
            .collect();
        let result = db.query(&Query::new("docs").matching("search", text).limit(10)).unwrap();
        let found: Vec<i64> = result.values().iter().map(|d| d["id"].as_i64().unwrap()).collect();
        let score = ndcg_at_10(&found, &grades);
        report.push(format!("{score:.3}  {kind:<9} {text:<28} found {found:?}"));
        by_kind.entry(kind).or_default().push(score);
    }
    let all: Vec<f64> = by_kind.values().flatten().copied().collect();
    let mean = all.iter().sum::<f64>() / all.len() as f64;
    println!("{}", report.join("\n"));
    for (kind, scores) in &by_kind {
        println!("{kind:<9} {:.3} over {} queries", scores.iter().sum::<f64>() / scores.len() as f64, scores.len());
    }
    println!("mean nDCG@10 {mean:.3} over {} queries", all.len());
    for (kind, scores) in &by_kind {
        let kind_mean = scores.iter().sum::<f64>() / scores.len() as f64;
        assert!(kind_mean >= KIND_MIN, "{kind}: nDCG@10 {kind_mean:.3} is below {KIND_MIN}\n{}", report.join("\n"));
    }
    assert!(mean >= MEAN_MIN, "mean nDCG@10 {mean:.3} is below {MEAN_MIN}\n{}", report.join("\n"));
}

#[test]
fn ndcg_is_one_for_the_ideal_order_and_lower_otherwise() {
    let grades: BTreeMap<i64, u32> = [(1, 3), (2, 1)].into_iter().collect();
    assert!((ndcg_at_10(&[1, 2], &grades) - 1.0).abs() < 1e-9);
    assert!(ndcg_at_10(&[2, 1], &grades) < 1.0);
    assert!(ndcg_at_10(&[9, 1, 2], &grades) < ndcg_at_10(&[1, 9, 2], &grades));
    assert_eq!(ndcg_at_10(&[], &grades), 0.0);
}
