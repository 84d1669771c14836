//! The planner's choices on the profile-search shape (issue 15): prefix conditions on
//! first and last name over a composite `utf8_ci` tree index of both, with single-field
//! indexes beside it. Each test checks the plan `EXPLAIN` shows and that every forced
//! plan gives the same page and total as the one chosen by cost.

use hotset_core::query::{Choice, PlanChoice, Query};
use hotset_core::{Collation, Database, FieldType, IndexDef, IndexKind, Op};
use serde_json::{Value, json};

const FIRST: usize = 400;
const LAST: usize = 1500;
const ROWS: usize = 30_000;

/// A name made of letter pairs from a seed (deterministic, Title-Case).
fn name(seed: usize) -> String {
    const SYLLABLES: [&str; 12] = ["a", "ja", "ni", "ko", "ma", "ri", "su", "te", "lo", "ve", "dan", "e"];
    let mut out = String::new();
    let mut n = seed * 7 + 3;
    for _ in 0..3 {
        out.push_str(SYLLABLES[n % SYLLABLES.len()]);
        n /= SYLLABLES.len();
    }
    out.push_str(&seed.to_string());
    let mut chars = out.chars();
    let first = chars.next().unwrap().to_uppercase().collect::<String>();
    first + chars.as_str()
}

/// A 64-bit mix (splitmix64's finaliser): independent-looking picks from consecutive ids.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d049bb133111eb);
    x ^ (x >> 31)
}

/// The profiles: `first_name` from `FIRST` names, `last_name` from `LAST`, scattered.
fn profiles() -> Database {
    let db = Database::new();
    db.create_namespace(
        "users",
        vec![
            IndexDef::hash("id", FieldType::Int).pk(),
            IndexDef::new("first_name", IndexKind::Tree, FieldType::String).collate(Collation::Utf8Ci),
            IndexDef::new("last_name", IndexKind::Tree, FieldType::String).collate(Collation::Utf8Ci),
            IndexDef::composite(&["first_name", "last_name"], IndexKind::Tree, FieldType::String)
                .collate(Collation::Utf8Ci),
        ],
    )
    .unwrap();
    for id in 0..ROWS {
        let (first, last) = (mix(id as u64) as usize % FIRST, mix(!(id as u64)) as usize % LAST);
        let doc = json!({"id": id, "first_name": name(first), "last_name": name(last + FIRST)});
        db.insert("users", &doc).unwrap();
    }
    db
}

fn prefixes(first: &str, last: &str) -> Query {
    Query::new("users").where_("first_name", Op::Like, format!("{first}%")).where_(
        "last_name",
        Op::Like,
        format!("{last}%"),
    )
}

/// Runs `query` under every forced plan and by cost; all must give the same ids and
/// total. Returns the plan chosen by cost and its ids.
fn agree(db: &Database, query: &Query) -> (String, Vec<i64>) {
    let run = |choice: PlanChoice| {
        db.set_plan_choice(choice);
        let result = db.query(&query.clone().explain()).unwrap();
        let ids: Vec<i64> = result.values().iter().map(|v: &Value| v["id"].as_i64().unwrap()).collect();
        (result.explain.unwrap().to_text(), ids, result.total)
    };
    let (plan, ids, total) = run(PlanChoice::default());
    for walk in [Choice::Always, Choice::Never] {
        for skip in [Choice::Always, Choice::Never] {
            let (other_plan, other_ids, other_total) = run(PlanChoice { walk, skip });
            if query.sort.is_empty() {
                // Unsorted pages come in each plan's own order: a whole answer is the same
                // set of rows, a limited page as many of them.
                let (mut a, mut b) = (ids.clone(), other_ids.clone());
                a.sort_unstable();
                b.sort_unstable();
                if query.limit.is_none() {
                    assert_eq!(b, a, "walk {walk:?} skip {skip:?}: {other_plan}\nby cost: {plan}");
                } else {
                    assert_eq!(b.len(), a.len(), "{other_plan}");
                }
            } else {
                assert_eq!(other_ids, ids, "walk {walk:?} skip {skip:?}: {other_plan}\nby cost: {plan}");
            }
            assert_eq!(other_total, total, "walk {walk:?} skip {skip:?}: {other_plan}");
        }
    }
    db.set_plan_choice(PlanChoice::default());
    (plan, ids)
}

#[test]
fn two_prefixes_are_a_skip_scan_of_the_composite() {
    let db = profiles();
    // "Ja..." first names: few distinct values, each with many rows; "k..." last names.
    let query = prefixes("ja", "k").limit(20).with_total();
    let (plan, ids) = agree(&db, &query);
    assert!(plan.contains("skip scan range [\"ja\", \"jb\"), then [\"k\", \"l\")"), "{plan}");
    assert!(!ids.is_empty());
    // Every answer has both prefixes (case-insensitively).
    for doc in db.query(&query).unwrap().values() {
        assert!(doc["first_name"].as_str().unwrap().to_lowercase().starts_with("ja"), "{doc}");
        assert!(doc["last_name"].as_str().unwrap().to_lowercase().starts_with('k'), "{doc}");
    }
}

