//! Seeded generators for property tests: schemas, documents, operations and queries
//! over a small fixed field pool, chosen so that conditions often match, values collide
//! across collations, and every operator, index kind and option gets exercised.
//!
//! Field pool (the type is what indexes declare; `u` is never indexed and mixes kinds):
//! `id` int pk, `a` int, `b` string, `c` double, `tags` int array, `flag` bool,
//! `n.x` nested int, `s` string (composites `b+s`, `a+s` and `a+b+s`), `u` anything,
//! `body` text (words from `TEXT_WORDS`, always under a text index, searched with
//! `MATCH`).
//!
//! Values come mostly from small pools, so that equalities hit; mixed into them at a
//! lower rate are the values where representations break: i64's ends and their
//! neighbours, integers around 2^53 (past it an f64 no longer holds every integer, so
//! int/double comparisons must be exact), doubles at ±2^63, `-0.0`, a u64 past i64, long
//! strings and random Unicode with multi-digit runs (the numeric collation).
//!
//! The larger strategies are boxed: unboxed, their value trees are nested types of many
//! kilobytes that an unoptimised build keeps on the stack, and a test thread's 2 MiB
//! overflowed before the first case.

use hotset_core::query::{Aggregation, ArithOp, Cond, Expr, Facet, Op, Query, SetField, SortKey};
use hotset_core::{Collation, FieldType, IndexDef, IndexKind};
use proptest::prelude::*;
use serde_json::{Value, json};

pub const NAMESPACE: &str = "t";
const STRINGS: &[&str] =
    &["abc", "ABC", "Abd", "ёлка", "Ёлка", "straße", "STRASSE", "x1", "x10", "x2", "", "a%b", "a_b", "b"];
const PATTERNS: &[&str] = &["ab%", "A%", "%b%", "x1_", "ЁЛ%", "stra%", "%", "a\\%b", "_", "x%", "abc", "%c"];
/// Words of `body`: no two share a stem or stand within a typo of each other, so the
/// text index's matching reduces to the plain word and prefix rules the reference knows.
pub const TEXT_WORDS: &[&str] = &["Alpha", "bravo", "DELTA", "kilo", "Lima", "oscar", "tango", "zulu", "alps"];
const QUERY_FIELDS: &[&str] = &["id", "a", "b", "c", "tags", "flag", "n.x", "s", "u", "missing"];

/// 2^53: from here on not every integer is an f64.
const TWO_53: i64 = 1 << 53;
/// Integers where arithmetic overflows or doubles round: i64's ends and ±1 around them,
/// 2^53 and its neighbours, and 2^63 − 1024 (the largest f64 below 2^63, which an int
/// can equal exactly).
pub const WIDE_INTS: &[i64] = &[
    i64::MIN,
    i64::MIN + 1,
    i64::MAX - 1,
    i64::MAX,
    TWO_53 - 1,
    TWO_53,
    TWO_53 + 1,
    -TWO_53,
    -TWO_53 - 1,
    i64::MAX - 1023,
];
/// Doubles next to `WIDE_INTS`: 2^53 and 2^53 + 2 (each an int's exact value, and the
/// rounding of 2^53 + 1), ±2^63 (−2^63 equals `i64::MIN`; 2^63 is above every i64),
/// 2^63 − 1024, a fraction no binary double holds, and negative zero.
pub const WIDE_DOUBLES: &[f64] = &[
    9_007_199_254_740_992.0,
    9_007_199_254_740_994.0,
    -9_007_199_254_740_992.0,
    9_223_372_036_854_775_808.0,
    -9_223_372_036_854_775_808.0,
    9_223_372_036_854_774_784.0,
    0.1,
    -0.0,
];

/// An int: mostly from a small range, sometimes a wide one.
fn int(small: std::ops::Range<i64>) -> impl Strategy<Value = i64> {
    prop_oneof![8 => small, 1 => proptest::sample::select(WIDE_INTS)]
}

/// A primary key: mostly `0..ids`, sometimes an extreme.
fn id(ids: i64) -> impl Strategy<Value = i64> {
    prop_oneof![12 => 0..ids, 1 => proptest::sample::select(&[i64::MIN, i64::MAX, TWO_53, TWO_53 + 1][..])]
}

