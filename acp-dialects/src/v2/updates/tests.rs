use super::*;

/// The typed path of streamed text gives what the JSON mapping gives, message ids
/// included, and hands back every update it does not take.
#[test]
fn the_typed_text_chunk_path_maps_as_the_json_path_does() {
    let updates = [
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}}),
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "b", "_meta": {"k": 1}}, "_meta": {"c": 2}}),
        json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "t"}}),
        json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "u"}, "messageId": "mine"}),
        json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "v"}}),
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "w", "annotations": {"priority": 1.0}}}),
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "resource_link", "name": "n", "uri": "file:///x"}}),
        json!({"sessionUpdate": "plan", "entries": []}),
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}),
    ];
    let (mut typed, mut by_json) = (ToV2::default(), ToV2::default());
    let mut taken = 0;
    for u in updates {
        // What the JSON path sends: its result read as v2's type.
        let expected = by_json.update(u.clone()).unwrap();
        let expected: v2::SessionUpdate = serde_json::from_value(expected).unwrap();
        let expected = serde_json::to_value(expected).unwrap();
        let v1: v1::SessionUpdate = serde_json::from_value(u.clone()).unwrap();
        let got = match typed.text_chunk(v1) {
            Streamed::Text(chunk) => {
                taken += 1;
                serde_json::to_value(chunk).unwrap()
            }
            Streamed::Other(back) => {
                assert_eq!(
                    serde_json::to_value(&back).unwrap(),
                    u,
                    "handed back as it came"
                );
                typed.update(serde_json::to_value(back).unwrap()).unwrap()
            }
        };
        assert_eq!(got, expected, "{u}");
    }
    assert_eq!(taken, 6, "the plain text chunks take the typed path");
}

#[test]
fn v1_chunks_without_ids_share_one_message_until_something_else_comes() {
    let mut s = ToV2::default();
    let chunk = |t: &str| json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": t}});
    let a = s.update(chunk("a")).unwrap();
    let b = s.update(chunk("b")).unwrap();
    assert_eq!(a["messageId"], b["messageId"]);
    s.update(json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "T"}))
        .unwrap();
    let c = s.update(chunk("c")).unwrap();
    assert_ne!(a["messageId"], c["messageId"]);
}

#[test]
fn a_v1_tool_call_is_a_v2_upsert_and_its_first_v2_upsert_a_v1_tool_call() {
    let mut to_v2 = ToV2::default();
    let v2 = to_v2
        .update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Edit",
            "kind": "edit", "status": "pending"}),
        )
        .unwrap();
    assert_eq!(v2["sessionUpdate"], "tool_call_update");
    let mut to_v1 = ToV1::default();
    assert_eq!(
        to_v1.update(v2.clone()).unwrap()[0]["sessionUpdate"],
        "tool_call"
    );
    let again = to_v1.update(
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t",
        "status": "completed", "title": null}),
    );
    let again = &again.unwrap()[0];
    assert_eq!(again["sessionUpdate"], "tool_call_update");
    assert!(
        again.get("title").is_none(),
        "v1 cannot clear a title: {again}"
    );
}

#[test]
fn content_chunks_accumulate_into_the_v1_tool_calls_content() {
    let mut s = ToV1::default();
    let chunk = |t: &str| {
        json!({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t",
        "content": {"type": "content", "content": {"type": "text", "text": t}}})
    };
    s.update(chunk("a")).unwrap();
    let out = s.update(chunk("b")).unwrap();
    assert_eq!(out[0]["content"].as_array().unwrap().len(), 2);
}

#[test]
fn a_whole_message_shown_once_cannot_be_replaced_in_v1() {
    let mut s = ToV1::default();
    let m = json!({"sessionUpdate": "agent_message", "messageId": "m",
        "content": [{"type": "text", "text": "hi"}]});
    assert_eq!(s.update(m.clone()).unwrap().len(), 1);
    assert!(s.update(m).unwrap_err().contains("cannot change"));
}

