//! The picture of `detect_structure`: its events drawn over the candles they
//! were detected on.
//!
//! The tool's output has no candles, so the caller passes the `get_bars`
//! output of the same bars (`from` to `to` of the output). The chart shows
//! the last [`MAX_STRUCTURE_CANDLES`] of them; zones confirmed earlier that
//! reach into that window are drawn from its left edge.
//!
//! - fair value gaps: a green (bullish) or red (bearish) band from the gap's
//!   middle bar until the bar that mitigated it, or to the right edge while
//!   it is open;
//! - order blocks: a blue (bullish) or orange (bearish) band from the
//!   order-block candle until it was mitigated or invalidated, labelled `OB`;
//! - BOS and CHoCH: a line at the broken level from the broken swing to the
//!   bar that broke it, labelled `BOS` or `CHoCH`, green upwards, red
//!   downwards;
//! - swings: a dark triangle above a swing high, below a swing low (swings
//!   superseded by a more extreme swing of the same leg are left out);
//! - liquidity pools: a dashed purple line at the pool's level from its
//!   anchor swing until it was swept (a `×` on the sweeping bar) or to the
//!   right edge, labelled `EQH` or `EQL`.

use std::collections::{BTreeMap, BTreeSet};

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde_json::Value;

use crate::candles::{PriceChart, draw_candles, intraday, layout, price_chart};
use crate::json::{self, Candle, index, num, text};
use crate::style::{self, BLUE, GREEN, GREY, ORANGE, PURPLE, RED, span_text};
use crate::{Area, ChartError, OrDraw};

/// Most candles the structure chart shows.
pub(crate) const MAX_STRUCTURE_CANDLES: usize = 160;

/// Bullish or bearish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    Up,
    Down,
}

fn dir(v: &Value, field: &str) -> Option<Dir> {
    match text(v, field) {
        "bullish" | "high" => Some(Dir::Up),
        "bearish" | "low" => Some(Dir::Down),
        _ => None,
    }
}

