//! How a caller on a thread of its own can do one exchange on a socket the
//! engine's reactor owns: the options docs/decisions/0014-thread-loans.md
//! chose between, each a 16-byte request and a 32-byte reply on loopback.
//!
//! ```text
//! cargo bench --bench thread_loan_options -- [--exchanges N] [--rounds R]
//! ```
//!
//! Options, measured in turns (R rounds of N exchanges each, the order
//! rotating every round, medians printed):
//! - `owned-blocking`: a blocking socket the thread owns (tdxrs's design;
//!   the floor);
//! - `registered-blocking`: a socket registered with a Tokio reactor, put
//!   in blocking mode for the exchange and back after it (a thread loan);
//! - `reregister`: taken out of the reactor for the exchange and registered
//!   again after it;
//! - `hop`: the exchange done by a task on the runtime, the caller waking
//!   on a channel (the design before thread loans).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Instant;

const REQUEST: [u8; 16] = [1; 16];
const REPLY_BYTES: usize = 32;

/// A server answering each 16-byte request with 32 bytes, a thread per connection.
fn server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().expect("an address");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            s.set_nodelay(true).expect("nodelay");
            std::thread::spawn(move || {
                let mut request = [0u8; 16];
                while s.read_exact(&mut request).is_ok() && s.write_all(&[7; REPLY_BYTES]).is_ok() {}
            });
        }
    });
    addr
}

fn exchange(mut s: impl Read + Write) {
    let mut reply = [0u8; REPLY_BYTES];
    s.write_all(&REQUEST).expect("write");
    s.read_exact(&mut reply).expect("read");
}

trait Design {
    fn name(&self) -> &'static str;
    fn run(&mut self, n: usize);
}

struct OwnedBlocking(TcpStream);

impl Design for OwnedBlocking {
    fn name(&self) -> &'static str {
        "owned-blocking"
    }
    fn run(&mut self, n: usize) {
        for _ in 0..n {
            exchange(&self.0);
        }
    }
}

struct RegisteredBlocking(tokio::net::TcpStream);

impl Design for RegisteredBlocking {
    fn name(&self) -> &'static str {
        "registered-blocking"
    }
    fn run(&mut self, n: usize) {
        let socket = socket2::SockRef::from(&self.0);
        for _ in 0..n {
            socket.set_nonblocking(false).expect("blocking");
            exchange(&*socket);
            socket.set_nonblocking(true).expect("nonblocking");
        }
    }
}

struct Reregister {
    stream: Option<tokio::net::TcpStream>,
    runtime: tokio::runtime::Handle,
}

impl Design for Reregister {
    fn name(&self) -> &'static str {
        "reregister"
    }
    fn run(&mut self, n: usize) {
        for _ in 0..n {
            let std = self.stream.take().expect("a stream").into_std().expect("deregister");
            std.set_nonblocking(false).expect("blocking");
            exchange(&std);
            std.set_nonblocking(true).expect("nonblocking");
            let _entered = self.runtime.enter();
            self.stream = Some(tokio::net::TcpStream::from_std(std).expect("register"));
        }
    }
}

struct Hop(tokio::sync::mpsc::Sender<mpsc::SyncSender<()>>);

impl Design for Hop {
    fn name(&self) -> &'static str {
        "hop"
    }
    fn run(&mut self, n: usize) {
        for _ in 0..n {
            let (done, wait) = mpsc::sync_channel(1);
            self.0.blocking_send(done).expect("the task runs");
            wait.recv().expect("the task answers");
        }
    }
}

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map_or(default, |v| v.parse().expect(name))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n = arg(&args, "--exchanges", 20_000);
    let rounds = arg(&args, "--rounds", 7);
    let addr = server();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let connect = || {
        let s = runtime.block_on(tokio::net::TcpStream::connect(addr)).expect("connect");
        s.set_nodelay(true).expect("nodelay");
        s
    };
    let owned = TcpStream::connect(addr).expect("connect");
    owned.set_nodelay(true).expect("nodelay");
    let (tx, mut rx) = tokio::sync::mpsc::channel::<mpsc::SyncSender<()>>(1);
    let mut hop_stream = connect();
    runtime.spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut reply = [0u8; REPLY_BYTES];
        while let Some(done) = rx.recv().await {
            hop_stream.write_all(&REQUEST).await.expect("write");
            hop_stream.read_exact(&mut reply).await.expect("read");
            let _ = done.send(());
        }
    });
    let mut options: Vec<Box<dyn Design>> = vec![
        Box::new(OwnedBlocking(owned)),
        Box::new(RegisteredBlocking(connect())),
        Box::new(Reregister { stream: Some(connect()), runtime: runtime.handle().clone() }),
        Box::new(Hop(tx)),
    ];
    for o in &mut options {
        o.run(n / 10); // warm-up
    }
    let mut micros: Vec<Vec<f64>> = vec![Vec::new(); options.len()];
    for round in 0..rounds {
        for k in 0..options.len() {
            let i = (round + k) % options.len();
            let t = Instant::now();
            options[i].run(n);
            micros[i].push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
        }
    }
    println!("| option | round trip, median of {rounds} (us) | min | max | / owned-blocking |");
    println!("|---|---:|---:|---:|---:|");
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let floor = median(&mut micros[0].clone());
    for (o, v) in options.iter().zip(&mut micros) {
        let m = median(v);
        println!("| {} | {m:.2} | {:.2} | {:.2} | {:.2} |", o.name(), v[0], v[v.len() - 1], m / floor);
    }
}
