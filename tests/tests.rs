//! The integration tests: one binary, modules by topic.

mod helpers;
mod import;
mod symbols;
mod upcmp;
mod uprun;
mod util;