/// Characters for random strings: case pairs that fold together (ASCII, `ß`/`ẞ`/`ss`,
/// Cyrillic, Greek final sigma, the Kelvin sign), ones that stay apart, LIKE's
/// metacharacters, control bytes and characters beyond the BMP.
const TEXT_CHARS: &[char] = &[
    'a', 'A', 'b', 'B', 'x', 'X', 's', 'S', 'k', 'K', ' ', '%', '_', '\\', '\0', '-', 'ß', 'ẞ', 'ё', 'Ё', 'е', 'ς',
    'σ', 'Σ', 'K', 'é', 'É', '中', '😀', '𐐀', '𐐨',
];

/// A long or random string: pieces of `TEXT_CHARS`, other Unicode, and digit runs of
/// one to 300 digits (leading zeros included).
fn wild_string() -> BoxedStrategy<String> {
    let digits = |lengths: std::ops::Range<usize>| {
        proptest::collection::vec(0u8..10, lengths).prop_map(|d| d.into_iter().map(|d| char::from(b'0' + d)).collect())
    };
    let piece = prop_oneof![
        4 => proptest::sample::select(TEXT_CHARS).prop_map(String::from),
        2 => any::<char>().prop_map(String::from),
        3 => digits(1..5),
        1 => digits(250..300),
        1 => proptest::sample::select(STRINGS).prop_map(str::to_string),
    ];
    proptest::collection::vec(piece, 1..24).prop_map(|pieces| pieces.concat()).boxed()
}

fn collation() -> impl Strategy<Value = Collation> {
    prop_oneof![Just(Collation::None), Just(Collation::AsciiCi), Just(Collation::Utf8Ci), Just(Collation::Numeric)]
}

fn kind(kinds: &'static [IndexKind]) -> impl Strategy<Value = Option<IndexKind>> {
    prop_oneof![1 => Just(None), 3 => proptest::sample::select(kinds).prop_map(Some)]
}

/// A schema: the pk plus a random subset of optional indexes, in random order.
pub fn schema() -> BoxedStrategy<Vec<IndexDef>> {
    const ALL: &[IndexKind] = &[IndexKind::Hash, IndexKind::Tree, IndexKind::Store];
    const LOOKUP: &[IndexKind] = &[IndexKind::Hash, IndexKind::Tree];
    (
        proptest::sample::select(LOOKUP),
        (kind(ALL), any::<bool>()),
        (kind(ALL), any::<bool>(), collation()),
        kind(LOOKUP),
        kind(LOOKUP),
        kind(LOOKUP),
        kind(&[IndexKind::Tree]),
        (kind(LOOKUP), collation()),
        (kind(&[IndexKind::Tree]), collation()),
        (kind(&[IndexKind::Tree]), collation()),
        any::<u64>(),
    )
        .prop_map(|(pk, a, b, c, tags, flag, nx, bs, as_, abs, shuffle)| {
            let mut defs = Vec::new();
            let sparse = |def: IndexDef, on: bool| if on { def.sparse() } else { def };
            if let (Some(k), sp) = a {
                defs.push(sparse(IndexDef::new("a", k, FieldType::Int), sp));
            }
            if let (Some(k), sp, coll) = b {
                defs.push(sparse(IndexDef::new("b", k, FieldType::String).collate(coll), sp));
            }
            if let Some(k) = c {
                defs.push(IndexDef::new("c", k, FieldType::Double));
            }
            if let Some(k) = tags {
                defs.push(IndexDef::new("tags", k, FieldType::Int).array());
            }
            if let Some(k) = flag {
                defs.push(IndexDef::new("flag", k, FieldType::Bool));
            }
            if let Some(k) = nx {
                defs.push(IndexDef::new("n.x", k, FieldType::Int));
            }
            if let (Some(k), coll) = bs {
                defs.push(IndexDef::composite(&["b", "s"], k, FieldType::String).collate(coll));
            }
            if let (Some(k), coll) = as_ {
                let fields = [("a", FieldType::Int), ("s", FieldType::String)];
                defs.push(IndexDef::composite_typed(&fields, k).collate(coll));
            }
            if let (Some(k), coll) = abs {
                let fields = [("a", FieldType::Int), ("b", FieldType::String), ("s", FieldType::String)];
                defs.push(IndexDef::composite_typed(&fields, k).collate(coll));
            }
            // A deterministic shuffle: declaration order decides each field's collation.
            let mut order: Vec<(u64, IndexDef)> =
                defs.into_iter().enumerate().map(|(i, d)| (shuffle.rotate_left(i as u32 * 7) % 1000, d)).collect();
            order.sort_by_key(|(k, _)| *k);
            let mut defs: Vec<IndexDef> = order.into_iter().map(|(_, d)| d).collect();
            let pk_at = (shuffle % (defs.len() as u64 + 1)) as usize;
            defs.insert(pk_at, IndexDef::new("id", pk, FieldType::Int).pk());
            defs.push(text_index());
            defs
        })
        .boxed()
}

