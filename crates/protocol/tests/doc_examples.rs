//! Every JSON example in `docs/agent-protocol.md` parses as the frame (or
//! long-poll body) it claims to be.

use tradeterm_protocol::poll::{PollBatch, PollReply, PollWelcome};
use tradeterm_protocol::{AgentFrame, GatewayFrame};

const AGENT_TYPES: &[&str] = &["hello", "response", "event", "ping", "pong"];
const GATEWAY_TYPES: &[&str] = &["welcome", "request", "error", "ping", "pong"];

fn json_blocks(doc: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        match (&mut current, line.trim_start()) {
            (None, l) if l.starts_with("```json") => current = Some(String::new()),
            (Some(_), l) if l.starts_with("```") => blocks.push(current.take().unwrap_or_default()),
            (Some(buf), _) => {
                buf.push_str(line);
                buf.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

#[test]
fn protocol_doc_examples_parse() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/agent-protocol.md")).unwrap();
    let blocks = json_blocks(&doc);
    assert!(blocks.len() >= 7, "expected the doc's examples, found {}", blocks.len());
    let mut checked = 0;
    for block in blocks {
        // A block holds one object, or one object per line.
        let objects: Vec<String> = if serde_json::from_str::<serde_json::Value>(&block).is_ok() {
            vec![block.clone()]
        } else {
            block
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_owned)
                .collect()
        };
        for text in objects {
            let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
            if value.get("type").is_none() && value.get("seq").is_some() {
                // A long-poll batch (agent → gateway): every frame is an agent frame.
                let batch: PollBatch = serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}: {text}"));
                assert!(batch.agent_frames().all(|f| f.is_ok()), "{text}");
                checked += 1;
                continue;
            }
            let ty = value["type"].as_str().unwrap_or_else(|| panic!("no type: {text}"));
            if ty == "batch" {
                let reply: PollReply = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
                for f in reply.gateway_frames() {
                    assert!(f.seq.is_some() && f.frame.is_ok(), "{text}");
                }
            }
            if ty == "welcome" && value.get("session").is_some() {
                serde_json::from_str::<PollWelcome>(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
            }
            if AGENT_TYPES.contains(&ty) {
                AgentFrame::parse(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
            }
            if GATEWAY_TYPES.contains(&ty) {
                GatewayFrame::parse(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
            }
            checked += 1;
        }
    }
    assert!(checked >= 8, "checked {checked} objects");
}