/// A zone: a fair value gap or an order block.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Zone {
    dir: Dir,
    index: usize,
    top: f64,
    bottom: f64,
    /// The bar that ended it (mitigation, or invalidation for order blocks).
    end: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Break {
    choch: bool,
    dir: Dir,
    index: usize,
    level: f64,
    broken: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Swing {
    /// `Up` for a swing high.
    dir: Dir,
    index: usize,
    level: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Pool {
    dir: Dir,
    index: usize,
    level: f64,
    swept: Option<usize>,
}

/// The events of a `detect_structure` output, resolved: each zone with its
/// end, each pool in its latest snapshot with its sweep, superseded swings
/// and gaps left out.
#[derive(Debug, Default)]
struct Structure {
    gaps: Vec<Zone>,
    blocks: Vec<Zone>,
    breaks: Vec<Break>,
    swings: Vec<Swing>,
    pools: Vec<Pool>,
}

impl Structure {
    fn parse(events: &[Value]) -> Self {
        let mut s = Structure::default();
        let mut gaps: BTreeMap<usize, Zone> = BTreeMap::new();
        let mut blocks: BTreeMap<usize, Zone> = BTreeMap::new();
        let mut pools: BTreeMap<usize, Pool> = BTreeMap::new();
        let mut swings: BTreeMap<usize, Swing> = BTreeMap::new();
        let mut superseded_swings = BTreeSet::new();
        let mut superseded_gaps = BTreeSet::new();
        for wrapped in events {
            let e = wrapped.get("event").unwrap_or(wrapped);
            let at = |f: &str| e.get(f).and_then(index);
            let level = |f: &str| e.get(f).and_then(num);
            match text(e, "type") {
                "swing" => {
                    if let (Some(d), Some(i), Some(l)) = (dir(e, "kind"), at("index"), level("level")) {
                        swings.insert(
                            i,
                            Swing {
                                dir: d,
                                index: i,
                                level: l,
                            },
                        );
                        superseded_swings.extend(at("supersedes"));
                    }
                }
                "fair_value_gap" => {
                    if let (Some(d), Some(i), Some(top), Some(bottom)) =
                        (dir(e, "direction"), at("index"), level("top"), level("bottom"))
                    {
                        gaps.insert(
                            i,
                            Zone {
                                dir: d,
                                index: i,
                                top,
                                bottom,
                                end: None,
                            },
                        );
                        superseded_gaps.extend(at("supersedes"));
                    }
                }
                "fvg_mitigated" => {
                    if let (Some(i), Some(m)) = (at("index"), at("mitigated_index").or(at("confirmed_at")))
                        && let Some(z) = gaps.get_mut(&i)
                    {
                        z.end.get_or_insert(m);
                    }
                }
                "order_block" => {
                    if let (Some(d), Some(i), Some(top), Some(bottom)) =
                        (dir(e, "direction"), at("index"), level("top"), level("bottom"))
                    {
                        blocks.insert(
                            i,
                            Zone {
                                dir: d,
                                index: i,
                                top,
                                bottom,
                                end: None,
                            },
                        );
                    }
                }
                "order_block_mitigated" | "order_block_invalidated" => {
                    let end = at("mitigated_index").or(at("invalidated_index")).or(at("confirmed_at"));
                    if let (Some(i), Some(m)) = (at("index"), end)
                        && let Some(z) = blocks.get_mut(&i)
                    {
                        z.end.get_or_insert(m);
                    }
                }
                "liquidity_pool" => {
                    if let (Some(d), Some(i), Some(l)) = (dir(e, "kind"), at("index"), level("level")) {
                        let swept = pools.get(&i).and_then(|p| p.swept);
                        pools.insert(
                            i,
                            Pool {
                                dir: d,
                                index: i,
                                level: l,
                                swept,
                            },
                        );
                    }
                }
                "liquidity_swept" => {
                    if let (Some(i), Some(m)) = (at("index"), at("swept_index"))
                        && let Some(p) = pools.get_mut(&i)
                    {
                        p.swept.get_or_insert(m);
                    }
                }
                "structure_break" => {
                    if let (Some(d), Some(i), Some(l), Some(b)) =
                        (dir(e, "direction"), at("index"), level("level"), at("broken_index"))
                    {
                        s.breaks.push(Break {
                            choch: text(e, "kind") == "choch",
                            dir: d,
                            index: i,
                            level: l,
                            broken: b,
                        });
                    }
                }
                _ => {}
            }
        }
        s.gaps = gaps
            .into_values()
            .filter(|g| !superseded_gaps.contains(&g.index))
            .collect();
        s.blocks = blocks.into_values().collect();
        s.swings = swings
            .into_values()
            .filter(|w| !superseded_swings.contains(&w.index))
            .collect();
        s.pools = pools.into_values().collect();
        s
    }
}

/// The analysed series within the fetched bars: the candles from the
/// output's `from` on, `count` of them; when `from` is not among them, the
/// last `count`.
fn analysed(fetched: &[Candle], from: Option<i64>, count: usize) -> Vec<Candle> {
    let start = from
        .and_then(|f| fetched.iter().position(|c| c.time == f))
        .unwrap_or_else(|| fetched.len().saturating_sub(count));
    fetched.iter().skip(start).take(count.max(1)).copied().collect()
}

/// The visible part of `[x0, x1] × [y0, y1]` (data coordinates) within the
/// window `[-0.5, last + 0.5] × [lo, hi]`, if any.
fn clip(x0: f64, x1: f64, (y0, y1): (f64, f64), last: f64, (lo, hi): (f64, f64)) -> Option<[(f64, f64); 2]> {
    let (xa, xb) = (x0.max(-0.5), x1.min(last + 0.5));
    let (ya, yb) = (y0.min(y1).max(lo), y0.max(y1).min(hi));
    (xa < xb && ya <= yb).then_some([(xa, ya), (xb, yb)])
}

/// `detect_structure`: the events over the candles (`bars`: `get_bars` of the same bars).
pub(crate) fn draw(root: &Area<'_>, output: &Value, bars: Option<&Value>) -> Result<(), ChartError> {
    let events = json::array(output, "events", "detect_structure output")?;
    let (symbol, timeframe) = (text(output, "symbol"), text(output, "timeframe"));
    let count = output.get("bars").and_then(index).unwrap_or(0);
    let fetched = match bars {
        Some(b) => json::candles(b)?,
        None => Vec::new(),
    };
    let series = analysed(&fetched, output.get("from").and_then(json::time), count);
    let structure = Structure::parse(events);
    let title = format!("{symbol} {timeframe} \u{2014} market structure (SMC)");
    let Some(last) = series.last() else {
        return crate::message(root, &title, "No bars to draw");
    };
    let shown = series.len().min(MAX_STRUCTURE_CANDLES);
    let offset = series.len() - shown;
    let window = &series[offset..];
    let open_gaps = structure.gaps.iter().filter(|g| g.end.is_none()).count();
    let bos = structure.breaks.iter().filter(|b| !b.choch).count();
    let subtitle = format!(
        "{} \u{b7} last {shown} of {} bars \u{b7} FVG {} ({open_gaps} open) \u{b7} OB {} \u{b7} BOS {bos} \u{b7} CHoCH {} \u{b7} swings {} \u{b7} pools {}",
        span_text(window[0].time, last.time),
        series.len(),
        structure.gaps.len(),
        structure.blocks.len(),
        structure.breaks.len() - bos,
        structure.swings.len(),
        structure.pools.len(),
    );
    let layout = layout(root, &title, &subtitle, true)?;
    let mut chart = price_chart(&layout.plot, layout.label, window, intraday(timeframe, window))?;
    let size = layout.label;
    let x = |i: usize| i as f64 - offset as f64;
    let last_x = (shown - 1) as f64;
    let y_range = {
        let r = chart.y_range();
        (r.start, r.end)
    };
    draw_zones(&mut chart, &structure, offset, last_x, y_range, size)?;
    draw_candles(&mut chart, window)?;

    // Liquidity pools: dashed line, label at the start, a cross on the sweep.
    for p in &structure.pools {
        let end = p.swept.map_or(last_x + 0.5, x);
        let Some([(x0, y), (x1, _)]) = clip(x(p.index), end, (p.level, p.level), last_x, y_range) else {
            continue;
        };
        chart
            .draw_series(DashedLineSeries::new([(x0, y), (x1, y)], 6, 4, PURPLE.stroke_width(2)))
            .or_draw()?;
        let label = if p.dir == Dir::Up { "EQH" } else { "EQL" };
        let dy = if p.dir == Dir::Up { -3 } else { 3 };
        let v = if p.dir == Dir::Up { VPos::Bottom } else { VPos::Top };
        chart
            .draw_series(std::iter::once(
                EmptyElement::at((x0, y)) + Text::new(label, (2, dy), style::text(size, PURPLE, HPos::Left, v)),
            ))
            .or_draw()?;
        if let Some(s) = p.swept
            && (offset..offset + shown).contains(&s)
        {
            chart
                .draw_series(std::iter::once(Cross::new((x(s), y), 6, PURPLE.stroke_width(2))))
                .or_draw()?;
        }
    }

    // BOS / CHoCH: the broken level from the swing to the breaking bar.
    for b in &structure.breaks {
        let Some([(x0, y), (x1, _)]) = clip(x(b.index), x(b.broken), (b.level, b.level), last_x, y_range) else {
            continue;
        };
        let color = if b.dir == Dir::Up { GREEN } else { RED };
        chart
            .draw_series(LineSeries::new([(x0, y), (x1, y)], color.stroke_width(2)))
            .or_draw()?;
        let (dy, v) = if b.dir == Dir::Up {
            (-3, VPos::Bottom)
        } else {
            (3, VPos::Top)
        };
        let label = if b.choch { "CHoCH" } else { "BOS" };
        chart
            .draw_series(std::iter::once(
                EmptyElement::at(((x0 + x1) / 2.0, y))
                    + Text::new(label, (0, dy), style::text(size, color, HPos::Center, v)),
            ))
            .or_draw()?;
    }

    // Swings: a triangle pointing at the high or low.
    let dark = RGBColor(40, 40, 40);
    for s in structure
        .swings
        .iter()
        .filter(|s| (offset..offset + shown).contains(&s.index))
    {
        if s.level < y_range.0 || s.level > y_range.1 {
            continue;
        }
        let shape = if s.dir == Dir::Up {
            vec![(-5, -14), (5, -14), (0, -5)]
        } else {
            vec![(-5, 14), (5, 14), (0, 5)]
        };
        chart
            .draw_series(std::iter::once(
                EmptyElement::at((x(s.index), s.level)) + Polygon::new(shape, dark.filled()),
            ))
            .or_draw()?;
    }

    if let Some(strip) = &layout.legend {
        legend(strip, size)?;
    }
    Ok(())
}

/// Fair value gaps and order blocks, under the candles.
fn draw_zones(
    chart: &mut PriceChart<'_, '_>,
    structure: &Structure,
    offset: usize,
    last_x: f64,
    y_range: (f64, f64),
    size: f64,
) -> Result<(), ChartError> {
    let x = |i: usize| i as f64 - offset as f64;
    for (zones, up, down, label) in [
        (&structure.gaps, GREEN, RED, None),
        (&structure.blocks, BLUE, ORANGE, Some("OB")),
    ] {
        for z in zones {
            let end = z.end.map_or(last_x + 0.5, |e| x(e) + 0.5);
            let Some(rect) = clip(x(z.index) - 0.5, end, (z.top, z.bottom), last_x, y_range) else {
                continue;
            };
            let color = if z.dir == Dir::Up { up } else { down };
            chart
                .draw_series(std::iter::once(Rectangle::new(rect, color.mix(0.18).filled())))
                .or_draw()?;
            chart
                .draw_series(std::iter::once(Rectangle::new(rect, color.mix(0.6).stroke_width(1))))
                .or_draw()?;
            if let Some(label) = label {
                chart
                    .draw_series(std::iter::once(
                        EmptyElement::at((rect[0].0, rect[1].1))
                            + Text::new(label, (3, 2), style::text(size, color, HPos::Left, VPos::Top)),
                    ))
                    .or_draw()?;
            }
        }
    }
    Ok(())
}

/// The legend strip: one swatch and name per kind of mark.
fn legend(strip: &Area<'_>, size: f64) -> Result<(), ChartError> {
    let (width, height) = strip.dim_in_pixel();
    let entries: [(&str, RGBColor, u8); 8] = [
        ("Bullish FVG", GREEN, 0),
        ("Bearish FVG", RED, 0),
        ("Bullish OB", BLUE, 0),
        ("Bearish OB", ORANGE, 0),
        ("BOS/CHoCH \u{2191}", GREEN, 1),
        ("BOS/CHoCH \u{2193}", RED, 1),
        ("Swing high/low", RGBColor(40, 40, 40), 2),
        ("Liquidity, \u{d7} swept", PURPLE, 3),
    ];
    let size = size * 0.9;
    // Each entry: a 22-pixel swatch, its name, a gap; the row is centred.
    let text_width = |name: &str| (name.chars().count() as f64 * size * 0.6) as i32;
    let widths: Vec<i32> = entries.iter().map(|(name, _, _)| 28 + text_width(name) + 18).collect();
    let total: i32 = widths.iter().sum();
    let mut x = ((width as i32 - total) / 2).max(4);
    let y = height as i32 / 2;
    for ((name, color, mark), w) in entries.iter().zip(widths) {
        match mark {
            0 => strip
                .draw(&Rectangle::new([(x, y - 7), (x + 22, y + 7)], color.mix(0.35).filled()))
                .or_draw()?,
            1 => strip
                .draw(&PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(3)))
                .or_draw()?,
            2 => strip
                .draw(&Polygon::new(
                    vec![(x + 5, y - 6), (x + 17, y - 6), (x + 11, y + 4)],
                    color.filled(),
                ))
                .or_draw()?,
            _ => strip
                .draw(&PathElement::new(vec![(x, y), (x + 8, y)], color.stroke_width(3)))
                .and_then(|()| strip.draw(&PathElement::new(vec![(x + 14, y), (x + 22, y)], color.stroke_width(3))))
                .or_draw()?,
        }
        strip
            .draw(&Text::new(
                *name,
                (x + 28, y),
                style::text(size, GREY, HPos::Left, VPos::Center),
            ))
            .or_draw()?;
        x += w;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(e: Value) -> Value {
        json!({ "time": "2024-01-01T00:00:00Z", "confirmed_time": "2024-01-01T00:00:00Z", "event": e })
    }

    #[test]
    fn events_resolve_to_zones_with_their_ends_and_latest_snapshots() {
        let events = [
            event(
                json!({ "type": "swing", "kind": "high", "index": 5, "time": 0, "level": 2.0, "confirmed_at": 7, "supersedes": null }),
            ),
            event(
                json!({ "type": "swing", "kind": "high", "index": 9, "time": 0, "level": 2.5, "confirmed_at": 11, "supersedes": 5 }),
            ),
            event(
                json!({ "type": "fair_value_gap", "direction": "bullish", "index": 3, "time": 0, "top": 1.2, "bottom": 1.1, "confirmed_at": 4, "supersedes": null }),
            ),
            event(
                json!({ "type": "fvg_mitigated", "direction": "bullish", "index": 3, "mitigated_index": 8, "confirmed_at": 8 }),
            ),
            event(
                json!({ "type": "fair_value_gap", "direction": "bearish", "index": 12, "time": 0, "top": 1.5, "bottom": 1.4, "confirmed_at": 13, "supersedes": null }),
            ),
            event(
                json!({ "type": "order_block", "direction": "bearish", "index": 6, "time": 0, "top": 2.0, "bottom": 1.9, "volume": 1, "strength_percent": 50, "swing_index": 4, "confirmed_at": 10 }),
            ),
            event(
                json!({ "type": "order_block_mitigated", "direction": "bearish", "index": 6, "mitigated_index": 14, "confirmed_at": 14 }),
            ),
            event(
                json!({ "type": "order_block_invalidated", "direction": "bearish", "index": 6, "invalidated_index": 20, "confirmed_at": 20 }),
            ),
            event(
                json!({ "type": "liquidity_pool", "kind": "low", "index": 2, "time": 0, "level": 1.0, "members": [2, 6], "end": 6, "tolerance": 0.01, "confirmed_at": 8 }),
            ),
            event(
                json!({ "type": "liquidity_swept", "kind": "low", "index": 2, "swept_index": 15, "confirmed_at": 15 }),
            ),
            event(
                json!({ "type": "liquidity_pool", "kind": "low", "index": 2, "time": 0, "level": 0.99, "members": [2, 6, 9], "end": 9, "tolerance": 0.01, "confirmed_at": 16 }),
            ),
            event(
                json!({ "type": "structure_break", "kind": "choch", "direction": "bearish", "index": 7, "time": 0, "level": 1.3, "broken_index": 12, "swings": [1, 7, 9, 10], "confirmed_at": 12 }),
            ),
            event(json!({ "type": "something_new", "index": 1 })),
        ];
        let s = Structure::parse(&events);
        assert_eq!(
            s.swings,
            [Swing {
                dir: Dir::Up,
                index: 9,
                level: 2.5
            }],
            "the superseded swing is left out"
        );
        assert_eq!(s.gaps.len(), 2);
        assert_eq!((s.gaps[0].index, s.gaps[0].end), (3, Some(8)));
        assert_eq!((s.gaps[1].dir, s.gaps[1].end), (Dir::Down, None));
        assert_eq!(s.blocks[0].end, Some(14), "mitigation ends the block first");
        assert_eq!(
            s.pools,
            [Pool {
                dir: Dir::Down,
                index: 2,
                level: 0.99,
                swept: Some(15)
            }]
        );
        assert_eq!(
            s.breaks,
            [Break {
                choch: true,
                dir: Dir::Down,
                index: 7,
                level: 1.3,
                broken: 12
            }]
        );
    }

    #[test]
    fn the_analysed_bars_start_at_the_outputs_from() {
        let c = |t: i64| Candle {
            time: t,
            open: 1.0,
            high: 1.0,
            low: 1.0,
            close: 1.0,
        };
        let fetched: Vec<Candle> = (0..10).map(c).collect();
        assert_eq!(
            analysed(&fetched, Some(3), 4)
                .iter()
                .map(|c| c.time)
                .collect::<Vec<_>>(),
            [3, 4, 5, 6]
        );
        assert_eq!(
            analysed(&fetched, Some(99), 4)
                .iter()
                .map(|c| c.time)
                .collect::<Vec<_>>(),
            [6, 7, 8, 9]
        );
        assert_eq!(analysed(&fetched, None, 40).len(), 10);
    }

    #[test]
    fn zones_are_clipped_to_the_window() {
        let r = (1.0, 2.0);
        assert_eq!(clip(-10.0, 3.0, (1.5, 1.2), 9.0, r), Some([(-0.5, 1.2), (3.0, 1.5)]));
        assert_eq!(clip(2.0, 30.0, (2.5, 1.5), 9.0, r), Some([(2.0, 1.5), (9.5, 2.0)]));
        assert_eq!(clip(-10.0, -3.0, (1.5, 1.2), 9.0, r), None, "ended before the window");
        assert_eq!(clip(1.0, 3.0, (3.0, 2.5), 9.0, r), None, "above the price range");
    }
}