/// The text index on `body`, with typo tolerance off (the reference has no typos).
pub fn text_index() -> IndexDef {
    let mut config = hotset_core::text::TextConfig::new(1);
    config.typos = false;
    IndexDef::text(&["body"]).text_config(config)
}

/// Text of 0–6 words from `TEXT_WORDS` with assorted separators.
fn body() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        (proptest::sample::select(TEXT_WORDS), proptest::sample::select(&[" ", ", ", "-", ". "][..])),
        0..7,
    )
    .prop_map(|words| words.into_iter().map(|(w, sep)| format!("{w}{sep}")).collect())
}

/// A full-text query over `TEXT_WORDS`: 1–3 elements, each a word or a prefix, maybe
/// required or excluded, in any case.
fn text_query() -> impl Strategy<Value = String> {
    let element = (proptest::sample::select(TEXT_WORDS), 0u8..3, 0u8..4, any::<bool>()).prop_map(
        |(word, presence, shape, upper)| {
            let word = if upper { word.to_uppercase() } else { word.to_lowercase() };
            let word = match shape {
                0 => format!("{}*", &word[..2]),
                1 => format!("{}*", &word[..3]),
                _ => word,
            };
            format!("{}{word}", ["", "+", "-"][presence as usize])
        },
    );
    proptest::collection::vec(element, 1..4).prop_map(|elements| elements.join(" "))
}

fn maybe<T: std::fmt::Debug + Clone + 'static>(
    s: impl Strategy<Value = T> + 'static,
) -> impl Strategy<Value = Option<Option<T>>> {
    // None: field absent; Some(None): null; Some(Some(v)): a value.
    prop_oneof![1 => Just(None), 1 => Just(Some(None)), 5 => s.prop_map(|v| Some(Some(v)))]
}

fn string() -> BoxedStrategy<String> {
    prop_oneof![12 => proptest::sample::select(STRINGS).prop_map(str::to_string), 1 => wild_string()].boxed()
}

/// A number for a double field: a small double or int, sometimes a wide one of either.
fn double() -> BoxedStrategy<Value> {
    prop_oneof![
        6 => proptest::sample::select(&[-1.5, 0.0, 0.5, 2.0, 2.5, 3.0][..]).prop_map(|d| json!(d)),
        6 => (-2i64..4).prop_map(|i| json!(i)),
        1 => proptest::sample::select(WIDE_DOUBLES).prop_map(|d| json!(d)),
        1 => proptest::sample::select(WIDE_INTS).prop_map(|i| json!(i)),
    ]
    .boxed()
}

/// 2^63: a JSON integer no i64 holds (serde_json keeps it as a u64).
fn beyond_i64() -> Value {
    json!(9_223_372_036_854_775_808u64)
}

fn mixed() -> BoxedStrategy<Value> {
    let scalar = prop_oneof![
        6 => int(-3..6).prop_map(|i| json!(i)),
        6 => string().prop_map(Value::String),
        3 => any::<bool>().prop_map(Value::Bool),
        3 => Just(json!(1.5)),
        1 => proptest::sample::select(WIDE_DOUBLES).prop_map(|d| json!(d)),
        1 => Just(beyond_i64()),
        3 => Just(Value::Null),
    ];
    prop_oneof![
        4 => scalar.clone(),
        1 => proptest::collection::vec(scalar, 0..3).prop_map(Value::Array),
        1 => Just(json!({"k": 1})),
    ]
    .boxed()
}

