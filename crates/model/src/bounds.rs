//! The bounds on what rondpoint accepts, and the one check for a number from outside.
//!
//! Every number that comes from a command line, a scenario, a machine preset, a configuration
//! or a recording is checked here (finite, and inside its range) before anything is built from
//! it, so that a typing slip cannot make rondpoint allocate the machine's memory or loop for
//! hours. The machine bounds are what the simulator and the policies are tested at; larger
//! machines are refused with the bound in the message.

use std::fmt;
use thiserror::Error;

/// Most NUMA nodes in a machine (the simulator keeps node sets in a 64-bit mask; the largest
/// machines in the seed papers have 8 [Dashti13 §4.1]).
pub const MAX_NODES: usize = 64;

/// Most CPUs in a machine (the simulator's per-core state and the policies' per-CPU tables
/// start in well under a second at this size).
pub const MAX_CPUS: usize = 4096;

/// A closed range of accepted values, with the unit it is expressed in (may be empty).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    pub min: f64,
    pub max: f64,
    pub unit: &'static str,
}

impl Bounds {
    pub const fn new(min: f64, max: f64, unit: &'static str) -> Self {
        Self { min, max, unit }
    }

    /// `value` when it is a finite number inside the bounds; an error naming `what` otherwise.
    pub fn check(&self, what: &str, value: f64) -> Result<f64, OutOfBounds> {
        if value.is_finite() && value >= self.min && value <= self.max {
            Ok(value)
        } else {
            Err(OutOfBounds {
                what: what.to_string(),
                value,
                bounds: *self,
            })
        }
    }

    /// The same for an integer (compared exactly, without going through f64).
    pub fn check_int(&self, what: &str, value: i128) -> Result<i128, OutOfBounds> {
        // The bounds are whole numbers well inside f64's exact range wherever integers are
        // checked, so comparing against their truncation is exact.
        if value >= self.min as i128 && value <= self.max as i128 {
            Ok(value)
        } else {
            Err(OutOfBounds {
                what: what.to_string(),
                value: value as f64,
                bounds: *self,
            })
        }
    }
}

impl fmt::Display for Bounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} to {}", number(self.min), number(self.max))?;
        if !self.unit.is_empty() {
            write!(f, " {}", self.unit)?;
        }
        Ok(())
    }
}

/// A number outside its bounds, or not a number.
#[derive(Clone, Debug, Error, PartialEq)]
#[error("{what} = {}: {}", number(*value), describe(*value, bounds))]
pub struct OutOfBounds {
    pub what: String,
    pub value: f64,
    pub bounds: Bounds,
}

/// A number as people write it: plain when short, in scientific notation when huge or tiny
/// (so that 1e300 does not print as 301 digits).
fn number(v: f64) -> String {
    let a = v.abs();
    if v.is_finite() && a != 0.0 && !(1e-3..1e10).contains(&a) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

fn describe(value: f64, bounds: &Bounds) -> String {
    if value.is_finite() {
        format!("must be from {bounds}")
    } else {
        format!("must be a finite number, from {bounds}")
    }
}

/// What is wrong with a piece of input, in words, before the caller says which input it was
/// (a file, a scenario, a machine): parsers and builders return it, and their callers wrap it
/// in an error of their own that names the input.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{0}")]
pub struct Invalid(pub String);

impl From<String> for Invalid {
    fn from(what: String) -> Self {
        Self(what)
    }
}

impl From<&str> for Invalid {
    fn from(what: &str) -> Self {
        Self(what.to_string())
    }
}

impl From<OutOfBounds> for Invalid {
    fn from(e: OutOfBounds) -> Self {
        Self(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn refuses_what_is_not_a_finite_number_in_range_and_says_the_range() {
        let b = Bounds::new(1.0, 10.0, "GHz");
        assert_eq!(b.check("freq_ghz", 2.5), Ok(2.5));
        assert_eq!(b.check("freq_ghz", 1.0), Ok(1.0));
        let e = b.check("freq_ghz", 70_000.0).unwrap_err();
        assert_eq!(e.to_string(), "freq_ghz = 70000: must be from 1 to 10 GHz");
        let e = b.check("freq_ghz", f64::NAN).unwrap_err();
        assert_eq!(
            e.to_string(),
            "freq_ghz = NaN: must be a finite number, from 1 to 10 GHz"
        );
        assert!(b.check("freq_ghz", f64::INFINITY).is_err());
        assert!(b.check("freq_ghz", -0.5).is_err());
        assert!(b.check_int("n", 11).is_err());
        let e = Bounds::new(1e-6, 1073741824.0, "MiB").check("size_mib", 1e300);
        assert_eq!(
            e.unwrap_err().to_string(),
            "size_mib = 1e300: must be from 1e-6 to 1073741824 MiB"
        );
        assert_eq!(b.check_int("n", 10), Ok(10));
    }

    proptest! {
        #[test]
        fn accepts_exactly_the_finite_numbers_inside(v in proptest::num::f64::ANY) {
            let b = Bounds::new(-3.0, 7.5, "");
            let inside = v.is_finite() && (-3.0..=7.5).contains(&v);
            prop_assert_eq!(b.check("x", v).is_ok(), inside);
        }
    }
}
