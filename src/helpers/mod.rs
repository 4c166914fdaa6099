//! The hackbench helpers `runmany` and `hackdiff` (`feat`'s scheduler features are
//! [`crate::host::sched_features`]).
//!
//! They reproduce the original shell helpers digit for digit. Those scripts kept
//! times as integer milliseconds (`ftoi`), printed them back with `itof`, let `bc`
//! compute the standard deviation and bash's `printf` round the result. This
//! module holds the exact decimal arithmetic they share; `docs/formulas-helpers.md`
//! spells out every step.

pub mod hackdiff;
pub mod runmany;

use std::fmt;

/// A decimal number read from text, kept exact (no binary floating point).
///
/// The value is `digits / 10^scale`, negated when `negative` is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decimal {
    digits: u128,
    scale: u32,
    negative: bool,
}

/// Why a piece of text is not a number the helpers accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecimalError {
    /// Not of the form `4.096`, `12` or `.5`.
    #[error("`{0}` is not a decimal number like 4.096")]
    NotDecimal(String),
    /// More digits than the helpers handle exactly.
    #[error("`{0}` has too many digits (at most {MAX_INT_DIGITS} before and {MAX_FRAC_DIGITS} after the point)")]
    TooLong(String),
}

/// Longest integer part accepted; keeps every intermediate inside `u128`.
const MAX_INT_DIGITS: usize = 15;
/// Longest fraction accepted.
const MAX_FRAC_DIGITS: usize = 18;

fn pow10(n: u32) -> u128 {
    10u128.pow(n)
}

impl Decimal {
    /// Reads an unsigned decimal such as `4.096`, `12`, `12.` or `.5`, the forms
    /// `bc` and `printf` both accept. Signs and exponents are refused.
    pub fn parse(text: &str) -> Result<Decimal, DecimalError> {
        let (int, frac) = match text.split_once('.') {
            Some((int, frac)) => (int, frac),
            None => (text, ""),
        };
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if int.len() + frac.len() == 0 || !all_digits(int) || !all_digits(frac) {
            return Err(DecimalError::NotDecimal(text.to_string()));
        }
        if int.len() > MAX_INT_DIGITS || frac.len() > MAX_FRAC_DIGITS {
            return Err(DecimalError::TooLong(text.to_string()));
        }
        let digits = int
            .bytes()
            .chain(frac.bytes())
            .fold(0u128, |acc, b| acc * 10 + u128::from(b - b'0'));
        Ok(Decimal {
            digits,
            scale: frac.len() as u32,
            negative: false,
        })
    }

    /// The integer fixed-point value `x` with `places` decimals, as the
    /// original `itof` read it: `x = -26500, places = 3` is -26.5.
    pub fn from_fixed(x: i64, places: u32) -> Decimal {
        Decimal {
            digits: u128::from(x.unsigned_abs()),
            scale: places,
            negative: x < 0,
        }
    }

    /// The original `ftoi`: `bc` computing `(10^places * x) / 1` at scale 0,
    /// which truncates toward zero. `4.0969` at 3 places is 4096.
    /// `None` if the result does not fit in an `i64`.
    pub fn to_fixed(&self, places: u32) -> Option<i64> {
        let magnitude = if places >= self.scale {
            self.digits.checked_mul(pow10(places - self.scale))?
        } else {
            self.digits / pow10(self.scale - places)
        };
        let magnitude = i64::try_from(magnitude).ok()?;
        Some(if self.negative { -magnitude } else { magnitude })
    }

    /// What bash's `printf "%.{places}f"` prints for this number on x86-64.
    ///
    /// bash converts its argument with `strtold` to an 80-bit `long double`
    /// (64-bit mantissa, round to nearest even), and glibc then rounds that
    /// binary value exactly, ties to even. So `0.45` prints `0.4` (its long
    /// double lies just below 0.45), `0.15` prints `0.2` and `0.25` prints `0.2`.
    /// `places` must be at most 6.
    pub fn printf(&self, places: u32) -> String {
        assert!(places <= 6, "printf emulation supports at most 6 places");
        let scaled = if self.digits == 0 {
            0
        } else {
            let (mantissa, shift) = long_double(self.digits, self.scale);
            // mantissa / 2^shift * 10^places, rounded half to even.
            let num = mantissa * pow10(places);
            let q = num >> shift;
            let rem = num - (q << shift);
            let half = 1u128 << (shift - 1);
            if rem > half || (rem == half && q % 2 == 1) {
                q + 1
            } else {
                q
            }
        };
        let sign = if self.negative { "-" } else { "" };
        let int = scaled / pow10(places);
        if places == 0 {
            return format!("{sign}{int}");
        }
        let frac = scaled % pow10(places);
        format!("{sign}{int}.{frac:0width$}", width = places as usize)
    }
}