/// A document with `id` in `0..ids`; every indexed field has its declared type.
pub fn document(ids: i64) -> BoxedStrategy<Value> {
    (
        id(ids),
        maybe(int(-3..8)),
        maybe(string()),
        maybe(double()),
        maybe(proptest::collection::vec(int(0..5), 0..4)),
        maybe(any::<bool>()),
        maybe(int(-2..4)),
        maybe(string()),
        (maybe(mixed()), maybe(body())),
    )
        .prop_map(|(id, a, b, c, tags, flag, nx, s, (u, body))| {
            let mut doc = serde_json::Map::new();
            doc.insert("id".into(), json!(id));
            let mut put = |name: &str, value: Option<Option<Value>>| {
                if let Some(value) = value {
                    doc.insert(name.into(), value.unwrap_or(Value::Null));
                }
            };
            put("a", a.map(|v| v.map(|x| json!(x))));
            put("b", b.map(|v| v.map(Value::String)));
            put("c", c);
            put("tags", tags.map(|v| v.map(|t| json!(t))));
            put("flag", flag.map(|v| v.map(Value::Bool)));
            put("n", nx.map(|v| v.map(|x| json!({"x": x}))));
            put("s", s.map(|v| v.map(Value::String)));
            put("u", u);
            put("body", body.map(|v| v.map(Value::String)));
            Value::Object(doc)
        })
        .boxed()
}

/// A document whose `a` or `b` has the wrong type (refused when that field is indexed).
pub fn bad_document(ids: i64) -> BoxedStrategy<Value> {
    (
        document(ids),
        prop_oneof![
            Just(("a", json!("text"))),
            Just(("b", json!(7))),
            Just(("c", json!("x"))),
            Just(("flag", json!(1))),
            Just(("a", json!([1, 2]))),
            Just(("a", beyond_i64())),
            Just(("a", json!(9_007_199_254_740_992.0))),
            Just(("body", json!(5)))
        ],
    )
        .prop_map(|(mut doc, (field, value))| {
            doc[field] = value;
            doc
        })
        .boxed()
}

fn query_value(field: &'static str) -> BoxedStrategy<Value> {
    let typed: BoxedStrategy<Value> = match field {
        "b" | "s" => string().prop_map(Value::String).boxed(),
        "c" => double().boxed(),
        "flag" => any::<bool>().prop_map(Value::Bool).boxed(),
        _ => int(-3..8).prop_map(|i| json!(i)).boxed(),
    };
    let other = prop_oneof![
        3 => int(-3..8).prop_map(|i| json!(i)),
        3 => string().prop_map(Value::String),
        3 => Just(json!(2.5)),
        1 => proptest::sample::select(WIDE_DOUBLES).prop_map(|d| json!(d)),
        3 => any::<bool>().prop_map(Value::Bool)
    ];
    prop_oneof![4 => typed, 1 => other].boxed()
}

fn leaf() -> BoxedStrategy<Cond> {
    const OPS: &[Op] =
        &[Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::Range, Op::In, Op::AllSet, Op::Empty, Op::Any, Op::Like];
    (proptest::sample::select(QUERY_FIELDS), proptest::sample::select(OPS))
        .prop_flat_map(|(field, op)| field_cond(field, op))
        .boxed()
}

/// A condition of `op` on `field` with values fit for both.
fn field_cond(field: &'static str, op: Op) -> BoxedStrategy<Cond> {
    let values: BoxedStrategy<Vec<Value>> = match op {
        Op::Empty | Op::Any => Just(Vec::new()).boxed(),
        Op::Range => proptest::collection::vec(query_value(field), 2).boxed(),
        Op::In | Op::AllSet => proptest::collection::vec(query_value(field), 0..4).boxed(),
        Op::Like => proptest::sample::select(PATTERNS).prop_map(|p| vec![json!(p)]).boxed(),
        _ => proptest::collection::vec(query_value(field), 1).boxed(),
    };
    values.prop_map(move |values| Cond::Field { field: field.to_string(), op, values }).boxed()
}

/// Range conditions (comparisons, `BETWEEN`, prefix LIKEs, IN lists, equalities) ANDed
/// on two or three of the fields the composite indexes cover (`b+s`, `a+s`, `a+b+s`): the shape
/// that skip scans, intersections and merged IN lists answer.
pub fn range_conjunction() -> BoxedStrategy<Cond> {
    const RANGE_OPS: &[Op] = &[Op::Eq, Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::Range, Op::In, Op::Like, Op::Like];
    const FIELDS: &[&[&str]] = &[&["b", "s"], &["a", "s"], &["s", "b"], &["a", "b", "s"], &["b", "s", "a"]];
    proptest::sample::select(FIELDS)
        .prop_flat_map(|fields| {
            let conds: Vec<BoxedStrategy<Cond>> = fields
                .iter()
                .map(|&field| {
                    proptest::sample::select(RANGE_OPS).prop_flat_map(move |op| field_cond(field, op)).boxed()
                })
                .collect();
            conds.prop_map(Cond::And)
        })
        .boxed()
}

