//! rondpoint's conventions (docs/architecture.md, "Conventions") as tests that fail, in the
//! manner of rust-analyzer's tidy tests: `cargo test -p rondpoint-tidy` reads the source tree
//! as text and names every place that breaks a rule. The scanner relies on `cargo fmt`'s layout
//! (a function's body closes on a line of its own at the function's indentation), which CI
//! checks first.
//!
//! The rules: files under [`MAX_FILE_LINES`] lines and functions under [`MAX_FN_LINES`] outside
//! tests; `#![forbid(unsafe_code)]` in every crate but the syscall layer, whose unsafe code
//! lives in one module; no `Result<_, String>` in libraries; one unit-test layout; `pub` only
//! for what another crate uses; papers cited by the keys of docs/references.md.

#![forbid(unsafe_code)]

mod scan;
pub use scan::{Function, SourceFile, functions, production_part, source_files, workspace_root};

/// Most lines in a source file outside tests.
pub const MAX_FILE_LINES: usize = 800;
/// Most lines in a function outside tests, signature and closing brace included.
pub const MAX_FN_LINES: usize = 100;

#[cfg(test)]
mod tests;
