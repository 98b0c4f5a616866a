//! `tradeterm backtest --chart`: the output file's format and writing it.
//! The picture itself (an equity panel over a drawdown panel) is drawn by
//! `tradeterm_charts::equity`, the renderer the servers' charts share.

use std::path::Path;

use anyhow::{Context, bail};
pub use tradeterm_charts::Size as ChartSize;
pub use tradeterm_charts::equity::EquityChart as ChartData;

/// The chart's file format, chosen by the output file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartFormat {
    /// Scalable vector graphics (`.svg`).
    Svg,
    /// RGB PNG image (`.png`).
    Png,
}

impl ChartFormat {
    /// The format of `path` from its extension (case-insensitive).
    pub fn from_path(path: &Path) -> anyhow::Result<Self> {
        let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("svg") => Ok(Self::Svg),
            Some("png") => Ok(Self::Png),
            Some(other) => bail!(
                "--chart {}: unsupported extension `.{other}` (use .svg or .png)",
                path.display()
            ),
            None => bail!("--chart {}: no file extension (use .svg or .png)", path.display()),
        }
    }
}

/// Parses `WIDTHxHEIGHT` (e.g. `1200x800`) within [`ChartSize::MIN`] and [`ChartSize::MAX`].
pub fn parse_size(s: &str) -> Result<ChartSize, String> {
    ChartSize::parse(s)
}

/// Draws `data` to `path` in `format` at `size`.
pub fn write(path: &Path, format: ChartFormat, size: ChartSize, data: &ChartData<'_>) -> anyhow::Result<()> {
    let bytes = match format {
        ChartFormat::Svg => tradeterm_charts::equity::svg(size, data)?.into_bytes(),
        ChartFormat::Png => tradeterm_charts::equity::png(size, data)?.bytes,
    };
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_comes_from_the_extension() {
        assert_eq!(ChartFormat::from_path(Path::new("a/b.SVG")).unwrap(), ChartFormat::Svg);
        assert_eq!(ChartFormat::from_path(Path::new("b.png")).unwrap(), ChartFormat::Png);
        let e = ChartFormat::from_path(Path::new("b.jpg")).unwrap_err().to_string();
        assert!(e.contains(".jpg") && e.contains(".svg or .png"), "{e}");
        assert!(ChartFormat::from_path(Path::new("chart")).is_err());
    }

    #[test]
    fn size_is_width_x_height_within_limits() {
        assert_eq!(
            parse_size("800x600").unwrap(),
            ChartSize {
                width: 800,
                height: 600
            }
        );
        assert!(parse_size("100x100").is_err());
    }
}
