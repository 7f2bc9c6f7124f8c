//! `tdx backfill --out DIR --ticks|--minutes --from D --to D`: the
//! options and the report; the backfill itself is the store library's
//! (tdx_store::backfill), which the Python package's Dask driver runs too.

use std::path::PathBuf;

use clap::Args;
use tdx_engine::proto::{Date, Market, SecurityCode};
use tdx_store::backfill::{self, BackfillError, Kind, Plan};
use tdx_store::shard::{self, Shard};

use crate::{CliError, Context};

/// `tdx backfill` options.
#[derive(Args, Clone, Debug)]
pub struct BackfillArgs {
    /// The store (the same one `tdx sync` keeps): a directory (created if
    /// missing) or s3://BUCKET/PREFIX (docs/SCALING.md).
    #[arg(long, value_parser = crate::directory)]
    pub out: PathBuf,
    /// Every tick of each day, with its order count where the server has it.
    #[arg(long, required_unless_present = "minutes")]
    pub ticks: bool,
    /// Each day's minute line (240 points: price and volume).
    #[arg(long)]
    pub minutes: bool,
    /// First day (YYYYMMDD).
    #[arg(long)]
    pub from: Date,
    /// Last day (YYYYMMDD), included.
    #[arg(long)]
    pub to: Date,
    /// Markets whose listed securities to backfill.
    #[arg(long, value_delimiter = ',', default_value = "sz,sh,bj")]
    pub markets: Vec<Market>,
    /// Only these securities (instead of every listed one of --markets).
    #[arg(long, value_delimiter = ',')]
    pub codes: Vec<SecurityCode>,
    /// Only shard I of N (I from 0) of the securities, as `tdx sync --shard`;
    /// `tdx sync --merge-manifests` joins the fragments.
    #[arg(long, value_parser = shard::parse_shard)]
    pub shard: Option<Shard>,
    /// Security-days in flight at once [default: the pool's connections].
    #[arg(long, value_parser = crate::at_least_one, allow_negative_numbers = true)]
    pub jobs: Option<usize>,
}

/// Runs `tdx backfill`.
pub async fn run(ctx: &Context, args: BackfillArgs) -> Result<(), CliError> {
    let kinds: Vec<Kind> =
        [(args.ticks, Kind::Ticks), (args.minutes, Kind::Minutes)].into_iter().filter(|k| k.0).map(|k| k.1).collect();
    // The location's errors before any server is asked (the library opens it again).
    super::open(&args.out)?;
    let plan = Plan {
        out: args.out.clone(),
        kinds,
        from: args.from,
        to: args.to,
        markets: args.markets.clone(),
        codes: args.codes.clone(),
        shard: args.shard,
        jobs: args.jobs,
        storage: Vec::new(),
    };
    let summary = match backfill::run(&ctx.client, &plan).await {
        Ok(s) => s,
        Err(e @ BackfillError::Dates { .. }) => return Err(CliError::usage(e.to_string())),
        Err(BackfillError::Engine(e)) => return Err(e.into()),
        Err(e) => return Err(CliError::new(crate::output::escape_control(&e.to_string()))),
    };
    let mut value = serde_json::json!({ "out": args.out.display().to_string() });
    if let (Some(out), serde_json::Value::Object(rest)) = (value.as_object_mut(), summary.to_json()) {
        out.extend(rest);
    }
    if ctx.format == crate::output::Format::Json {
        println!("{}", serde_json::to_string_pretty(&value).unwrap_or_default());
    } else {
        println!(
            "{} securities x {} days: {} files written ({} rows, {:.1} MB), {} already stored, {} empty, {} failed, {:.1}s",
            summary.securities,
            summary.days,
            summary.files_written,
            summary.rows_written,
            summary.bytes_written as f64 / 1e6,
            summary.already_stored,
            summary.empty,
            summary.failed.len(),
            summary.seconds
        );
    }
    match summary.failed.first() {
        None => Ok(()),
        Some((file, e)) => Err(CliError::new(format!(
            "{} of {} security-days failed (first: {}: {}); run again to resume",
            summary.failed.len(),
            summary.planned,
            crate::output::escape_control(file),
            crate::output::escape_control(e)
        ))),
    }
}
