//! RFC 3339 timestamps in UTC, the form every timestamp of the protocols takes (`updatedAt`,
//! threads' `modifiedAt`, probe's `createdAt`), without a date-time dependency.

use std::time::{SystemTime, UNIX_EPOCH};

/// The current time to the millisecond, e.g. `2026-11-24T09:15:02.123Z`.
pub fn now_rfc3339() -> String {
    format_unix_millis(now_millis(), true)
}

/// The current time to the second, e.g. `2026-11-24T09:15:02Z` (as the legacy dialects'
/// own peers wrote their timestamps).
pub fn now_rfc3339_seconds() -> String {
    format_unix_millis(now_millis(), false)
}

/// `at` to the second, as [`now_rfc3339_seconds`] writes the current time: for a time taken
/// often and written rarely (a thread's last change, taken per streamed chunk), so that
/// taking it costs no formatting.
pub fn rfc3339_seconds(at: SystemTime) -> String {
    format_unix_millis(unix_millis(at), false)
}

fn now_millis() -> i64 {
    unix_millis(SystemTime::now())
}

fn unix_millis(at: SystemTime) -> i64 {
    let since = at.duration_since(UNIX_EPOCH);
    since.unwrap_or_default().as_millis() as i64
}

/// Formats milliseconds since the Unix epoch, with the milliseconds or without (days to
/// civil date after Howard Hinnant's `civil_from_days`).
fn format_unix_millis(millis: i64, with_millis: bool) -> String {
    let secs = millis.div_euclid(1000);
    let ms = millis.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let fraction = if with_millis {
        format!(".{ms:03}")
    } else {
        String::new()
    };
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}{fraction}Z")
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::{format_unix_millis, rfc3339_seconds};

    /// Known instants, a leap day and the epoch, format as RFC 3339, with and without the
    /// milliseconds.
    #[test]
    fn formats_known_instants() {
        assert_eq!(format_unix_millis(0, true), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_unix_millis(951_782_400_007, true),
            "2000-02-29T00:00:00.007Z"
        );
        assert_eq!(
            format_unix_millis(1_795_000_000_999, true),
            "2026-11-18T11:06:40.999Z"
        );
        assert_eq!(format_unix_millis(0, false), "1970-01-01T00:00:00Z");
        assert_eq!(
            format_unix_millis(1_750_852_800_000, false),
            "2025-06-25T12:00:00Z"
        );
        assert_eq!(
            format_unix_millis(951_782_400_999, false),
            "2000-02-29T00:00:00Z"
        );
    }

    /// A time kept as a `SystemTime` is written as the current time is, to the second; one
    /// before the epoch (a clock set back) is written as the epoch, not a panic.
    #[test]
    fn a_kept_time_is_written_to_the_second() {
        let at = UNIX_EPOCH + Duration::from_millis(951_782_400_999);
        assert_eq!(rfc3339_seconds(at), "2000-02-29T00:00:00Z");
        let before = UNIX_EPOCH - Duration::from_secs(5);
        assert_eq!(rfc3339_seconds(before), "1970-01-01T00:00:00Z");
    }
}
