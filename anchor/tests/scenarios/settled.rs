//! Settled final projection scenarios P01–P03.

use anchor::{project_settled_final_answer, SettledProjection};
use serde_json::{json, Value};

use crate::helpers::{expected, stats, to_json};

fn summary(p: &SettledProjection) -> Value {
    json!({
        "applied": p.skipped.is_none(),
        "reason": p.skipped.map(|s| s.as_str()),
        "final_answer": p.final_answer,
        "final_message_ref": p.final_message_ref,
    })
}

fn with_turn(p: &SettledProjection) -> Value {
    let mut v = summary(p);
    v["turn_id"] = json!(p.registry.as_ref().unwrap().anchor().identity.turn_id);
    v
}

#[test]
fn p01_settled_message_projects_its_final_answer() {
    let e = expected("P01_project_settled_fixture");
    let message = json!({"role": "assistant", "id": "message-final", "content": "raw", "_turnUsage": {"input_tokens": 8, "output_tokens": 13}});
    let p = project_settled_final_answer(
        &message,
        &json!({"session_id": "sid-project", "raw_idx": 7, "content": "line one\nline two"}),
    );
    let r = p.registry.as_ref().unwrap();
    let mut got = summary(&p);
    got["identity"] = to_json(&r.anchor().identity);
    got["stats"] = stats(r);
    got["usage"] = r.anchor().usage.clone().unwrap();
    assert_eq!(got, e["p"]);

    let p = project_settled_final_answer(
        &json!({"role": "assistant", "content": "raw"}),
        &json!({"session_id": "sid-project", "raw_idx": 11}),
    );
    let identity = &p.registry.as_ref().unwrap().anchor().identity;
    let got = json!({"final_message_ref": p.final_message_ref, "refs": identity.source_message_refs, "turn_id": identity.turn_id});
    assert_eq!(got, e["by_raw_idx"]);
}

#[test]
fn p02_rejections_and_identity_sources() {
    let e = expected("P02_project_settled_rejections");
    let reject = |p: SettledProjection| {
        let mut v = summary(&p);
        v["registry"] = json!(p.registry.map(|_| "registry"));
        v
    };
    let missing = project_settled_final_answer(
        &json!({"role": "assistant", "id": "m", "content": "final"}),
        &json!({}),
    );
    assert_eq!(reject(missing), e["missing_session"]);
    let user = project_settled_final_answer(
        &json!({"role": "user", "id": "m", "content": "final"}),
        &json!({"session_id": "s"}),
    );
    assert_eq!(reject(user), e["non_assistant"]);

    let from_msg = project_settled_final_answer(
        &json!({"session_id": "from-msg", "run_id": "r9", "content": "x"}),
        &json!({}),
    );
    let identity = &from_msg.registry.as_ref().unwrap().anchor().identity;
    assert_eq!(
        json!({"applied": from_msg.skipped.is_none(), "run_id": identity.run_id, "turn_id": identity.turn_id}),
        e["session_from_message"]
    );
    let turn = project_settled_final_answer(
        &json!({"role": "assistant", "turn_id": "T-msg", "content": "x"}),
        &json!({"session_id": "s"}),
    );
    let identity = &turn.registry.as_ref().unwrap().anchor().identity;
    assert_eq!(
        json!({"applied": turn.skipped.is_none(), "reason": null, "turn_id": identity.turn_id}),
        e["mismatched_turn"]
    );
}

#[test]
fn p03_projection_quirks() {
    let e = expected("P03_project_settled_quirks");
    let s = json!({"session_id": "s"});
    let got = json!({
        "content_parts": with_turn(&project_settled_final_answer(
            &json!({"id": "m", "content": [{"type": "text", "text": "a"}, "b", {"content": "c"}, {"type": "tool_use"}, 7]}), &s)),
        "ctx_null_content": with_turn(&project_settled_final_answer(&json!({"id": "m", "content": "x"}), &json!({"session_id": "s", "content": null}))),
        "no_id_no_raw_idx": with_turn(&project_settled_final_answer(&json!({"content": "x"}), &s)),
        "nonstring_role": with_turn(&project_settled_final_answer(&json!({"role": 7, "id": "m", "content": "x"}), &s)),
        "numeric_id": with_turn(&project_settled_final_answer(&json!({"id": 5, "content": "x"}), &s)),
        "raw_idx_zero": with_turn(&project_settled_final_answer(&json!({"content": "x"}), &json!({"session_id": "s", "rawIdx": 0}))),
    });
    assert_eq!(got, *e);
}
