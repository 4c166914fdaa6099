//! Collection: perf_event sampling on every CPU, symbolization, building profiles.

pub mod prepare;
pub mod profile;
pub mod run;
pub mod sampler;
pub mod stacks;
pub mod symbols;
pub mod upsrun;
