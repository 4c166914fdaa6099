//! Collection: perf_event sampling on every CPU, symbolization, building profiles.

pub mod symbols;
