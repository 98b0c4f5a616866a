//! Rubric score of a trading-journal entry.
//!
//! Seven criteria, 100 points in all (see `docs/coaching.md`):
//!
//! | criterion | max | needs |
//! |---|---|---|
//! | `plan` | 15 | nothing (an absent plan is what it scores) |
//! | `stop_loss` | 15 | nothing (an absent stop is what it scores) |
//! | `risk_size` | 15 | `risk_percent` (input field or a `risk:<p>%` tag) |
//! | `planned_rr` | 10 | side, entry, stop, take profit |
//! | `realised_r` | 10 | side, entry, stop, exit |
//! | `rule_adherence` | 20 | `rules_followed` or a recognised rule tag |
//! | `emotions` | 15 | a recognised emotion tag |
//!
//! A criterion without the data it needs is **not scored**: it is listed
//! with what is missing, and the total is the points earned over the points
//! of the criteria that were scored, scaled to 0-100. Nothing is guessed.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{CoreError, Side};

/// Points of `plan`: a written plan.
pub const PLAN_POINTS: f64 = 10.0;
/// Points of `plan`: a named setup.
pub const SETUP_POINTS: f64 = 5.0;
/// Max of `stop_loss`.
pub const STOP_POINTS: f64 = 15.0;
/// Points of `stop_loss` when the stop is on the wrong side of the entry.
pub const STOP_WRONG_SIDE_POINTS: f64 = 5.0;
/// Max of `risk_size`.
pub const RISK_POINTS: f64 = 15.0;
/// Risk at or below this percent of equity is good (full points).
pub const RISK_GOOD_PCT: f64 = 2.0;
/// Risk at or below this percent is fair.
pub const RISK_FAIR_PCT: f64 = 5.0;
/// Points of a fair risk.
pub const RISK_FAIR_POINTS: f64 = 7.0;
/// Max of `planned_rr`.
pub const PLANNED_RR_POINTS: f64 = 10.0;
/// Max of `realised_r`.
pub const REALISED_R_POINTS: f64 = 10.0;
/// A loss up to this many R counts as held by the stop (slippage allowance).
pub const LOSS_WITHIN_STOP_R: f64 = -1.1;
/// Max of `rule_adherence`.
pub const RULE_POINTS: f64 = 20.0;
/// Deduction per rule-breach tag.
pub const RULE_BREACH_DEDUCTION: f64 = 6.0;
/// Max of `emotions`.
pub const EMOTION_POINTS: f64 = 15.0;
/// Deduction per distinct negative emotion.
pub const EMOTION_DEDUCTION: f64 = 5.0;

/// Emotion tags that cost points.
pub const NEGATIVE_EMOTIONS: [&str; 18] = [
    "fomo",
    "revenge",
    "fear",
    "fearful",
    "greed",
    "greedy",
    "boredom",
    "bored",
    "overconfidence",
    "overconfident",
    "impatience",
    "impatient",
    "anxiety",
    "anxious",
    "frustration",
    "frustrated",
    "euphoria",
    "tilt",
];
/// Emotion tags that are recognised and cost nothing.
pub const NEUTRAL_EMOTIONS: [&str; 8] = [
    "calm",
    "disciplined",
    "patient",
    "focused",
    "confident",
    "neutral",
    "relaxed",
    "composed",
];
/// Tags that record a breach of the trader's own rules.
pub const RULE_BREACH_TAGS: [&str; 16] = [
    "moved_stop",
    "widened_stop",
    "removed_stop",
    "no_stop",
    "exited_early",
    "early_exit",
    "cut_winner",
    "chased_entry",
    "chased",
    "late_entry",
    "oversized",
    "overtrading",
    "overtraded",
    "added_to_loser",
    "averaged_down",
    "impulsive_entry",
];
/// Tags that say the rules were broken as a whole (same as `rules_followed: false`).
pub const RULES_BROKEN_TAGS: [&str; 2] = ["broke_rules", "rules_broken"];
/// Tags that say the plan / rules were followed (same as `rules_followed: true`).
pub const RULES_FOLLOWED_TAGS: [&str; 4] = ["followed_plan", "followed_rules", "rules_followed", "according_to_plan"];

/// The facts of an entry the rubric reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JournalFacts {
    /// `buy` or `sell`.
    pub side: Option<Side>,
    /// Entry price.
    pub entry_price: Option<f64>,
    /// Exit price.
    pub exit_price: Option<f64>,
    /// Stop loss.
    pub stop_loss: Option<f64>,
    /// Take profit.
    pub take_profit: Option<f64>,
    /// Name of the setup.
    pub setup: Option<String>,
    /// Written plan.
    pub plan: Option<String>,
    /// Whether the trader followed their rules.
    pub rules_followed: Option<bool>,
    /// Emotion tags.
    pub emotions: Vec<String>,
    /// Free tags.
    pub tags: Vec<String>,
    /// Risk of the trade, percent of equity (from the caller).
    pub risk_percent: Option<f64>,
}

