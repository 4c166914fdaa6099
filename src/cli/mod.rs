//! The command lines: what the programs of `src/bin` share (the options of a comparison,
//! of a run, of the dataset commands, `--generate`), parsed with clap. Each program's
//! `main` parses its own arguments with these and calls `app`; the pieces are built once,
//! here, not into each program.

pub mod dataset;
pub mod generate;
pub mod history;
pub mod options;
pub mod run;
