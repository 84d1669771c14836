//! libFuzzer entry of the `fulltext_query` target: its checks are `hotset_fuzz::targets::fulltext_query`
//! (crates/hotset-fuzz), which the workspace's tests also replay on the committed corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hotset_fuzz::targets::fulltext_query::run(data));