/// Letter grade of a score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Grade {
    /// 85 and above.
    A,
    /// 70 to below 85.
    B,
    /// 55 to below 70.
    C,
    /// 40 to below 55.
    D,
    /// Below 40.
    F,
}

impl Grade {
    /// The grade of a 0-100 score.
    pub fn of(score: f64) -> Self {
        match score {
            s if s >= 85.0 => Self::A,
            s if s >= 70.0 => Self::B,
            s if s >= 55.0 => Self::C,
            s if s >= 40.0 => Self::D,
            _ => Self::F,
        }
    }
}

/// A scored criterion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Criterion {
    /// `plan`, `stop_loss`, `risk_size`, `planned_rr`, `realised_r`, `rule_adherence` or `emotions`.
    pub name: String,
    /// Points earned.
    pub points: f64,
    /// Points available.
    pub max_points: f64,
    /// Why, citing the entry's values.
    pub reason: String,
}

/// A criterion that could not be scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NotScored {
    /// Criterion name.
    pub name: String,
    /// Points it would carry.
    pub max_points: f64,
    /// The entry fields (or tags) that are missing or unusable.
    pub missing: Vec<String>,
    /// Why it was not scored.
    pub reason: String,
}

/// Result of [`score`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JournalScore {
    /// `100 · points / max_points` over the scored criteria, one decimal.
    pub score: f64,
    /// A ≥ 85, B ≥ 70, C ≥ 55, D ≥ 40, else F.
    pub grade: Grade,
    /// Points earned over the scored criteria.
    pub points: f64,
    /// Points available over the scored criteria (of 100): how much of the rubric the entry allowed to assess.
    pub max_points: f64,
    /// Scored criteria, in rubric order.
    pub criteria: Vec<Criterion>,
    /// Criteria without the data they need.
    pub not_scored: Vec<NotScored>,
    /// Concrete suggestions, one per criterion that lost points or could not be scored.
    pub suggestions: Vec<String>,
    /// Where `risk_percent` came from: `input`, `tag`, or null.
    pub risk_percent_source: Option<String>,
}

/// Lower-cases a tag and writes `-` and spaces as `_`.
pub fn normalize_tag(tag: &str) -> String {
    tag.trim()
        .to_lowercase()
        .chars()
        .map(|c| if c == '-' || c == ' ' { '_' } else { c })
        .collect()
}

/// The risk percent of a `risk:<p>`, `risk:<p>%`, `risk_pct:<p>` or `risk=<p>%` tag
/// (case-insensitive, spaces allowed around the separator), with the tag.
pub fn risk_from_tags(tags: &[String]) -> Option<(f64, String)> {
    tags.iter().find_map(|t| {
        let lower = t.trim().to_lowercase();
        let rest = ["risk_pct", "risk-pct", "risk"]
            .iter()
            .find_map(|p| lower.strip_prefix(p))?
            .trim_start();
        let value = rest.strip_prefix(':').or_else(|| rest.strip_prefix('='))?;
        let v: f64 = value.trim().trim_end_matches('%').trim().parse().ok()?;
        Some((v, t.clone()))
    })
}

fn fmt(x: f64) -> String {
    // Shortest representation that round-trips: the value exactly as given.
    format!("{x}")
}

fn blank(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(|s| s.trim().is_empty())
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn side_name(s: Side) -> &'static str {
    match s {
        Side::Buy => "buy",
        Side::Sell => "sell",
    }
}

/// Initial risk per unit `|entry − stop|`, when the stop is on the loss side of the entry.
fn initial_risk(side: Side, entry: f64, stop: f64) -> Option<f64> {
    let r = match side {
        Side::Buy => entry - stop,
        Side::Sell => stop - entry,
    };
    (r > 0.0).then_some(r)
}

/// Scores an entry (see the module documentation and `docs/coaching.md`).
///
/// # Errors
/// [`CoreError::InvalidInput`] when a price is not finite and positive, or
/// `risk_percent` is not within 0-100.
pub fn score(facts: &JournalFacts) -> Result<JournalScore, CoreError> {
    check_prices(facts)?;
    let risk = stated_risk(facts)?;
    let mut rubric = Rubric::default();
    score_plan(facts, &mut rubric);
    score_stop_loss(facts, &mut rubric);
    score_risk_size(risk.as_ref(), &mut rubric);
    score_r_multiples(facts, &mut rubric);
    score_rule_adherence(facts, &mut rubric);
    score_emotions(facts, &mut rubric);

    let Rubric {
        criteria,
        not_scored,
        suggestions,
    } = rubric;
    let points: f64 = criteria.iter().map(|criterion| criterion.points).sum();
    let max_points: f64 = criteria.iter().map(|criterion| criterion.max_points).sum();
    // `plan` and `stop_loss` are always scored, so max_points >= 30.
    let score = if max_points > 0.0 {
        round1(100.0 * points / max_points)
    } else {
        0.0
    };
    Ok(JournalScore {
        score,
        grade: Grade::of(score),
        points,
        max_points,
        criteria,
        not_scored,
        suggestions,
        risk_percent_source: risk.map(|risk| risk.source.to_owned()),
    })
}