/// Conditions with AND / OR / NOT nested up to three levels.
pub fn condition() -> BoxedStrategy<Cond> {
    let text = text_query().prop_map(|q| Cond::Field { field: "body".into(), op: Op::Match, values: vec![json!(q)] });
    let leaf = prop_oneof![5 => leaf(), 1 => text];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 1..4).prop_map(Cond::And),
            proptest::collection::vec(inner.clone(), 1..4).prop_map(Cond::Or),
            inner.prop_map(|c| Cond::Not(Box::new(c))),
        ]
    })
    .boxed()
}

fn aggregation() -> BoxedStrategy<Aggregation> {
    let numeric = proptest::sample::select(&["a", "c", "tags", "n.x", "u"][..]);
    let any_field = proptest::sample::select(&["a", "b", "c", "tags", "flag", "s", "u"][..]);
    prop_oneof![
        Just(Aggregation::Count),
        numeric.clone().prop_map(|f| Aggregation::Sum(f.into())),
        numeric.clone().prop_map(|f| Aggregation::Avg(f.into())),
        numeric.clone().prop_map(|f| Aggregation::Min(f.into())),
        numeric.prop_map(|f| Aggregation::Max(f.into())),
        any_field.clone().prop_map(|f| Aggregation::Distinct(f.into())),
        (proptest::collection::vec(any_field, 1..3), any::<bool>(), 0usize..2, proptest::option::of(0usize..4))
            .prop_map(|(fields, by_value, offset, limit)| {
                let mut fields: Vec<String> = fields.into_iter().map(String::from).collect();
                fields.dedup();
                let sort = if by_value { vec![SortKey { field: fields[0].clone(), desc: false }] } else { Vec::new() };
                Aggregation::Facet(Facet { fields, sort, offset, limit })
            }),
    ]
    .boxed()
}

/// A query: mostly `any_query`, sometimes a `sorted_conjunction`.
pub fn query() -> BoxedStrategy<Query> {
    prop_oneof![4 => any_query(), 1 => sorted_conjunction()].boxed()
}

/// A `range_conjunction` sorted by one or two of the composites' fields (mostly in one
/// direction, as a walk of an index gives), sometimes then by the key, paged (offsets up
/// to past the matches), with or without a total: the queries skip scans and merged IN
/// lists page without sorting.
pub fn sorted_conjunction() -> BoxedStrategy<Query> {
    let sort_field = proptest::sample::select(&["a", "b", "s"][..]);
    (
        range_conjunction(),
        proptest::collection::vec(sort_field, 1..3),
        any::<bool>(),
        proptest::option::weighted(0.2, any::<bool>()),
        any::<bool>(),
        prop_oneof![3 => 0usize..3, 1 => 3usize..40],
        proptest::option::weighted(0.9, 0usize..6),
        any::<bool>(),
    )
        .prop_map(|(filter, fields, desc, second_desc, by_pk, offset, limit, total)| {
            let mut sort: Vec<SortKey> = fields.iter().map(|&f| SortKey { field: f.into(), desc }).collect();
            sort.dedup_by(|a, b| a.field == b.field);
            if let (Some(second), Some(key)) = (second_desc, sort.get_mut(1)) {
                key.desc = second;
            }
            if by_pk {
                sort.push(SortKey { field: "id".into(), desc: false });
            }
            Query { namespace: NAMESPACE.into(), filter: Some(filter), sort, offset, limit, total, ..Query::default() }
        })
        .boxed()
}

/// A query: filter, 0–3 sort keys, paging, total and aggregations.
fn any_query() -> BoxedStrategy<Query> {
    let sort_fields = proptest::sample::select(&["id", "a", "b", "c", "tags", "flag", "n.x", "s", "u"][..]);
    let filter = prop_oneof![3 => condition(), 1 => range_conjunction()];
    (
        proptest::option::weighted(0.85, filter),
        proptest::collection::vec((sort_fields, any::<bool>()), 0..3),
        any::<bool>(),
        0usize..5,
        proptest::option::weighted(0.7, 0usize..8),
        any::<bool>(),
        proptest::collection::vec(aggregation(), 0..3),
    )
        .prop_map(|(filter, sort, by_pk, offset, limit, total, aggregations)| {
            let mut sort: Vec<SortKey> = sort.into_iter().map(|(f, desc)| SortKey { field: f.into(), desc }).collect();
            if by_pk && !sort.is_empty() {
                sort.push(SortKey { field: "id".into(), desc: false });
            }
            Query { namespace: NAMESPACE.into(), filter, sort, offset, limit, total, aggregations, ..Query::default() }
        })
        .boxed()
}

