//! Bad input to every `tdx` command, as a table generated from the command
//! tree the binary itself prints (`tdx -h`, `tdx COMMAND -h`): for every
//! argument of every command, values that are not what it takes (a bad
//! code, market, period, date, count, host, ...), every required argument
//! left out, and option pairs that do not go together. Each must exit 2
//! with one line that names the argument, never panic, and never touch the
//! network: every case runs loopback-only against a listener of the test's
//! own that must see no connection.
//!
//! A new command is covered when it is added; a new kind of argument
//! (a value name this table has no bad values for) fails the test until
//! it is given some.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Values each kind of argument (by its value name) must refuse.
fn bad_values(value_name: &str) -> Option<Vec<&'static str>> {
    let counts = ["0", "-1", "99999999999999999999", "x"];
    Some(match value_name {
        "CODE" | "CODES" => vec!["xx123", "sz00001", "sz0000001", "", "sz00000a", "\u{1b}[2Jsz000001"],
        "MARKET" | "MARKETS" => vec!["hk", "", "s z"],
        "PERIOD" | "PERIODS" => vec!["7m", "", "0", "daily"],
        "DATE" | "SINCE" | "ANCHOR" | "AS_OF" | "FROM" | "TO" => {
            vec!["2026-02-30", "99999999", "2026", "tomorrow", ""]
        }
        "COUNT"
        | "LIMIT"
        | "JOBS"
        | "SERVERS"
        | "CONCURRENCY"
        | "SERVER_COUNT"
        | "CONNECTIONS_PER_SERVER"
        | "WORKERS"
        | "CLIENT_CONCURRENCY"
        | "MAX_ROWS"
        | "MAX_BYTES"
        | "PUSH_QUEUE"
        | "WS_CLIENTS"
        | "WS_QUEUE" => counts.to_vec(),
        // Zero is a start, a seed, and a queue that holds nothing.
        "START" | "SEED" | "MAX_PENDING" => counts[1..].to_vec(),
        // Rates and bursts are real numbers: any finite one above zero is a rate.
        "CLIENT_RATE" | "CLIENT_BURST" => vec!["0", "-1", "nan", "inf", "x", ""],
        "HOSTS" => vec!["300.1.1.1:7709", "host:0", ":7709", "127.0.0.1:0", "127.0.0.1:70000", "127.0.0.1", ""],
        "TIMEOUT" => vec!["0", "-1", "nan", "inf", "99999", "x"],
        "OUTPUT" => vec!["xml", ""],
        "FLAVOR" => vec!["fast"],
        "KIND" => vec!["zz", "256"],
        "SORT" => vec!["zz", "-1"],
        "CATEGORY" => vec!["zz", "-1", ""],
        "ADJUST" => vec!["qfx", ""],
        "VIEWS" => vec!["xfq"],
        "WITH" => vec!["bonds"],
        "OUT" | "DIR" | "SAVE" | "STORE" | "TDX_DIR" => vec![""],
        "LISTEN" => vec!["300.1.1.1:8000", "localhost", ":8000", ""],
        "F10_URL" => vec!["ftp://127.0.0.1/TQLEX", "not a url", ""],
        "ENTRY" => vec!["no_such_entry"],
        "PARAMS" => vec!["noequals", "=x"],
        "FIELDS" => vec!["zz", "", "bit_999", "close,zz"],
        "MAC_PERIOD" => vec!["0s", "", "daily", "7x", "0m"],
        "BAR_TIME" => vec!["middle", ""],
        "BOARD" => vec!["zz", "", "sh88x"],
        "DAYS" => vec!["0", "6", "-1", "x"],
        "SHARD" => vec!["3/3", "1/0", "1", "a/b", ""],
        "EX_CODE" => vec!["IFL0", "256#X", "47#", "47#ABCDEFGHIJ", "47#A B", "zz#IFL0", "\u{1b}[2J47#IFL0"],
        "EX_MARKET" => vec!["256", "-1", "zz", ""],
        "EX_PERIOD" => vec!["12", "7m", "daily", ""],
        "VIA" => vec!["mac", "zz", ""],
        _ => return None,
    })
}

/// Arguments whose every value is valid (free text a server matches).
const FREE_TEXT: &[&str] = &["SECTION", "NAME", "TOKEN", "ORIGIN"];

/// A value each kind of required argument accepts.
fn good_value(value_name: &str, scratch: &str) -> String {
    match value_name {
        "CODE" | "CODES" => "sz000001".into(),
        "MARKET" => "sz".into(),
        "CATEGORY" => "etf".into(),
        "NAME" => "银行".into(),
        "ENTRY" => "company_profile".into(),
        "BOARD" => "881001".into(),
        "EX_CODE" => "47#IFL0".into(),
        "EX_MARKET" => "47".into(),
        "FROM" | "TO" => "20261127".into(),
        "OUT" | "DIR" | "SAVE" | "STORE" => scratch.into(),
        other => panic!("no good value for required <{other}>: add one here"),
    }
}

/// One argument of a command, from its help.
#[derive(Debug, Clone)]
struct Arg {
    /// `--count`, or empty for a positional.
    flag: String,
    /// `COUNT`; empty for a switch.
    value: String,
    required: bool,
}

