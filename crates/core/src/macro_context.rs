//! Macro context: economic surprise, rate expectations, central-bank stance,
//! market context and the risk regime (pure functions).
