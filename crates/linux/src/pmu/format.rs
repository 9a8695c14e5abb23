//! A PMU's `format/*` fields and the encoding of an event string into `perf_event_attr`'s
//! config words, as perf does it.
//!
//! A format file names one config word and the bits a field occupies in it, e.g.
//! `config:0-7,32-35` (AMD's 12-bit event select) or `config1:0-15` (Intel's load-latency
//! threshold). The grammar is perf's (tools/perf/util/pmu.y and pmu.l): `config`, or `config`
//! followed by the word's number, a colon, then comma-separated bits or inclusive ranges.
//!
//! The encoder follows perf's `pmu_config_term` and `pmu_format_value`
//! (tools/perf/util/pmu.c, Linux 6.12) so that its attrs can be compared with perf's own:
//! - a value's bits go to the field's bits in increasing bit order (the lowest set bit of the
//!   field takes the value's bit 0, whatever order the ranges were written in);
//! - a value wider than the field is refused ("value too big for format"), as perf does when
//!   it reports errors (it always does when parsing `-e`);
//! - a term no format names is refused ("unknown term"), unless it names one of the PMU's
//!   event aliases (`events/*`), which is expanded into its own terms (perf's
//!   `perf_pmu__check_alias`; an alias is matched ignoring case, a format exactly);
//! - a term without a value means 1, and is refused for a field wider than one bit;
//! - bits are ORed into the word, so repeating a term ORs both values; except with `zero`,
//!   which perf sets for the PMUs it gives a default attr (`perf_event_attr_init_default`:
//!   intel_pt in perf built for x86, arm_spe_N and cs_etm in perf built for Arm,
//!   tools/perf/arch/*/util/pmu.c), where a term's zero bits clear the field first;
//! - `config=`, `config1=`, `config2=` and `config3=` set whole words the same way (perf
//!   6.12's `pmu_config_term` with `apply_hardcoded`).
//!
//! Numbers are decimal or `0x` hexadecimal (parse-events.l's `num_dec` and `num_hex`); a
//! number past 64 bits saturates to 2^64 - 1, as `strtoull` does for perf.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use thiserror::Error;

/// Which `perf_event_attr` config word a field lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigWord {
    Config,
    Config1,
    Config2,
    /// `perf_event_attr.config3` (Linux 6.3): Arm SPE's `inv_event_filter`.
    Config3,
}

impl ConfigWord {
    fn index(self) -> usize {
        match self {
            ConfigWord::Config => 0,
            ConfigWord::Config1 => 1,
            ConfigWord::Config2 => 2,
            ConfigWord::Config3 => 3,
        }
    }

    fn from_suffix(suffix: &str) -> Option<Self> {
        match suffix {
            "" => Some(ConfigWord::Config),
            "1" => Some(ConfigWord::Config1),
            "2" => Some(ConfigWord::Config2),
            "3" => Some(ConfigWord::Config3),
            _ => None,
        }
    }
}

impl fmt::Display for ConfigWord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigWord::Config => f.write_str("config"),
            ConfigWord::Config1 => f.write_str("config1"),
            ConfigWord::Config2 => f.write_str("config2"),
            ConfigWord::Config3 => f.write_str("config3"),
        }
    }
}

/// Why a format file could not be read as a field.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("format '{text}': {why}")]
pub struct FormatError {
    pub text: String,
    pub why: String,
}

/// One `format/*` field: the config word and the bit ranges (inclusive, as written).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FormatField {
    pub word: ConfigWord,
    pub ranges: Vec<(u8, u8)>,
}

impl FormatField {
    /// Parses a format file's text (`config:0-7,32-35`, `config1:0`). A range written `N-0`
    /// is bit N alone, as perf's `perf_pmu__set_format` reads it; any other descending range
    /// and bits past 63 are refused (perf would set no bits, or overflow its bitmap).
    pub fn parse(text: &str) -> Result<Self, FormatError> {
        let bad = |why: &str| FormatError {
            text: text.trim().to_string(),
            why: why.to_string(),
        };
        let t = text.trim();
        let (word, bits) = t.split_once(':').ok_or_else(|| bad("no ':'"))?;
        let word = word
            .strip_prefix("config")
            .and_then(ConfigWord::from_suffix)
            .ok_or_else(|| bad("the word is not config, config1, config2 or config3"))?;
        let mut ranges = Vec::new();
        for part in bits.split(',') {
            let (lo, hi) = match part.split_once('-') {
                Some((lo, hi)) => (bit(lo), bit(hi)),
                None => (bit(part), bit(part)),
            };
            let (Some(lo), Some(hi)) = (lo, hi) else {
                return Err(bad("a bit is not a number from 0 to 63"));
            };
            let hi = if hi == 0 { lo } else { hi };
            if hi < lo {
                return Err(bad("a range runs downwards"));
            }
            ranges.push((lo, hi));
        }
        Ok(Self { word, ranges })
    }

