//! A reader of the Prometheus text format, enough for what `/metrics`
//! writes: samples with labels, comments skipped. The tests that scrape a
//! running stack use it ([`Scrape::value`] of one labelled series).

use std::collections::BTreeMap;

/// One sample line: `name{label="value",…} number`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Metric name (with its `_bucket`, `_sum`, `_count` suffix for histograms).
    pub name: String,
    /// Labels by name.
    pub labels: BTreeMap<String, String>,
    /// The value.
    pub value: f64,
}

/// A parsed scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scrape {
    /// Every sample, in order.
    pub samples: Vec<Sample>,
}

impl Scrape {
    /// Parses the text format; lines that are not samples are skipped.
    pub fn parse(text: &str) -> Self {
        Self {
            samples: text.lines().filter_map(sample).collect(),
        }
    }

    /// The sum of the samples named `name` whose labels include all of
    /// `labels` (0 when there is none: a series not yet written).
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.samples
            .iter()
            .filter(|s| {
                s.name == name
                    && labels
                        .iter()
                        .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|s| s.value)
            .sum()
    }

    /// Whether a sample named `name` with all of `labels` exists.
    pub fn has(&self, name: &str, labels: &[(&str, &str)]) -> bool {
        self.samples.iter().any(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
    }
}

fn sample(line: &str) -> Option<Sample> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (head, value) = line.rsplit_once(' ')?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    let (name, labels) = match head.split_once('{') {
        Some((name, rest)) => (name, labels(rest.strip_suffix('}')?)?),
        None => (head, BTreeMap::new()),
    };
    Some(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

/// `a="x",b="y\"z"` → labels (escapes `\\`, `\"`, `\n` undone).
fn labels(mut rest: &str) -> Option<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                '"' => break i,
                c => value.push(c),
            }
        };
        out.insert(key.trim_start_matches(',').to_owned(), value);
        rest = after[end + 1..].trim_start_matches(',');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_with_labels_and_escapes() {
        let text = "# HELP x_total help\n# TYPE x_total counter\nx_total{a=\"1\",b=\"q\\\"uote\"} 3\nx_total{a=\"2\"} 4\ny 0.5\nh_bucket{le=\"+Inf\"} 7\n";
        let s = Scrape::parse(text);
        assert_eq!(s.samples.len(), 4);
        assert_eq!(s.value("x_total", &[("b", "q\"uote")]), 3.0);
        assert_eq!(s.value("x_total", &[]), 7.0);
        assert_eq!(s.value("y", &[]), 0.5);
        assert_eq!(s.value("h_bucket", &[("le", "+Inf")]), 7.0);
        assert_eq!(s.value("missing", &[]), 0.0);
        assert!(!s.has("x_total", &[("a", "3")]));
    }
}