/// The 80-bit long double nearest to `digits / 10^scale` (non-zero), as
/// `(mantissa, shift)` with value `mantissa / 2^shift` and `2^63 <= mantissa < 2^64`.
fn long_double(digits: u128, scale: u32) -> (u128, u32) {
    let den = pow10(scale);
    // The input limits keep the value within [1e-18, 1e15), so `shift` is
    // between 13 and 124 and `digits << shift` stays below 2^127.
    let bits = |x: u128| 128 - x.leading_zeros();
    let mut shift = (64 + bits(den)).saturating_sub(bits(digits));
    while (digits << shift) / den >= 1u128 << 64 {
        shift -= 1;
    }
    while (digits << shift) / den < 1u128 << 63 {
        shift += 1;
    }
    let num = digits << shift;
    let mut mantissa = num / den;
    let rem = num % den;
    if 2 * rem > den || (2 * rem == den && mantissa % 2 == 1) {
        mantissa += 1;
        if mantissa == 1u128 << 64 {
            mantissa >>= 1;
            shift -= 1;
        }
    }
    (mantissa, shift)
}

impl fmt::Display for Decimal {
    /// The exact value, with all its decimals.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.negative { "-" } else { "" };
        let int = self.digits / pow10(self.scale);
        if self.scale == 0 {
            return write!(f, "{sign}{int}");
        }
        let frac = self.digits % pow10(self.scale);
        write!(f, "{sign}{int}.{frac:0width$}", width = self.scale as usize)
    }
}

/// The original `itof`: integer fixed-point `x` with `places` decimals as text,
/// `4096, 3` → `4.096`, `-100, 3` → `-0.100`.
pub fn format_fixed(x: i64, places: u32) -> String {
    Decimal::from_fixed(x, places).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    #[test]
    fn parse_accepts_bc_forms_and_refuses_others() {
        assert_eq!(d("4.096").to_fixed(3), Some(4096));
        assert_eq!(d(".5").to_fixed(3), Some(500));
        assert_eq!(d("12.").to_fixed(3), Some(12000));
        assert_eq!(d("7").to_fixed(3), Some(7000));
        for bad in ["", ".", "-1", "+1", "1e3", "4,096", "1.2.3", " 1", "abc"] {
            assert!(
                matches!(Decimal::parse(bad), Err(DecimalError::NotDecimal(_))),
                "{bad:?}"
            );
        }
        assert!(matches!(
            Decimal::parse("1234567890123456"),
            Err(DecimalError::TooLong(_))
        ));
    }

    #[test]
    fn to_fixed_truncates_like_bc_scale_zero() {
        assert_eq!(d("4.0969").to_fixed(3), Some(4096));
        assert_eq!(d("0.0009").to_fixed(3), Some(0));
        assert_eq!(d("10.063").to_fixed(3), Some(10063));
    }

    #[test]
    fn format_fixed_matches_itof() {
        assert_eq!(format_fixed(4096, 3), "4.096");
        assert_eq!(format_fixed(26500, 3), "26.500");
        assert_eq!(format_fixed(-100, 3), "-0.100");
        assert_eq!(format_fixed(0, 3), "0.000");
        assert_eq!(format_fixed(7, 3), "0.007");
    }

    // Expected strings are what bash 5.2 `printf` prints on x86-64.
    #[test]
    fn printf_rounds_the_long_double_like_bash() {
        let cases = [
            ("0.15", 1, "0.2"),
            ("0.45", 1, "0.4"),
            ("0.65", 1, "0.6"),
            ("0.85", 1, "0.9"),
            ("1.05", 1, "1.0"),
            ("0.25", 1, "0.2"),
            ("0.75", 1, "0.8"),
            (".450000", 1, "0.4"),
            (".543210", 1, "0.5"),
            ("4.096", 3, "4.096"),
            ("4.0965", 3, "4.096"),
            ("4.0975", 3, "4.097"),
            ("12.9995", 3, "13.000"),
            ("0", 1, "0.0"),
            ("0.000001", 3, "0.000"),
            ("999999999999999.999", 1, "1000000000000000.0"),
        ];
        for (input, places, want) in cases {
            assert_eq!(d(input).printf(places), want, "printf %.{places}f {input}");
        }
        assert_eq!(Decimal::from_fixed(-26500, 3).printf(1), "-26.5");
    }
}
