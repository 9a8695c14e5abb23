//! Standard output that ends quietly when its reader goes away, standard error that cannot fail
//! a run, and neither passing control characters through to a terminal.
//!
//! `rondpoint replay FILE | head` closes the pipe after a few lines; `println!` would then
//! panic. Everything rondpoint prints for its user goes through [`write()`] (by the `out!` and
//! `outln!` macros), which turns a closed pipe into [`Closed`]; `main` exits on it without a
//! message, with the status a shell gives a program that SIGPIPE ended (128 + 13), as `cat`
//! and `grep` would. Rust ignores SIGPIPE in its runtime, and restoring the default would take
//! an `unsafe` call outside the syscall layer, so the error is handled here instead.

use std::borrow::Cow;
use std::fmt;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// The exit status after a closed standard output (128 + SIGPIPE).
pub const CLOSED_STATUS: u8 = 141;

/// Standard output was closed by its reader: nothing more can be said there.
#[derive(Debug)]
pub struct Closed;

impl fmt::Display for Closed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("standard output was closed")
    }
}

impl std::error::Error for Closed {}

/// `text` without control characters other than newline, tab and carriage return: what
/// rondpoint prints includes names from outside (a recording's source, a machine preset's
/// name, a program's name), and an escape sequence in one must not reach the terminal.
pub fn clean(text: &str) -> Cow<'_, str> {
    let keep = |c: char| !c.is_control() || matches!(c, '\n' | '\t' | '\r');
    if text.chars().all(keep) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.chars().filter(|&c| keep(c)).collect())
    }
}

/// Whether anything was written to standard output (a `--json` command that fails after its
/// document must not print a second one).
static WROTE: AtomicBool = AtomicBool::new(false);

/// Whether [`write()`] has written anything.
pub fn wrote() -> bool {
    WROTE.load(Ordering::Relaxed)
}

/// Writes `args` to standard output and flushes it.
pub fn write(args: fmt::Arguments<'_>) -> anyhow::Result<()> {
    WROTE.store(true, Ordering::Relaxed);
    let text = args.to_string();
    let mut out = std::io::stdout().lock();
    match out
        .write_all(clean(&text).as_bytes())
        .and_then(|()| out.flush())
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Err(Closed.into()),
        Err(e) => Err(anyhow::Error::new(e).context("writing to standard output")),
    }
}

/// Writes `args` to standard error, if it can: a message rondpoint cannot deliver (a full
/// disk, a closed journal) must not stop the run, nor keep a program from starting.
pub fn note(args: fmt::Arguments<'_>) {
    let text = args.to_string();
    let mut err = std::io::stderr().lock();
    let _ = err
        .write_all(clean(&text).as_bytes())
        .and_then(|()| err.flush());
}

/// `eprint!` through [`note()`]: never fails, never panics.
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::output::note(format_args!($($arg)*))
    };
}

/// `eprintln!` through [`note()`].
macro_rules! noteln {
    ($($arg:tt)*) => {
        $crate::output::note(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` through [`write()`]: returns early from the enclosing function on an error.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write(format_args!($($arg)*))?
    };
}

/// `println!` through [`write()`]: returns early from the enclosing function on an error.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::write(format_args!("{}\n", format_args!($($arg)*)))?
    };
}