    /// The field's bits in its word.
    pub fn mask(&self) -> u64 {
        self.ranges.iter().fold(0, |m, &(lo, hi)| {
            let width = u32::from(hi - lo) + 1;
            let ones = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            m | (ones << lo)
        })
    }

    /// How many bits the field has (overlapping ranges count once, as in perf's bitmap).
    pub fn width(&self) -> u32 {
        self.mask().count_ones()
    }

    /// The largest value the field holds (perf's `pmu_format_max_value`).
    pub fn max_value(&self) -> u64 {
        match self.width() {
            64 => u64::MAX,
            w => (1u64 << w) - 1,
        }
    }

    /// `value`'s bits placed in the field's bits, lowest first (perf's `pmu_format_value`);
    /// bits of `value` beyond the field's width are dropped (callers check first).
    pub fn place(&self, value: u64) -> u64 {
        self.bit_pairs()
            .filter(|&(vbit, _)| value & (1 << vbit) != 0)
            .fold(0, |out, (_, fbit)| out | 1 << fbit)
    }

    /// The field's value in `word`: the inverse of [`FormatField::place`].
    pub fn extract(&self, word: u64) -> u64 {
        self.bit_pairs()
            .filter(|&(_, fbit)| word & (1 << fbit) != 0)
            .fold(0, |out, (vbit, _)| out | 1 << vbit)
    }

    /// (value bit, word bit) for each of the field's bits, lowest first.
    fn bit_pairs(&self) -> impl Iterator<Item = (u32, u32)> {
        let mask = self.mask();
        (0..64u32)
            .filter(move |fbit| mask & (1 << fbit) != 0)
            .enumerate()
            .map(|(vbit, fbit)| (vbit as u32, fbit))
    }
}

fn bit(s: &str) -> Option<u8> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u8>().ok().filter(|&b| b < 64)
}

/// The config words an event string encodes to (`perf_event_attr.config` to `config3`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ConfigWords {
    pub config: u64,
    pub config1: u64,
    pub config2: u64,
    pub config3: u64,
}

impl ConfigWords {
    /// Puts `bits` in the word: ORed, or replacing the `mask` bits with `zero`.
    fn put(&mut self, word: ConfigWord, mask: u64, bits: u64, zero: bool) {
        let slot = match word.index() {
            0 => &mut self.config,
            1 => &mut self.config1,
            2 => &mut self.config2,
            _ => &mut self.config3,
        };
        if zero {
            *slot &= !mask;
        }
        *slot |= bits;
    }

    /// The value of one word.
    pub fn get(&self, word: ConfigWord) -> u64 {
        match word.index() {
            0 => self.config,
            1 => self.config1,
            2 => self.config2,
            _ => self.config3,
        }
    }
}

/// Why an event string does not encode on a PMU (perf refuses the same strings).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum EncodeError {
    #[error("'{term}': {why}")]
    Syntax { term: String, why: &'static str },
    #[error("unknown term '{term}' for pmu '{pmu}' (valid terms: {valid})")]
    UnknownTerm {
        term: String,
        pmu: String,
        valid: String,
    },
    #[error("'{term}': value too big for format ({term}), maximum is {max}")]
    TooBig { term: String, value: u64, max: u64 },
    #[error("'{term}': no value assigned for term (the field is {width} bits wide)")]
    NoValue { term: String, width: u32 },
    #[error("'{term}': a string value is accepted only as `event=<alias>`")]
    StringValue { term: String },
    #[error("'{term}': perf sets other attr fields with this term; rondpoint's encoder does not")]
    Unsupported { term: String },
    #[error("event aliases nest deeper than {depth} levels at '{term}'")]
    AliasDepth { term: String, depth: usize },
}

/// perf's terms that set attr fields other than the config words (parse-events.l).
const OTHER_HARDCODED: &[&str] = &[
    "name",
    "period",
    "freq",
    "branch_type",
    "time",
    "call-graph",
    "stack-size",
    "max-stack",
    "nr",
    "inherit",
    "no-inherit",
    "overwrite",
    "no-overwrite",
    "percore",
    "aux-output",
    "aux-sample-size",
    "metric-id",
];

/// How deep aliases may expand into aliases (the kernel's never do).
const MAX_ALIAS_DEPTH: usize = 4;

