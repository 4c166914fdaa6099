//! The integration tests: one binary, modules by topic.

mod helpers;
mod html;
mod import;
mod noise;
mod shell;
mod symbols;
mod upcmp;
mod uprun;
mod upsrun;
mod util;
