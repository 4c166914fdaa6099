//! Analyses of a stored run, per test: upsrun's stack analysis (`prof.out`,
//! `stacks.folded`, `flame.svg`) and a profile rebuilt from the raw samples.

pub mod profile;
pub mod stacks;
