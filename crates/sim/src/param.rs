//! Parameters as data: every number in a preset can carry where it comes from.
//!
//! In TOML a parameter is either a bare value (`mlp = 6.0`) or a value with its source
//! (`mlp = { value = 6.0, source = "[Dashti13 Table 1]" }`). Built-in presets
//! give a source for every number (a test checks it); users' files may omit them.

use serde::{Deserialize, Serialize};

/// A value, optionally with its provenance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Param<T> {
    Sourced { value: T, source: String },
    Plain(T),
}

impl<T> Param<T> {
    /// A value with its source.
    pub fn sourced(value: T, source: impl Into<String>) -> Self {
        Param::Sourced {
            value,
            source: source.into(),
        }
    }

    /// The value.
    pub fn value(&self) -> &T {
        match self {
            Param::Sourced { value, .. } | Param::Plain(value) => value,
        }
    }

    /// Where it comes from, when stated.
    pub fn source(&self) -> Option<&str> {
        match self {
            Param::Sourced { source, .. } => Some(source),
            Param::Plain(_) => None,
        }
    }
}

impl<T: Copy> Param<T> {
    /// The value, copied.
    pub fn get(&self) -> T {
        *self.value()
    }
}

impl<T> From<T> for Param<T> {
    fn from(v: T) -> Self {
        Param::Plain(v)
    }
}
