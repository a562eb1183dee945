//! What the user tells the calculator, with defaults and validation.

use serde::Serialize;

use mbx_config::show_number;

use crate::storage::{DiskClass, Raid};
use crate::Method;

/// How the databases are laid out: the user gives at most one of these.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DatabaseLayout {
    /// Choose the fewest databases that keep each under the recommended size
    /// (200 GB without copies, 2 TB with two or more).
    Auto,
    /// Database copies hosted on each server (the databases Jetstress creates on it).
    PerServer(u32),
    /// Mailboxes in each database.
    MailboxesPerDatabase(u64),
}

/// CPU description of the mailbox servers. Everything is optional: without SPECint figures the
/// method's baseline core is assumed (and a warning says so).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuInput {
    /// SPECint_rate2006 result of the server model: 1..=1,000,000, and at least 1 per core.
    pub specint_rate: Option<f64>,
    /// Cores of the system on which `specint_rate` was measured: 1..=16,384.
    pub specint_cores: Option<u32>,
    /// Cores in each mailbox server (for utilization): 1..=16,384.
    pub cores_per_server: Option<u32>,
    /// Processor clock in MHz (the 2010 / VMware formula needs it): 100..=10,000.
    pub cpu_mhz: Option<f64>,
    /// Target peak CPU utilization in percent: 1..=100.
    pub peak_cpu_pct: f64,
    /// Cores of a separate Client Access server (2013, not multi-role): 1..=16,384.
    pub client_access_cores: u32,
}

/// A sizing question. Build it with [`SizingInput::new`] (defaults) and adjust the fields.
///
/// Every field has a documented range (below and in `mbxstress size --help`), checked by
/// [`SizingInput::validate`]. Within these ranges every figure of the report is a finite number
/// and every count fits its integer type, so an impossible deployment is an [`InputError`] naming
/// the field, never an `inf` or a saturated count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizingInput {
    /// The method to follow.
    pub method: Method,
    /// Mailboxes in the whole deployment: 1..=10,000,000.
    pub mailboxes: u64,
    /// Messages sent + received per mailbox per day: 1..=10,000.
    pub messages_per_day: f64,
    /// Average message size in KB: 1..=100,000.
    pub message_size_kb: f64,
    /// Mailbox quota in MB: 1..=102,400 (100 GB).
    pub quota_mb: u64,
    /// Copies of each database (1 = no DAG copies): 1..=16, and at most `servers`.
    pub copies: u32,
    /// Mailbox servers: 1..=10,000.
    pub servers: u32,
    /// Database layout: 1..=100 databases per server, or 1..=10,000,000 mailboxes per database
    /// (which must give at most 100 databases per server).
    pub layout: DatabaseLayout,
    /// I/O overhead added to the profile's IOPS, in percent: 0..=1000.
    pub headroom_pct: f64,
    /// Overrides the method's IOPS-per-mailbox table (value without headroom): 0.0001..=100.
    pub iops_per_mailbox: Option<f64>,
    /// Processor description.
    pub cpu: CpuInput,
    /// Servers are virtual machines (2013+ calculators add 10% to megacycles).
    pub virtualized: bool,
    /// Client Access runs on the mailbox servers (2013; 2016+ are always multi-role).
    pub multi_role: bool,
    /// Days of transaction logs kept (3 by default; more with backup-based truncation): 1..=365.
    pub log_retention_days: u32,
    /// Deleted item retention window in days: 0..=3650.
    pub deleted_item_retention_days: u32,
    /// Extra database overhead in percent (growth; D1 recommends at least 20): 0..=1000.
    pub data_overhead_pct: f64,
    /// Storage design: the disks, their figures and the RAID level of each volume.
    pub storage: StorageInput,
    /// Share of a day's transaction logs generated in the busiest hour, percent: 100/24..=100
    /// (default 12, an assumption: docs/sizing.md).
    pub peak_hour_log_pct: f64,
    /// Datacenters the copies of each database are spread over: 1..=copies.
    pub sites: u32,
    /// Of `copies`, how many are lagged (never activated by a failover): 0..=copies - 1.
    pub lagged_copies: u32,
    /// Replay lag of the lagged copies in days: 0..=14 (Exchange's maximum) [default 7].
    pub lag_days: f64,
    /// Archive mailbox quota in MB, in the same databases as the primary mailboxes
    /// (0 = no archives): 0..=102,400.
    pub archive_quota_mb: u64,
}

