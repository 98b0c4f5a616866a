//! Bar series helpers: CSV parsing in the `time,open,high,low,close,volume`
//! format and series validation.

use crate::time::parse_iso;
use crate::{Bar, CoreError};

/// Parses CSV text with the header `time,open,high,low,close,volume`
/// (`time` in ISO 8601). Blank lines are skipped. The series is validated
/// with [`validate_series`].
pub fn parse_csv(text: &str) -> Result<Vec<Bar>, CoreError> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Err(CoreError::InvalidInput("empty CSV".into()));
    };
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    if cols != ["time", "open", "high", "low", "close", "volume"] {
        return Err(CoreError::Parse(format!(
            "unexpected CSV header `{header}` (expected time,open,high,low,close,volume)"
        )));
    }
    let mut bars = Vec::with_capacity(text.len() / 48);
    for (no, line) in lines {
        let mut it = line.split(',');
        let mut field = |name: &str| {
            it.next()
                .map(str::trim)
                .ok_or_else(|| CoreError::Parse(format!("line {}: missing `{name}`", no + 1)))
        };
        let time = parse_iso(field("time")?)?;
        let mut num = |name: &str| -> Result<f64, CoreError> {
            let raw = field(name)?;
            raw.parse::<f64>()
                .map_err(|_| CoreError::Parse(format!("line {}: bad number `{raw}` in `{name}`", no + 1)))
        };
        let bar = Bar {
            time,
            open: num("open")?,
            high: num("high")?,
            low: num("low")?,
            close: num("close")?,
            volume: num("volume")?,
        };
        bars.push(bar);
    }
    validate_series(&bars)?;
    Ok(bars)
}

/// Checks a series: not empty, every bar well formed, times strictly increasing.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_shared_format() {
        let text = "time,open,high,low,close,volume\n2017-04-19T09:00:00Z,1.0716,1.0722,1.07083,1.07219,1413\n2017-04-19T10:00:00Z,1.07214,1.07296,1.07214,1.0726,1241\n";
        let bars = parse_csv(text).unwrap();
        assert_eq!(bars.len(), 2);
        assert_eq!(bars[1].close, 1.0726);
        assert_eq!(bars[1].time - bars[0].time, 3_600_000);
    }

    #[test]
    fn rejects_bad_input() {
        assert!(parse_csv("").is_err());
        assert!(parse_csv("a,b\n").is_err());
        let unordered =
            "time,open,high,low,close,volume\n2017-04-19T10:00:00Z,1,1,1,1,1\n2017-04-19T09:00:00Z,1,1,1,1,1\n";
        assert!(parse_csv(unordered).is_err());
        let nan = "time,open,high,low,close,volume\n2017-04-19T10:00:00Z,1,1,1,NaN,1\n";
        assert!(parse_csv(nan).is_err());
    }
}
