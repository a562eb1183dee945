//! The command-line interface: clap definitions only. Behaviour lives in `commands/`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use serde::{Deserialize, Serialize};

const ABOUT: &str =
    "Sizes mailbox servers (Exchange 2013/2016/2019 class) and validates their storage.";

const EXAMPLES: &str = "\
Examples:
  mbxstress size                                   size the built-in example (Tintri, 16,000 users)
  mbxstress size --mailboxes 5000 --messages-per-day 150 --servers 2 --copies 2 \\
                 --databases-per-server 6 --profile-out esrp.toml
  mbxstress size --input deployment.toml --json

Exit codes: 0 success, 1 a test verdict failed, 2 usage or configuration error, 3 runtime error.";

/// mbxstress: mailbox server sizing and storage validation.
#[derive(Debug, Parser)]
#[command(name = "mbxstress", version, about = ABOUT, after_help = EXAMPLES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Size mailbox servers: CPU, memory, storage and IOPS, with a test profile for `run`.
    #[command(after_help = SIZE_HELP)]
    Size(SizeArgs),
}

const SIZE_HELP: &str = "\
Without --mailboxes, --messages-per-day, --servers, --input or --example, sizes the built-in
example 'tintri' (any other flags given still apply, e.g. --method exchange2013).

Methods:
  exchange2013         Exchange 2013 Server Role Requirements Calculator (default)
  exchange2016         Exchange 2016 calculator (2013 IOPS and memory inputs, 2016 megacycles)
  exchange2019         Exchange 2019 calculator (2016 inputs, 2019 RAM and core ceilings)
  exchange2010-vmware  Exchange 2010 figures of VMware's design and sizing guide (CPU, memory,
                       IOPS), storage from the 2013 calculator, as the Tintri paper sized it

Input file (--input FILE): TOML with the flags' names in snake_case; unknown keys are errors.
Flags given on the command line override the file. Example:
  method = \"exchange2013\"
  mailboxes = 5000
  messages_per_day = 150
  servers = 2
  copies = 2
  databases_per_server = 6
  virtualized = false

Examples:
  mbxstress size --mailboxes 16000 --messages-per-day 150 --quota-mb 2048 --servers 4 \\
      --databases-per-server 4 --specint-rate 1120 --specint-cores 16 --cores-per-server 4 \\
      --cpu-mhz 2500 --peak-cpu-pct 35 --method exchange2010-vmware
  mbxstress size --example dell-esrp --json
  mbxstress size --example tintri --method exchange2013 --profile-out server.toml";