fn tdx() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdx"));
    cmd.env("TDX_ENGINE_LOOPBACK_ONLY", "1").env_remove("RUST_LOG").env("RUST_BACKTRACE", "1");
    cmd
}

fn help(command: Option<&str>) -> String {
    let mut cmd = tdx();
    if let Some(c) = command {
        cmd.args(c.split_whitespace());
    }
    let out = cmd.arg("-h").output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// The lines of a help section (`Commands:`, `Arguments:`, `Options:`).
fn section<'a>(help: &'a str, title: &str) -> Vec<&'a str> {
    help.lines().skip_while(|l| *l != title).skip(1).take_while(|l| !l.trim().is_empty()).collect()
}

/// The subcommands (but `help`) of `command`, or of `tdx` itself.
fn subcommands(command: Option<&str>) -> Vec<String> {
    let text = help(command);
    section(&text, "Commands:")
        .iter()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(|c| command.map_or_else(|| c.to_owned(), |parent| format!("{parent} {c}")))
        .collect()
}

/// Every command but `help`, a group's (`tdx mac`) as `mac quote`, ...
fn commands() -> Vec<String> {
    subcommands(None)
        .into_iter()
        .flat_map(|c| {
            let nested = subcommands(Some(&c));
            if nested.is_empty() {
                vec![c]
            } else {
                nested
            }
        })
        .collect()
}

/// The arguments of `command`: positionals, then options (`-h` aside).
fn arguments(command: &str) -> Vec<Arg> {
    let text = help(Some(command));
    let usage = text.lines().find(|l| l.starts_with("Usage:")).unwrap_or_default().to_owned();
    let mut out = Vec::new();
    for line in section(&text, "Arguments:") {
        let token = line.split_whitespace().next().unwrap_or_default();
        let value = token.trim_start_matches(['<', '[']).trim_end_matches('.').trim_end_matches(['>', ']']);
        out.push(Arg { flag: String::new(), value: value.to_owned(), required: token.starts_with('<') });
    }
    for line in section(&text, "Options:") {
        let head = line.trim_start();
        if !head.starts_with('-') {
            continue;
        }
        let words: Vec<&str> = head.split_whitespace().collect();
        let Some(flag) = words.iter().find(|w| w.starts_with("--")) else { continue };
        let flag = flag.trim_end_matches(',').to_owned();
        if flag == "--help" {
            continue;
        }
        let value = words
            .iter()
            .skip_while(|w| !w.starts_with("--"))
            .nth(1)
            .filter(|w| w.starts_with('<'))
            .map(|w| w.trim_matches(['<', '>']).to_owned())
            .unwrap_or_default();
        // Required options are the ones the usage line names outside brackets.
        let required = usage.split_whitespace().any(|w| w == flag);
        out.push(Arg { flag, value, required });
    }
    out
}

/// A listener on loopback that counts the connections it is offered.
struct Sentinel {
    host: String,
    accepted: Arc<AtomicUsize>,
}

impl Sentinel {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = accepted.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stream.is_ok() {
                    counter.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        Self { host, accepted }
    }
}

/// One case: the arguments after `tdx`, and the names the line must mention (any of them).
struct Case {
    args: Vec<String>,
    names: Vec<String>,
}

