//! libFuzzer entry of the `document` target: its checks are `hotset_fuzz::targets::document`
//! (crates/hotset-fuzz), which the workspace's tests also replay on the committed corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hotset_fuzz::targets::document::run(data));