/// Rejects a recorded price that is not finite and positive.
fn check_prices(facts: &JournalFacts) -> Result<(), CoreError> {
    for (name, value) in [
        ("entry_price", facts.entry_price),
        ("exit_price", facts.exit_price),
        ("stop_loss", facts.stop_loss),
        ("take_profit", facts.take_profit),
    ] {
        if let Some(price) = value
            && !(price.is_finite() && price > 0.0)
        {
            return Err(CoreError::InvalidInput(format!(
                "`{name}` must be a finite price above 0, got {price}"
            )));
        }
    }
    Ok(())
}

/// The risk percent of an entry and where it was read.
struct StatedRisk {
    percent: f64,
    /// Where it was read, for the reason text.
    from: String,
    /// `input` or `tag`, reported as `risk_percent_source`.
    source: &'static str,
}

/// The risk percent from the `risk_percent` input, or else from a risk tag.
///
/// # Errors
/// [`CoreError::InvalidInput`] when the percent is not within 0-100.
fn stated_risk(facts: &JournalFacts) -> Result<Option<StatedRisk>, CoreError> {
    let risk = match (facts.risk_percent, risk_from_tags(&facts.tags)) {
        (Some(percent), _) => Some(StatedRisk {
            percent,
            from: "the `risk_percent` input".to_owned(),
            source: "input",
        }),
        (None, Some((percent, tag))) => Some(StatedRisk {
            percent,
            from: format!("the tag `{tag}`"),
            source: "tag",
        }),
        (None, None) => None,
    };
    if let Some(StatedRisk { percent, from, .. }) = &risk
        && !(percent.is_finite() && (0.0..=100.0).contains(percent))
    {
        return Err(CoreError::InvalidInput(format!(
            "risk percent from {from} must be between 0 and 100, got {percent}"
        )));
    }
    Ok(risk)
}

/// The criteria scored so far, those that could not be, and the suggestions, in rubric order.
#[derive(Default)]
struct Rubric {
    criteria: Vec<Criterion>,
    not_scored: Vec<NotScored>,
    suggestions: Vec<String>,
}

impl Rubric {
    fn scored(&mut self, name: &str, points: f64, max: f64, reason: String) {
        self.criteria.push(Criterion {
            name: name.to_owned(),
            points,
            max_points: max,
            reason,
        });
    }

    fn skip(&mut self, name: &str, max: f64, missing: Vec<&str>, reason: String) {
        self.not_scored.push(NotScored {
            name: name.to_owned(),
            max_points: max,
            missing: missing.into_iter().map(str::to_owned).collect(),
            reason,
        });
    }

    fn suggest(&mut self, suggestion: String) {
        self.suggestions.push(suggestion);
    }
}

/// Side, entry and stop of an entry that records all three, with the initial
/// risk per unit when the stop is on the loss side.
#[derive(Debug, Clone, Copy)]
struct RiskGeometry {
    side: Side,
    entry: f64,
    stop: f64,
    risk_unit: Option<f64>,
}

impl RiskGeometry {
    fn of(facts: &JournalFacts) -> Option<Self> {
        match (facts.side, facts.entry_price, facts.stop_loss) {
            (Some(side), Some(entry), Some(stop)) => Some(Self {
                side,
                entry,
                stop,
                risk_unit: initial_risk(side, entry, stop),
            }),
            _ => None,
        }
    }
}

/// 1. Plan: a written plan and a named setup.
fn score_plan(facts: &JournalFacts, rubric: &mut Rubric) {
    let plan = !blank(&facts.plan);
    let setup = !blank(&facts.setup);
    let points = if plan { PLAN_POINTS } else { 0.0 } + if setup { SETUP_POINTS } else { 0.0 };
    let plan_part = match &facts.plan {
        Some(p) if plan => format!("a written plan ({} characters)", p.trim().chars().count()),
        _ => "no written plan".to_owned(),
    };
    let setup_part = match &facts.setup {
        Some(s) if setup => format!("the setup `{}`", s.trim()),
        _ => "no named setup".to_owned(),
    };
    rubric.scored(
        "plan",
        points,
        PLAN_POINTS + SETUP_POINTS,
        format!("{plan_part} (+{PLAN_POINTS} if present) and {setup_part} (+{SETUP_POINTS} if present)"),
    );
    if !plan {
        rubric.suggest(
            "Write the plan before entering: the trigger, where the idea is invalidated (stop) and the target."
                .to_owned(),
        );
    }
    if !setup {
        rubric.suggest("Name the setup (e.g. `breakout`, `pullback`) so results can be compared per setup.".to_owned());
    }
}

