//! Prop-firm rule tracking: rule sets, presets, and the status verdict
//! (pure functions).