#[test]
fn a_skip_scan_pages_a_sort_on_both_fields_without_sorting() {
    let db = profiles();
    for desc in [false, true] {
        // `id` breaks ties between equal names, so the page has one right order.
        let query =
            prefixes("ja", "k").sort("first_name", desc).sort("last_name", desc).sort("id", false).offset(7).limit(20);
        let (plan, ids) = agree(&db, &query);
        assert!(plan.contains("sorted by walking index 'first_name+last_name'"), "{plan}");
        assert!(plan.contains("skip scan"), "{plan}");
        assert_eq!(ids.len(), 20);
    }
}

#[test]
fn without_a_composite_the_ranges_are_still_answered_together() {
    let db = profiles();
    db.drop_index("users", "first_name+last_name").unwrap();
    for query in [prefixes("ja", "k").limit(20), prefixes("j", "ko").limit(20).with_total()] {
        let (plan, ids) = agree(&db, &query);
        assert!(!plan.contains("skip scan"), "{plan}");
        assert!(!ids.is_empty(), "{plan}");
    }
}

#[test]
fn skip_scans_cover_equality_prefixes_ranges_and_empty_answers() {
    let db = profiles();
    let name = name(5);
    let cases = [
        // An equality on the first field, a prefix on the second: a plain range scan.
        Query::new("users").where_("first_name", Op::Eq, name.clone()).where_("last_name", Op::Like, "k%").limit(5),
        // Comparisons on both fields.
        Query::new("users").where_("first_name", Op::Ge, "Ja").where_("first_name", Op::Lt, "Jb").where_(
            "last_name",
            Op::Range,
            json!(["k", "l"]),
        ),
        // Nothing matches.
        prefixes("zz", "k").limit(20).with_total(),
        prefixes("ja", "zz").limit(20).with_total(),
    ];
    for query in cases {
        agree(&db, &query.with_total());
    }
}

/// Regression (debug builds, found by `prop_reference`): without a limit the window is
/// unbounded, and costing a skip scan expected to yield one row overflowed
/// (`window * leads / rows + 1`).
#[test]
fn an_unbounded_page_is_costed_without_overflow() {
    let db = Database::new();
    db.create_namespace(
        "users",
        vec![
            IndexDef::hash("id", FieldType::Int).pk(),
            IndexDef::new("first_name", IndexKind::Tree, FieldType::String),
            IndexDef::new("last_name", IndexKind::Tree, FieldType::String),
            IndexDef::composite(&["first_name", "last_name"], IndexKind::Tree, FieldType::String),
        ],
    )
    .unwrap();
    for (id, first, last) in [(1, "ja1", "k1"), (2, "ja2", "k2"), (3, "zed", "w")] {
        db.insert("users", &json!({"id": id, "first_name": first, "last_name": last})).unwrap();
    }
    let (_, mut ids) = agree(&db, &prefixes("ja", "k"));
    ids.sort_unstable();
    assert_eq!(ids, [1, 2]);
}

/// The catalogue shape of issue 15: `name IN (...) AND year BETWEEN ... ORDER BY year
/// DESC, id` on a composite tree index `name+year`.
fn catalogue() -> Database {
    let db = Database::new();
    db.create_namespace(
        "items",
        vec![
            IndexDef::hash("id", FieldType::Int).pk(),
            IndexDef::new("name", IndexKind::Hash, FieldType::String),
            IndexDef::new("year", IndexKind::Tree, FieldType::Int),
            IndexDef::composite_typed(&[("name", FieldType::String), ("year", FieldType::Int)], IndexKind::Tree),
        ],
    )
    .unwrap();
    for id in 0..ROWS {
        let name = format!("n{}", mix(id as u64) % 300);
        let year = 2000 + (mix(!(id as u64)) % 50) as i64;
        db.insert("items", &json!({"id": id, "name": name, "year": year})).unwrap();
    }
    db
}

#[test]
fn an_in_list_on_a_composite_is_a_merge_of_walks_in_sort_order() {
    let db = catalogue();
    let names = json!(["n3", "n17", "n150", "n299", "n42", "no such name"]);
    for (desc, offset, total) in [(true, 10, true), (false, 0, false), (true, 100, true)] {
        let query = Query::new("items")
            .where_("name", Op::In, names.clone())
            .where_("year", Op::Range, json!([2010, 2030]))
            .sort("year", desc)
            .sort("id", false)
            .offset(offset)
            .limit(10);
        let query = if total { query.with_total() } else { query };
        let (plan, ids) = agree(&db, &query);
        assert!(plan.contains("merge of 6 range(s) by key part 2"), "{plan}");
        assert!(plan.contains("sorted by walking index 'name+year'"), "{plan}");
        assert_eq!(ids.len(), 10, "{plan}");
    }
    // Sorted by the IN field itself, then the next: the walks one after another.
    let query = Query::new("items")
        .where_("name", Op::In, names)
        .sort("name", false)
        .sort("year", false)
        .sort("id", false)
        .limit(30);
    let (plan, ids) = agree(&db, &query);
    assert!(plan.contains("merge of 6 range(s) by key part 1"), "{plan}");
    assert_eq!(ids.len(), 30);
}
