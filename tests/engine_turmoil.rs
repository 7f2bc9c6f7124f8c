//! The same engine code inside turmoil: the External flavor runs the driver
//! and the slot tasks on the simulated host's runtime, connections go
//! through turmoil's network, and time is simulated.

use std::sync::Arc;
use std::time::Duration;

use tdx_engine::proto::commands::{Bars, Period, SecurityCount};
use tdx_engine::proto::{Market as Exchange, Request};
use tdx_engine::runtime::connector::TurmoilConnector;
use tdx_engine::supervisor::CloseState;
use tdx_engine::{Client, RuntimeFlavor};
use tdx_sim::responder::respond;
use tdx_sim::{Faults, Market, ReferenceServer};

#[test]
fn engine_serves_inside_turmoil() {
    let mut sim = turmoil::Builder::new()
        .rng_seed(77)
        .simulation_duration(Duration::from_secs(120))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(30))
        .build();
    let market = Arc::new(Market::new(4));
    for name in ["server-a", "server-b"] {
        let market = market.clone();
        sim.host(name, move || {
            let server = ReferenceServer::new(market.clone(), 0, Faults::default());
            async move {
                let listener = turmoil::net::TcpListener::bind("0.0.0.0:7709").await?;
                server.run(listener).await?;
                Ok(())
            }
        });
    }
    sim.client("engine", async move {
        let client = Client::builder()
            .hosts(["server-a:7709", "server-b:7709"])
            .connections_per_server(2)
            .runtime_flavor(RuntimeFlavor::External(tokio::runtime::Handle::current()))
            .build_with(TurmoilConnector)
            .expect("engine starts");
        let requests: Vec<Request> = vec![
            SecurityCount { market: Exchange::Sh, client_date: 0 }.into(),
            Bars::new("sz000001".parse().unwrap(), Period::Day, 0, 800).into(),
            Bars::new("sh600000".parse().unwrap(), Period::Min5, 800, 800).into(),
        ];
        for _ in 0..3 {
            for request in &requests {
                let reply = client.call(request.clone()).await.expect("reply");
                assert_eq!(reply, respond(&market, 0, request));
            }
        }
        // Simulated minutes pass (much faster than real ones): deadlines and
        // heartbeats run on the simulation's clock, not the wall clock.
        tokio::time::sleep(Duration::from_secs(65)).await;
        let reply = client.call(requests[0].clone()).await.expect("reply after idling");
        assert_eq!(reply, respond(&market, 0, &requests[0]));
        assert!(client.diagnostics().supervisor.counters.heartbeats >= 4, "idle connections sent heartbeats");
        assert_eq!(client.close().await, CloseState::Closed);
        Ok(())
    });
    sim.run().expect("simulation completes");
}
