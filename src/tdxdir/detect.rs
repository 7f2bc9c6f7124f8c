//! `--detect`: TDX installs in the usual places, and what each holds.
//!
//! An install is a directory with a `vipdoc/` in it. Looked for, in
//! order: `$TDX_HOME`; on Windows the usual folders at the root of every
//! drive (`C:\new_tdx`, `D:\new_jyplug`, ...); elsewhere the same folders
//! in the home directory and, one level down, in the `drive_c` of every
//! Wine prefix (`~/.wine`, `~/.wine*`, `~/.local/share/wineprefixes/*`,
//! `$WINEPREFIX`), where the desktop client runs under Wine.

use std::path::{Path, PathBuf};

use serde_json::json;
use tdx_engine::files::layout::{BOARD_FILES_DIR, CUSTOM_BLOCKS_DIR, FINANCE_DIR, GBBQ_PATH, INDUSTRY_PATH};
use tdx_engine::files::FileKind;
use tdx_engine::proto::Market;

use crate::output::{Cell, Format, Table};
use crate::CliError;

/// Folder names brokers' builds of the client install to.
const USUAL_NAMES: [&str; 4] = ["new_tdx", "new_jyplug", "new_tdx64", "tdx"];

/// What one install holds.
#[derive(Debug, Clone)]
pub struct Install {
    /// The install directory.
    pub root: PathBuf,
    /// Files per market and kind.
    pub bar_files: Vec<(Market, FileKind, usize)>,
    /// Which of gbbq, the board files, tdxhy.cfg, custom blocks exist; finance files.
    pub extras: Vec<(&'static str, usize)>,
}

fn is_install(dir: &Path) -> bool {
    dir.join("vipdoc").is_dir()
}

/// Candidate install directories, in the order they are tried (existing
/// or not), from the environment and home directory given.
fn candidates(tdx_home: Option<PathBuf>, home: Option<PathBuf>, wine_prefix: Option<PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = tdx_home.into_iter().collect();
    if cfg!(windows) {
        for drive in 'C'..='H' {
            for name in USUAL_NAMES {
                out.push(PathBuf::from(format!("{drive}:\\{name}")));
            }
        }
    }
    let Some(home) = home else { return out };
    for name in USUAL_NAMES {
        out.push(home.join(name));
    }
    let mut prefixes: Vec<PathBuf> = wine_prefix.into_iter().collect();
    prefixes.push(home.join(".wine"));
    let mut listed = |dir: PathBuf, keep: &dyn Fn(&str) -> bool| {
        if let Ok(entries) = std::fs::read_dir(&dir) {
            let mut found: Vec<PathBuf> =
                entries.flatten().filter(|e| keep(&e.file_name().to_string_lossy())).map(|e| e.path()).collect();
            found.sort();
            prefixes.extend(found);
        }
    };
    listed(home.clone(), &|n| n.starts_with(".wine") && n != ".wine");
    listed(home.join(".local/share/wineprefixes"), &|_| true);
    for prefix in prefixes {
        let drive_c = prefix.join("drive_c");
        for name in USUAL_NAMES {
            out.push(drive_c.join(name));
        }
        // Any other folder of drive_c holding a vipdoc/ (brokers rename the client).
        if let Ok(entries) = std::fs::read_dir(&drive_c) {
            let mut other: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            other.sort();
            out.extend(other);
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|p| seen.insert(p.clone()));
    out
}

/// The installs found in the usual places, first the likeliest.
pub fn find_installs() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE")).map(PathBuf::from);
    let tdx_home = std::env::var_os("TDX_HOME").filter(|v| !v.is_empty()).map(PathBuf::from);
    let wine = std::env::var_os("WINEPREFIX").filter(|v| !v.is_empty()).map(PathBuf::from);
    candidates(tdx_home, home, wine).into_iter().filter(|p| is_install(p)).collect()
}

fn count_files(dir: &Path, extension: &str) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .filter(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.rsplit_once('.').is_some_and(|(_, ext)| ext.eq_ignore_ascii_case(extension))
            })
            .count()
    })
}

