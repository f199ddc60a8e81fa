//! Times as a reader reads them: in their time zone (an offset in minutes east of UTC), and
//! relative to now when recent. Pure: the page passes the clock in.

const DAY: i64 = 86_400;
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const WEEKDAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/// The page's clock: now, and the reader's time zone.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Clock {
    /// Seconds since the epoch.
    pub now: f64,
    /// Minutes east of UTC.
    pub offset: i32,
}

/// A moment on the reader's calendar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    /// 1 to 12.
    pub month: u32,
    /// 1 to 31.
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    /// 0 (Monday) to 6 (Sunday).
    pub weekday: u32,
    /// Days since 1970-01-01 on the reader's calendar.
    pub days: i64,
}

/// `secs` (since the epoch) on the calendar of a reader `offset` minutes east of UTC.
pub fn civil(secs: f64, offset: i32) -> Civil {
    let utc = if secs.is_finite() {
        secs.floor() as i64
    } else {
        0
    };
    let local = utc + i64::from(offset) * 60;
    let days = local.div_euclid(DAY);
    let in_day = local.rem_euclid(DAY);
    // Days to a civil date (proleptic Gregorian), after Howard Hinnant's `civil_from_days`.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = (if mp < 10 { mp + 3 } else { mp - 9 }) as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    Civil {
        year,
        month,
        day,
        hour: (in_day / 3_600) as u32,
        minute: (in_day % 3_600 / 60) as u32,
        second: (in_day % 60) as u32,
        // 1970-01-01 was a Thursday.
        weekday: (days + 3).rem_euclid(7) as u32,
        days,
    }
}

/// Where a conversation goes in the list by when it was last active.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Group {
    Today,
    Yesterday,
    PreviousWeek,
    Older,
}

impl Group {
    /// Its heading.
    pub fn label(self) -> &'static str {
        match self {
            Group::Today => "Today",
            Group::Yesterday => "Yesterday",
            Group::PreviousWeek => "Previous 7 days",
            Group::Older => "Older",
        }
    }
}

/// The group of a moment `t` for a reader whose clock is `clock`.
pub fn group(t: f64, clock: Clock) -> Group {
    let ago = civil(clock.now, clock.offset).days - civil(t, clock.offset).days;
    match ago {
        i64::MIN..=0 => Group::Today,
        1 => Group::Yesterday,
        2..=7 => Group::PreviousWeek,
        _ => Group::Older,
    }
}

/// A moment as a short, relative phrase: "just now", "5 min ago", "14:05" (today),
/// "Yesterday 14:05", "Mon 14:05" (this week), "12 Nov" (this year), "12 Nov 2025".
pub fn relative(t: f64, clock: Clock) -> String {
    let ago = clock.now - t;
    let when = civil(t, clock.offset);
    let today = civil(clock.now, clock.offset);
    let time = format!("{:02}:{:02}", when.hour, when.minute);
    if (-60.0..60.0).contains(&ago) {
        return "just now".to_owned();
    }
    if (60.0..3_600.0).contains(&ago) {
        return format!("{} min ago", (ago / 60.0).floor() as u32);
    }
    match today.days - when.days {
        0 => time,
        1 => format!("Yesterday {time}"),
        2..=6 => format!("{} {time}", WEEKDAYS[when.weekday as usize]),
        _ if when.year == today.year => format!("{} {}", when.day, MONTHS[when.month as usize - 1]),
        _ => format!(
            "{} {} {}",
            when.day,
            MONTHS[when.month as usize - 1],
            when.year
        ),
    }
}

/// A moment in full: "Wed 2 Dec 2026, 14:05:33".
pub fn exact(t: f64, offset: i32) -> String {
    let c = civil(t, offset);
    format!(
        "{} {} {} {}, {:02}:{:02}:{:02}",
        WEEKDAYS[c.weekday as usize],
        c.day,
        MONTHS[c.month as usize - 1],
        c.year,
        c.hour,
        c.minute,
        c.second
    )
}