/// A term's value as written.
enum Value<'a> {
    Absent,
    Number(u64),
    Text(&'a str),
}

/// Encodes `terms` (what goes between the slashes of `pmu/.../`, e.g. `event=0x29,umask=0x7`)
/// with the PMU's `formats` and `aliases` (`events/*`, by name), with perf's `zero` (see the
/// module's notes). `pmu` names the PMU in errors.
pub(crate) fn encode(
    pmu: &str,
    formats: &BTreeMap<String, FormatField>,
    aliases: &BTreeMap<String, String>,
    terms: &str,
    zero: bool,
) -> Result<ConfigWords, EncodeError> {
    let mut words = ConfigWords::default();
    let ctx = Ctx {
        pmu,
        formats,
        aliases,
        zero,
    };
    encode_into(&ctx, terms, 0, &mut words)?;
    Ok(words)
}

/// What every term of one event is encoded with.
struct Ctx<'a> {
    pmu: &'a str,
    formats: &'a BTreeMap<String, FormatField>,
    aliases: &'a BTreeMap<String, String>,
    zero: bool,
}

fn encode_into(
    ctx: &Ctx<'_>,
    terms: &str,
    depth: usize,
    words: &mut ConfigWords,
) -> Result<(), EncodeError> {
    let Ctx {
        pmu,
        formats,
        aliases,
        zero,
    } = *ctx;
    for term in terms.trim().split(',') {
        let term = term.trim();
        let (name, value) = split_term(term)?;
        if let Some(alias) = alias_of(formats, aliases, name, &value) {
            if depth >= MAX_ALIAS_DEPTH {
                return Err(EncodeError::AliasDepth {
                    term: term.to_string(),
                    depth: MAX_ALIAS_DEPTH,
                });
            }
            encode_into(ctx, alias, depth + 1, words)?;
            continue;
        }
        if let Some(word) = hardcoded_word(name) {
            match value {
                Value::Number(v) => words.put(word, u64::MAX, v, zero),
                Value::Absent => words.put(word, u64::MAX, 1, zero),
                Value::Text(_) => {
                    return Err(EncodeError::StringValue {
                        term: term.to_string(),
                    });
                }
            }
            continue;
        }
        if OTHER_HARDCODED.contains(&name) {
            return Err(EncodeError::Unsupported {
                term: term.to_string(),
            });
        }
        let Some(field) = formats.get(name) else {
            return Err(EncodeError::UnknownTerm {
                term: name.to_string(),
                pmu: pmu.to_string(),
                valid: formats.keys().cloned().collect::<Vec<_>>().join(","),
            });
        };
        let value = match value {
            Value::Number(v) => v,
            Value::Absent if field.width() > 1 => {
                return Err(EncodeError::NoValue {
                    term: name.to_string(),
                    width: field.width(),
                });
            }
            Value::Absent => 1,
            Value::Text(_) => {
                return Err(EncodeError::StringValue {
                    term: term.to_string(),
                });
            }
        };
        if value > field.max_value() {
            return Err(EncodeError::TooBig {
                term: name.to_string(),
                value,
                max: field.max_value(),
            });
        }
        words.put(field.word, field.mask(), field.place(value), zero);
    }
    Ok(())
}

/// The alias a term stands for: `event=<name>` or a bare `<name>` that no format names.
fn alias_of<'a>(
    formats: &BTreeMap<String, FormatField>,
    aliases: &'a BTreeMap<String, String>,
    name: &str,
    value: &Value<'_>,
) -> Option<&'a str> {
    let wanted = match value {
        Value::Text(text) if name.eq_ignore_ascii_case("event") => *text,
        Value::Absent if !formats.contains_key(name) && hardcoded_word(name).is_none() => name,
        _ => return None,
    };
    aliases
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(wanted))
        .map(|(_, terms)| terms.as_str())
}

fn hardcoded_word(name: &str) -> Option<ConfigWord> {
    name.strip_prefix("config")
        .and_then(ConfigWord::from_suffix)
}

fn split_term(term: &str) -> Result<(&str, Value<'_>), EncodeError> {
    let syntax = |why| EncodeError::Syntax {
        term: term.to_string(),
        why,
    };
    let (name, value) = match term.split_once('=') {
        Some((name, value)) => (name.trim(), Some(value.trim())),
        None => (term, None),
    };
    if name.is_empty() {
        return Err(syntax("a term has no name"));
    }
    let value = match value {
        None => Value::Absent,
        Some("") => return Err(syntax("no value after '='")),
        Some(v) if v.as_bytes().first().is_some_and(u8::is_ascii_digit) => {
            Value::Number(number(v).ok_or_else(|| syntax("not a decimal or 0x number"))?)
        }
        Some(v) => Value::Text(v),
    };
    Ok((name, value))
}

