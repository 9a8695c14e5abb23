//! TOML parse errors described by place and reason only. The `toml` crate's own message quotes
//! the offending line, which for a file a user points rondpoint at by mistake (it often runs as
//! root: `--config /etc/shadow`) would print a line of that file.

// Parses bytes from outside (files, the kernel): no indexing that could panic on them.
#![deny(clippy::indexing_slicing)]

/// "line L, column C: REASON" for an error in `text` (the reason alone when the parser gives
/// no place).
pub fn describe(text: &str, e: &toml::de::Error) -> String {
    let reason = without_strings(e.message().trim_end());
    let reason = reason.as_str();
    // A missing field is the table's, not a line's: a place would point at its first line.
    if reason.starts_with("missing field") {
        return reason.to_string();
    }
    match e.span() {
        Some(span) => {
            let before = text.as_bytes().get(..span.start).unwrap_or(text.as_bytes());
            let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
            let column = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
            match key_of_line(text, line) {
                Some(key) => format!("line {line}, column {column}, key `{key}`: {reason}"),
                None => format!("line {line}, column {column}: {reason}"),
            }
        }
        None => reason.to_string(),
    }
}

/// A parser's reason without the string values it quotes: serde says `invalid type: string
/// "X", expected f64`, and X may be what a file holds (a password in a file given by mistake).
/// Kinds, keys and variant names stay.
pub fn without_strings(reason: &str) -> String {
    let mut out = String::with_capacity(reason.len());
    let mut rest = reason;
    while let Some(at) = rest.find("string \"") {
        out.push_str(&rest[..at]);
        out.push_str("a string");
        let after = &rest[at + "string \"".len()..];
        // The closing quote: the first one not escaped.
        let mut escaped = false;
        let end = after.char_indices().find_map(|(i, c)| match (escaped, c) {
            (false, '"') => Some(i + 1),
            (false, '\\') => {
                escaped = true;
                None
            }
            _ => {
                escaped = false;
                None
            }
        });
        rest = end.map_or("", |e| &after[e..]);
    }
    out.push_str(rest);
    out
}

/// The key a `key = value` line sets, when it is a plain (or dotted) key: a name that says
/// which parameter is wrong, unlike a value, which is never shown.
fn key_of_line(text: &str, line: usize) -> Option<&str> {
    let (key, _) = text.lines().nth(line - 1)?.split_once('=')?;
    let key = key.trim();
    let plain = !key.is_empty()
        && key.len() <= 64
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    plain.then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_values_are_left_out_of_reasons() {
        assert_eq!(
            without_strings(r#"invalid type: string "root:$6$x\"y", expected f64"#),
            "invalid type: a string, expected f64"
        );
        assert_eq!(
            without_strings("unknown variant `x`"),
            "unknown variant `x`"
        );
        #[derive(Debug, serde::Deserialize)]
        struct Typed {
            #[allow(dead_code)]
            a: f64,
        }
        let text = "a = \"hunter2\"\n";
        let e = toml::from_str::<Typed>(text).unwrap_err();
        let d = describe(text, &e);
        assert!(
            d.contains("key `a`: invalid type: a string, expected f64"),
            "{d}"
        );
        assert!(!d.contains("hunter2"), "{d}");
    }

    #[test]
    fn the_place_and_reason_are_given_and_the_content_is_not() {
        let text = "a = 1\nsecret_password = hunter2\n";
        let e = toml::from_str::<toml::Table>(text).unwrap_err();
        let d = describe(text, &e);
        assert!(
            d.starts_with("line 2, column 19, key `secret_password`: "),
            "{d}"
        );
        assert!(!d.contains("hunter2"), "{d}");
        // A line that is not `key = value` shows nothing of itself.
        let text = "root:$6$hash:19000:0:99999:7:::\n";
        let e = toml::from_str::<toml::Table>(text).unwrap_err();
        let d = describe(text, &e);
        assert!(
            d.starts_with("line 1, column ") && !d.contains("hash"),
            "{d}"
        );
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Known {
            #[allow(dead_code)]
            a: i64,
        }
        let e = toml::from_str::<Known>("a = 1\nb = 2\n").unwrap_err();
        let d = describe("a = 1\nb = 2\n", &e);
        assert!(
            d.starts_with("line 2, column 1, key `b`: unknown field `b`"),
            "{d}"
        );
    }
}
