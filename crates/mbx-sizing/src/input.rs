//! What the user tells the calculator, with defaults and validation.

use serde::Serialize;

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
    /// SPECint_rate2006 result of the server model.
    pub specint_rate: Option<f64>,
    /// Cores of the system on which `specint_rate` was measured.
    pub specint_cores: Option<u32>,
    /// Cores in each mailbox server (for utilization).
    pub cores_per_server: Option<u32>,
    /// Processor clock in MHz (the 2010 / VMware formula needs it).
    pub cpu_mhz: Option<f64>,
    /// Target peak CPU utilization in percent.
    pub peak_cpu_pct: f64,
    /// Cores of a separate Client Access server (2013, not multi-role).
    pub client_access_cores: u32,
}

/// A sizing question. Build it with [`SizingInput::new`] (defaults) and adjust the fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizingInput {
    /// The method to follow.
    pub method: Method,
    /// Mailboxes in the whole deployment.
    pub mailboxes: u64,
    /// Messages sent + received per mailbox per day.
    pub messages_per_day: f64,
    /// Average message size in KB.
    pub message_size_kb: f64,
    /// Mailbox quota in MB.
    pub quota_mb: u64,
    /// Copies of each database (1 = no DAG copies).
    pub copies: u32,
    /// Mailbox servers.
    pub servers: u32,
    /// Database layout.
    pub layout: DatabaseLayout,
    /// I/O overhead added to the profile's IOPS, in percent.
    pub headroom_pct: f64,
    /// Overrides the method's IOPS-per-mailbox table (value without headroom).
    pub iops_per_mailbox: Option<f64>,
    /// Processor description.
    pub cpu: CpuInput,
    /// Servers are virtual machines (2013+ calculators add 10% to megacycles).
    pub virtualized: bool,
    /// Client Access runs on the mailbox servers (2013; 2016+ are always multi-role).
    pub multi_role: bool,
    /// Days of transaction logs kept (3 by default; more with backup-based truncation).
    pub log_retention_days: u32,
    /// Deleted item retention window in days.
    pub deleted_item_retention_days: u32,
    /// Extra database overhead in percent (growth; D1 recommends at least 20).
    pub data_overhead_pct: f64,
}

/// Default average message size in KB (Microsoft's typical value, used in every seed).
pub const DEFAULT_MESSAGE_SIZE_KB: f64 = 75.0;
/// Default mailbox quota in MB (the calculator's default and every seed's choice).
pub const DEFAULT_QUOTA_MB: u64 = 2048;
/// Default I/O headroom in percent (ESRP practice: "includes 20% headroom").
pub const DEFAULT_HEADROOM_PCT: f64 = 20.0;
/// Default peak CPU target in percent (the calculator flags more than 80%).
pub const DEFAULT_PEAK_CPU_PCT: f64 = 80.0;
/// Largest quota accepted, in MB (100 GB: Exchange's largest supported mailbox).
pub const MAX_QUOTA_MB: u64 = 100 * 1024;
/// Most databases per server any Exchange edition supports (2013 CU2+, 2016, 2019).
pub const MAX_DATABASES_PER_SERVER: u32 = 100;
/// Most copies of a database a DAG supports.
pub const MAX_COPIES: u32 = 16;

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
        }
    }

    /// Checks every field; the error names the field (snake_case, as in input files).
    pub fn validate(&self) -> Result<(), InputError> {
        fn err(field: &'static str, reason: impl Into<String>) -> Result<(), InputError> {
            Err(InputError {
                field,
                reason: reason.into(),
            })
        }
        fn positive(field: &'static str, v: f64) -> Result<(), InputError> {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                err(field, format!("must be a positive number, got {v}"))
            }
        }
        fn non_negative(field: &'static str, v: f64) -> Result<(), InputError> {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                err(field, format!("must be zero or a positive number, got {v}"))
            }
        }
        if self.mailboxes == 0 {
            return err("mailboxes", "must be at least 1");
        }
        positive("messages_per_day", self.messages_per_day)?;
        if self.messages_per_day > 10_000.0 {
            return err(
                "messages_per_day",
                format!(
                    "{} messages per mailbox per day is not a mailbox profile (the published tables stop at 500)",
                    self.messages_per_day
                ),
            );
        }
        positive("message_size_kb", self.message_size_kb)?;
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
        if self.servers == 0 {
            return err("servers", "must be at least 1");
        }
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
                if n == 0 {
                    return err("mailboxes_per_database", "must be at least 1");
                }
            }
        }
        non_negative("headroom_pct", self.headroom_pct)?;
        if self.headroom_pct > 1000.0 {
            return err("headroom_pct", "must be at most 1000 (percent)");
        }
        if let Some(v) = self.iops_per_mailbox {
            positive("iops_per_mailbox", v)?;
            if v > 100.0 {
                return err(
                    "iops_per_mailbox",
                    format!(
                        "{v} IOPS per mailbox is implausible (the published tables stop near 0.4)"
                    ),
                );
            }
        }
        let cpu = &self.cpu;
        match (cpu.specint_rate, cpu.specint_cores) {
            (Some(r), Some(c)) => {
                positive("specint_rate", r)?;
                if c == 0 {
                    return err("specint_cores", "must be at least 1");
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
        if cpu.cores_per_server == Some(0) {
            return err("cores_per_server", "must be at least 1");
        }
        if let Some(mhz) = cpu.cpu_mhz {
            positive("cpu_mhz", mhz)?;
        }
        if !(cpu.peak_cpu_pct.is_finite() && cpu.peak_cpu_pct > 0.0 && cpu.peak_cpu_pct <= 100.0) {
            return err(
                "peak_cpu_pct",
                format!("must be in (0, 100], got {}", cpu.peak_cpu_pct),
            );
        }
        if cpu.client_access_cores == 0 {
            return err("client_access_cores", "must be at least 1");
        }
        if self.method == Method::Exchange2010Vmware
            && cpu.specint_rate.is_some()
            && cpu.cpu_mhz.is_none()
        {
            return err(
                "cpu_mhz",
                "is required by --method exchange2010-vmware with SPECint figures (per-core SPECint x MHz / 18.75)",
            );
        }
        if self.deleted_item_retention_days > 3650 {
            return err("deleted_item_retention_days", "must be at most 3650");
        }
        if self.log_retention_days == 0 || self.log_retention_days > 365 {
            return err("log_retention_days", "must be 1..=365");
        }
        non_negative("data_overhead_pct", self.data_overhead_pct)?;
        Ok(())
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