#[test]
fn a_mode_change_is_both_a_config_update_and_a_current_mode_update() {
    let option = |current: &str| {
        json!({"configId": "m", "name": "Mode", "category": "mode",
        "type": "select", "currentValue": current, "options": [{"value": "a", "name": "A"}, {"value": "b", "name": "B"}]})
    };
    let mut s = ToV1::default();
    s.config(&[option("a")]);
    let out = s
        .update(json!({"sessionUpdate": "config_option_update", "configOptions": [option("b")]}))
        .unwrap();
    assert_eq!(
        out[1],
        json!({"sessionUpdate": "current_mode_update", "currentModeId": "b"})
    );
}

#[test]
fn modes_round_trip_through_both_translations_as_modes() {
    let modes = json!({"currentModeId": "a", "availableModes": [{"id": "a", "name": "A"}, {"id": "b", "name": "B"}]});
    let model = json!({"id": "model", "name": "Model", "type": "select", "currentValue": "x",
        "options": [{"value": "x", "name": "X"}]});
    let mut to_v2 = ToV2 {
        modes: Some(modes),
        config: vec![model.clone()],
        ..ToV2::default()
    };
    let mut to_v1 = ToV1::default();
    let options = to_v2.options();
    assert!(to_v1.config(&options).is_some(), "the v1 client gets modes");
    assert_eq!(
        to_v1.shown(&options),
        vec![model],
        "and no option made of them"
    );
    let changed = to_v2
        .update(json!({"sessionUpdate": "current_mode_update", "currentModeId": "b"}))
        .unwrap();
    assert_eq!(
        to_v1.update(changed).unwrap(),
        vec![json!({"sessionUpdate": "current_mode_update", "currentModeId": "b"})],
        "an unchanged option list is not shown again"
    );
}

#[test]
fn v1_only_updates_are_refused_with_a_reason() {
    let mut s = ToV2::default();
    let sub = json!({"sessionUpdate": "subagent_update"});
    assert!(s.update(sub).unwrap_err().contains("subagent_update"));
}

/// An agent-owned v2 terminal reaches a v1 client as text in the tool calls that show
/// it: a placeholder while it runs, then (when it exits) the command, its output and a
/// non-zero exit, sent again for every such tool call.
#[test]
fn an_agent_terminal_is_shown_to_a_v1_client_as_its_output_once_it_exits() {
    let mut s = ToV1::default();
    let start = json!({"sessionUpdate": "terminal_update", "terminalId": "t1",
        "command": "make test", "cwd": "/w"});
    assert!(s.update(start).unwrap().is_empty());
    let call = json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "Run",
        "content": [{"type": "terminal", "terminalId": "t1"}]});
    let shown = s.update(call).unwrap();
    assert_eq!(shown[0]["sessionUpdate"], "tool_call");
    let text = |u: &Value| {
        u["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(text(&shown[0]), "$ make test\n(running)");
    for part in ["ok 1\n", "FAILED 2\n"] {
        use base64::Engine as _;
        let data = base64::engine::general_purpose::STANDARD.encode(part);
        let chunk =
            json!({"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": data});
        assert!(s.update(chunk).unwrap().is_empty(), "shown at the exit");
    }
    let bad = json!({"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": "%%"});
    assert!(s.update(bad).unwrap_err().contains("base64"));
    let end = json!({"sessionUpdate": "terminal_update", "terminalId": "t1",
        "exitStatus": {"exitCode": 2, "signal": null}});
    let again = s.update(end).unwrap();
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0]["sessionUpdate"], "tool_call_update");
    assert_eq!(again[0]["toolCallId"], "c1");
    assert_eq!(text(&again[0]), "$ make test\nok 1\nFAILED 2\n[exit 2]");
}

#[test]
fn an_agent_terminal_keeps_the_end_of_long_output_and_terminals_are_bounded() {
    let mut term = AgentTerminal::default();
    term.append("é".repeat(TERMINAL_TEXT_LIMIT).as_bytes());
    term.append(b"the end");
    assert!(term.output.len() <= TERMINAL_TEXT_LIMIT);
    assert!(term.output.ends_with("the end") && term.cut);
    let mut s = ToV1::default();
    for i in 0..MAX_TERMINALS {
        let u = json!({"sessionUpdate": "terminal_update", "terminalId": format!("t{i}")});
        s.update(u).unwrap();
    }
    let one_more = json!({"sessionUpdate": "terminal_update", "terminalId": "late"});
    assert!(s.update(one_more).unwrap_err().contains("terminals"));
}
