//! Bar series from CSV text, and series validation.
//!
//! [`parse_csv`] reads the bar files users have: the project's own
//! `time,open,high,low,close,volume`, spreadsheet and broker exports with
//! capitalised headers (`Date,Open,High,Low,Close,Adj Close,Volume`), and
//! MetaTrader 5's exported history (`<DATE>`, `<TIME>`, `<OPEN>`, …,
//! tab-separated). It takes text, not a path: core does no I/O, the caller
//! reads the file.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::bars::parse_csv;
//!
//! // MetaTrader 5 "Export bars": tabs, dates as 2024.01.02, tick volume.
//! let mt5 = "<DATE>\t<TIME>\t<OPEN>\t<HIGH>\t<LOW>\t<CLOSE>\t<TICKVOL>\t<VOL>\t<SPREAD>\n\
//!            2024.01.02\t00:00:00\t1.10427\t1.10450\t1.10400\t1.10440\t120\t0\t5\n\
//!            2024.01.02\t01:00:00\t1.10440\t1.10480\t1.10420\t1.10470\t98\t0\t5\n";
//! let bars = parse_csv(mt5)?;
//! assert_eq!(bars.len(), 2);
//! assert_eq!(bars[1].time - bars[0].time, 3_600_000);
//! assert_eq!(bars[0].volume, 120.0);
//!
//! // Errors name the line and the column.
//! let bad = "time,open,high,low,close\n1704153600,1.1,1.0x,1.0,1.1\n";
//! let err = parse_csv(bad).unwrap_err().to_string();
//! assert!(err.contains(r#"line 2, column "high": not a number: "1.0x""#), "{err}");
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

use chrono::{DateTime, NaiveDate};

use crate::time::{UnixMs, to_iso};
use crate::{Bar, CoreError};

/// Parses bars from CSV text with a header line. The series is checked as by
/// [`validate_series`] (well-formed bars, strictly ascending times), with
/// errors naming the line.
///
/// What is accepted:
///
/// - **Delimiter**: comma, semicolon or tab, whichever the header line uses
///   most. With a semicolon or tab delimiter a decimal comma (`1,0716`) is
///   read as a decimal point.
/// - **Header**: names are matched without regard to case, surrounding `<…>`,
///   spaces, `_` and `-`, in any order. Time: `time`, `datetime`,
///   `timestamp`, `open time`, `gmt time`, or `date` (daily bars), or both
///   `date` and `time` columns (MetaTrader's `<DATE>` + `<TIME>`). Prices:
///   `open`, `high`, `low`, `close`. Volume (optional, 0 when absent):
///   `volume`, else `tickvol`/`tick volume`, else `vol`/`real volume`. Other
///   columns (`Adj Close`, `<SPREAD>`, a symbol, …) are ignored.
/// - **Times** (UTC when no offset is given): RFC 3339 / ISO 8601
///   (`2024-01-02T00:00:00Z`, `+02:00` offsets); `YYYY-MM-DD[ HH:MM[:SS[.fff]]]`
///   with `-`, `.` or `/` between the date parts and `T` or a space before
///   the time; the European `DD.MM.YYYY[ HH:MM[:SS]]` (never the ambiguous
///   `DD/MM/YYYY`); or a unix time in seconds, milliseconds, microseconds or
///   nanoseconds, told apart by magnitude (below 10¹¹ seconds, below 10¹⁴
///   milliseconds, …).
/// - Blank lines are skipped; a UTF-8 byte-order mark is ignored.
///
/// Errors are [`CoreError::Parse`] for text that cannot be read (`line 17,
/// column "high": not a number: "1.0x"`) and [`CoreError::InvalidInput`] for
/// a series that is unusable (empty, a bar whose high is below its low,
/// times out of order).
pub fn parse_csv(text: &str) -> Result<Vec<Bar>, CoreError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(header_line) = text.lines().find(|l| !l.trim().is_empty()) else {
        return Err(CoreError::InvalidInput("empty CSV".into()));
    };
    let delimiter = sniff_delimiter(header_line);
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| CoreError::Parse(format!("CSV header: {e}")))?
        .clone();
    let layout = Layout::from_header(&header, header_line)?;

    let mut bars: Vec<Bar> = Vec::with_capacity(text.len() / 48);
    let mut record = csv::StringRecord::new();
    loop {
        match reader.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                let line = e.position().map_or(0, csv::Position::line);
                return Err(CoreError::Parse(format!("line {line}: {e}")));
            }
        }
        if record.iter().all(str::is_empty) {
            continue;
        }
        let line = record.position().map_or(0, csv::Position::line);
        let bar = layout.bar(&record, line, delimiter)?;
        bar.validate()
            .map_err(|e| CoreError::InvalidInput(format!("line {line}: {}", message(&e))))?;
        if let Some(prev) = bars.last()
            && prev.time >= bar.time
        {
            return Err(CoreError::InvalidInput(format!(
                "line {line}: time {} is not after the previous bar's {} (bars must be strictly ascending)",
                to_iso(bar.time),
                to_iso(prev.time)
            )));
        }
        bars.push(bar);
    }
    if bars.is_empty() {
        return Err(CoreError::InvalidInput(
            "empty bar series: the CSV has a header but no rows".into(),
        ));
    }
    Ok(bars)
}

