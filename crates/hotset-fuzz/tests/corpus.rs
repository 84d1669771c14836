//! Every committed fuzz input replayed through its target's checks, on the stable toolchain:
//! the seeds of `fuzz/corpus/<target>/` (where a crash input found by fuzzing is added once
//! fixed, as a regression). This is the suite's short form of fuzzing; the fuzzing itself
//! (new inputs, AddressSanitizer) is `scripts/fuzz`.

use hotset_fuzz::targets::ALL;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of a folder, sorted (none when it does not exist).
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = entries
        .map(|entry| entry.expect("a readable folder entry").path())
        .filter(|path| path.is_file() && path.file_name().is_some_and(|name| name != ".gitkeep"))
        .collect();
    paths.sort();
    paths
}

#[test]
fn the_replay_covers_every_fuzz_target() {
    let binaries: BTreeSet<String> = files(&fuzz_dir().join("fuzz_targets"))
        .iter()
        .filter_map(|path| path.file_stem()?.to_str().map(str::to_string))
        .collect();
    let replayed: BTreeSet<String> = ALL.iter().map(|(name, _)| name.to_string()).collect();
    assert!(!binaries.is_empty(), "no fuzz targets under {}", fuzz_dir().display());
    assert_eq!(replayed, binaries, "targets::ALL and fuzz/fuzz_targets/ name different targets");
}

#[test]
fn every_committed_input_passes_its_targets_checks() {
    let mut replayed = 0;
    for (name, run) in ALL {
        let seeds = files(&fuzz_dir().join("corpus").join(name));
        assert!(!seeds.is_empty(), "the {name} target has no committed seed corpus");
        for path in &seeds {
            let data = std::fs::read(path).expect("a readable corpus file");
            // A panic here names the file: the input to give the target to see it again.
            let outcome = std::panic::catch_unwind(|| run(&data));
            assert!(outcome.is_ok(), "{name}: {} fails its checks", path.display());
            replayed += 1;
        }
    }
    assert!(replayed >= ALL.len(), "replayed {replayed} inputs");
}