/// What `root` holds.
pub fn survey(root: &Path) -> Install {
    let mut bar_files = Vec::new();
    for market in Market::ALL {
        for kind in FileKind::ALL {
            let dir = root.join("vipdoc").join(market.prefix()).join(kind.directory());
            bar_files.push((market, kind, count_files(&dir, kind.extension())));
        }
    }
    let exists = |p: &str| usize::from(root.join(p).is_file());
    let boards = tdx_engine::files::blocks::BoardKind::ALL
        .iter()
        .filter(|k| root.join(BOARD_FILES_DIR).join(k.file_name()).is_file())
        .count();
    let extras = vec![
        ("gbbq", exists(GBBQ_PATH)),
        ("board files", boards),
        ("tdxhy.cfg", exists(INDUSTRY_PATH)),
        ("custom blocks", exists(&format!("{CUSTOM_BLOCKS_DIR}/blocknew.cfg"))),
        ("finance files", count_files(&root.join(FINANCE_DIR), "zip") + count_files(&root.join(FINANCE_DIR), "dat")),
    ];
    Install { root: root.to_owned(), bar_files, extras }
}

/// The install to use: the one given, or with `detect` the first found.
pub fn resolve(given: Option<&Path>, detect: bool) -> Result<PathBuf, CliError> {
    match (given, detect) {
        (Some(dir), _) => Ok(dir.to_owned()),
        (None, true) => find_installs().into_iter().next().ok_or_else(|| {
            CliError::new(
                "no TDX install found (looked in $TDX_HOME, the home directory and Wine prefixes); pass --tdx-dir",
            )
        }),
        (None, false) => Err(CliError::new("--tdx-dir or --detect is needed")),
    }
}

/// `--detect` on its own: every install found and what it holds.
pub fn detect(format: Format) -> Result<(), CliError> {
    let installs: Vec<Install> = find_installs().iter().map(|r| survey(r)).collect();
    let mut out = std::io::stdout().lock();
    if format == Format::Json {
        let value: Vec<serde_json::Value> = installs
            .iter()
            .map(|i| {
                let bars: serde_json::Map<String, serde_json::Value> = i
                    .bar_files
                    .iter()
                    .filter(|(_, _, n)| *n > 0)
                    .map(|(m, k, n)| (format!("{}{k}", m.prefix()), json!(n)))
                    .collect();
                let extras: serde_json::Map<String, serde_json::Value> =
                    i.extras.iter().map(|(name, n)| ((*name).to_owned(), json!(n))).collect();
                json!({"install": i.root.display().to_string(), "bar_files": bars, "other_files": extras})
            })
            .collect();
        use std::io::Write;
        writeln!(out, "{}", serde_json::to_string_pretty(&value).unwrap_or_default())?;
        return Ok(());
    }
    if installs.is_empty() {
        return Err(CliError::new("no TDX install found (looked in $TDX_HOME, the home directory and Wine prefixes)"));
    }
    let mut table = Table::new(&["install", "files", "count"]);
    for i in &installs {
        let root = i.root.display().to_string();
        for (m, k, n) in i.bar_files.iter().filter(|(_, _, n)| *n > 0) {
            table.push(vec![
                Cell::Text(root.clone()),
                Cell::Text(format!("{}/{}/*{k}", m.prefix(), k.directory())),
                Cell::Int(*n as i64),
            ]);
        }
        for (name, n) in &i.extras {
            table.push(vec![Cell::Text(root.clone()), Cell::Text((*name).to_owned()), Cell::Int(*n as i64)]);
        }
    }
    table.write(format, &mut out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wine_prefixes_and_the_home_directory_are_searched() {
        let home = std::env::temp_dir().join(format!("tdx-detect-{}", std::process::id()));
        let install = home.join(".wine/drive_c/zd_broker");
        std::fs::create_dir_all(install.join("vipdoc/sz/lday")).unwrap();
        std::fs::write(install.join("vipdoc/sz/lday/sz000001.day"), [0u8; 32]).unwrap();
        let other = home.join(".local/share/wineprefixes/tdx/drive_c/new_tdx");
        std::fs::create_dir_all(other.join("vipdoc")).unwrap();
        let all = candidates(None, Some(home.clone()), None);
        let found: Vec<&PathBuf> = all.iter().filter(|p| is_install(p)).collect();
        assert_eq!(found, [&install, &other]);
        let s = survey(&install);
        assert!(s.bar_files.contains(&(Market::Sz, FileKind::Day, 1)));
        assert!(candidates(Some(other.clone()), None, None).starts_with(&[other]));
        std::fs::remove_dir_all(home).unwrap();
    }
}