/// 2. Stop loss: recorded, and on the loss side of the entry.
fn score_stop_loss(facts: &JournalFacts, rubric: &mut Rubric) {
    let geometry = match (facts.side, facts.entry_price, facts.stop_loss) {
        (Some(side), Some(entry), Some(stop)) => Some((side, entry, stop, initial_risk(side, entry, stop))),
        _ => None,
    };
    match (facts.stop_loss, geometry) {
        (None, _) => {
            rubric.scored("stop_loss", 0.0, STOP_POINTS, "no stop_loss is recorded".to_owned());
            rubric.suggest("Record a stop loss on every trade: it defines the risk and the R multiple.".to_owned());
        }
        (Some(stop), Some((side, entry, _, None))) => {
            rubric.scored(
                "stop_loss",
                STOP_WRONG_SIDE_POINTS,
                STOP_POINTS,
                format!(
                    "stop_loss {} is not on the loss side of entry_price {} for a {}: it does not bound the initial risk",
                    fmt(stop),
                    fmt(entry),
                    side_name(side)
                ),
            );
            rubric.suggest(format!(
                "Record the initial stop (below the entry for a buy, above it for a sell); {} against an entry of {} bounds no risk.",
                fmt(stop),
                fmt(entry)
            ));
        }
        (Some(stop), _) => rubric.scored(
            "stop_loss",
            STOP_POINTS,
            STOP_POINTS,
            format!("stop_loss {} is recorded", fmt(stop)),
        ),
    }
}

/// 3. Risk size: the risk percent (with where it was read) against the bands.
fn score_risk_size(risk: Option<&StatedRisk>, rubric: &mut Rubric) {
    match risk {
        Some(StatedRisk { percent, from, .. }) => {
            let (points, band) = if *percent <= RISK_GOOD_PCT {
                (RISK_POINTS, format!("at most {RISK_GOOD_PCT}% (good)"))
            } else if *percent <= RISK_FAIR_PCT {
                (
                    RISK_FAIR_POINTS,
                    format!("above {RISK_GOOD_PCT}% and at most {RISK_FAIR_PCT}% (fair)"),
                )
            } else {
                (0.0, format!("above {RISK_FAIR_PCT}% (poor)"))
            };
            rubric.scored(
                "risk_size",
                points,
                RISK_POINTS,
                format!("risk of {}% of equity (from {from}) is {band}", fmt(*percent)),
            );
            if *percent > RISK_GOOD_PCT {
                rubric.suggest(format!(
                    "Size the position so that a stop-out costs at most {RISK_GOOD_PCT}% of equity; this trade risked {}%.",
                    fmt(*percent)
                ));
            }
        }
        None => {
            rubric.skip(
                "risk_size",
                RISK_POINTS,
                vec!["risk_percent"],
                "the risk as a percent of equity is not known: give `risk_percent`, or tag the entry `risk:<p>%`"
                    .to_owned(),
            );
            rubric.suggest("Record the risk of each trade as a percent of equity (tag `risk:1%`).".to_owned());
        }
    }
}

/// 4 and 5. Planned and realised R, measured against the initial risk.
fn score_r_multiples(facts: &JournalFacts, rubric: &mut Rubric) {
    let geometry = RiskGeometry::of(facts);
    let mut r_missing = false;
    for (name, max, other, other_name) in [
        ("planned_rr", PLANNED_RR_POINTS, facts.take_profit, "take_profit"),
        ("realised_r", REALISED_R_POINTS, facts.exit_price, "exit_price"),
    ] {
        match (geometry, other) {
            (
                Some(RiskGeometry {
                    side,
                    entry,
                    stop,
                    risk_unit: Some(unit),
                }),
                Some(level),
            ) => {
                let dir = if side == Side::Buy { 1.0 } else { -1.0 };
                // Rounded to the two decimals it is reported with, so that a band
                // boundary (1.5R written as 1.4999999) is judged as written.
                let r_multiple = round2(dir * (level - entry) / unit);
                let values = format!(
                    "{} from entry {} with stop {} and {other_name} {}",
                    side_name(side),
                    fmt(entry),
                    fmt(stop),
                    fmt(level)
                );
                if name == "planned_rr" {
                    score_planned_rr(r_multiple, &values, rubric);
                } else {
                    score_realised_r(r_multiple, &values, rubric);
                }
            }
            (
                Some(RiskGeometry {
                    side,
                    entry,
                    stop,
                    risk_unit: None,
                }),
                _,
            ) => {
                r_missing = true;
                rubric.skip(
                    name,
                    max,
                    vec!["stop_loss"],
                    format!(
                        "the initial risk is undefined: stop_loss {} is not on the loss side of entry_price {} for a {}",
                        fmt(stop),
                        fmt(entry),
                        side_name(side)
                    ),
                );
            }
            _ => {
                r_missing = true;
                let missing = missing_for_r(facts, other_name, other.is_none());
                let reason = format!(
                    "R needs side, entry_price, stop_loss and {other_name}; missing: {}",
                    missing.join(", ")
                );
                rubric.skip(name, max, missing, reason);
            }
        }
    }
    if r_missing {
        rubric.suggest(
            "Record side, entry, stop, target and exit prices so the planned and realised R can be measured."
                .to_owned(),
        );
    }
}