/// A moment for `<time datetime>`: UTC, to the second.
pub fn iso(t: f64) -> String {
    let c = civil(t, 0);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2026-12-02 14:05:33 UTC, a Wednesday.
    const NOW: f64 = 1_796_220_333.0;

    #[test]
    fn the_calendar_is_the_readers() {
        let utc = civil(NOW, 0);
        assert_eq!(
            (
                utc.year,
                utc.month,
                utc.day,
                utc.hour,
                utc.minute,
                utc.second,
                utc.weekday
            ),
            (2026, 12, 2, 14, 5, 33, 2)
        );
        // Eleven hours east it is already Thursday; eight hours west still Wednesday morning.
        let sydney = civil(NOW, 11 * 60);
        assert_eq!((sydney.day, sydney.hour, sydney.weekday), (3, 1, 3));
        let la = civil(NOW, -8 * 60);
        assert_eq!((la.day, la.hour), (2, 6));
        // Leap days, year ends, before the epoch.
        let leap = civil(951_782_400.0, 0);
        assert_eq!((leap.year, leap.month, leap.day), (2000, 2, 29));
        let eve = civil(1_767_225_599.0, 0);
        assert_eq!((eve.year, eve.month, eve.day, eve.hour), (2025, 12, 31, 23));
        let before = civil(-1.0, 0);
        assert_eq!(
            (before.year, before.month, before.day, before.weekday),
            (1969, 12, 31, 2)
        );
        assert_eq!(iso(NOW), "2026-12-02T14:05:33Z");
        assert_eq!(exact(NOW, 60), "Wed 2 Dec 2026, 15:05:33");
    }

    #[test]
    fn recent_moments_read_relative_older_ones_by_day() {
        let clock = Clock {
            now: NOW,
            offset: 0,
        };
        let hour = 3_600.0;
        let cases = [
            (NOW - 10.0, "just now"),
            (NOW + 20.0, "just now"),
            (NOW - 5.0 * 60.0, "5 min ago"),
            (NOW - 59.0 * 60.0, "59 min ago"),
            (NOW - 2.0 * hour, "12:05"),
            (NOW - 20.0 * hour, "Yesterday 18:05"),
            (NOW - 3.0 * 24.0 * hour, "Sun 14:05"),
            (NOW - 30.0 * 24.0 * hour, "2 Nov"),
            (NOW - 400.0 * 24.0 * hour, "28 Oct 2025"),
        ];
        for (t, text) in cases {
            assert_eq!(relative(t, clock), text, "{t}");
        }
        // The same moment is "yesterday" for a reader far enough west.
        let west = Clock {
            now: NOW,
            offset: -15 * 60,
        };
        assert_eq!(relative(NOW - 2.0 * hour, west), "21:05");
        assert_eq!(relative(NOW - 24.0 * hour, west), "Yesterday 23:05");
    }

    #[test]
    fn conversations_group_by_the_readers_days() {
        let clock = Clock {
            now: NOW,
            offset: 0,
        };
        let day = 86_400.0;
        assert_eq!(group(NOW - 60.0, clock), Group::Today);
        assert_eq!(group(NOW - 14.0 * 3_600.0, clock), Group::Today);
        assert_eq!(group(NOW - 15.0 * 3_600.0, clock), Group::Yesterday);
        assert_eq!(group(NOW - 3.0 * day, clock), Group::PreviousWeek);
        assert_eq!(group(NOW - 7.0 * day, clock), Group::PreviousWeek);
        assert_eq!(group(NOW - 8.0 * day, clock), Group::Older);
        assert_eq!(
            group(NOW + 60.0, clock),
            Group::Today,
            "a clock behind the server's"
        );
        // At 01:05 in Sydney, something from two hours before was yesterday.
        let sydney = Clock {
            now: NOW,
            offset: 11 * 60,
        };
        assert_eq!(group(NOW - 2.0 * 3_600.0, sydney), Group::Yesterday);
    }
}
