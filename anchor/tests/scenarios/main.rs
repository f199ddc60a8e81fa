//! The acceptance scenarios of `spec/scenarios.md`, each checked against the reference's
//! observed outcome in `scenarios.expected.json`. One module per section.
//!
//! A few reference inputs are JS values JSON cannot express (prototype-inherited properties,
//! functions, dates, cycles); their scenarios run the closest JSON input, which must give the
//! reference's output. Where we deliberately differ (Q1, Q4, Q11), the test asserts our
//! behaviour and that the reference recorded the other one.

mod helpers;
mod normalization;
mod reconciliation;
mod registry;
mod scene;
mod settled;
mod status;