/// Deployment description shared by `size` flags and `size --input FILE` (same names, snake_case in
/// the file). Every field is optional here; defaults are applied after flags and file are merged,
/// so we always know whether the user gave a value.
#[derive(Debug, Clone, Default, Args, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeInputs {
    /// Sizing method: exchange2013 (default), exchange2016, exchange2019, exchange2010-vmware.
    #[arg(long, value_name = "METHOD", value_parser = ["exchange2013", "exchange2016", "exchange2019", "exchange2010-vmware"])]
    pub method: Option<String>,
    /// Mailboxes in the whole deployment.
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub mailboxes: Option<u64>,
    /// Messages sent + received per mailbox per day (e.g. 150).
    #[arg(long, value_name = "N", value_parser = parse_number, allow_negative_numbers = true)]
    pub messages_per_day: Option<f64>,
    /// Average message size in KB [default: 75].
    #[arg(long, value_name = "KB", value_parser = parse_number, allow_negative_numbers = true)]
    pub message_size_kb: Option<f64>,
    /// Mailbox quota in MB [default: 2048; at most 102400].
    #[arg(long, value_name = "MB", value_parser = parse_count, allow_negative_numbers = true)]
    pub quota_mb: Option<u64>,
    /// Copies of each database (DAG copies) [default: 1].
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub copies: Option<u32>,
    /// Mailbox servers.
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub servers: Option<u32>,
    /// Database copies on each server (1..=100) [default: fewest within the recommended size].
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true, conflicts_with = "mailboxes_per_database")]
    pub databases_per_server: Option<u32>,
    /// Mailboxes in each database (instead of --databases-per-server).
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub mailboxes_per_database: Option<u64>,
    /// I/O headroom added to the IOPS per mailbox, percent [default: 20].
    #[arg(long, value_name = "PCT", value_parser = parse_number, allow_negative_numbers = true)]
    pub headroom_pct: Option<f64>,
    /// IOPS per mailbox before headroom, overriding the method's table.
    #[arg(long, value_name = "IOPS", value_parser = parse_number, allow_negative_numbers = true)]
    pub iops_per_mailbox: Option<f64>,
    /// SPECint_rate2006 result of the server model (with --specint-cores).
    #[arg(long, value_name = "SCORE", value_parser = parse_number, allow_negative_numbers = true, requires = "specint_cores")]
    pub specint_rate: Option<f64>,
    /// Cores of the system the SPECint_rate2006 result was measured on (with --specint-rate).
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true, requires = "specint_rate")]
    pub specint_cores: Option<u32>,
    /// Cores in each mailbox server (to compute utilization).
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub cores_per_server: Option<u32>,
    /// Processor clock in MHz (needed by exchange2010-vmware).
    #[arg(long, value_name = "MHZ", value_parser = parse_number, allow_negative_numbers = true)]
    pub cpu_mhz: Option<f64>,
    /// Target peak CPU utilization, percent [default: 80].
    #[arg(long, value_name = "PCT", value_parser = parse_number, allow_negative_numbers = true)]
    pub peak_cpu_pct: Option<f64>,
    /// Cores of a separate Client Access server (exchange2013, not multi-role) [default: 4].
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub client_access_cores: Option<u32>,
    /// Days of transaction logs kept [default: 3].
    #[arg(long, value_name = "DAYS", value_parser = parse_count32, allow_negative_numbers = true)]
    pub log_retention_days: Option<u32>,
    /// Deleted item retention window in days [default: 14].
    #[arg(long, value_name = "DAYS", value_parser = parse_count32, allow_negative_numbers = true)]
    pub deleted_item_retention_days: Option<u32>,
    /// Extra database size for growth, percent [default: 0; D1 recommends 20].
    #[arg(long, value_name = "PCT", value_parser = parse_number, allow_negative_numbers = true)]
    pub data_overhead_pct: Option<f64>,
    /// Servers are virtual machines (input file only; the flag is --virtualized).
    #[arg(skip)]
    pub virtualized: Option<bool>,
    /// Client Access on the mailbox servers (input file only; the flag is --multi-role).
    #[arg(skip)]
    pub multi_role: Option<bool>,
}

/// `mbxstress size`.
#[derive(Debug, Args)]
pub struct SizeArgs {
    /// The deployment.
    #[command(flatten)]
    pub inputs: SizeInputs,
    /// Servers are virtual machines (the calculators add 10% to megacycles).
    #[arg(long)]
    pub virtualized: bool,
    /// Client Access runs on the mailbox servers (exchange2013).
    #[arg(long)]
    pub multi_role: bool,
    /// Read the deployment from a TOML file (strict: unknown keys are errors).
    #[arg(long, value_name = "FILE", conflicts_with = "example")]
    pub input: Option<PathBuf>,
    /// Start from a built-in example from the seed papers: tintri, dell-esrp, dell-sizing, pure.
    #[arg(long, value_name = "NAME", value_parser = ["tintri", "dell-esrp", "dell-sizing", "pure"])]
    pub example: Option<String>,
    /// Print JSON (the result contract's keys) instead of the report.
    #[arg(long)]
    pub json: bool,
    /// Write the storage-test profile of one server to FILE (TOML, for `mbxstress run --profile`).
    #[arg(long, value_name = "FILE")]
    pub profile_out: Option<PathBuf>,
}

fn parse_count(s: &str) -> Result<u64, String> {
    let s = s.trim();
    if s.starts_with('-') {
        return Err(format!("must be a positive whole number, got {s}"));
    }
    let cleaned = s.replace(['_', ','], "");
    cleaned
        .parse::<u64>()
        .map_err(|_| format!("'{s}' is not a whole number"))
}

fn parse_count32(s: &str) -> Result<u32, String> {
    let v = parse_count(s)?;
    u32::try_from(v).map_err(|_| format!("{v} is too large"))
}

fn parse_number(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let v: f64 = s
        .replace(['_', ','], "")
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if !v.is_finite() {
        return Err(format!("'{s}' is not a finite number"));
    }
    if v < 0.0 {
        return Err(format!("must not be negative, got {s}"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn number_parsers() {
        assert_eq!(parse_count("16,000"), Ok(16_000));
        assert!(parse_count("-5")
            .expect_err("negative")
            .contains("positive"));
        assert!(parse_count("abc").is_err());
        assert_eq!(parse_number("0.18"), Ok(0.18));
        assert!(parse_number("nan").is_err());
        assert!(parse_number("-1").is_err());
    }
}