/// Checks a series: not empty, every bar well formed, times strictly increasing.
///
/// ```
/// use tradeterm_core::Bar;
/// use tradeterm_core::bars::validate_series;
///
/// let bar = |time, close| Bar { time, open: close, high: close, low: close, close, volume: 0.0 };
/// assert!(validate_series(&[bar(0, 1.0), bar(60_000, 1.1)]).is_ok());
/// assert!(validate_series(&[bar(60_000, 1.0), bar(0, 1.1)]).is_err());
/// assert!(validate_series(&[]).is_err());
/// ```
pub fn validate_series(bars: &[Bar]) -> Result<(), CoreError> {
    if bars.is_empty() {
        return Err(CoreError::InvalidInput("empty bar series".into()));
    }
    for (i, b) in bars.iter().enumerate() {
        b.validate()?;
        if i > 0 && bars[i - 1].time >= b.time {
            return Err(CoreError::InvalidInput(format!(
                "bar times are not strictly increasing at index {i}"
            )));
        }
    }
    Ok(())
}

/// The error's message without its variant prefix.
fn message(e: &CoreError) -> String {
    match e {
        CoreError::InvalidInput(m) | CoreError::Parse(m) => m.clone(),
        e => e.to_string(),
    }
}

/// The delimiter the header line uses most: comma, semicolon or tab (comma
/// on a tie or when none appears).
fn sniff_delimiter(header: &str) -> u8 {
    let count = |c: char| header.matches(c).count();
    let mut best = (b',', count(','));
    for d in [b';', b'\t'] {
        let n = count(char::from(d));
        if n > best.1 {
            best = (d, n);
        }
    }
    best.0
}

/// What a header column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A full instant (or a time of day when a `date` column exists too).
    Time,
    /// A date, or a full instant when there is no `time` column.
    Date,
    Open,
    High,
    Low,
    Close,
    /// Volume; the lower the rank, the better (`volume` < tick volume < real volume).
    Volume(u8),
}

impl Role {
    fn of(name: &str) -> Option<Self> {
        let key: String = name
            .trim()
            .trim_start_matches('<')
            .trim_end_matches('>')
            .chars()
            .filter(|c| !matches!(c, ' ' | '_' | '-'))
            .flat_map(char::to_lowercase)
            .collect();
        Some(match key.as_str() {
            "time" | "datetime" | "timestamp" | "opentime" | "gmttime" | "localtime" => Self::Time,
            "date" => Self::Date,
            "open" => Self::Open,
            "high" => Self::High,
            "low" => Self::Low,
            "close" => Self::Close,
            "volume" => Self::Volume(0),
            "tickvol" | "tickvolume" => Self::Volume(1),
            "vol" | "realvolume" | "realvol" => Self::Volume(2),
            _ => return None,
        })
    }
}

