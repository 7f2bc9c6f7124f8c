//! `tdx`: command-line client for TDX 7709 market-data servers.

fn main() {
    eprintln!("tdx {}: the command-line tool is not built yet; see the README", env!("CARGO_PKG_VERSION"));
    std::process::exit(2);
}