/// Runs a case: exit 2, one line naming the argument, no panic.
fn check(case: &Case, data_dir: &std::path::Path) -> Result<(), String> {
    let mut child = tdx()
        .args(&case.args)
        .env("TDX_ENGINE_DATA_DIR", data_dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A command that accepted its bad value runs on (a server waits for
    // clients): generous, so only such a command ever reaches it.
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(30) {
            child.kill().ok();
            child.wait().ok();
            return Err(format!("tdx {:?}: still running after 30 s: the value was accepted", case.args));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let problem = if out.status.code() != Some(2) {
        format!("exit {:?}", out.status.code())
    } else if lines.len() != 1 {
        "not one line".into()
    } else if stderr.contains("panicked") {
        "a panic".into()
    } else if !case.names.iter().any(|n| lines[0].contains(n.as_str())) {
        format!("the line names none of {:?}", case.names)
    } else if lines[0].chars().any(char::is_control) {
        "a control character reached the terminal".into()
    } else {
        return Ok(());
    };
    Err(format!("tdx {:?}: {problem}: {stderr}", case.args))
}

/// The names a line may use for `arg`: its flag, or its value name as clap shows it.
fn names(arg: &Arg) -> Vec<String> {
    // clap shows an optional positional as `[CODE]`.
    let mut names = vec![format!("<{}>", arg.value), format!("[{}]", arg.value)];
    if !arg.flag.is_empty() {
        names.push(arg.flag.clone());
    }
    names
}

#[test]
fn every_bad_argument_of_every_command_exits_2_naming_it_without_a_connection() {
    let sentinel = Sentinel::start();
    let scratch = std::env::temp_dir().join(format!("tdx-bad-input-{}", std::process::id()));
    let scratch_str = scratch.join("out").display().to_string();
    let commands = commands();
    assert!(commands.len() >= 20, "{commands:?}");
    let mut cases = Vec::new();
    let mut unknown = BTreeMap::new();
    for command in &commands {
        let args = arguments(command);
        // The command with its required arguments, against the sentinel
        // (the demo runs its own exchange and refuses --hosts).
        let base = |skip: Option<&Arg>| -> Vec<String> {
            let mut line: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
            for a in args.iter().filter(|a| a.required) {
                if skip.is_some_and(|s| s.flag == a.flag && s.value == a.value) {
                    continue;
                }
                if !a.flag.is_empty() {
                    line.push(a.flag.clone());
                }
                line.push(good_value(&a.value, &scratch_str));
            }
            if command != "demo" && skip.is_none_or(|s| s.flag != "--hosts") {
                line.extend(["--hosts".into(), sentinel.host.clone()]);
            }
            line
        };
        for arg in &args {
            if arg.required {
                cases.push(Case { args: base(Some(arg)), names: names(arg) });
            }
            if arg.value.is_empty() || FREE_TEXT.contains(&arg.value.as_str()) {
                continue;
            }
            let Some(values) = bad_values(&arg.value) else {
                unknown.entry(arg.value.clone()).or_insert_with(Vec::new).push(command.clone());
                continue;
            };
            for value in values {
                let mut line = base(Some(arg));
                if arg.flag == "--hosts" && command == "demo" {
                    continue;
                }
                if arg.flag.is_empty() {
                    // After the command's words and good values for the
                    // positionals before it (f10 ENTRY CODE).
                    let before: Vec<String> = args
                        .iter()
                        .take_while(|a| !(a.flag.is_empty() && a.value == arg.value))
                        .filter(|a| a.flag.is_empty() && !a.required)
                        .map(|a| good_value(&a.value, &scratch_str))
                        .collect();
                    let at = command.split_whitespace().count();
                    line.splice(at..at, before.into_iter().chain([value.to_owned()]));
                } else {
                    line.push(format!("{}={value}", arg.flag));
                    if !value.is_empty() && !value.starts_with('-') {
                        // Also as two words, as a user types it.
                        let mut spaced = base(Some(arg));
                        spaced.extend([arg.flag.clone(), value.to_owned()]);
                        cases.push(Case { args: spaced, names: names(arg) });
                    }
                }
                cases.push(Case { args: line, names: names(arg) });
            }
            if arg.value == "COUNT" || arg.value == "START" {
                // A negative number typed after its option is that option's bad value.
                let mut spaced = base(Some(arg));
                spaced.extend([arg.flag.clone(), "-1".into()]);
                cases.push(Case { args: spaced, names: names(arg) });
            }
        }
    }
    assert!(unknown.is_empty(), "arguments with no bad values in this table (add them to `bad_values`): {unknown:?}");
    // Pairs of options that do not go together.
    let host = sentinel.host.clone();
    let pairs: &[(&[&str], &[&str])] = &[
        (&["count", "--local", "--hosts", "127.0.0.1:1"], &["--local", "--hosts"]),
        (&["count", "--seed", "3"], &["--seed", "--local"]),
        (&["count", "--as-of", "20261120"], &["--as-of", "--local"]),
        (&["trades", "sz000001", "--all"], &["--all", "--date"]),
        (&["trades", "sz000001", "--detailed"], &["--detailed", "--date"]),
        (&["trades", "sz000001", "--count", "1900"], &["--count"]),
        (&["trades", "sz000001", "--date", "20261120", "--detailed", "--count", "1900"], &["--count"]),
        (&["category", "etf", "--all", "--count", "5"], &["--all", "--count"]),
        (&["bars", "sz000001", "--anchor", "20260101"], &["--anchor"]),
        (&["bars", "sz000001", "--start", "65000", "--count", "600"], &["--start", "--count"]),
        (&["demo", "--hosts", "127.0.0.1:1"], &["--hosts"]),
    ];
    for (args, names) in pairs {
        let mut line: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        if !line.iter().any(|a| a == "--hosts" || a == "--local") && line[0] != "demo" {
            line.extend(["--hosts".into(), host.clone()]);
        }
        cases.push(Case { args: line, names: names.iter().map(|s| (*s).to_owned()).collect() });
    }
    // The cases are independent processes: a few at a time, one more than
    // the cores, since each spends part of its life starting up.
    let lanes = std::thread::available_parallelism().map_or(2, |n| n.get() + 1);
    let failures: Vec<String> = std::thread::scope(|scope| {
        let lanes: Vec<_> = (0..lanes)
            .map(|lane| {
                let (cases, scratch) = (&cases, &scratch);
                scope.spawn(move || {
                    cases.iter().skip(lane).step_by(lanes).filter_map(|c| check(c, scratch).err()).collect::<Vec<_>>()
                })
            })
            .collect();
        lanes.into_iter().flat_map(|l| l.join().expect("a lane of cases")).collect()
    });
    std::thread::sleep(Duration::from_millis(50));
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
    assert_eq!(sentinel.accepted.load(Ordering::SeqCst), 0, "a bad command line reached the network");
    eprintln!("{} bad command lines over {} commands, each refused in one line", cases.len(), commands.len());
}