/// The disks of the mailbox servers: a class (with default capacity and IOPS), optional
/// overrides, and the RAID level of the database and log volumes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StorageInput {
    /// The class of disk.
    pub disk_class: DiskClass,
    /// Capacity of one disk in GB as labelled (decimal), overriding the class: 1..=1,000,000.
    pub disk_capacity_gb: Option<f64>,
    /// Random IOPS of one disk, overriding the class: 1..=10,000,000.
    pub disk_iops: Option<f64>,
    /// RAID level of the database volumes.
    pub db_raid: Raid,
    /// RAID level of the log volumes.
    pub log_raid: Raid,
}

/// Largest disk capacity accepted, GB.
pub const MAX_DISK_CAPACITY_GB: f64 = 1_000_000.0;
/// Most IOPS of one disk accepted.
pub const MAX_DISK_IOPS: f64 = 10_000_000.0;
/// Default share of a day's logs in the busiest hour, percent (assumption: docs/sizing.md).
pub const DEFAULT_PEAK_HOUR_LOG_PCT: f64 = 12.0;
/// Longest replay lag Exchange allows, days.
pub const MAX_LAG_DAYS: f64 = 14.0;

/// Default average message size in KB (Microsoft's typical value, used in every seed).
pub const DEFAULT_MESSAGE_SIZE_KB: f64 = 75.0;
/// Default mailbox quota in MB (the calculator's default and every seed's choice).
pub const DEFAULT_QUOTA_MB: u64 = 2048;
/// Default I/O headroom in percent (ESRP practice: "includes 20% headroom").
pub const DEFAULT_HEADROOM_PCT: f64 = 20.0;
/// Default peak CPU target in percent (the calculator flags more than 80%).
pub const DEFAULT_PEAK_CPU_PCT: f64 = 80.0;
/// Largest quota accepted, in MB (100 GB: Exchange's largest supported mailbox).
pub const MAX_QUOTA_MB: u64 = mbx_config::MAX_QUOTA_MB;
/// Most databases per server any Exchange edition supports (2013 CU2+, 2016, 2019).
pub const MAX_DATABASES_PER_SERVER: u32 = mbx_config::MAX_DATABASES;
/// Most copies of a database a DAG supports.
pub const MAX_COPIES: u32 = 16;
/// Most mailboxes in a deployment (and in one server's test profile).
pub const MAX_MAILBOXES: u64 = mbx_config::MAX_MAILBOXES;
/// Most messages per mailbox per day (the published tables stop at 500).
pub const MAX_MESSAGES_PER_DAY: f64 = 10_000.0;
/// Largest average message size, KB.
pub const MAX_MESSAGE_SIZE_KB: f64 = 100_000.0;
/// Most mailbox servers.
pub const MAX_SERVERS: u32 = 10_000;
/// Largest I/O headroom, percent.
pub const MAX_HEADROOM_PCT: f64 = 1000.0;
/// Smallest IOPS-per-mailbox override (the published tables start near 0.03).
pub const MIN_IOPS_PER_MAILBOX: f64 = 0.0001;
/// Largest IOPS-per-mailbox override (the published tables stop near 0.4).
pub const MAX_IOPS_PER_MAILBOX: f64 = mbx_config::MAX_IOPS_PER_MAILBOX;
/// Largest SPECint_rate2006 result.
pub const MAX_SPECINT_RATE: f64 = 1_000_000.0;
/// Most cores of one system (SPECint cores, cores per server, Client Access cores).
pub const MAX_CORES: u32 = 16_384;
/// Slowest and fastest processor clock accepted, MHz.
pub const CPU_MHZ_RANGE: (f64, f64) = (100.0, 10_000.0);
/// Largest extra database overhead, percent.
pub const MAX_DATA_OVERHEAD_PCT: f64 = 1000.0;

