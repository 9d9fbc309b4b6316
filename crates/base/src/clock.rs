//! Wall-clock time as unix seconds, and its UTC calendar form for people, without a date
//! crate: threads are stamped with [`now_unix`] and listed with [`utc_datetime`].

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds in a day.
const DAY: i64 = 86_400;

/// The current time in seconds since 1970-01-01 UTC (negative if the clock is set before
/// it), for timestamps that sort and compare as plain integers.
pub fn now_unix() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(since) => i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_secs()).map_or(i64::MIN, |s| -s),
    }
}

/// [`now_unix`] for timestamps that cannot be before 1970 (a clock set earlier reads 0).
pub fn now_secs() -> u64 {
    u64::try_from(now_unix()).unwrap_or(0)
}

/// `secs` as a UTC calendar date, `YYYY-MM-DD`, for compact listings.
pub fn utc_date(secs: i64) -> String {
    let (year, month, day) = civil_from_days(secs.div_euclid(DAY));
    format!("{year:04}-{month:02}-{day:02}")
}

/// `secs` as a UTC date and minute, `YYYY-MM-DD HH:MM`, for listings and transcripts.
pub fn utc_datetime(secs: i64) -> String {
    let of_day = secs.rem_euclid(DAY);
    format!(
        "{} {:02}:{:02}",
        utc_date(secs),
        of_day / 3600,
        of_day % 3600 / 60
    )
}

/// An age as listings show it: `40 s ago`, `12 min ago`, `5 h ago`, `3 d ago`.
pub fn age_words(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs} s ago"),
        60..3_600 => format!("{} min ago", secs / 60),
        3_600..86_400 => format!("{} h ago", secs / 3_600),
        _ => format!("{} d ago", secs / 86_400),
    }
}

/// Howard Hinnant's days-to-civil: the proleptic Gregorian (year, month, day) of the day
/// `days` after 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March-based
    let day = doy - (153 * mp + 2) / 5 + 1; // [1, 31]
    let month = if mp < 10 { mp + 3 } else { mp - 9 }; // [1, 12]
    let year = yoe + era * 400 + i64::from(month <= 2);
    // Both are in range by construction (see the bounds above).
    (year, month as u32, day as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_epoch() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_datetime(0), "1970-01-01 00:00");
        assert_eq!(utc_datetime(59), "1970-01-01 00:00");
        assert_eq!(utc_datetime(DAY - 1), "1970-01-01 23:59");
        assert_eq!(utc_datetime(-1), "1969-12-31 23:59");
    }

    #[test]
    fn leap_days() {
        // 2000 is a leap year (divisible by 400), 1900 and 2100 are not.
        assert_eq!(utc_date(951_782_400), "2000-02-29");
        assert_eq!(utc_date(951_782_400 + DAY), "2000-03-01");
        assert_eq!(utc_date(1_709_164_800), "2024-02-29");
        assert_eq!(utc_date(4_107_456_000), "2100-02-28");
        assert_eq!(utc_date(4_107_456_000 + DAY), "2100-03-01");
        assert_eq!(utc_date(-2_203_977_600), "1900-02-28");
        assert_eq!(utc_date(-2_203_977_600 + DAY), "1900-03-01");
    }

    #[test]
    fn known_instants() {
        assert_eq!(utc_datetime(1_000_000_000), "2001-09-09 01:46");
        assert_eq!(utc_datetime(1_700_000_000), "2023-11-14 22:13");
        assert_eq!(utc_date(1_735_689_599), "2024-12-31");
        assert_eq!(utc_date(1_735_689_600), "2025-01-01");
    }

    #[test]
    fn now_is_after_this_code_was_written() {
        assert!(now_unix() > 1_700_000_000);
    }
}
