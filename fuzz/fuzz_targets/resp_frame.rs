//! libFuzzer entry of the `resp_frame` target: its checks are `hotset_fuzz::targets::resp_frame`
//! (crates/hotset-fuzz), which the workspace's tests also replay on the committed corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hotset_fuzz::targets::resp_frame::run(data));
