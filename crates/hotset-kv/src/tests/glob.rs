//! Glob pattern tests.
//!
//! Owns: Redis `stringmatchlen` semantics — `*`, `?`, classes, ranges,
//! negation, escapes, unterminated classes and the empty-string quirk.
//!
//! Must never: accept exponential behaviour (the pathological case must run
//! instantly).
//!
//! Invariants: patterns are tested through the public `glob_match`/`Glob`.

use crate::{Glob, glob_match};

fn m(pattern: &str, text: &str) -> bool {
    glob_match(pattern.as_bytes(), text.as_bytes())
}

#[test]
fn stars_and_question_marks() {
    assert!(m("*", "anything"));
    assert!(m("*", ""));
    assert!(m("h*llo", "hllo"));
    assert!(m("h*llo", "heeeello"));
    assert!(m("h?llo", "hello"));
    assert!(!m("h?llo", "hllo"));
    assert!(m("a*b*c", "aXXbYYc"));
    assert!(!m("a*b*c", "aXXbYY"));
    assert!(m("**a**", "xxaxx"));
    assert!(m("*a", "aaa"));
    assert!(!m("a", "aa"));
    assert!(!m("aa", "a"));
    assert!(m("", ""));
    assert!(!m("", "a"));
    // Redis quirk: a non-trivial pattern never matches the empty string.
    assert!(!m("**", ""));
    assert!(!m("?", ""));
}

#[test]
fn classes_ranges_and_negation() {
    assert!(m("h[ae]llo", "hello"));
    assert!(m("h[ae]llo", "hallo"));
    assert!(!m("h[ae]llo", "hillo"));
    assert!(m("h[^e]llo", "hallo"));
    assert!(!m("h[^e]llo", "hello"));
    assert!(m("h[a-b]llo", "hbllo"));
    assert!(!m("h[a-b]llo", "hcllo"));
    assert!(m("h[z-a]llo", "hqllo"), "reversed range bounds are swapped");
    assert!(m("[0-9][0-9]", "42"));
    assert!(!m("[]", "a"), "empty class matches nothing");
    assert!(m("[^]", "a"));
    assert!(m("[abc", "b"), "unterminated class runs to the end");
    assert!(!m("[abc", "d"));
    assert!(m("[a-]x", "]"), "Redis reads `a-]` as a range up to `]`");
    assert!(m("x[*]", "x*"));
    assert!(!m("x[*]", "xy"));
}

#[test]
fn escapes() {
    assert!(m(r"a\*b", "a*b"));
    assert!(!m(r"a\*b", "aXb"));
    assert!(m(r"\?", "?"));
    assert!(!m(r"\?", "x"));
    assert!(m(r"[\]]", "]"));
    assert!(m(r"[\-a]", "-"));
    assert!(m(r"x\", r"x\"), "trailing backslash is literal");
    assert!(m(r"\[a]", "[a]"));
}

#[test]
fn binary_and_pathological_inputs() {
    assert!(glob_match(b"\xff*", b"\xff\x00\x01"));
    let text = "a".repeat(5_000);
    let pattern = format!("{}b", "*a".repeat(50));
    assert!(!m(&pattern, &text), "must finish quickly without recursion");
    let g = Glob::new(b"*");
    assert!(g.matches_all());
    assert!(g.matches(b""));
}
