//! The shadow snapshot: one anchor fed from every source layer in a fixed order.

use serde_json::{Map, Value};

use crate::js;
use crate::model::{Seed, SeedError};
use crate::registry::{Applied, Registry};

/// The source layers, in the order the shadow snapshot applies them.
pub const LAYERS: [&str; 4] = ["live", "replay", "settled", "inflight"];

/// The registry and each layer's results.
#[derive(Clone, Debug)]
pub struct ShadowSnapshot {
    /// The anchor after every layer.
    pub registry: Registry,
    /// Results per layer, in [`LAYERS`] order.
    pub results: [Vec<Applied>; 4],
}

/// `createAssistantTurnAnchorShadowSnapshot(input)`: seeds from `input.anchor` (or `input`),
/// takes the events from `input.sources` (or `input`) and the base context from
/// `input.context`, then applies live, replay (or `run_journal_events`), settled and inflight
/// events in that order, whatever order the input lists them in.
pub fn shadow_snapshot(input: &Value) -> Result<ShadowSnapshot, SeedError> {
    fn object(v: Option<&Value>) -> Option<&Value> {
        v.filter(|v| v.is_object())
    }
    let anchor_in = object(js::own(Some(input), "anchor")).unwrap_or(input);
    let sources = object(js::own(Some(input), "sources")).unwrap_or(input);
    let base: Map<String, Value> = object(js::own(Some(input), "context"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut registry = Registry::new(&Seed::from_value(anchor_in))?;
    let arr = |key: &str| js::own(Some(sources), key).and_then(Value::as_array);
    let replay = arr("replay_events").or_else(|| arr("run_journal_events"));
    let groups = [
        arr("live_events"),
        replay,
        arr("settled_events"),
        arr("inflight_events"),
    ];
    let results = std::array::from_fn(|i| {
        let mut ctx = base.clone();
        ctx.insert("source_layer".into(), Value::String(LAYERS[i].to_owned()));
        let ctx = Value::Object(ctx);
        groups[i]
            .map(|events| {
                let mut results = Vec::with_capacity(events.len());
                registry.apply_batch(events.iter().map(|e| (e, &ctx)), |a| results.push(a));
                results
            })
            .unwrap_or_default()
    });
    Ok(ShadowSnapshot { registry, results })
}