/// One write in a generated history.
#[derive(Debug, Clone)]
pub enum Write {
    Insert(Value),
    Upsert(Value),
    Update(Value),
    Delete(i64),
    UpdateQuery(Option<Cond>, Vec<SetField>),
    DeleteQuery(Cond),
    AddIndex(IndexDef),
    DropIndex(String),
    /// Several document writes committed all together or not at all.
    Transaction(Vec<TransactionWrite>),
}

/// One operation of a transaction.
#[derive(Debug, Clone)]
pub enum TransactionWrite {
    Insert(Value),
    Upsert(Value),
    Update(Value),
    Delete(i64),
}

fn set_field() -> BoxedStrategy<SetField> {
    prop_oneof![
        Just(SetField::Set("a".into(), Expr::field("a").binary(ArithOp::Add, Expr::value(1)))),
        Just(SetField::Set("a".into(), Expr::field("a").binary(ArithOp::Mul, Expr::value(2)))),
        Just(SetField::Set("a".into(), Expr::field("a").binary(ArithOp::Sub, Expr::value(1)))),
        // i64::MIN / -1 is the one int division that overflows.
        Just(SetField::Set("a".into(), Expr::field("a").binary(ArithOp::Div, Expr::value(-1)))),
        string().prop_map(|s| SetField::Set("b".into(), Expr::value(s))),
        Just(SetField::Set("c".into(), Expr::field("c").binary(ArithOp::Div, Expr::value(2)))),
        Just(SetField::Set("u".into(), Expr::field("u").binary(ArithOp::Add, Expr::value(1)))),
        Just(SetField::Set("n.x".into(), Expr::value(5))),
        Just(SetField::Drop("c".into())),
        Just(SetField::Drop("u".into())),
        Just(SetField::Set("a".into(), Expr::value("bad"))),
        body().prop_map(|b| SetField::Set("body".into(), Expr::value(b))),
    ]
    .boxed()
}

fn transaction_write(ids: i64) -> BoxedStrategy<TransactionWrite> {
    prop_oneof![
        4 => document(ids).prop_map(TransactionWrite::Upsert),
        3 => document(ids).prop_map(TransactionWrite::Insert),
        2 => document(ids).prop_map(TransactionWrite::Update),
        2 => id(ids).prop_map(TransactionWrite::Delete),
        1 => bad_document(ids).prop_map(TransactionWrite::Upsert),
    ]
    .boxed()
}

/// One write over ids `0..ids`.
pub fn write(ids: i64) -> BoxedStrategy<Write> {
    prop_oneof![
        6 => document(ids).prop_map(Write::Upsert),
        3 => document(ids).prop_map(Write::Insert),
        2 => document(ids).prop_map(Write::Update),
        2 => id(ids).prop_map(Write::Delete),
        1 => bad_document(ids).prop_map(Write::Upsert),
        1 => (proptest::option::of(condition()), proptest::collection::vec(set_field(), 1..3)).prop_map(|(c, s)| Write::UpdateQuery(c, s)),
        1 => condition().prop_map(Write::DeleteQuery),
        1 => (proptest::sample::select(&["a", "b", "s", "u"][..]), prop_oneof![Just(IndexKind::Tree), Just(IndexKind::Hash)], collation()).prop_map(|(f, k, c)| {
            let field_type = if f == "a" { FieldType::Int } else { FieldType::String };
            let def = IndexDef::new(f, k, field_type).named(&format!("extra_{f}"));
            Write::AddIndex(if field_type == FieldType::String { def.collate(c) } else { def })
        }),
        1 => proptest::sample::select(&["a", "b", "extra_a", "extra_b", "extra_u", "b+s"][..]).prop_map(|n| Write::DropIndex(n.into())),
        2 => proptest::collection::vec(transaction_write(ids), 0..6).prop_map(Write::Transaction),
    ].boxed()
}

/// A history of writes over ids `0..ids`.
pub fn writes(ids: i64) -> BoxedStrategy<Vec<Write>> {
    proptest::collection::vec(write(ids), 0..70).boxed()
}
