//! The integration tests: one binary, modules by topic.

mod annotate;
mod annotate_kernel;
mod architecture;
mod bpf;
mod clones;
mod counters;
mod dataset;
mod dwarf;
mod events;
mod everyday;
mod fuzz;
mod hackbench_helpers;
mod hostile;
mod hostile_names;
mod html;
mod import;
mod noise;
mod perffiles;
mod pictures;
mod shell;
mod symbols;
mod upcmp;
mod uprun;
mod upsrun;
mod util;
mod verdicts;