/// The fields an R measure needs that the entry lacks: side, entry and stop,
/// then `other_name` (the target or exit) when `other_absent`.
fn missing_for_r(facts: &JournalFacts, other_name: &'static str, other_absent: bool) -> Vec<&'static str> {
    let mut missing = Vec::new();
    if facts.side.is_none() {
        missing.push("side");
    }
    if facts.entry_price.is_none() {
        missing.push("entry_price");
    }
    if facts.stop_loss.is_none() {
        missing.push("stop_loss");
    }
    if other_absent {
        missing.push(other_name);
    }
    missing
}

/// 4. Planned reward:risk `r_multiple` (rounded to two decimals), `values` describing its prices.
fn score_planned_rr(r_multiple: f64, values: &str, rubric: &mut Rubric) {
    let (points, band) = if r_multiple >= 2.0 {
        (PLANNED_RR_POINTS, "at least 2")
    } else if r_multiple >= 1.5 {
        (7.0, "at least 1.5")
    } else if r_multiple >= 1.0 {
        (4.0, "at least 1")
    } else {
        (0.0, "below 1")
    };
    rubric.scored(
        "planned_rr",
        points,
        PLANNED_RR_POINTS,
        format!("planned reward:risk {:.2} ({values}) is {band}", round2(r_multiple)),
    );
    if r_multiple < 2.0 {
        rubric.suggest(format!(
            "Look for targets of at least 2R; this plan offered {:.2}R.",
            round2(r_multiple)
        ));
    }
}

/// 5. Realised R `r_multiple` (rounded to two decimals), `values` describing its prices.
fn score_realised_r(r_multiple: f64, values: &str, rubric: &mut Rubric) {
    let (points, band) = if r_multiple >= 1.0 {
        (REALISED_R_POINTS, "a gain of at least 1R")
    } else if r_multiple >= 0.0 {
        (7.0, "a gain below 1R (or break-even)")
    } else if r_multiple >= LOSS_WITHIN_STOP_R {
        (5.0, "a loss held by the stop (at most 1.1R)")
    } else {
        (0.0, "a loss larger than the planned risk (beyond 1.1R)")
    };
    rubric.scored(
        "realised_r",
        points,
        REALISED_R_POINTS,
        format!("realised {:.2}R ({values}): {band}", round2(r_multiple)),
    );
    if r_multiple < LOSS_WITHIN_STOP_R {
        rubric.suggest(format!(
            "The loss reached {:.2}R: honour the stop so that a loss never exceeds the planned 1R.",
            round2(r_multiple)
        ));
    }
}

/// 6. Rule adherence: `rules_followed`, rule tags and breach tags.
fn score_rule_adherence(facts: &JournalFacts, rubric: &mut Rubric) {
    let tags: Vec<String> = facts.tags.iter().map(|tag| normalize_tag(tag)).collect();
    let breaches: BTreeSet<&str> = RULE_BREACH_TAGS
        .iter()
        .copied()
        .filter(|breach| tags.iter().any(|tag| tag == breach))
        .collect();
    let broken_tag = RULES_BROKEN_TAGS
        .iter()
        .find(|rule_tag| tags.iter().any(|tag| tag == *rule_tag));
    let followed_tag = RULES_FOLLOWED_TAGS
        .iter()
        .find(|rule_tag| tags.iter().any(|tag| tag == *rule_tag));
    let list = breaches
        .iter()
        .map(|breach| format!("`{breach}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if facts.rules_followed == Some(false) || broken_tag.is_some() {
        let why = match (facts.rules_followed, broken_tag) {
            (Some(false), _) => "rules_followed is false".to_owned(),
            (_, Some(tag)) => format!("the tag `{tag}` says the rules were broken"),
            _ => String::new(),
        };
        let extra = if breaches.is_empty() {
            String::new()
        } else {
            format!("; breach tags: {list}")
        };
        rubric.scored("rule_adherence", 0.0, RULE_POINTS, format!("{why}{extra}"));
        rubric.suggest(
            "Write down which rule was broken and why; review it before the next trade of this setup.".to_owned(),
        );
    } else if facts.rules_followed == Some(true) || followed_tag.is_some() || !breaches.is_empty() {
        let points = (RULE_POINTS - RULE_BREACH_DEDUCTION * breaches.len() as f64).max(0.0);
        let base = match (facts.rules_followed, followed_tag) {
            (Some(true), _) => "rules_followed is true".to_owned(),
            (_, Some(tag)) => format!("the tag `{tag}` says the plan was followed"),
            _ => "rules_followed is not recorded".to_owned(),
        };
        let reason = if breaches.is_empty() {
            format!("{base} and no breach tag is present")
        } else {
            format!("{base}; breach tags {list} cost {RULE_BREACH_DEDUCTION} points each")
        };
        rubric.scored("rule_adherence", points, RULE_POINTS, reason);
        if !breaches.is_empty() {
            rubric.suggest(format!(
                "Avoid the recorded breaches ({list}): decide stop and exit rules before entry and leave them alone."
            ));
        }
    } else {
        rubric.skip(
            "rule_adherence",
            RULE_POINTS,
            vec!["rules_followed"],
            format!(
                "neither rules_followed nor a rule tag ({}, {}) is recorded",
                RULES_FOLLOWED_TAGS[0], RULE_BREACH_TAGS[0]
            ),
        );
        rubric.suggest("Record whether you followed your rules (`rules_followed`).".to_owned());
    }
}

/// 7. Emotions: recognised emotion tags, negative ones costing points.
fn score_emotions(facts: &JournalFacts, rubric: &mut Rubric) {
    let tags: Vec<String> = facts.emotions.iter().map(|tag| normalize_tag(tag)).collect();
    let negative: BTreeSet<&str> = NEGATIVE_EMOTIONS
        .iter()
        .copied()
        .filter(|emotion| tags.iter().any(|tag| tag == emotion))
        .collect();
    let neutral: BTreeSet<&str> = NEUTRAL_EMOTIONS
        .iter()
        .copied()
        .filter(|emotion| tags.iter().any(|tag| tag == emotion))
        .collect();
    let unknown: Vec<&str> = tags
        .iter()
        .map(String::as_str)
        .filter(|tag| !NEGATIVE_EMOTIONS.contains(tag) && !NEUTRAL_EMOTIONS.contains(tag))
        .collect();
    let unknown_note = if unknown.is_empty() {
        String::new()
    } else {
        format!("; not recognised: {}", unknown.join(", "))
    };
    if negative.is_empty() && neutral.is_empty() {
        let reason = if tags.is_empty() {
            "no emotion tag is recorded".to_owned()
        } else {
            format!("no recognised emotion tag{unknown_note}")
        };
        rubric.skip("emotions", EMOTION_POINTS, vec!["emotions"], reason);
        rubric.suggest("Tag the emotional state at entry (e.g. `calm`, `fomo`, `revenge`).".to_owned());
    } else {
        let points = (EMOTION_POINTS - EMOTION_DEDUCTION * negative.len() as f64).max(0.0);
        let join = |emotions: &BTreeSet<&str>| emotions.iter().copied().collect::<Vec<_>>().join(", ");
        let reason = match (negative.is_empty(), neutral.is_empty()) {
            (true, _) => format!("only neutral or positive emotions: {}{unknown_note}", join(&neutral)),
            (false, true) => format!(
                "negative emotions {} cost {EMOTION_DEDUCTION} points each{unknown_note}",
                join(&negative)
            ),
            (false, false) => format!(
                "negative emotions {} cost {EMOTION_DEDUCTION} points each (neutral: {}){unknown_note}",
                join(&negative),
                join(&neutral)
            ),
        };
        rubric.scored("emotions", points, EMOTION_POINTS, reason);
        if !negative.is_empty() {
            rubric.suggest(format!(
                "The entry records {}: pause after such a trade and check the next one against the plan before entering.",
                join(&negative)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> JournalFacts {
        JournalFacts {
            side: Some(Side::Buy),
            entry_price: Some(1.1000),
            exit_price: Some(1.1060),
            stop_loss: Some(1.0980),
            take_profit: Some(1.1060),
            setup: Some("pullback".into()),
            plan: Some("Buy the retest of 1.0995 support, stop under the swing low.".into()),
            rules_followed: Some(true),
            emotions: vec!["calm".into()],
            tags: vec![],
            risk_percent: Some(1.0),
        }
    }

    fn crit<'a>(s: &'a JournalScore, name: &str) -> &'a Criterion {
        s.criteria
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name} not scored: {s:?}"))
    }

    fn skipped<'a>(s: &'a JournalScore, name: &str) -> &'a NotScored {
        s.not_scored
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name} scored: {s:?}"))
    }

    #[test]
    fn rubric_max_is_100_and_a_clean_trade_scores_it() {
        let s = score(&full()).unwrap();
        assert_eq!(s.max_points, 100.0, "{s:?}");
        assert_eq!(s.points, 100.0, "{s:?}");
        assert_eq!((s.score, s.grade), (100.0, Grade::A));
        assert!(s.not_scored.is_empty());
        assert!(s.suggestions.is_empty(), "{:?}", s.suggestions);
        assert!(crit(&s, "planned_rr").reason.contains("3.00"), "{s:?}");
        assert!(crit(&s, "realised_r").reason.contains("3.00R"));
        assert!(crit(&s, "stop_loss").reason.contains("1.098"));
    }

    #[test]
    fn plan_branches() {
        let s = score(&JournalFacts { plan: None, ..full() }).unwrap();
        assert_eq!(crit(&s, "plan").points, SETUP_POINTS);
        let s = score(&JournalFacts {
            setup: Some("  ".into()),
            ..full()
        })
        .unwrap();
        assert_eq!(crit(&s, "plan").points, PLAN_POINTS);
        assert!(crit(&s, "plan").reason.contains("no named setup"));
        let s = score(&JournalFacts::default()).unwrap();
        assert_eq!(crit(&s, "plan").points, 0.0);
        assert!(s.suggestions.iter().any(|x| x.contains("Write the plan")));
    }

    #[test]
    fn stop_loss_branches() {
        let s = score(&JournalFacts {
            stop_loss: None,
            ..full()
        })
        .unwrap();
        assert_eq!(crit(&s, "stop_loss").points, 0.0);
        assert_eq!(skipped(&s, "planned_rr").missing, ["stop_loss"]);
        assert_eq!(skipped(&s, "realised_r").missing, ["stop_loss"]);
        // A buy with the stop above the entry bounds no risk.
        let s = score(&JournalFacts {
            stop_loss: Some(1.1010),
            ..full()
        })
        .unwrap();
        assert_eq!(crit(&s, "stop_loss").points, STOP_WRONG_SIDE_POINTS);
        assert!(skipped(&s, "planned_rr").reason.contains("1.101"));
        // A sell with the stop above is fine.
        let s = score(&JournalFacts {
            side: Some(Side::Sell),
            stop_loss: Some(1.1020),
            take_profit: Some(1.0950),
            exit_price: Some(1.1020),
            ..full()
        })
        .unwrap();
        assert_eq!(crit(&s, "stop_loss").points, STOP_POINTS);
        assert_eq!(crit(&s, "planned_rr").points, PLANNED_RR_POINTS, "{s:?}"); // 0.0050 / 0.0020 = 2.5R
        assert_eq!(crit(&s, "realised_r").points, 5.0, "{s:?}"); // stopped out: -1R
    }

    #[test]
    fn risk_size_bands_and_sources() {
        for (r, points) in [(0.5, 15.0), (2.0, 15.0), (2.01, 7.0), (5.0, 7.0), (5.5, 0.0)] {
            let s = score(&JournalFacts {
                risk_percent: Some(r),
                ..full()
            })
            .unwrap();
            assert_eq!(crit(&s, "risk_size").points, points, "{r}");
            assert!(crit(&s, "risk_size").reason.contains(&format!("{r}%")));
            assert_eq!(s.risk_percent_source.as_deref(), Some("input"));
        }
        let s = score(&JournalFacts {
            risk_percent: None,
            tags: vec!["Risk: 3%".into()],
            ..full()
        })
        .unwrap();
        assert_eq!(crit(&s, "risk_size").points, RISK_FAIR_POINTS);
        assert!(crit(&s, "risk_size").reason.contains("`Risk: 3%`"), "{s:?}");
        assert_eq!(s.risk_percent_source.as_deref(), Some("tag"));
        let s = score(&JournalFacts {
            risk_percent: None,
            ..full()
        })
        .unwrap();
        assert_eq!(skipped(&s, "risk_size").missing, ["risk_percent"]);
        assert_eq!(s.max_points, 85.0);
        assert!(
            score(&JournalFacts {
                risk_percent: Some(150.0),
                ..full()
            })
            .is_err()
        );
        assert!(
            score(&JournalFacts {
                risk_percent: None,
                tags: vec!["risk:-1".into()],
                ..full()
            })
            .is_err()
        );
        assert_eq!(risk_from_tags(&["risk_pct=0.75".into()]).unwrap().0, 0.75);
        assert!(risk_from_tags(&["risky".into(), "risk:abc".into()]).is_none());
    }

    #[test]
    fn planned_rr_bands() {
        // entry 1.1000, stop 1.0980: 1R = 0.0020.
        for (tp, points) in [(1.1040, 10.0), (1.1030, 7.0), (1.1020, 4.0), (1.1010, 0.0)] {
            let s = score(&JournalFacts {
                take_profit: Some(tp),
                ..full()
            })
            .unwrap();
            assert_eq!(crit(&s, "planned_rr").points, points, "tp {tp}: {s:?}");
        }
        let s = score(&JournalFacts {
            take_profit: None,
            ..full()
        })
        .unwrap();
        assert_eq!(skipped(&s, "planned_rr").missing, ["take_profit"]);
        let s = score(&JournalFacts {
            side: None,
            entry_price: None,
            ..full()
        })
        .unwrap();
        assert_eq!(skipped(&s, "planned_rr").missing, ["side", "entry_price"]);
    }

    #[test]
    fn realised_r_bands() {
        for (exit, points) in [
            (1.1020, 10.0),
            (1.1010, 7.0),
            (1.1000, 7.0),
            (1.0980, 5.0),
            (1.0978, 5.0),
            (1.0970, 0.0),
        ] {
            let s = score(&JournalFacts {
                exit_price: Some(exit),
                ..full()
            })
            .unwrap();
            assert_eq!(crit(&s, "realised_r").points, points, "exit {exit}: {s:?}");
        }
        let s = score(&JournalFacts {
            exit_price: Some(1.0970),
            ..full()
        })
        .unwrap();
        assert!(
            s.suggestions.iter().any(|x| x.contains("-1.50R")),
            "{:?}",
            s.suggestions
        );
        let s = score(&JournalFacts {
            exit_price: None,
            ..full()
        })
        .unwrap();
        assert_eq!(skipped(&s, "realised_r").missing, ["exit_price"]);
    }

    #[test]
    fn rule_adherence_branches() {
        let s = score(&JournalFacts {
            rules_followed: Some(false),
            tags: vec!["moved-stop".into()],
            ..full()
        })
        .unwrap();
        let c = crit(&s, "rule_adherence");
        assert_eq!(c.points, 0.0);
        assert!(c.reason.contains("rules_followed is false") && c.reason.contains("`moved_stop`"));
        let s = score(&JournalFacts {
            tags: vec!["Moved Stop".into(), "exited_early".into()],
            ..full()
        })
        .unwrap();
        assert_eq!(
            crit(&s, "rule_adherence").points,
            RULE_POINTS - 2.0 * RULE_BREACH_DEDUCTION
        );
        let s = score(&JournalFacts {
            rules_followed: None,
            tags: vec!["followed_plan".into()],
            ..full()
        })
        .unwrap();
        assert_eq!(crit(&s, "rule_adherence").points, RULE_POINTS);
        let s = score(&JournalFacts {
            rules_followed: None,
            tags: vec![
                "oversized".into(),
                "chased".into(),
                "late_entry".into(),
                "averaged_down".into(),
            ],
            ..full()
        })
        .unwrap();
        assert_eq!(crit(&s, "rule_adherence").points, 0.0);
        assert!(crit(&s, "rule_adherence").reason.contains("not recorded"));
        let s = score(&JournalFacts {
            rules_followed: None,
            tags: vec!["broke-rules".into()],
            ..full()
        })
        .unwrap();
        assert_eq!(crit(&s, "rule_adherence").points, 0.0);
        let s = score(&JournalFacts {
            rules_followed: None,
            tags: vec!["news".into()],
            ..full()
        })
        .unwrap();
        assert_eq!(skipped(&s, "rule_adherence").missing, ["rules_followed"]);
    }

    #[test]
    fn emotion_branches() {
        let s = score(&JournalFacts {
            emotions: vec!["FOMO".into(), "revenge".into(), "calm".into(), "sleepy".into()],
            ..full()
        })
        .unwrap();
        let c = crit(&s, "emotions");
        assert_eq!(c.points, EMOTION_POINTS - 2.0 * EMOTION_DEDUCTION);
        assert!(
            c.reason.contains("fomo, revenge") && c.reason.contains("sleepy"),
            "{c:?}"
        );
        let s = score(&JournalFacts {
            emotions: vec!["fear".into(), "greed".into(), "tilt".into(), "boredom".into()],
            ..full()
        })
        .unwrap();
        assert_eq!(crit(&s, "emotions").points, 0.0);
        let s = score(&JournalFacts {
            emotions: vec!["disciplined".into()],
            ..full()
        })
        .unwrap();
        assert_eq!(crit(&s, "emotions").points, EMOTION_POINTS);
        let s = score(&JournalFacts {
            emotions: vec!["sleepy".into()],
            ..full()
        })
        .unwrap();
        assert!(skipped(&s, "emotions").reason.contains("sleepy"));
        let s = score(&JournalFacts {
            emotions: vec![],
            ..full()
        })
        .unwrap();
        assert_eq!(skipped(&s, "emotions").missing, ["emotions"]);
    }

    #[test]
    fn empty_entry_scores_only_what_it_can_and_grades() {
        let s = score(&JournalFacts::default()).unwrap();
        let names: Vec<&str> = s.criteria.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["plan", "stop_loss"]);
        assert_eq!(s.max_points, 30.0);
        assert_eq!((s.score, s.grade), (0.0, Grade::F));
        assert_eq!(s.not_scored.len(), 5);
        // Score is normalised over the scored criteria.
        let s = score(&JournalFacts {
            plan: Some("p".into()),
            stop_loss: Some(1.0),
            ..JournalFacts::default()
        })
        .unwrap();
        assert_eq!(s.points, 25.0);
        assert_eq!(s.score, round1(100.0 * 25.0 / 30.0));
        assert_eq!(s.grade, Grade::B); // 83.3
        for (v, g) in [
            (85.0, Grade::A),
            (84.9, Grade::B),
            (70.0, Grade::B),
            (55.0, Grade::C),
            (40.0, Grade::D),
            (39.9, Grade::F),
        ] {
            assert_eq!(Grade::of(v), g, "{v}");
        }
    }

    #[test]
    fn bad_prices_are_refused() {
        for f in [
            JournalFacts {
                entry_price: Some(f64::NAN),
                ..full()
            },
            JournalFacts {
                stop_loss: Some(-1.0),
                ..full()
            },
            JournalFacts {
                take_profit: Some(0.0),
                ..full()
            },
        ] {
            assert!(matches!(score(&f), Err(CoreError::InvalidInput(_))));
        }
    }
}
