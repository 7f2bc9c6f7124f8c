//! Seeds from the environment, the replay command a failure prints, and the
//! regressions file: proptest's persistence, for seeds.

use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Replays one seed: every run and sweep uses it instead of its own.
pub const SEED_ENV: &str = "TDX_SIM_SEED";
/// First seed of a sweep (a CI shard's offset).
pub const START_ENV: &str = "TDX_SIM_START";
/// Seeds in a sweep (a CI shard's length).
pub const SEEDS_ENV: &str = "TDX_SIM_SEEDS";
/// `I/N`: a sweep runs only the I-th (from 0) of N contiguous blocks of its
/// seeds, and shard 0 alone the regressions file's (a CI matrix job's share).
pub const SHARD_ENV: &str = "TDX_SIM_SHARD";

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    match value.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => panic!("{name}={value:?} is not a number"),
    }
}

/// The seed `TDX_SIM_SEED` asks for, if set.
pub(crate) fn seed_override() -> Option<u64> {
    env_u64(SEED_ENV)
}

/// The seeds a sweep over `default` runs: `TDX_SIM_START` and
/// `TDX_SIM_SEEDS` move and resize it, then `TDX_SIM_SHARD` takes its block.
pub(crate) fn sweep_range(default: Range<u64>) -> Range<u64> {
    let start = env_u64(START_ENV).unwrap_or(default.start);
    let seeds = env_u64(SEEDS_ENV).unwrap_or(default.end.saturating_sub(default.start));
    let range = start..start.saturating_add(seeds);
    match shard_override() {
        Some((index, count)) => shard_block(range, index, count),
        None => range,
    }
}

/// True unless `TDX_SIM_SHARD` names a shard other than 0: the regressions
/// file's seeds run once per campaign, not once per shard.
pub(crate) fn runs_regressions() -> bool {
    shard_override().is_none_or(|(index, _)| index == 0)
}

fn shard_override() -> Option<(u64, u64)> {
    let value = std::env::var(SHARD_ENV).ok()?;
    Some(parse_shard(&value).unwrap_or_else(|e| panic!("{SHARD_ENV}: {e}")))
}

/// `I/N` with `0 <= I < N`: a shard of a seed range.
pub fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    let (index, count) = s.split_once('/').ok_or_else(|| format!("{s:?} is not I/N, for example 0/4"))?;
    let index: u64 = index.trim().parse().map_err(|_| format!("bad shard index {index:?}"))?;
    let count: u64 = count.trim().parse().map_err(|_| format!("bad shard count {count:?}"))?;
    if count == 0 || index >= count {
        return Err(format!("shard {index}/{count}: the index runs from 0 to N-1"));
    }
    Ok((index, count))
}

/// The `index`-th of `count` contiguous blocks of `range`; the first
/// `len % count` blocks take one seed more, so the blocks cover the
/// range once, in order.
pub fn shard_block(range: Range<u64>, index: u64, count: u64) -> Range<u64> {
    assert!(index < count, "shard {index} of {count}: the index runs from 0 to N-1");
    let n = range.end.saturating_sub(range.start);
    let (base, extra) = (n / count, n % count);
    let first = range.start + index * base + index.min(extra);
    let len = base + u64::from(index < extra);
    debug_assert!(first + len <= range.end);
    first..first + len
}

/// The command that runs the failing code again with `seed`: inside a
/// `cargo test` test (libtest names the thread after the test) that test
/// alone; in an example, that example; otherwise this program with its
/// arguments.
pub fn replay_command(seed: u64) -> String {
    let args: Vec<String> = std::env::args().collect();
    command_for(seed, std::thread::current().name(), &args)
}

fn command_for(seed: u64, thread: Option<&str>, args: &[String]) -> String {
    if let Some(test) = thread.filter(|n| *n != "main") {
        return format!("{SEED_ENV}={seed} cargo test {test} -- --exact");
    }
    let program = args.first().map(PathBuf::from).unwrap_or_default();
    let in_examples = program.parent().and_then(Path::file_name).is_some_and(|d| d == "examples");
    match program.file_stem().and_then(|s| s.to_str()) {
        Some(example) if in_examples => {
            let rest = if args.len() > 1 { format!(" -- {}", args[1..].join(" ")) } else { String::new() };
            format!("{SEED_ENV}={seed} cargo run --example {example}{rest}")
        }
        _ => format!("{SEED_ENV}={seed} {}", args.join(" ")),
    }
}

/// A file of seeds that once failed, one per line (`#` starts a comment),
/// meant to be committed: a sweep runs them before its range, and a
/// failing seed is appended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Regressions {
    path: PathBuf,
}

impl Regressions {
    /// The file at `path` (relative paths are from the working directory,
    /// which `cargo test` sets to the package's root). It need not exist.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The seeds in it, in file order; none if it does not exist.
    pub fn seeds(&self) -> io::Result<Vec<u64>> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut seeds = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let seed = line.parse().map_err(|_| {
                let what = format!("{}:{}: {line:?} is not a seed", self.path.display(), n + 1);
                io::Error::new(io::ErrorKind::InvalidData, what)
            })?;
            seeds.push(seed);
        }
        Ok(seeds)
    }

    /// Appends `seed` with a one-line note, unless it is there already;
    /// true when it was added.
    pub fn add(&self, seed: u64, note: &str) -> io::Result<bool> {
        if self.seeds()?.contains(&seed) {
            return Ok(false);
        }
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let new = !self.path.exists();
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&self.path)?;
        if new {
            writeln!(
                file,
                "# Seeds that failed once (tdx_sim::testkit); each replays on every sweep. Commit this file."
            )?;
        }
        let note: String = note.chars().take(160).map(|c| if c == '\n' { ' ' } else { c }).collect();
        writeln!(file, "{seed} # {note}")?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regressions_file_keeps_each_seed_once() {
        let dir = std::env::temp_dir().join(format!("tdx-sim-regressions-{}", std::process::id()));
        let file = Regressions::at(dir.join("nested/seeds.txt"));
        assert_eq!(file.seeds().unwrap(), Vec::<u64>::new());
        assert!(file.add(42, "first\nline").unwrap());
        assert!(!file.add(42, "again").unwrap());
        assert!(file.add(7, "second").unwrap());
        assert_eq!(file.seeds().unwrap(), vec![42, 7]);
        std::fs::write(file.path(), "x\n").unwrap();
        assert!(file.seeds().is_err(), "a line that is not a seed is an error");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_example_or_a_program_replays_with_its_arguments() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            command_for(4, Some("main"), &args(&["/r/target/debug/examples/test_under_faults", "--seeds", "5"])),
            "TDX_SIM_SEED=4 cargo run --example test_under_faults -- --seeds 5"
        );
        assert_eq!(
            command_for(4, None, &args(&["/r/target/debug/examples/quickstart"])),
            "TDX_SIM_SEED=4 cargo run --example quickstart"
        );
        assert_eq!(command_for(4, None, &args(&["./sweeper", "-v"])), "TDX_SIM_SEED=4 ./sweeper -v");
        assert_eq!(command_for(4, Some("mod::t"), &[]), "TDX_SIM_SEED=4 cargo test mod::t -- --exact");
    }

    #[test]
    fn a_test_thread_replays_through_cargo_test() {
        let command = replay_command(9);
        assert!(command.starts_with("TDX_SIM_SEED=9 cargo test "), "{command}");
        assert!(command.ends_with("a_test_thread_replays_through_cargo_test -- --exact"), "{command}");
    }
}