/// A decimal or `0x` number, saturating past 64 bits as `strtoull` does.
fn number(text: &str) -> Option<u64> {
    let (digits, radix) = match text.strip_prefix("0x") {
        Some(hex) => (hex, 16),
        None => (text, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    Some(u64::from_str_radix(digits, radix).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn field(text: &str) -> FormatField {
        FormatField::parse(text).unwrap()
    }

    fn formats(list: &[(&str, &str)]) -> BTreeMap<String, FormatField> {
        list.iter()
            .map(|(n, t)| (n.to_string(), field(t)))
            .collect()
    }

    /// Intel's core PMU and AMD's IBS op formats (arch/x86/events/intel/core.c, amd/ibs.c).
    fn intel() -> BTreeMap<String, FormatField> {
        formats(&[
            ("event", "config:0-7"),
            ("umask", "config:8-15"),
            ("edge", "config:18"),
            ("cmask", "config:24-31"),
            ("ldlat", "config1:0-15"),
        ])
    }

    #[test]
    fn format_files_parse_as_perf_reads_them() {
        let f = field("config:0-7,32-35\n");
        assert_eq!(f.word, ConfigWord::Config);
        assert_eq!(f.ranges, [(0, 7), (32, 35)]);
        assert_eq!(f.mask(), 0xf_0000_00ff);
        assert_eq!(f.width(), 12);
        assert_eq!(f.max_value(), 0xfff);
        assert_eq!(field("config1:0-15").word, ConfigWord::Config1);
        assert_eq!(field("config2:0-11").word, ConfigWord::Config2);
        assert_eq!(field("config3:0-63").max_value(), u64::MAX);
        // A single bit, and `N-0` (perf's set_format takes `to == 0` as `to = from`).
        assert_eq!(field("config:19").mask(), 1 << 19);
        assert_eq!(field("config:5-0").mask(), 1 << 5);
        for bad in [
            "config",
            "config4:1",
            "cfg:1",
            "config:64",
            "config:7-3",
            "config:",
            "config:a",
        ] {
            assert!(FormatField::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_issues_examples_encode_as_perf_prints_them() {
        // `perf stat -vv -e cpu/event=0x29,umask=0x7/` with AMD's formats: config 0x729;
        // `ibs_op/cnt_ctl=1/`: config 0x80000 (issue 41).
        let amd = formats(&[("event", "config:0-7,32-35"), ("umask", "config:8-15")]);
        let none = BTreeMap::new();
        let w = encode("cpu", &amd, &none, "event=0x29,umask=0x7", false).unwrap();
        assert_eq!(w.config, 0x729);
        let ibs = formats(&[("cnt_ctl", "config:19")]);
        assert_eq!(
            encode("ibs_op", &ibs, &none, "cnt_ctl=1", false)
                .unwrap()
                .config,
            0x80000
        );
        assert_eq!(
            encode("ibs_op", &ibs, &none, "cnt_ctl", false)
                .unwrap()
                .config,
            0x80000
        );
        // A 12-bit AMD event: bits 8-11 of the value go to config bits 32-35.
        let w = encode("cpu", &amd, &none, "event=0x1c0", false).unwrap();
        assert_eq!(w.config, 0x1_0000_00c0);
    }

    #[test]
    fn values_go_to_the_lowest_bits_first_whatever_the_written_order() {
        assert_eq!(field("config:32-35,0-7").place(0x1c0), 0x1_0000_00c0);
        assert_eq!(field("config:8-15,24-27").place(0xabc), 0x0a00_bc00);
    }

    #[test]
    fn perfs_refusals_are_errors() {
        let none = BTreeMap::new();
        let e = encode("cpu", &intel(), &none, "event=0x100", false).unwrap_err();
        assert_eq!(
            e,
            EncodeError::TooBig {
                term: "event".into(),
                value: 0x100,
                max: 0xff
            }
        );
        let e = encode("cpu", &intel(), &none, "evnt=1", false).unwrap_err();
        assert!(
            matches!(e, EncodeError::UnknownTerm { ref term, .. } if term == "evnt"),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains("valid terms: cmask,edge,event,ldlat,umask"),
            "{e}"
        );
        assert!(matches!(
            encode("cpu", &intel(), &none, "umask", false).unwrap_err(),
            EncodeError::NoValue { width: 8, .. }
        ));
        assert!(matches!(
            encode("cpu", &intel(), &none, "period=1000", false).unwrap_err(),
            EncodeError::Unsupported { .. }
        ));
        assert!(matches!(
            encode("cpu", &intel(), &none, "event=cycles", false).unwrap_err(),
            EncodeError::StringValue { .. }
        ));
        for bad in ["event=", "=3", "event=0xzz", "event=12a", "event=0x"] {
            assert!(
                matches!(
                    encode("cpu", &intel(), &none, bad, false),
                    Err(EncodeError::Syntax { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn aliases_expand_into_their_terms() {
        let aliases: BTreeMap<String, String> = [
            ("mem-loads", "event=0xcd,umask=0x1,ldlat=3\n"),
            ("cycles-edge", "event=0x3c,edge"),
        ]
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
        let w = encode("cpu", &intel(), &aliases, "mem-loads", false).unwrap();
        assert_eq!((w.config, w.config1), (0x1cd, 3));
        let w = encode(
            "cpu",
            &intel(),
            &aliases,
            "event=MEM-LOADS,ldlat=0x80",
            false,
        )
        .unwrap();
        assert_eq!((w.config, w.config1), (0x1cd, 0x83), "ORed, as perf does");
        let w = encode("cpu", &intel(), &aliases, "cycles-edge,cmask=1", false).unwrap();
        assert_eq!(w.config, 0x0104_003c);
        let looped: BTreeMap<String, String> = [("a".to_string(), "a".to_string())].into();
        assert!(matches!(
            encode("cpu", &intel(), &looped, "a", false),
            Err(EncodeError::AliasDepth { .. })
        ));
    }

    #[test]
    fn whole_words_and_big_numbers() {
        let none = BTreeMap::new();
        let w = encode(
            "cpu",
            &intel(),
            &none,
            "config=0x1234,config1=5,config2=7",
            false,
        )
        .unwrap();
        assert_eq!((w.config, w.config1, w.config2), (0x1234, 5, 7));
        let wide = formats(&[("event", "config:0-63")]);
        let w = encode("msr", &wide, &none, "event=99999999999999999999999", false).unwrap();
        assert_eq!(w.config, u64::MAX, "saturates like strtoull");
        assert!(
            encode(
                "cpu",
                &intel(),
                &none,
                "event=99999999999999999999999",
                false
            )
            .is_err()
        );
    }

    #[test]
    fn zero_makes_a_repeated_term_replace_instead_of_or() {
        let none = BTreeMap::new();
        let twice = "event=0x0f,event=0x30,config1=6,config1=1";
        let ored = encode("p", &intel(), &none, twice, false).unwrap();
        assert_eq!((ored.config, ored.config1), (0x3f, 7));
        let zeroed = encode("p", &intel(), &none, twice, true).unwrap();
        assert_eq!((zeroed.config, zeroed.config1), (0x30, 1));
    }

    fn any_field() -> impl Strategy<Value = FormatField> {
        let range = (0u8..64, 0u8..16).prop_map(|(lo, len)| (lo, lo.saturating_add(len).min(63)));
        (0usize..4, proptest::collection::vec(range, 1..4)).prop_map(|(w, ranges)| FormatField {
            word: [
                ConfigWord::Config,
                ConfigWord::Config1,
                ConfigWord::Config2,
                ConfigWord::Config3,
            ][w],
            ranges,
        })
    }

    proptest! {
        #[test]
        fn encode_then_decode_round_trips(f in any_field(), raw in any::<u64>()) {
            let value = raw & f.max_value();
            let placed = f.place(value);
            prop_assert_eq!(placed & !f.mask(), 0);
            prop_assert_eq!(f.extract(placed), value);
            let fields: BTreeMap<String, FormatField> = [("x".to_string(), f.clone())].into();
            let w = encode("p", &fields, &BTreeMap::new(), &format!("x={value:#x}"), false).unwrap();
            prop_assert_eq!(f.extract(w.get(f.word)), value);
            let d = encode("p", &fields, &BTreeMap::new(), &format!("x={value}"), false).unwrap();
            prop_assert_eq!(d, w);
        }

        #[test]
        fn values_wider_than_the_field_are_refused(f in any_field(), raw in any::<u64>()) {
            prop_assume!(raw > f.max_value());
            let fields: BTreeMap<String, FormatField> = [("x".to_string(), f)].into();
            let refused = matches!(
                encode("p", &fields, &BTreeMap::new(), &format!("x={raw}"), false),
                Err(EncodeError::TooBig { .. })
            );
            prop_assert!(refused);
        }
    }
}