/// Where the time of a row comes from.
#[derive(Debug, Clone, Copy)]
enum TimeSource {
    /// One column with the full instant.
    One(usize),
    /// A date column and a time-of-day column (MetaTrader's `<DATE>` `<TIME>`).
    Split { date: usize, time: usize },
}

/// Column positions resolved from the header.
#[derive(Debug)]
struct Layout {
    names: Vec<String>,
    time: TimeSource,
    open: usize,
    high: usize,
    low: usize,
    close: usize,
    volume: Option<usize>,
}

impl Layout {
    fn from_header(header: &csv::StringRecord, line: &str) -> Result<Self, CoreError> {
        let names: Vec<String> = header.iter().map(str::to_owned).collect();
        let mut found: [Option<usize>; 6] = [None; 6];
        let mut volume: Option<(u8, usize)> = None;
        for (i, name) in names.iter().enumerate() {
            let Some(role) = Role::of(name) else { continue };
            let slot = match role {
                Role::Time => 0,
                Role::Date => 1,
                Role::Open => 2,
                Role::High => 3,
                Role::Low => 4,
                Role::Close => 5,
                Role::Volume(rank) => {
                    match volume {
                        Some((r, j)) if r == rank => return Err(duplicate(&names[j], name)),
                        Some((r, _)) if r < rank => {}
                        _ => volume = Some((rank, i)),
                    }
                    continue;
                }
            };
            if let Some(j) = found[slot] {
                return Err(duplicate(&names[j], name));
            }
            found[slot] = Some(i);
        }
        let time = match (found[0], found[1]) {
            (Some(time), Some(date)) => TimeSource::Split { date, time },
            (Some(i), None) | (None, Some(i)) => TimeSource::One(i),
            (None, None) => return Err(missing_column("time (or date)", line)),
        };
        let need = |slot: usize, what: &str| found[slot].ok_or_else(|| missing_column(what, line));
        Ok(Self {
            time,
            open: need(2, "open")?,
            high: need(3, "high")?,
            low: need(4, "low")?,
            close: need(5, "close")?,
            volume: volume.map(|(_, i)| i),
            names,
        })
    }

    /// The bar of one row (not yet validated).
    fn bar(&self, row: &csv::StringRecord, line: u64, delimiter: u8) -> Result<Bar, CoreError> {
        let field = |i: usize| -> Result<&str, CoreError> {
            row.get(i).ok_or_else(|| {
                CoreError::Parse(format!(
                    "line {line}, column \"{}\": missing (the row has {} fields, the header {})",
                    self.names[i],
                    row.len(),
                    self.names.len()
                ))
            })
        };
        let bad = |i: usize, what: &str, raw: &str| {
            CoreError::Parse(format!("line {line}, column \"{}\": {what}: \"{raw}\"", self.names[i]))
        };
        let num = |i: usize| -> Result<f64, CoreError> {
            let raw = field(i)?;
            parse_number(raw, delimiter).ok_or_else(|| bad(i, "not a number", raw))
        };
        let time = match self.time {
            TimeSource::One(i) => {
                let raw = field(i)?;
                parse_time(raw).ok_or_else(|| bad(i, TIME_EXPECTED, raw))?
            }
            TimeSource::Split { date, time } => {
                let (raw_date, raw_time) = (field(date)?, field(time)?);
                match time_of_day_ms(raw_time) {
                    Some(ms) => parse_date(raw_date).ok_or_else(|| bad(date, "not a date", raw_date))? + ms,
                    None => parse_time(raw_time).ok_or_else(|| bad(time, "not a time of day", raw_time))?,
                }
            }
        };
        Ok(Bar {
            time,
            open: num(self.open)?,
            high: num(self.high)?,
            low: num(self.low)?,
            close: num(self.close)?,
            volume: match self.volume {
                Some(i) => num(i)?,
                None => 0.0,
            },
        })
    }
}