impl SizingInput {
    /// A question with every default filled in.
    pub fn new(method: Method, mailboxes: u64, messages_per_day: f64, servers: u32) -> Self {
        SizingInput {
            method,
            mailboxes,
            messages_per_day,
            message_size_kb: DEFAULT_MESSAGE_SIZE_KB,
            quota_mb: DEFAULT_QUOTA_MB,
            copies: 1,
            servers,
            layout: DatabaseLayout::Auto,
            headroom_pct: DEFAULT_HEADROOM_PCT,
            iops_per_mailbox: None,
            cpu: CpuInput {
                specint_rate: None,
                specint_cores: None,
                cores_per_server: None,
                cpu_mhz: None,
                peak_cpu_pct: DEFAULT_PEAK_CPU_PCT,
                client_access_cores: 4,
            },
            virtualized: false,
            multi_role: false,
            log_retention_days: 3,
            deleted_item_retention_days: 14,
            data_overhead_pct: 0.0,
            storage: StorageInput {
                disk_class: DiskClass::default(),
                disk_capacity_gb: None,
                disk_iops: None,
                db_raid: Raid::Raid10,
                log_raid: Raid::Raid10,
            },
            peak_hour_log_pct: DEFAULT_PEAK_HOUR_LOG_PCT,
            sites: 1,
            lagged_copies: 0,
            lag_days: 7.0,
            archive_quota_mb: 0,
        }
    }

    /// Checks every field against its documented range; the error names the field (snake_case,
    /// as in input files).
    pub fn validate(&self) -> Result<(), InputError> {
        self.validate_deployment()?;
        self.validate_iops()?;
        self.validate_cpu()?;
        self.validate_retention_and_storage()
    }

    /// Mailboxes, messages, quota, servers, copies and the database layout.
    fn validate_deployment(&self) -> Result<(), InputError> {
        count("mailboxes", self.mailboxes, 1, MAX_MAILBOXES)?;
        if !(self.messages_per_day.is_finite()
            && (1.0..=MAX_MESSAGES_PER_DAY).contains(&self.messages_per_day))
        {
            return err(
                "messages_per_day",
                format!(
                    "must be a number from 1 to {MAX_MESSAGES_PER_DAY} (messages per mailbox per day; the published tables cover 50-500), got {}",
                    show_number(self.messages_per_day)
                ),
            );
        }
        number(
            "message_size_kb",
            self.message_size_kb,
            1.0,
            MAX_MESSAGE_SIZE_KB,
        )?;
        if self.quota_mb == 0 {
            return err("quota_mb", "must be at least 1 MB");
        }
        if self.quota_mb > MAX_QUOTA_MB {
            return err(
                "quota_mb",
                format!(
                    "{} MB is above the largest supported mailbox of {MAX_QUOTA_MB} MB (100 GB)",
                    self.quota_mb
                ),
            );
        }
        count("servers", self.servers.into(), 1, MAX_SERVERS.into())?;
        if self.copies == 0 || self.copies > MAX_COPIES {
            return err(
                "copies",
                format!("must be 1..={MAX_COPIES}, got {}", self.copies),
            );
        }
        if self.copies > self.servers {
            return err(
                "copies",
                format!(
                    "{} copies need at least {} servers (each copy of a database lives on a different server); got --servers {}",
                    self.copies, self.copies, self.servers
                ),
            );
        }
        match self.layout {
            DatabaseLayout::Auto => {}
            DatabaseLayout::PerServer(d) => {
                if d == 0 || d > MAX_DATABASES_PER_SERVER {
                    return err(
                        "databases_per_server",
                        format!(
                            "must be 1..={MAX_DATABASES_PER_SERVER} (the most any Exchange edition supports), got {d}"
                        ),
                    );
                }
            }
            DatabaseLayout::MailboxesPerDatabase(n) => {
                count("mailboxes_per_database", n, 1, MAX_MAILBOXES)?;
            }
        }
        Ok(())
    }

    /// Headroom and IOPS per mailbox.
    fn validate_iops(&self) -> Result<(), InputError> {
        number("headroom_pct", self.headroom_pct, 0.0, MAX_HEADROOM_PCT)?;
        if let Some(v) = self.iops_per_mailbox {
            if !(v.is_finite() && (MIN_IOPS_PER_MAILBOX..=MAX_IOPS_PER_MAILBOX).contains(&v)) {
                return err(
                    "iops_per_mailbox",
                    format!(
                        "must be a number from {MIN_IOPS_PER_MAILBOX} to {MAX_IOPS_PER_MAILBOX} (the published tables give 0.03 to 0.6), got {}",
                        show_number(v)
                    ),
                );
            }
        }
        Ok(())
    }

