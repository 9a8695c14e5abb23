//! Parameters as data: every number in a preset can carry where it comes from.
//!
//! In TOML a parameter is either a bare value (`mlp = 6.0`) or a value with its source
//! (`mlp = { value = 6.0, source = "[Dashti13 Table 1]" }`). Built-in presets
//! give a source for every number (a test checks it); users' files may omit them.

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};

/// A value, optionally with its provenance.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Param<T> {
    Sourced { value: T, source: String },
    Plain(T),
}

impl<T> Param<T> {
    /// A value with its source.
    pub(crate) fn sourced(value: T, source: impl Into<String>) -> Self {
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

/// By hand rather than `#[serde(untagged)]`, whose error ("data did not match any variant")
/// hides what is wrong with the value: this one says it (`links = [[0, 1, 3]]`: "invalid
/// length 3, expected a tuple of size 2").
impl<'de, T: DeserializeOwned> Deserialize<'de> for Param<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = toml::Value::deserialize(d)?;
        let plain = |v: toml::Value| T::deserialize(v).map_err(|e| D::Error::custom(e.message()));
        match v {
            toml::Value::Table(mut t) if t.contains_key("value") => {
                let value = t.remove("value").map(plain).transpose()?;
                let source = match t.remove("source") {
                    Some(toml::Value::String(s)) => s,
                    Some(_) => return Err(D::Error::custom("source must be a string")),
                    None => return Err(D::Error::custom("a { value = ... } needs its source")),
                };
                if let Some(k) = t.keys().next() {
                    return Err(D::Error::custom(format!(
                        "unknown key `{k}` beside value and source"
                    )));
                }
                match value {
                    Some(value) => Ok(Param::Sourced { value, source }),
                    None => Err(D::Error::custom("missing value")),
                }
            }
            v => plain(v).map(Param::Plain),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Doc {
        links: Param<Vec<(u16, u16)>>,
    }

    #[test]
    fn a_bad_value_is_named_not_hidden_behind_the_two_forms() {
        let ok: Doc = toml::from_str("links = [[0, 1]]").unwrap();
        assert_eq!(ok.links.value(), &vec![(0, 1)]);
        let ok: Doc = toml::from_str("links = { value = [[0, 1]], source = \"s\" }").unwrap();
        assert_eq!(ok.links.source(), Some("s"));
        for (text, want) in [
            ("links = [[0, 1, 3]]", "invalid length 3"),
            (
                "links = { value = [[0, 1, 3]], source = \"s\" }",
                "invalid length 3",
            ),
            (
                "links = { value = [[0, 1]], source = \"s\", x = 1 }",
                "unknown key `x`",
            ),
            ("links = { value = [[0, 1]] }", "needs its source"),
        ] {
            let e = toml::from_str::<Doc>(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