const TIME_EXPECTED: &str =
    "not a time (expected ISO 8601, YYYY-MM-DD[ HH:MM[:SS]], YYYY.MM.DD or unix seconds/milliseconds)";

fn duplicate(first: &str, second: &str) -> CoreError {
    CoreError::Parse(format!(
        "CSV header: columns \"{first}\" and \"{second}\" hold the same field"
    ))
}

fn missing_column(what: &str, header: &str) -> CoreError {
    CoreError::Parse(format!(
        "CSV header has no {what} column: `{}` (expected time, open, high, low, close and optionally volume, in any order)",
        header.trim()
    ))
}

/// A decimal number; with a semicolon or tab delimiter, `1,5` is read as `1.5`.
fn parse_number(raw: &str, delimiter: u8) -> Option<f64> {
    if let Ok(v) = raw.parse::<f64>() {
        return Some(v);
    }
    if delimiter != b',' && raw.matches(',').count() == 1 && !raw.contains('.') {
        return raw.replace(',', ".").parse().ok();
    }
    None
}

/// An instant: unix seconds/ms/µs/ns, RFC 3339, or a naive
/// `YYYY-MM-DD[ HH:MM[:SS[.fff]]]` taken as UTC.
fn parse_time(raw: &str) -> Option<UnixMs> {
    if let Some(ms) = parse_unix(raw) {
        return Some(ms);
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(raw) {
        return Some(t.timestamp_millis());
    }
    let naive = raw.strip_suffix(['Z', 'z']).unwrap_or(raw);
    match naive.split_once(['T', ' ']) {
        Some((date, time)) => Some(parse_date(date)? + time_of_day_ms(time.trim())?),
        None => parse_date(naive),
    }
}

/// A unix time whose unit follows from its magnitude: seconds below 10¹¹
/// (year 5138), milliseconds below 10¹⁴, microseconds below 10¹⁷, else
/// nanoseconds. Seconds may have a fraction.
fn parse_unix(raw: &str) -> Option<UnixMs> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match raw.split_once('.') {
        None if digits(raw) => {
            let n: i64 = raw.parse().ok()?;
            Some(match n {
                0..100_000_000_000 => n * 1000,
                100_000_000_000..100_000_000_000_000 => n,
                100_000_000_000_000..100_000_000_000_000_000 => n / 1000,
                _ => n / 1_000_000,
            })
        }
        Some((int, frac)) if digits(int) && digits(frac) && int.len() <= 11 => {
            let secs: f64 = raw.parse().ok()?;
            (secs < 1e11).then(|| (secs * 1000.0).round() as i64)
        }
        _ => None,
    }
}

/// Midnight UTC of `YYYY-MM-DD`, `YYYY.MM.DD`, `YYYY/MM/DD` or the
/// European `DD.MM.YYYY` (never `DD/MM/YYYY`, which is ambiguous).
fn parse_date(raw: &str) -> Option<UnixMs> {
    let mut parts = raw.split(['-', '.', '/']);
    let (a, m, b) = (parts.next()?, parts.next()?, parts.next()?);
    let (y, d) = match (a.len(), b.len()) {
        (4, 1..=2) => (a, b),
        (1..=2, 4) if raw.contains('.') && !raw.contains(['-', '/']) => (b, a),
        _ => return None,
    };
    if parts.next().is_some() || !(1..=2).contains(&m.len()) {
        return None;
    }
    let date = NaiveDate::from_ymd_opt(y.parse().ok()?, m.parse().ok()?, d.parse().ok()?)?;
    Some(date.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis())
}