    /// The processor figures.
    fn validate_cpu(&self) -> Result<(), InputError> {
        let cpu = &self.cpu;
        match (cpu.specint_rate, cpu.specint_cores) {
            (Some(r), Some(c)) => {
                number("specint_rate", r, 1.0, MAX_SPECINT_RATE)?;
                count("specint_cores", c.into(), 1, MAX_CORES.into())?;
                if r < f64::from(c) {
                    return err(
                        "specint_rate",
                        format!(
                            "{} over {c} cores is below 1 per core; give the SPECint_rate2006 result of the whole system and the cores it was measured on",
                            show_number(r)
                        ),
                    );
                }
            }
            (Some(_), None) => {
                return err(
                    "specint_cores",
                    "is required with specint_rate: give the core count the SPECint_rate2006 result was measured on",
                )
            }
            (None, Some(_)) => {
                return err(
                    "specint_rate",
                    "is required with specint_cores: give the server's SPECint_rate2006 result",
                )
            }
            (None, None) => {}
        }
        if let Some(c) = cpu.cores_per_server {
            count("cores_per_server", c.into(), 1, MAX_CORES.into())?;
        }
        if let Some(mhz) = cpu.cpu_mhz {
            number("cpu_mhz", mhz, CPU_MHZ_RANGE.0, CPU_MHZ_RANGE.1)?;
        }
        number("peak_cpu_pct", cpu.peak_cpu_pct, 1.0, 100.0)?;
        count(
            "client_access_cores",
            cpu.client_access_cores.into(),
            1,
            MAX_CORES.into(),
        )?;
        if self.method == Method::Exchange2010Vmware
            && cpu.specint_rate.is_some()
            && cpu.cpu_mhz.is_none()
        {
            return err(
                "cpu_mhz",
                "is required by --method exchange2010-vmware with SPECint figures (per-core SPECint x MHz / 18.75)",
            );
        }
        Ok(())
    }

    /// Retention, overheads, disks, log replication, sites, lagged copies and archives.
    fn validate_retention_and_storage(&self) -> Result<(), InputError> {
        count(
            "deleted_item_retention_days",
            self.deleted_item_retention_days.into(),
            0,
            3650,
        )?;
        count("log_retention_days", self.log_retention_days.into(), 1, 365)?;
        number(
            "data_overhead_pct",
            self.data_overhead_pct,
            0.0,
            MAX_DATA_OVERHEAD_PCT,
        )?;
        if let Some(gb) = self.storage.disk_capacity_gb {
            number("disk_capacity_gb", gb, 1.0, MAX_DISK_CAPACITY_GB)?;
        }
        if let Some(iops) = self.storage.disk_iops {
            number("disk_iops", iops, 1.0, MAX_DISK_IOPS)?;
        }
        if !(self.peak_hour_log_pct.is_finite()
            && (100.0 / 24.0..=100.0).contains(&self.peak_hour_log_pct))
        {
            return err(
                "peak_hour_log_pct",
                format!(
                    "must be a number from 4.17 (a flat day: 100/24) to 100, got {}",
                    show_number(self.peak_hour_log_pct)
                ),
            );
        }
        if self.sites == 0 || self.sites > self.copies {
            return err(
                "sites",
                format!(
                    "must be 1..={} (each datacenter holds at least one of the {} copies), got {}",
                    self.copies, self.copies, self.sites
                ),
            );
        }
        if self.lagged_copies >= self.copies {
            return err(
                "lagged_copies",
                format!(
                    "must be 0..={} (one of the {} copies is the active one), got {}",
                    self.copies - 1,
                    self.copies,
                    self.lagged_copies
                ),
            );
        }
        number("lag_days", self.lag_days, 0.0, MAX_LAG_DAYS)?;
        count("archive_quota_mb", self.archive_quota_mb, 0, MAX_QUOTA_MB)?;
        Ok(())
    }
}

