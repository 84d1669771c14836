//! The main correctness guard: random schemas, write histories and queries run on the
//! engine and on the naive reference model (`hotset_testkit::reference`), which must
//! agree on every write's success, the stored documents, every page, total and
//! aggregation. Ties in a sort may come in any order, so pages are compared by their
//! sort keys position by position, plus membership, uniqueness and count.
//! `PROPTEST_CASES` scales the run (CI uses the default below).

use hotset_core::query::{Aggregation, AggregationResult, Query, WalkChoice};
use hotset_core::{Database, Error};
use hotset_testkit::generate::{self, NAMESPACE, Write};
use hotset_testkit::reference::{RefAggregation, RefNamespace, RefScalar, to_scalar};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::Value;
use std::cmp::Ordering;

fn apply_engine(db: &Database, write: &Write) -> Result<(), Error> {
    match write {
        Write::Insert(doc) => db.insert(NAMESPACE, doc),
        Write::Upsert(doc) => db.upsert(NAMESPACE, doc),
        Write::Update(doc) => db.update(NAMESPACE, doc),
        Write::Delete(id) => db.delete(NAMESPACE, &Value::from(*id)).map(|_| ()),
        Write::UpdateQuery(cond, sets) => {
            let query = Query { namespace: NAMESPACE.into(), filter: cond.clone(), ..Query::default() };
            db.update_query(&query, sets).map(|_| ())
        }
        Write::DeleteQuery(cond) => db.delete_query(&Query::new(NAMESPACE).filter(cond.clone())).map(|_| ()),
        Write::AddIndex(def) => db.add_index(NAMESPACE, def.clone()),
        Write::DropIndex(name) => db.drop_index(NAMESPACE, name),
    }
}

