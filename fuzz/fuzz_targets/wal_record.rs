//! libFuzzer entry of the `wal_record` target: its checks are `hotset_fuzz::targets::wal_record`
//! (crates/hotset-fuzz), which the workspace's tests also replay on the committed corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hotset_fuzz::targets::wal_record::run(data));
