//! Bad input to every `ClientBuilder` setter, as a table: each bad value
//! makes `build()` fail with `Error::Config` naming the setter's field,
//! before any connection is tried (every case's hosts are a loopback port
//! this test listens on, and it sees no connection).

use std::net::TcpListener;
use std::time::Duration;

use tdx_engine::client::Pool;
use tdx_engine::{Client, ClientBuilder, Error};

type Case = (&'static str, fn(ClientBuilder) -> ClientBuilder);

#[test]
fn every_bad_setting_names_its_field_and_connects_nowhere() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let cases: &[Case] = &[
        ("hosts", |b| b.hosts(["300.1.1.1:7709x"])),
        ("hosts", |b| b.hosts(["127.0.0.1:0"])),
        ("hosts", |b| b.hosts([":7709"])),
        ("hosts", |b| b.hosts(["127.0.0.1:70000"])),
        ("hosts", |b| b.hosts(["127.0.0.1"])),
        ("hosts", |b| b.hosts(["host name:7709"])),
        ("candidates", |b| b.hosts(Vec::<String>::new()).candidates(Vec::<String>::new())),
        ("candidates", |b| b.hosts(Vec::<String>::new()).candidates(["127.0.0.1:0"])),
        ("server_count", |b| b.server_count(0)),
        ("server_count", |b| b.server_count(2)),
        ("connections_per_server", |b| b.connections_per_server(0)),
        ("pool_size", |b| b.connections_per_server(2).pool_size(5)),
        ("runtime_workers", |b| b.runtime_workers(0)),
        ("timeout", |b| b.timeout(Duration::ZERO)),
        ("available_cpus", |b| b.available_cpus(0)),
        ("raw_budget_bytes", |b| b.raw_budget_bytes(0)),
        ("raw_budget_bytes", |b| b.raw_budget_bytes(usize::MAX)),
        ("decoded_budget_bytes", |b| b.decoded_budget_bytes(0)),
        ("decoded_budget_bytes", |b| b.decoded_budget_bytes(usize::MAX)),
        ("push_bytes_max", |b| b.push_queue(16, 0)),
        ("push_queue", |b| b.push_queue(16, 1000)),
        ("push_frames_max", |b| b.push_queue(0, 1 << 20)),
        ("server_count", |b| b.pool_servers(Pool::Main, 0, 1)),
    ];
    let mut failures = Vec::new();
    for (i, (field, set)) in cases.iter().enumerate() {
        let builder = set(Client::builder().hosts([host.as_str()]).server_count(1).connections_per_server(1));
        match builder.build() {
            Err(Error::Config(e)) if e.field == *field => {}
            Err(other) => failures.push(format!("case {i} ({field}): {other}")),
            Ok(client) => {
                failures.push(format!("case {i} ({field}): built"));
                drop(client);
            }
        }
    }
    std::thread::sleep(Duration::from_millis(50));
    assert!(listener.accept().is_err(), "a refused configuration connected");
    assert!(failures.is_empty(), "{} of {} cases:\n{}", failures.len(), cases.len(), failures.join("\n"));
}