// The checks `validate` makes of each field.
fn err(field: &'static str, reason: impl Into<String>) -> Result<(), InputError> {
    Err(InputError {
        field,
        reason: reason.into(),
    })
}
/// A number in `min..=max` (finite; NaN and infinities are refused).
fn number(field: &'static str, v: f64, min: f64, max: f64) -> Result<(), InputError> {
    if v.is_finite() && (min..=max).contains(&v) {
        Ok(())
    } else {
        err(
            field,
            format!(
                "must be a number from {min} to {max}, got {}",
                show_number(v)
            ),
        )
    }
}
/// A whole number in `min..=max`.
fn count(field: &'static str, v: u64, min: u64, max: u64) -> Result<(), InputError> {
    if (min..=max).contains(&v) {
        Ok(())
    } else {
        err(field, format!("must be {min}..={max}, got {v}"))
    }
}

/// A field of [`SizingInput`] holds a value the methods cannot use.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid {field}: {reason}")]
pub struct InputError {
    /// The field, as named in input files (`quota_mb`); the CLI flag is `--quota-mb`.
    pub field: &'static str,
    /// What is wrong and what would be valid.
    pub reason: String,
}

impl InputError {
    /// The command-line flag for this field.
    pub fn flag(&self) -> String {
        format!("--{}", self.field.replace('_', "-"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> SizingInput {
        SizingInput::new(Method::Exchange2013, 1000, 150.0, 2)
    }

    fn field_of(input: SizingInput) -> &'static str {
        input.validate().expect_err("must be invalid").field
    }

    #[test]
    fn defaults_are_valid() {
        assert_eq!(base().validate(), Ok(()));
    }

    #[test]
    fn each_bad_value_names_its_field() {
        let mut i = base();
        i.mailboxes = 0;
        assert_eq!(field_of(i), "mailboxes");
        let mut i = base();
        i.quota_mb = MAX_QUOTA_MB + 1;
        assert_eq!(field_of(i), "quota_mb");
        let mut i = base();
        i.layout = DatabaseLayout::PerServer(101);
        assert_eq!(field_of(i), "databases_per_server");
        let mut i = base();
        i.copies = 3;
        assert_eq!(field_of(i), "copies");
        let mut i = base();
        i.headroom_pct = f64::NAN;
        assert_eq!(field_of(i), "headroom_pct");
        let mut i = base();
        i.messages_per_day = -5.0;
        assert_eq!(field_of(i), "messages_per_day");
        let mut i = base();
        i.cpu.specint_rate = Some(1120.0);
        assert_eq!(field_of(i), "specint_cores");
        let mut i = base();
        i.cpu.peak_cpu_pct = 120.0;
        assert_eq!(field_of(i), "peak_cpu_pct");
        let mut i = base();
        i.method = Method::Exchange2010Vmware;
        i.cpu.specint_rate = Some(1120.0);
        i.cpu.specint_cores = Some(16);
        assert_eq!(field_of(i), "cpu_mhz");
        let mut i = base();
        i.storage.disk_iops = Some(0.0);
        assert_eq!(field_of(i), "disk_iops");
        let mut i = base();
        i.storage.disk_capacity_gb = Some(f64::INFINITY);
        assert_eq!(field_of(i), "disk_capacity_gb");
        let mut i = base();
        i.peak_hour_log_pct = 3.0;
        assert_eq!(field_of(i), "peak_hour_log_pct");
        let mut i = base();
        i.sites = 2;
        assert_eq!(field_of(i), "sites");
        let mut i = base();
        i.lagged_copies = 1;
        assert_eq!(field_of(i), "lagged_copies");
        let mut i = base();
        i.copies = 2;
        i.lagged_copies = 1;
        i.lag_days = 15.0;
        assert_eq!(field_of(i), "lag_days");
        let mut i = base();
        i.archive_quota_mb = MAX_QUOTA_MB + 1;
        assert_eq!(field_of(i), "archive_quota_mb");
    }

    #[test]
    fn flag_names() {
        let e = InputError {
            field: "quota_mb",
            reason: String::new(),
        };
        assert_eq!(e.flag(), "--quota-mb");
    }
}