/// Milliseconds since midnight of `HH:MM[:SS[.fff]]`.
fn time_of_day_ms(raw: &str) -> Option<i64> {
    let mut parts = raw.split(':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next().unwrap_or("0"));
    if parts.next().is_some() {
        return None;
    }
    let (s, frac) = s.split_once('.').unwrap_or((s, ""));
    let int = |t: &str, max: i64| -> Option<i64> {
        let v: i64 = t.parse().ok().filter(|_| (1..=2).contains(&t.len()))?;
        (0..=max).contains(&v).then_some(v)
    };
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let ms = frac
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(3)
        .fold(0, |acc, b| acc * 10 + i64::from(b - b'0'));
    Some(((int(h, 23)? * 60 + int(m, 59)?) * 60 + int(s, 60)?) * 1000 + ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse_iso;

    const T0: i64 = 1_704_153_600_000; // 2024-01-02T00:00:00Z

    fn err(text: &str) -> String {
        parse_csv(text).unwrap_err().to_string()
    }

    #[test]
    fn parses_shared_format() {
        let text = "time,open,high,low,close,volume\n2017-04-19T09:00:00Z,1.0716,1.0722,1.07083,1.07219,1413\n2017-04-19T10:00:00Z,1.07214,1.07296,1.07214,1.0726,1241\n";
        let bars = parse_csv(text).unwrap();
        assert_eq!(bars.len(), 2);
        assert_eq!(bars[1].close, 1.0726);
        assert_eq!(bars[1].time - bars[0].time, 3_600_000);
        assert_eq!(bars[0].time, parse_iso("2017-04-19T09:00:00Z").unwrap());
        assert_eq!(bars[0].volume, 1413.0);
    }

    #[test]
    fn parses_capitalised_headers_any_order_and_ignores_adj_close() {
        let text = "Date,Open,High,Low,Close,Adj Close,Volume\n\
                    2024-01-02,10,12,9,11,10.5,1000\n\
                    2024-01-03,11,13,10,12,11.5,2000\n";
        let bars = parse_csv(text).unwrap();
        assert_eq!(bars.len(), 2);
        assert_eq!(bars[0].time, T0);
        assert_eq!(bars[1].time - bars[0].time, 86_400_000);
        assert_eq!(
            (bars[0].open, bars[0].high, bars[0].low, bars[0].close),
            (10.0, 12.0, 9.0, 11.0)
        );
        assert_eq!(bars[1].volume, 2000.0);

        let shuffled = "Volume,Close,Low,High,Open,Date\n1000,11,9,12,10,2024-01-02\n";
        assert_eq!(parse_csv(shuffled).unwrap()[0], bars[0]);
    }

    #[test]
    fn parses_mt5_export_with_date_and_time_columns() {
        let text = "<DATE>\t<TIME>\t<OPEN>\t<HIGH>\t<LOW>\t<CLOSE>\t<TICKVOL>\t<VOL>\t<SPREAD>\n\
                    2024.01.02\t00:00:00\t1.10427\t1.10450\t1.10400\t1.10440\t120\t7\t5\n\
                    2024.01.02\t00:15:00\t1.10440\t1.10480\t1.10420\t1.10470\t98\t3\t5\n";
        let bars = parse_csv(text).unwrap();
        assert_eq!(bars.len(), 2);
        assert_eq!(bars[0].time, T0);
        assert_eq!(bars[1].time, T0 + 15 * 60_000);
        assert_eq!(bars[1].close, 1.1047);
        // Tick volume is preferred over real volume (FX real volume is mostly 0).
        assert_eq!((bars[0].volume, bars[1].volume), (120.0, 98.0));
    }

    #[test]
    fn parses_mt5_daily_export_with_date_only() {
        let text = "<DATE>\t<OPEN>\t<HIGH>\t<LOW>\t<CLOSE>\t<TICKVOL>\t<VOL>\t<SPREAD>\n\
                    2024.01.02\t1.1\t1.2\t1.0\t1.15\t5000\t0\t3\n\
                    2024.01.03\t1.15\t1.25\t1.1\t1.2\t6000\t0\t3\n";
        let bars = parse_csv(text).unwrap();
        assert_eq!(bars[0].time, T0);
        assert_eq!(bars[1].time, T0 + 86_400_000);
        assert_eq!(bars[1].volume, 6000.0);
    }

    #[test]
    fn uses_real_volume_when_it_is_the_only_one() {
        let text = "Date;Time;Open;High;Low;Close;Vol\n2024.01.02;00:00;1;2;0.5;1.5;42\n";
        let bars = parse_csv(text).unwrap();
        assert_eq!(bars[0].volume, 42.0);
        assert_eq!(bars[0].time, T0);
        let vol = "time,open,high,low,close,Vol\n2024-01-02,1,2,0.5,1.5,7\n";
        assert_eq!(parse_csv(vol).unwrap()[0].volume, 7.0);
        let tickvol = "time,open,high,low,close,Tickvol\n2024-01-02,1,2,0.5,1.5,8\n";
        assert_eq!(parse_csv(tickvol).unwrap()[0].volume, 8.0);
    }

    #[test]
    fn sniffs_semicolon_and_tab_and_reads_decimal_commas() {
        let semi = "Date;Open;High;Low;Close;Volume\n2024-01-02;1,10;1,20;1,00;1,15;10\n";
        let bars = parse_csv(semi).unwrap();
        assert_eq!(
            (bars[0].open, bars[0].high, bars[0].low, bars[0].close),
            (1.1, 1.2, 1.0, 1.15)
        );
        let tab = "time\topen\thigh\tlow\tclose\tvolume\n2024-01-02 00:00\t1.1\t1.2\t1.0\t1.15\t10\n";
        assert_eq!(parse_csv(tab).unwrap(), bars);
        // With a comma delimiter a decimal comma would split fields: refused, not misread.
        assert!(parse_csv("time,open,high,low,close\n2024-01-02,\"1,1\",1.2,1.0,1.15\n").is_err());
    }

    #[test]
    fn reads_every_time_format() {
        let row = |t: &str| format!("time,open,high,low,close\n{t},1,1,1,1\n");
        let at = |t: &str| parse_csv(&row(t)).map(|b| b[0].time).map_err(|e| e.to_string());
        let nine = T0 + 9 * 3_600_000;
        for (text, want) in [
            ("2024-01-02T09:00:00Z", nine),
            ("2024-01-02T11:00:00+02:00", nine),
            ("2024-01-02 09:00:00", nine),
            ("2024-01-02T09:00", nine),
            ("2024-01-02 09:00:00.250", nine + 250),
            ("2024.01.02 09:00", nine),
            ("2024/01/02", T0),
            ("02.01.2024 09:00:00.000", nine), // Dukascopy: day first
            ("2024-01-02", T0),
            ("1704186000", nine),          // unix seconds
            ("1704186000.5", nine + 500),  // fractional seconds
            ("1704186000000", nine),       // unix milliseconds
            ("1704186000000000", nine),    // microseconds
            ("1704186000000000000", nine), // nanoseconds
            ("0", 0),
        ] {
            assert_eq!(at(text), Ok(want), "{text}");
        }
        for bad in [
            "yesterday",
            "2024-13-01",
            "02/01/2024",
            "2024-01-02 25:00",
            "12:00",
            "1.2.3",
            "",
        ] {
            let e = at(bad).unwrap_err();
            assert!(e.contains(r#"line 2, column "time": not a time"#), "{bad}: {e}");
        }
    }

    #[test]
    fn missing_volume_is_zero() {
        let text = "time,open,high,low,close\n2024-01-02,1,2,0.5,1.5\n";
        assert_eq!(parse_csv(text).unwrap()[0].volume, 0.0);
    }

    #[test]
    fn errors_name_the_line_and_the_column() {
        let text = "time,open,high,low,close,volume\n\n2024-01-02,1,2,0.5,1.5,1\n2024-01-03,1,1.0x,0.5,1.5,1\n";
        assert_eq!(err(text), r#"parse error: line 4, column "high": not a number: "1.0x""#);
        let short = "time,open,high,low,close,volume\n2024-01-02,1,2,0.5\n";
        assert!(
            err(short).contains(r#"line 2, column "close": missing"#),
            "{}",
            err(short)
        );
        let mt5 = "<DATE>\t<TIME>\t<OPEN>\t<HIGH>\t<LOW>\t<CLOSE>\n2024.01.32\t00:00:00\t1\t1\t1\t1\n";
        assert!(
            err(mt5).contains(r#"line 2, column "<DATE>": not a date: "2024.01.32""#),
            "{}",
            err(mt5)
        );
        let unordered =
            "time,open,high,low,close,volume\n2017-04-19T10:00:00Z,1,1,1,1,1\n2017-04-19T09:00:00Z,1,1,1,1,1\n";
        assert!(
            err(unordered).contains("line 3: time 2017-04-19T09:00:00Z is not after"),
            "{}",
            err(unordered)
        );
        let inconsistent = "time,open,high,low,close\n2024-01-02,1,0.5,2,1\n";
        assert!(
            err(inconsistent).starts_with("invalid input: line 2: bar at"),
            "{}",
            err(inconsistent)
        );
    }

    #[test]
    fn rejects_bad_input() {
        assert!(parse_csv("").is_err());
        assert!(parse_csv("\n  \n").is_err());
        assert!(err("a,b\n").contains("no time (or date) column"), "{}", err("a,b\n"));
        assert!(err("time,open,high,low\n1,1,1,1\n").contains("no close column"));
        assert!(err("time,open,high,low,close\n").contains("no rows"));
        assert!(err("time,Time,open,high,low,close\n").contains(r#"columns "time" and "Time""#));
        assert!(err("time,open,high,low,close,volume,Volume\n").contains("hold the same field"));
        let nan = "time,open,high,low,close,volume\n2017-04-19T10:00:00Z,1,1,1,NaN,1\n";
        assert!(parse_csv(nan).is_err());
        let negative = "time,open,high,low,close,volume\n2017-04-19T10:00:00Z,1,1,1,1,-1\n";
        assert!(parse_csv(negative).is_err());
    }

    #[test]
    fn skips_bom_blank_lines_and_ignores_unknown_columns() {
        let text = "\u{feff}\nsymbol,time,open,high,low,close,spread\n\nEURUSD,2024-01-02,1,2,0.5,1.5,3\n   \nEURUSD,2024-01-03,1,2,0.5,1.5,3\n";
        let bars = parse_csv(text).unwrap();
        assert_eq!(bars.len(), 2);
        assert_eq!(bars[0].time, T0);
    }

    /// Every file of data/market parses, with the same bars as a plain reading
    /// of its `time,open,high,low,close,volume` rows.
    #[test]
    fn every_market_file_parses_as_before() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/market");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "csv") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let bars = parse_csv(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let mut lines = text.lines().filter(|l| !l.trim().is_empty());
            assert_eq!(lines.next(), Some("time,open,high,low,close,volume"));
            let plain: Vec<Bar> = lines
                .map(|l| {
                    let f: Vec<&str> = l.split(',').collect();
                    let n = |i: usize| f[i].parse::<f64>().unwrap();
                    Bar {
                        time: parse_iso(f[0]).unwrap(),
                        open: n(1),
                        high: n(2),
                        low: n(3),
                        close: n(4),
                        volume: n(5),
                    }
                })
                .collect();
            assert_eq!(bars, plain, "{}", path.display());
            files += 1;
        }
        assert!(files >= 9, "only {files} files in {}", dir.display());
    }
}
