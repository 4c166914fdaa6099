#![no_main]
//! A dataset's Parquet file on any bytes, read by the history's and the group comparison's
//! readers; properties in upcmp::dataset::fuzz.

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::OnceLock;
use upcmp::dataset::fuzz::{check_parquet, fuzz_dataset, FuzzDataset};

fn dataset() -> &'static FuzzDataset {
    static DS: OnceLock<FuzzDataset> = OnceLock::new();
    DS.get_or_init(|| {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/demo"));
        let dir = std::env::temp_dir().join(format!("upcmp-fuzz-dataset-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        fuzz_dataset(&root.join("run1"), &root.join("run2"), &dir).expect("exporting the fuzz dataset")
    })
}

fuzz_target!(|data: &[u8]| {
    check_parquet(data, dataset());
});