fn all_documents(db: &Database) -> Vec<Value> {
    let mut docs = db.query(&Query::new(NAMESPACE)).expect("a plain query works").values();
    docs.sort_by_key(|d| d["id"].as_i64());
    docs
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn check_aggregation(
    model: &RefNamespace,
    engine: &AggregationResult,
    expected: &RefAggregation,
    asked: &Aggregation,
) -> Result<(), TestCaseError> {
    let keys = |field: &str, values: &[Value]| -> Vec<Option<RefScalar>> {
        let _ = field;
        values.iter().map(|v| to_scalar(v, model.collation(field))).collect()
    };
    match (engine, expected) {
        (AggregationResult::Count(n), RefAggregation::Count(m)) => prop_assert_eq!(n, m),
        (AggregationResult::Value { value, .. }, RefAggregation::Number(want)) => match (value.as_f64(), want) {
            (Some(a), Some(b)) => prop_assert!(close(a, *b), "{asked:?}: engine {a} reference {b}"),
            (None, None) => prop_assert!(value.is_null()),
            (a, b) => prop_assert!(false, "{asked:?}: engine {a:?} reference {b:?}"),
        },
        (AggregationResult::Distinct { field, values }, RefAggregation::Distinct(want)) => {
            let got: Vec<Option<RefScalar>> = keys(field, values);
            let want: Vec<Option<RefScalar>> = want.iter().cloned().map(Some).collect();
            prop_assert_eq!(got, want, "{:?}", asked);
        }
        (AggregationResult::Facet { fields, groups, .. }, RefAggregation::Facet(want)) => {
            prop_assert_eq!(groups.len(), want.len(), "{:?}: {:?} vs {:?}", asked, groups, want);
            for (group, (want_keys, want_count)) in groups.iter().zip(want) {
                let got: Vec<Option<RefScalar>> =
                    group.values.iter().zip(fields).map(|(v, f)| to_scalar(v, model.collation(f))).collect();
                prop_assert_eq!(&got, want_keys, "{:?}", asked);
                prop_assert_eq!(group.count, *want_count, "{:?}", asked);
            }
        }
        (a, b) => prop_assert!(false, "kinds differ: {a:?} vs {b:?}"),
    }
    Ok(())
}

fn has_match(cond: &hotset_core::Cond) -> bool {
    use hotset_core::Cond;
    match cond {
        Cond::Field { op, .. } => *op == hotset_core::Op::Match,
        Cond::And(items) | Cond::Or(items) => items.iter().any(has_match),
        Cond::Not(inner) => has_match(inner),
    }
}

fn check_query(db: &Database, model: &RefNamespace, query: &Query) -> Result<(), TestCaseError> {
    let result = db.query(query).map_err(|e| TestCaseError::fail(format!("{query:?} failed: {e}")))?;
    let expected = model.query(query);
    let total = expected.matches.len();
    if query.total {
        prop_assert_eq!(result.total, Some(total), "total of {:?}", query);
    }
    let start = query.offset.min(total);
    let end = query.limit.map_or(total, |l| (start + l).min(total));
    let mut page = result.values();
    prop_assert_eq!(page.len(), end - start, "page size of {:?}", query);
    // A full-text match gives every item its rank (a number), and only then.
    let matches_text = query.filter.as_ref().is_some_and(has_match);
    for doc in &mut page {
        let rank = doc.as_object_mut().and_then(|d| d.remove("_rank"));
        prop_assert_eq!(rank.as_ref().is_some_and(Value::is_number), matches_text, "_rank of {} in {:?}", doc, query);
    }
    let mut seen = std::collections::HashSet::new();
    for (i, doc) in page.iter().enumerate() {
        prop_assert!(seen.insert(doc["id"].to_string()), "duplicate {} in {:?}", doc, query);
        prop_assert!(query.filter.as_ref().is_none_or(|c| model.matches(doc, c)), "{doc} does not match {query:?}");
        let stored = model.docs.get(&doc["id"].to_string());
        prop_assert_eq!(Some(doc), stored, "returned document differs from the stored one");
        if !query.sort.is_empty() {
            let want = &expected.matches[start + i];
            prop_assert_eq!(
                model.compare_docs(doc, want, query),
                Ordering::Equal,
                "position {} of {:?}: {} vs {}",
                i,
                query,
                doc,
                want
            );
        }
    }
    if query.sort.is_empty() && query.limit.is_none() && query.offset == 0 {
        let mut got: Vec<String> = page.iter().map(|d| d["id"].to_string()).collect();
        let mut want: Vec<String> = expected.matches.iter().map(|d| d["id"].to_string()).collect();
        got.sort();
        want.sort();
        prop_assert_eq!(got, want);
    }
    prop_assert_eq!(result.aggregations.len(), expected.aggregations.len());
    for ((engine, want), asked) in result.aggregations.iter().zip(&expected.aggregations).zip(&query.aggregations) {
        check_aggregation(model, engine, want, asked)?;
    }
    Ok(())
}

fn run_case(defs: Vec<hotset_core::IndexDef>, writes: Vec<Write>, queries: Vec<Query>) -> Result<(), TestCaseError> {
    let db = Database::new();
    db.create_namespace(NAMESPACE, defs.clone()).map_err(|e| TestCaseError::fail(format!("schema {defs:?}: {e}")))?;
    let mut model = RefNamespace { defs, ..RefNamespace::default() };
    for write in &writes {
        let engine = apply_engine(&db, write);
        let reference = model.apply(write);
        prop_assert_eq!(
            engine.is_ok(),
            reference.is_ok(),
            "{:?}: engine {:?}, reference {:?}",
            write,
            engine,
            reference
        );
    }
    let mut stored: Vec<Value> = model.docs.values().cloned().collect();
    stored.sort_by_key(|d| d["id"].as_i64());
    prop_assert_eq!(all_documents(&db), stored);
    // Each query runs with every paging strategy: by cost, always walking a sort index
    // when one gives the order, and always sorting. All three must agree with the model.
    for choice in [WalkChoice::Cost, WalkChoice::Always, WalkChoice::Never] {
        db.set_walk_choice(choice);
        for query in &queries {
            check_query(&db, &model, query)?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(Config { cases: 600, max_shrink_iters: 4000, ..Config::default() })]

    #[test]
    fn engine_agrees_with_reference(
        defs in generate::schema(),
        writes in generate::writes(40),
        queries in proptest::collection::vec(generate::query(), 1..12),
    ) {
        run_case(defs, writes, queries)?;
    }
}
