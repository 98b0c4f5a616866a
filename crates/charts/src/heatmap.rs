//! The picture of `get_correlation_matrix`: the matrix as a heat map.
//!
//! Each cell is coloured from blue (−1: the pair moves against itself)
//! through white (0) to red (+1: the pair moves together) and carries its
//! value; an undefined correlation (a symbol whose price did not move) is a
//! grey `n/a`. A colour bar on the right gives the scale, and the lines under
//! the grid name the most and least correlated pairs.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde_json::Value;

use crate::json::{self, num, text};
use crate::style::{self, GREY, fixed, span_text};
use crate::{Area, ChartError, OrDraw};

/// The colour of correlation `v` (clamped to [-1, 1]).
fn color(v: f64) -> RGBColor {
    let v = v.clamp(-1.0, 1.0);
    let (target, t) = if v >= 0.0 {
        ((178.0, 24.0, 43.0), v)
    } else {
        ((33.0, 102.0, 172.0), -v)
    };
    let mix = |end: f64| (255.0 + (end - 255.0) * t).round() as u8;
    RGBColor(mix(target.0), mix(target.1), mix(target.2))
}

/// `a/b 0.91, c/d 0.85` from a list of `{ "a", "b", "correlation" }`.
fn pairs(list: Option<&Value>) -> String {
    list.and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(|p| {
                    Some(format!(
                        "{}/{} {}",
                        text(p, "a"),
                        text(p, "b"),
                        fixed(num(p.get("correlation")?)?, 2)
                    ))
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// `get_correlation_matrix`: the matrix as a heat map.
pub(crate) fn draw(root: &Area<'_>, output: &Value, _: Option<&Value>) -> Result<(), ChartError> {
    let symbols: Vec<&str> = json::array(output, "symbols", "get_correlation_matrix output")?
        .iter()
        .map(|s| s.as_str().unwrap_or("?"))
        .collect();
    let rows = json::array(output, "matrix", "get_correlation_matrix output")?;
    let n = symbols.len();
    let method = match text(output, "method") {
        "spearman" => "Spearman (rank)",
        "pearson" => "Pearson",
        other => other,
    };
    let title = format!(
        "{method} correlation of log returns \u{2014} {} {}",
        text(output, "timeframe"),
        if n == 0 {
            String::new()
        } else {
            format!("({n} symbols)")
        }
    );
    if n == 0 || rows.len() != n {
        return crate::message(root, &title, "No matrix to draw");
    }
    let value = |i: usize, j: usize| rows.get(i)?.get(j).and_then(num);

    let (width, height) = root.dim_in_pixel();
    root.fill(&WHITE).or_draw()?;
    let label = style::label_size(height);
    let body = root
        .margin(8, 0, 0, 0)
        .titled(&title, ("sans-serif", style::title_size(height)).into_font())
        .or_draw()?;
    let (from, to) = (
        output.get("from").and_then(json::time),
        output.get("to").and_then(json::time),
    );
    let span = match (from, to) {
        (Some(f), Some(t)) => format!("{} \u{b7} ", span_text(f, t)),
        _ => String::new(),
    };
    let subtitle = format!(
        "{span}{} aligned returns \u{b7} blue = opposite, red = together",
        output.get("returns").and_then(Value::as_u64).unwrap_or(0)
    );
    body.draw(&Text::new(
        subtitle,
        (width as i32 / 2, 0),
        style::text(label, GREY, HPos::Center, VPos::Top),
    ))
    .or_draw()?;

    // Layout in pixels: row labels, the grid, the colour bar; two lines of pairs below.
    let (bw, bh) = body.dim_in_pixel();
    let longest = symbols.iter().map(|s| s.chars().count()).max().unwrap_or(1) as f64;
    let row_label = (longest * label * 0.62 + 16.0).clamp(60.0, 220.0) as i32;
    let top = (label * 2.0) as i32 + (label * 2.2) as i32;
    let bottom = (label * 4.5) as i32;
    let bar = 110;
    let avail_w = bw as i32 - row_label - bar - 20;
    let avail_h = bh as i32 - top - bottom;
    let cell = (avail_w.min(avail_h) / n as i32).max(8);
    let grid = cell * n as i32;
    let left = row_label + (avail_w - grid).max(0) / 2;
    let value_size = (f64::from(cell) / 4.0).clamp(9.0, 20.0);
    // Column names: one row when they fit, else two staggered rows (twice the room).
    let fits = |room: f64| label.min(room / (longest * 0.62));
    let staggered = fits(f64::from(cell)) < label * 0.85;
    let column_size = if staggered {
        fits(f64::from(cell) * 2.0 - 8.0).max(8.0)
    } else {
        fits(f64::from(cell)).max(8.0)
    };

    for (i, name) in symbols.iter().enumerate() {
        let y = top + i as i32 * cell + cell / 2;
        body.draw(&Text::new(
            (*name).to_owned(),
            (left - 8, y),
            style::text(label, BLACK, HPos::Right, VPos::Center),
        ))
        .or_draw()?;
        let x = left + i as i32 * cell + cell / 2;
        let lift = if staggered && i % 2 == 1 {
            (column_size * 1.3) as i32
        } else {
            0
        };
        body.draw(&Text::new(
            (*name).to_owned(),
            (x, top - 6 - lift),
            style::text(column_size, BLACK, HPos::Center, VPos::Bottom),
        ))
        .or_draw()?;
    }
    for i in 0..n {
        for j in 0..n {
            let (x0, y0) = (left + j as i32 * cell, top + i as i32 * cell);
            let v = value(i, j);
            let fill = v.map_or(RGBColor(215, 215, 215), color);
            body.draw(&Rectangle::new([(x0, y0), (x0 + cell, y0 + cell)], fill.filled()))
                .or_draw()?;
            body.draw(&Rectangle::new(
                [(x0, y0), (x0 + cell, y0 + cell)],
                WHITE.stroke_width(1),
            ))
            .or_draw()?;
            if cell >= 22 {
                let (words, ink) = match v {
                    Some(v) => (fixed(v, 2), if v.abs() > 0.6 { WHITE } else { BLACK }),
                    None => ("n/a".to_owned(), GREY),
                };
                body.draw(&Text::new(
                    words,
                    (x0 + cell / 2, y0 + cell / 2),
                    style::text(value_size, ink, HPos::Center, VPos::Center),
                ))
                .or_draw()?;
            }
        }
    }

    // Colour bar: +1 at the top, −1 at the bottom.
    let bx = left + grid + 30;
    let steps = grid.max(1);
    for k in 0..steps {
        let v = 1.0 - 2.0 * f64::from(k) / f64::from(steps);
        body.draw(&Rectangle::new(
            [(bx, top + k), (bx + 18, top + k + 1)],
            color(v).filled(),
        ))
        .or_draw()?;
    }
    body.draw(&Rectangle::new(
        [(bx, top), (bx + 18, top + grid)],
        GREY.stroke_width(1),
    ))
    .or_draw()?;
    for v in [1.0, 0.5, 0.0, -0.5, -1.0] {
        let y = top + ((1.0 - v) / 2.0 * f64::from(grid)).round() as i32;
        body.draw(&Text::new(
            if v > 0.0 {
                format!("+{}", fixed(v, 1))
            } else {
                fixed(v, 1)
            },
            (bx + 24, y),
            style::text(label, BLACK, HPos::Left, VPos::Center),
        ))
        .or_draw()?;
    }

    // The pairs the tool names.
    let most = pairs(output.get("most_correlated"));
    let least = pairs(output.get("least_correlated"));
    let mut y = top + grid + (label * 1.2) as i32;
    for (name, list) in [("Most correlated", most), ("Least correlated", least)] {
        if list.is_empty() {
            continue;
        }
        body.draw(&Text::new(
            format!("{name}: {list}"),
            (bw as i32 / 2, y),
            style::text(label, BLACK, HPos::Center, VPos::Top),
        ))
        .or_draw()?;
        y += (label * 1.6) as i32;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn colours_run_from_blue_through_white_to_red() {
        assert_eq!(color(0.0), RGBColor(255, 255, 255));
        assert_eq!(color(1.0), RGBColor(178, 24, 43));
        assert_eq!(color(-1.0), RGBColor(33, 102, 172));
        assert_eq!(color(7.0), color(1.0), "clamped");
        let half = color(0.5);
        assert!(half.0 > half.2 && half.1 < 255);
    }

    #[test]
    fn pairs_are_listed_with_two_decimals() {
        let l = json!([{ "a": "EURUSD", "b": "GBPUSD", "correlation": 0.912 }, { "a": "X", "b": "Y", "correlation": -0.5 }]);
        assert_eq!(pairs(Some(&l)), "EURUSD/GBPUSD 0.91, X/Y -0.50");
        assert_eq!(pairs(None), "");
    }
}
