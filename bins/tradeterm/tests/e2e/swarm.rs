//! Light agents (`tradeterm_sim::swarm`, the capacity benchmark's swarm)
//! against the real gateway: terminals provisioned through the management
//! API, twenty agents connected over the agent protocol, `get_tick` answered
//! through the REST API and the gateway's internal dispatch route by the
//! open-loop load generator, each request timed by the agent that answered.

use std::time::Duration;

use tradeterm_protocol::http_client::HttpDispatch;
use tradeterm_sim::swarm::load::{LoadTarget, run_load};
use tradeterm_sim::swarm::provision::provision;
use tradeterm_sim::swarm::{SWARM_BID, SwarmKey, SwarmSettings, spawn_swarm};

use crate::harness::{Expect, Options, spawn_with, wait_until};

const AGENTS: usize = 20;
const INTERNAL_TOKEN: &str = "swarm-test-internal-token";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swarm_answers_dispatch_and_rest_through_the_gateway() {
    let t = spawn_with(
        Options {
            sims: 0,
            ..Options::default()
        },
        |s| s.gateway_internal_token = Some(INTERNAL_TOKEN.into()),
    )
    .await;
    let p = provision(&t.gateway, &t.creds.license_key, AGENTS, "swarm")
        .await
        .unwrap();
    assert_eq!(p.license_id, t.creds.license_id);
    assert_eq!(p.terminals.len(), AGENTS);
    let keys = p
        .terminals
        .iter()
        .enumerate()
        .map(|(i, term)| SwarmKey {
            terminal_key: term.key.clone(),
            uid: format!("swarm-{i}"),
        })
        .collect();
    let swarm = spawn_swarm(SwarmSettings {
        url: format!("ws://127.0.0.1:{}/agent/v1", t.stack.gateway_port),
        keys,
        connects_per_sec: 200.0,
    });
    wait_until("every light agent welcomed", Duration::from_secs(20), || async {
        (swarm.status().connected == AGENTS).then_some(())
    })
    .await;
    let mut ids = swarm.terminal_ids();
    ids.sort();
    let mut want: Vec<String> = p.terminals.iter().map(|term| term.id.clone()).collect();
    want.sort();
    assert_eq!(ids, want, "each agent was welcomed as its own terminal");

    // Every terminal answers with its light agent's fixed quote.
    for id in &ids {
        let tick = t.api().on(id).tick("EURUSD").await.data();
        assert_eq!(tick["bid"].as_f64(), Some(SWARM_BID), "{id}: {tick}");
    }

    let rest = LoadTarget::rest(&t.rest, &p.api_key).unwrap();
    let dispatch = LoadTarget::Dispatch {
        client: HttpDispatch::new(&t.gateway, INTERNAL_TOKEN).unwrap(),
        license_id: p.license_id.clone(),
    };
    for target in [rest, dispatch] {
        let before = swarm.status().answered;
        swarm.start_recording();
        let report = run_load(&target, &ids, 100.0, Duration::from_millis(500))
            .await
            .unwrap();
        // An agent records its answer right after writing it: the last
        // answer may reach the load before its agent has counted it.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while swarm.status().answered < before + 50 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let answered = swarm.take_recording();
        assert_eq!(report.sent, 50, "{report:?}");
        assert_eq!((report.ok, report.failed), (50, 0), "{report:?}");
        assert_eq!(answered.len(), 50, "every request reached an agent");
        let (p50, p99) = (report.p50_us.unwrap(), report.p99_us.unwrap());
        assert!(p50 > 0 && p50 <= p99, "{report:?}");
    }

    // A wrong internal token fails every request, and says why.
    let refused = LoadTarget::Dispatch {
        client: HttpDispatch::new(&t.gateway, "wrong").unwrap(),
        license_id: p.license_id.clone(),
    };
    let report = run_load(&refused, &ids, 100.0, Duration::from_millis(100))
        .await
        .unwrap();
    assert_eq!((report.ok, report.failed), (0, 10), "{report:?}");
    assert!(report.first_error.unwrap().contains("401"));

    swarm.shutdown().await;
    let dispatch = HttpDispatch::new(&t.gateway, INTERNAL_TOKEN).unwrap();
    wait_until("the gateway sees the agents gone", Duration::from_secs(10), || async {
        let list = tradeterm_protocol::Dispatch::terminals(&dispatch, &p.license_id)
            .await
            .ok()?;
        list.iter().all(|term| !term.connected).then_some(())
    })
    .await;
}
