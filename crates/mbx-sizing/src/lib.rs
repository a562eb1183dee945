//! Mailbox server sizing: a pure calculator (no I/O, no clock).
//!
//! [`size`] turns a [`SizingInput`] into a [`SizingReport`]: CPU, memory, capacity and IOPS per
//! server and in total, the warnings of the published limits, and a ready-to-run test
//! [`Profile`]. Each group of figures names the [`Method`] that produced it, because the seed papers
//! mix methods (Tintri sized CPU and memory with the Exchange 2010 / VMware guide and storage with
//! the 2013 calculator). The formulas are in [`formulas`], one function each, with their sources;
//! `docs/sizing.md` explains them for users.
//!
//! Deployment model. `mailboxes` is the whole deployment; each mailbox has `copies` database
//! copies spread evenly over `servers`. A server therefore *hosts* `mailboxes x copies / servers`
//! mailbox copies. In the worst failure mode the calculator considers, `copies - 1` servers have
//! failed and the survivors carry every active mailbox: `mailboxes / (servers - copies + 1)` each.
//! The storage test (Jetstress practice, ESRP) runs every hosted database active on one server, so
//! the test profile and the target IOPS use the hosted count, which is never smaller.

pub mod examples;
pub mod formulas;
mod input;
mod method;
pub mod storage;

use serde::Serialize;

pub use input::{
    CpuInput, DatabaseLayout, InputError, SizingInput, StorageInput, CPU_MHZ_RANGE,
    DEFAULT_HEADROOM_PCT, DEFAULT_MESSAGE_SIZE_KB, DEFAULT_PEAK_CPU_PCT, DEFAULT_PEAK_HOUR_LOG_PCT,
    DEFAULT_QUOTA_MB, MAX_COPIES, MAX_CORES, MAX_DATABASES_PER_SERVER, MAX_DATA_OVERHEAD_PCT,
    MAX_DISK_CAPACITY_GB, MAX_DISK_IOPS, MAX_HEADROOM_PCT, MAX_IOPS_PER_MAILBOX, MAX_LAG_DAYS,
    MAX_MAILBOXES, MAX_MESSAGES_PER_DAY, MAX_MESSAGE_SIZE_KB, MAX_QUOTA_MB, MAX_SERVERS,
    MAX_SPECINT_RATE, MIN_IOPS_PER_MAILBOX,
};
pub use mbx_config::Profile;
pub use method::Method;

use formulas::*;
use storage::{DiskClass, VolumeDisks};

/// Which method produced each group of figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sources {
    /// IOPS per mailbox and targets.
    pub iops: Method,
    /// Megacycles, cores, utilization.
    pub cpu: Method,
    /// Database cache and RAM.
    pub memory: Method,
    /// Mailbox size, databases, logs, volumes.
    pub capacity: Method,
}

/// A limit of the published guidance that the sized deployment crosses, or an assumption the
/// calculator had to make. `code` is stable (scripts match on it); `message` says what to do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Warning {
    /// Stable identifier, kebab-case.
    pub code: &'static str,
    /// Human explanation with the figure, the limit and a suggestion.
    pub message: String,
}

/// Most servers in one database availability group.
pub const MAX_SERVERS_PER_DAG: u32 = 16;

/// Disks per server for the database and log volumes (the calculator's storage design).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StorageDesign {
    /// The method whose capacity and IOPS figures the disks carry.
    pub method: Method,
    /// How the disks are counted.
    pub source: &'static str,
    /// Class of disk.
    pub disk_class: DiskClass,
    /// Its label.
    pub disk_label: &'static str,
    /// Capacity of one disk, GB as labelled (decimal).
    pub disk_capacity_gb: f64,
    /// Where that capacity comes from.
    pub disk_capacity_source: &'static str,
    /// Random IOPS of one disk.
    pub disk_iops: f64,
    /// Where that figure comes from.
    pub disk_iops_source: &'static str,
    /// Disks of one RAID 5 / RAID 6 group (parity is counted per group).
    pub raid_group_disks: u64,
    /// Database volumes of one server.
    pub database: VolumeDisks,
    /// Log volumes of one server.
    pub log: VolumeDisks,
    /// Hot spares per server.
    pub hot_spares_per_server: u64,
    /// How the spares are counted.
    pub hot_spares_rule: &'static str,
    /// Database + log disks + spares of one server.
    pub disks_per_server: u64,
    /// Of all servers.
    pub disks_total: u64,
}

/// Network throughput of log replication in the busiest hour (the calculator's "Log Replication
/// Requirements"). Mbit/s are decimal megabits per second.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogReplication {
    /// The method of the log generation figures.
    pub method: Method,
    /// How the figures are obtained.
    pub source: &'static str,
    /// Transaction logs one database generates per day, GiB.
    pub log_gb_per_database_per_day: f64,
    /// Share of the day's logs generated in the busiest hour, percent.
    pub peak_hour_log_pct: f64,
    /// Where that share comes from.
    pub peak_hour_source: &'static str,
    /// Busiest-hour throughput from an active database to one other copy.
    pub mbit_per_s_per_database_copy: f64,
    /// Copies each database's logs are sent to (copies - 1, lagged copies included).
    pub copies_replicated_per_database: u32,
    /// What one server sends with every server up (its active databases to all their copies);
    /// it receives as much for the copies it hosts.
    pub mbit_per_s_per_server: f64,
    /// What one surviving server sends in the worst failure mode.
    pub mbit_per_s_per_server_worst: f64,
    /// Database availability groups the servers form (at most 16 servers each).
    pub dags: u32,
    /// Replication throughput inside one DAG.
    pub mbit_per_s_per_dag: f64,
    /// Of the whole deployment.
    pub mbit_per_s_total: f64,
    /// Datacenters.
    pub sites: u32,
    /// Copies of each database in each datacenter, the active copy's first.
    pub copies_per_site: Vec<u32>,
    /// Copies of each database outside the active copy's datacenter.
    pub cross_site_copies_per_database: u32,
    /// Throughput between datacenters (all databases active in their first datacenter).
    pub mbit_per_s_cross_site: f64,
}

/// One server count, evaluated in its worst failure mode.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerCandidate {
    /// Mailbox servers.
    pub servers: u32,
    /// Active mailboxes on the busiest survivor (whole: rounded up).
    pub active_mailboxes_worst: u64,
    /// Peak CPU utilization, percent (needs cores per server).
    pub cpu_utilization_pct: Option<f64>,
    /// RAM each server needs, GB.
    pub ram_gb: f64,
    /// CPU at or below the peak target and RAM at or below the method's ceiling.
    pub valid: bool,
}

/// The smallest server count within the method's CPU and RAM ceilings, beside the count asked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerCount {
    /// The method of the ceilings.
    pub method: Method,
    /// What "valid" means.
    pub source: &'static str,
    /// The count asked (`--servers`).
    pub asked: u32,
    /// Whether it is within the ceilings.
    pub asked_is_valid: bool,
    /// The smallest count within them (none if no count up to 10,000 is, or nothing to check).
    pub smallest_valid: Option<u32>,
    /// Cores per server the CPU check uses.
    pub cores_per_server: Option<u32>,
    /// Where that core count comes from.
    pub cores_basis: &'static str,
    /// The CPU ceiling, percent.
    pub peak_cpu_target_pct: f64,
    /// The RAM ceiling per server, GB, where the method publishes one.
    pub ram_ceiling_gb: Option<f64>,
    /// The counts around the smallest valid one and the asked one, with their utilization.
    pub candidates: Vec<ServerCandidate>,
}

/// Everything `mbxstress size` reports. Field names are part of the result contract
/// (docs/results.md); units are in the names. "per server" figures are for one
/// mailbox server in the worst failure mode unless the name says otherwise.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizingReport {
    /// Id of the method asked for (e.g. "exchange2013-calculator").
    pub method: Method,
    /// Human label of `method`.
    pub method_label: &'static str,
    /// The method behind each group of figures.
    pub sources: Sources,
    /// The question, every default filled in.
    pub input: SizingInput,

    /// Mailboxes in the deployment.
    pub mailboxes_total: u64,
    /// Mailbox servers.
    pub servers: u32,
    /// Copies of each database.
    pub copies_per_database: u32,
    /// Mailbox copies hosted on each server (all active in the storage test).
    pub mailboxes_per_server: f64,
    /// Active mailboxes per server with every server up.
    pub active_mailboxes_per_server_normal: f64,
    /// Active mailboxes per server when `copies - 1` servers have failed.
    pub active_mailboxes_per_server_worst: f64,
    /// Servers left in the worst failure mode.
    pub surviving_servers_worst: u32,

    /// IOPS per mailbox before headroom (from the method's table or the user's override).
    pub iops_per_mailbox: f64,
    /// `iops_per_mailbox` rounded to 3 places, as the published tables print it.
    pub iops_per_mailbox_published: f64,
    /// True when the user overrode the table with `--iops-per-mailbox`.
    pub iops_per_mailbox_overridden: bool,
    /// IOPS per mailbox with headroom, rounded to 2 places as ESRP reports it; without headroom
    /// (`headroom_pct` 0), the figure to the 3 places the profile tables publish (0.134, not 0.13).
    pub iops_per_mailbox_esrp: f64,
    /// Headroom applied, in percent.
    pub headroom_pct: f64,
    /// Target transactional IOPS of one server's storage test: mailboxes per server x
    /// `iops_per_mailbox_esrp`.
    pub target_iops_per_server: f64,
    /// The same target without the rounding of `iops_per_mailbox_esrp`.
    pub target_iops_per_server_unrounded: f64,
    /// Transactional IOPS of the whole deployment (every copy) at `iops_per_mailbox_esrp`.
    pub target_iops_total: f64,
    /// Estimated log writes/s per server: DB writes (40% of IOPS at a 3:2 read:write ratio) x
    /// 0.5 with DAG copies or 0.4 standalone.
    pub log_writes_per_s_per_server_estimate: f64,
    /// Estimated background database maintenance reads per server, MB/s (about 1 per database copy).
    pub bdm_mb_per_s_per_server_estimate: f64,

    /// Megacycles per active mailbox (including the Client Access share when multi-role).
    pub megacycles_per_active_mailbox: f64,
    /// Megacycles per passive mailbox copy.
    pub megacycles_per_passive_mailbox: f64,
    /// Megacycles the deployment needs (all active + passive copies; x 1.1 when virtualized in the
    /// calculator methods).
    pub megacycles_required: f64,
    /// Megacycles one server needs in the worst failure mode.
    pub megacycles_required_per_server: f64,
    /// Speed of one core of the given processor in the method's megacycles.
    pub megacycles_per_core: f64,
    /// How `megacycles_per_core` was obtained.
    pub megacycles_per_core_basis: String,
    /// Cores the deployment needs to stay at or below `peak_cpu_pct`.
    pub cores_required: f64,
    /// Cores one server needs in the worst failure mode to stay at or below `peak_cpu_pct`.
    pub cores_required_per_server: f64,
    /// Cores in each server, if given.
    pub cores_per_server: Option<u32>,
    /// Peak CPU utilization of one server in the worst failure mode, percent (needs
    /// `cores_per_server`).
    pub cpu_peak_utilization_pct: Option<f64>,
    /// The utilization target, percent.
    pub peak_cpu_target_pct: f64,
    /// Separate Client Access servers needed (2013 calculator, not multi-role).
    pub client_access_servers: Option<u32>,

    /// Database cache per active mailbox, MB.
    pub db_cache_mb_per_mailbox: f64,
    /// Database cache per server, GB (calculator: ROUNDUP of MB / 1024; 2010 guide: MB / 1000).
    pub db_cache_gb: f64,
    /// Database cache of all servers, GB.
    pub db_cache_gb_total: f64,
    /// RAM per active mailbox, MB (4 x cache; the calculator methods).
    pub ram_per_active_mailbox_mb: Option<f64>,
    /// RAM for the active mailboxes alone in decimal GB (active x RAM per mailbox / 1000), the
    /// figure D1's Table 3 prints (calculator methods).
    pub ram_for_active_mailboxes_gb: Option<f64>,
    /// RAM each server needs, GB (calculator: rounded to a real configuration).
    pub ram_gb_per_server: f64,
    /// RAM of all servers, GB.
    pub ram_gb_total: f64,

    /// Mailbox size on disk (quota + dumpster + white space), MB.
    pub mailbox_size_on_disk_mb: f64,
    /// Database copies on each server.
    pub databases_per_server: u32,
    /// Distinct databases in the deployment.
    pub databases_total: u32,
    /// Mailboxes in each database.
    pub mailboxes_per_database: f64,
    /// Size of one database, GB (GiB: MB / 1024).
    pub database_size_gb: f64,
    /// Transaction log files (1 MB) per mailbox per day.
    pub logs_per_mailbox_per_day: f64,
    /// Log space per database, GB.
    pub log_space_per_database_gb: f64,
    /// Volume for one database (content index, spare index, free space), GB.
    pub database_volume_gb: f64,
    /// Volume for one database's logs (free space), GB.
    pub log_volume_gb: f64,
    /// Database volumes of one server, TiB.
    pub database_space_per_server_tib: f64,
    /// Log volumes of one server, TiB.
    pub log_space_per_server_tib: f64,
    /// Database volumes of the deployment (every copy), TiB.
    pub database_space_total_tib: f64,
    /// Log volumes of the deployment (every copy), TiB.
    pub log_space_total_tib: f64,
    /// Size of each database a storage test creates on one server: mailboxes per server x quota /
    /// databases per server, GiB.
    pub jetstress_database_size_gib: f64,

    /// Mailbox copies hosted on each server, whole (rounded up: the busiest server).
    pub mailboxes_per_server_whole: u64,
    /// Active mailboxes per server with every server up, whole (rounded up).
    pub active_mailboxes_per_server_normal_whole: u64,
    /// Active mailboxes per server in the worst failure mode, whole (rounded up).
    pub active_mailboxes_per_server_worst_whole: u64,
    /// Mailboxes in the largest database, whole (rounded up).
    pub mailboxes_per_database_whole: u64,
    /// Copies of each database that can be activated (copies - lagged copies).
    pub highly_available_copies: u32,
    /// Lagged copies of each database.
    pub lagged_copies: u32,
    /// Extra log space one lagged database copy keeps (lag days of logs), GB.
    pub lagged_log_space_per_database_copy_gb: f64,
    /// Of that, on one server (its share of lagged copies, 5% free), TiB; included in
    /// `log_space_per_server_tib`.
    pub lagged_log_space_per_server_tib: f64,
    /// Archive mailbox size on disk, MB (0 without archives); included in the database size.
    pub archive_size_on_disk_mb: f64,
    /// Disks per server for the database and log volumes.
    pub storage_design: StorageDesign,
    /// Log replication throughput in the busiest hour.
    pub log_replication: LogReplication,
    /// The smallest valid server count beside the count asked.
    pub server_count: ServerCount,

    /// Limits crossed and assumptions made.
    pub warnings: Vec<Warning>,
    /// The storage-test profile of one server, for `mbxstress run --profile`.
    pub profile: Profile,
}

/// Sizes a deployment. Fails only on invalid input (the error names the field).
pub fn size(input: &SizingInput) -> Result<SizingReport, InputError> {
    input.validate()?;
    let b = Basics::of(input);
    let method = b.method;
    let mut warnings = Vec::new();
    let w = &mut warnings;

    let sources = Sources {
        iops: method,
        cpu: method,
        memory: method,
        // The 2010 / VMware guide has no capacity model of its own; T took storage from the 2013
        // calculator, and so do we.
        capacity: if method.is_calculator() {
            method
        } else {
            Method::Exchange2013
        },
    };

    let f = failover(input, b, w);
    let c = capacity(input, b, &f, w)?;
    let i = iops(input, b, &f, &c, w);
    let cpu = cpu(input, b, &f, w)?;
    let mem = memory(b, &f, &c, &cpu, w);
    let storage_design = storage_design(input, b, sources, &c, &i, w)?;
    let log_replication = log_replication(input, b, sources, &f, &c);
    let server_count = server_count(input, b, &f, &c, &cpu, &mem, w);
    let (profile_mailboxes, profile) = profile(input, b, &c, &i, w)?;
    Ok(report(
        input,
        sources,
        Sections {
            f,
            c,
            i,
            cpu,
            mem,
            storage_design,
            log_replication,
            server_count,
            profile_mailboxes,
            profile,
        },
        warnings,
    ))
}

/// The input's figures every section names the same way.
#[derive(Debug, Clone, Copy)]
struct Basics {
    method: Method,
    /// Messages per mailbox per day.
    m: f64,
    /// Average message size, KB.
    kb: f64,
    /// Mailbox quota, MB.
    quota: f64,
    servers: u32,
    copies: u32,
}

impl Basics {
    fn of(input: &SizingInput) -> Basics {
        Basics {
            method: input.method,
            m: input.messages_per_day,
            kb: input.message_size_kb,
            quota: input.quota_mb as f64,
            servers: input.servers,
            copies: input.copies,
        }
    }
}

/// Mailboxes and failure modes.
#[derive(Debug, Clone, Copy)]
struct Failover {
    mailboxes: f64,
    ha_copies: u32,
    surviving: u32,
    mailboxes_per_server: f64,
    active_normal: f64,
    active_worst: f64,
    passive_worst: f64,
}

// ---- Mailboxes and failure modes -------------------------------------------------------
fn failover(input: &SizingInput, b: Basics, w: &mut Vec<Warning>) -> Failover {
    let Basics {
        m, servers, copies, ..
    } = b;
    let mut warn = |code: &'static str, message: String| w.push(Warning { code, message });
    let mailboxes = input.mailboxes as f64;
    // Lagged copies are never activated by a failover (the calculator's treatment): the worst
    // failure mode loses `ha_copies - 1` servers, where `ha_copies` excludes them.
    let ha_copies = copies - input.lagged_copies;
    // Validated input (lagged < copies <= servers): one highly available copy at least, and
    // a server survives the worst failure mode.
    assert!(
        ha_copies >= 1 && ha_copies <= servers,
        "sizing: {ha_copies} highly available copies on {servers} servers"
    );
    let surviving = servers - (ha_copies - 1);
    let mailboxes_per_server = mailboxes * copies as f64 / servers as f64;
    let active_normal = mailboxes / servers as f64;
    let active_worst = mailboxes / surviving as f64;
    let passive_worst = mailboxes_per_server - active_worst;
    if input.mailboxes < servers as u64 {
        warn(
            "fewer-mailboxes-than-servers",
            format!(
                "{} mailboxes over {servers} servers leaves some servers without mailboxes",
                input.mailboxes
            ),
        );
    }
    if !(50.0..=500.0).contains(&m) {
        warn(
            "profile-outside-published-table",
            format!(
                "{m} messages per day is outside the published tables (50-500); figures are extrapolated from the formulas"
            ),
        );
    }
    Failover {
        mailboxes,
        ha_copies,
        surviving,
        mailboxes_per_server,
        active_normal,
        active_worst,
        passive_worst,
    }
}

/// Capacity: mailbox size, databases, logs, volumes.
#[derive(Debug, Clone, Copy)]
struct Capacity {
    mailbox_size_mb: f64,
    archive_size_mb: f64,
    databases_per_server: u32,
    databases_total: u32,
    mailboxes_per_database: f64,
    database_size_gb: f64,
    logs_per_day: f64,
    log_space_per_database_gb: f64,
    lagged_log_space_per_database_copy_gb: f64,
    database_volume_gb: f64,
    log_volume_gb: f64,
    database_space_per_server_tib: f64,
    lagged_log_space_per_server_tib: f64,
    log_space_per_server_tib: f64,
    database_space_total_tib: f64,
    log_space_total_tib: f64,
    jetstress_database_size_gib: f64,
}

// ---- Capacity: mailbox size, databases, logs, volumes -------------------------------------
fn capacity(
    input: &SizingInput,
    b: Basics,
    f: &Failover,
    w: &mut Vec<Warning>,
) -> Result<Capacity, InputError> {
    let Basics {
        method,
        m,
        kb,
        quota,
        copies,
        ..
    } = b;
    let Failover {
        mailboxes,
        mailboxes_per_server,
        ..
    } = *f;
    let mailbox_size_mb =
        mailbox_size_on_disk_mb(quota, m, kb, input.deleted_item_retention_days as f64);
    let archive_size_mb = archive_size_on_disk_mb(input.archive_quota_mb as f64);
    // Archives live in the same databases as their primary mailboxes (the calculator's default).
    let mailbox_and_archive_mb = mailbox_size_mb + archive_size_mb;
    let recommended_db_gb = if copies >= 2 { 2048.0 } else { 200.0 };
    let (databases_per_server, databases_total) = database_layout(
        input,
        b,
        mailboxes,
        mailbox_and_archive_mb,
        recommended_db_gb,
        w,
    )?;
    let databases_total = to_u32("databases_per_server", databases_total.max(1))?;
    assert!(
        databases_per_server >= 1,
        "sizing: no database copy on a server ({} databases)",
        databases_total
    );
    database_count_warnings(input, method, databases_per_server, databases_total, w);
    let mailboxes_per_database = mailboxes / databases_total as f64;
    let database_size_gb = mailboxes_per_database * mailbox_and_archive_mb / 1024.0
        * (1.0 + input.data_overhead_pct / 100.0);
    database_size_warnings(copies, database_size_gb, recommended_db_gb, w);
    let logs_per_day = logs_per_mailbox_per_day(m, kb);
    let log_space_per_database_gb =
        (mailboxes_per_database * logs_per_day * input.log_retention_days as f64
            + mailboxes_per_database * 0.01 * mailbox_and_archive_mb)
            / 1024.0;
    // A lagged copy keeps `lag_days` more days of logs before replaying them.
    let lagged_log_space_per_database_copy_gb =
        mailboxes_per_database * logs_per_day * input.lag_days / 1024.0;
    // Content index (20% of the database) plus room for one more index during a master merge,
    // with 5% of the volume kept free. The 2010 guide's +20% / 20%-free rule is not used: T took
    // its storage from the 2013 calculator, and `sources.capacity` says so.
    let database_volume_gb = database_size_gb * 1.4 / 0.95;
    let log_volume_gb = log_space_per_database_gb / 0.95;
    let gib_per_tib = 1024.0;
    let database_space_per_server_tib =
        database_volume_gb * databases_per_server as f64 / gib_per_tib;
    // Lagged copies are spread evenly: `lagged / copies` of each server's database copies.
    let lagged_share = input.lagged_copies as f64 / copies as f64;
    let lagged_log_space_per_server_tib =
        lagged_log_space_per_database_copy_gb / 0.95 * databases_per_server as f64 * lagged_share
            / gib_per_tib;
    let log_space_per_server_tib =
        log_volume_gb * databases_per_server as f64 / gib_per_tib + lagged_log_space_per_server_tib;
    let database_copies_total = databases_total as f64 * copies as f64;
    let database_space_total_tib = database_volume_gb * database_copies_total / gib_per_tib;
    let log_space_total_tib = (log_volume_gb * database_copies_total
        + lagged_log_space_per_database_copy_gb / 0.95
            * databases_total as f64
            * input.lagged_copies as f64)
        / gib_per_tib;
    let jetstress_database_size_gib =
        mailboxes_per_server * quota / databases_per_server as f64 / 1024.0;
    Ok(Capacity {
        mailbox_size_mb,
        archive_size_mb,
        databases_per_server,
        databases_total,
        mailboxes_per_database,
        database_size_gb,
        logs_per_day,
        log_space_per_database_gb,
        lagged_log_space_per_database_copy_gb,
        database_volume_gb,
        log_volume_gb,
        database_space_per_server_tib,
        lagged_log_space_per_server_tib,
        log_space_per_server_tib,
        database_space_total_tib,
        log_space_total_tib,
        jetstress_database_size_gib,
    })
}

/// Database counts beyond what an edition or version supports, and mailboxes that do not divide
/// evenly into the databases.
fn database_count_warnings(
    input: &SizingInput,
    method: Method,
    databases_per_server: u32,
    databases_total: u32,
    w: &mut Vec<Warning>,
) {
    let mailboxes = input.mailboxes as f64;
    let mut warn = |code: &'static str, message: String| w.push(Warning { code, message });
    if databases_per_server > 50 && method == Method::Exchange2013 {
        warn(
            "databases-per-server-2013-rtm",
            format!(
                "{databases_per_server} databases per server needs Exchange 2013 CU2 or later (RTM and CU1 support 50)"
            ),
        );
    }
    if databases_per_server > 5 {
        warn(
            "databases-per-server-standard-edition",
            format!(
                "{databases_per_server} databases per server needs Enterprise edition (Standard supports 5)"
            ),
        );
    }
    if !input.mailboxes.is_multiple_of(databases_total as u64) {
        warn(
            "uneven-mailboxes-per-database",
            format!(
                "{} mailboxes do not divide evenly into {databases_total} databases; each holds {:.2} on average",
                input.mailboxes,
                mailboxes / databases_total as f64
            ),
        );
    }
}

/// Databases larger than supported or recommended.
fn database_size_warnings(
    copies: u32,
    database_size_gb: f64,
    recommended_db_gb: f64,
    w: &mut Vec<Warning>,
) {
    let mut warn = |code: &'static str, message: String| w.push(Warning { code, message });
    if database_size_gb > 16.0 * 1024.0 {
        warn(
            "database-size-unsupported",
            format!(
                "databases of {database_size_gb:.0} GB exceed the supported maximum of 16 TB; use more databases or servers"
            ),
        );
    } else if database_size_gb > recommended_db_gb {
        warn(
            "database-size-above-recommended",
            format!(
                "databases of {database_size_gb:.0} GB exceed the recommended {recommended_db_gb:.0} GB for {copies} cop{}; reseeds and restores will be slow",
                if copies == 1 { "y" } else { "ies" }
            ),
        );
    }
}

/// Database copies per server and databases in all, as the layout asks (before the total is
/// made at least 1).
fn database_layout(
    input: &SizingInput,
    b: Basics,
    mailboxes: f64,
    mailbox_and_archive_mb: f64,
    recommended_db_gb: f64,
    w: &mut Vec<Warning>,
) -> Result<(u32, u64), InputError> {
    let Basics {
        servers, copies, ..
    } = b;
    let mut warn = |code: &'static str, message: String| w.push(Warning { code, message });
    Ok(match input.layout {
        DatabaseLayout::PerServer(d) => {
            // u32 x u32 always fits u64.
            let copies_hosted = d as u64 * servers as u64;
            let total = copies_hosted.div_ceil(copies as u64);
            if !copies_hosted.is_multiple_of(copies as u64) {
                warn(
                    "uneven-database-copies",
                    format!(
                        "{d} database copies on each of {servers} servers cannot hold {copies} copies of every database evenly; assuming {total} databases"
                    ),
                );
            }
            (d, total)
        }
        DatabaseLayout::MailboxesPerDatabase(n) => {
            let total = input.mailboxes.div_ceil(n);
            let per_server = checked("mailboxes_per_database", total.checked_mul(copies as u64))?
                .div_ceil(servers as u64);
            if per_server > MAX_DATABASES_PER_SERVER as u64 {
                // Databases that fit: MAX per server over all servers, each held `copies` times.
                let max_total = MAX_DATABASES_PER_SERVER as u64 * servers as u64 / copies as u64;
                return Err(InputError {
                    field: "mailboxes_per_database",
                    reason: format!(
                        "{n} mailboxes per database gives {total} databases, {per_server} database copies per server, above the {MAX_DATABASES_PER_SERVER} Exchange supports; use at least {} mailboxes per database, or more servers",
                        input.mailboxes.div_ceil(max_total.max(1))
                    ),
                });
            }
            (to_u32("mailboxes_per_database", per_server)?, total)
        }
        DatabaseLayout::Auto => {
            let total_gb = mailboxes * mailbox_and_archive_mb / 1024.0;
            let min_total =
                f64_to_u64("mailboxes", (total_gb / recommended_db_gb).ceil().max(1.0))?;
            // Every server should host at least one copy.
            let wanted = checked("mailboxes", min_total.checked_mul(copies as u64))?
                .div_ceil(servers as u64)
                .max(1);
            let per_server = if wanted > MAX_DATABASES_PER_SERVER as u64 {
                warn(
                    "databases-per-server-capped",
                    format!(
                        "keeping every database within the recommended {recommended_db_gb:.0} GB needs {wanted} database copies per server, above the {MAX_DATABASES_PER_SERVER} Exchange supports; sized with {MAX_DATABASES_PER_SERVER} larger databases per server: add servers for smaller ones"
                    ),
                );
                MAX_DATABASES_PER_SERVER as u64
            } else {
                wanted
            };
            let total = (per_server * servers as u64).div_ceil(copies as u64);
            (to_u32("mailboxes", per_server)?, total)
        }
    })
}

/// IOPS per mailbox and the targets.
#[derive(Debug, Clone, Copy)]
struct Iops {
    iops: f64,
    iops_esrp: f64,
    profile_iops: f64,
    target_iops_per_server: f64,
    target_iops_per_server_unrounded: f64,
    target_iops_total: f64,
    log_writes_per_s_per_server_estimate: f64,
    bdm_mb_per_s_per_server_estimate: f64,
}

// ---- IOPS ------------------------------------------------------------------------------
fn iops(input: &SizingInput, b: Basics, f: &Failover, c: &Capacity, w: &mut Vec<Warning>) -> Iops {
    let Basics {
        method, m, copies, ..
    } = b;
    let Failover {
        mailboxes,
        mailboxes_per_server,
        ..
    } = *f;
    let databases_per_server = c.databases_per_server;
    let mut warn = |code: &'static str, message: String| w.push(Warning { code, message });
    let table_iops = formulas::iops_per_mailbox(method, m, copies);
    let iops = input.iops_per_mailbox.unwrap_or(table_iops);
    let headroom = 1.0 + input.headroom_pct / 100.0;
    // With headroom, ESRP's figure: rounded to 2 places (D2: 0.1005 x 1.2 = 0.1206 -> 0.12, 600
    // IOPS). Without headroom the profile's own figure is the one the papers run, to the 3 places
    // the tables publish: rounding it to 2 would change their targets (D1: 5,000 x 0.134 = 670,
    // not 650).
    let iops_esrp = if input.headroom_pct > 0.0 {
        round_half_up(iops * headroom, 2)
    } else {
        round_half_up(iops, 3)
    };
    if iops_esrp == 0.0 {
        warn(
            "iops-rounds-to-zero",
            format!(
                "{iops:.4} IOPS per mailbox with headroom rounds to 0.00; the profile uses the unrounded value"
            ),
        );
    }
    let profile_iops = if iops_esrp > 0.0 {
        iops_esrp
    } else {
        iops * headroom
    };
    let target_iops_per_server = mailboxes_per_server * profile_iops;
    let target_iops_per_server_unrounded = mailboxes_per_server * iops * headroom;
    let target_iops_total = mailboxes * copies as f64 * profile_iops;
    let log_factor = if copies > 1 { 0.5 } else { 0.4 };
    let log_writes_per_s_per_server_estimate = target_iops_per_server * 0.4 * log_factor;
    let bdm_mb_per_s_per_server_estimate = databases_per_server as f64;
    Iops {
        iops,
        iops_esrp,
        profile_iops,
        target_iops_per_server,
        target_iops_per_server_unrounded,
        target_iops_total,
        log_writes_per_s_per_server_estimate,
        bdm_mb_per_s_per_server_estimate,
    }
}

/// Megacycles, cores, utilization.
#[derive(Debug, Clone)]
struct Cpu {
    multi_role: bool,
    mc_active: f64,
    mc_passive: f64,
    /// The hypervisor factor.
    virt: f64,
    megacycles_required: f64,
    megacycles_required_per_server: f64,
    megacycles_per_core: f64,
    megacycles_per_core_basis: String,
    cores_required: f64,
    cores_required_per_server: f64,
    cpu_peak_utilization_pct: Option<f64>,
    client_access_servers: Option<u32>,
}

// ---- CPU -------------------------------------------------------------------------------
fn cpu(
    input: &SizingInput,
    b: Basics,
    f: &Failover,
    w: &mut Vec<Warning>,
) -> Result<Cpu, InputError> {
    let Basics {
        method, m, copies, ..
    } = b;
    let Failover {
        mailboxes,
        active_worst,
        passive_worst,
        ..
    } = *f;
    let multi_role = input.multi_role && method == Method::Exchange2013;
    cpu_method_warnings(input, method, w);
    let mc_active = megacycles_active(method, m, multi_role);
    let mc_passive = megacycles_passive(method, m);
    let virt = if input.virtualized && method.is_calculator() {
        1.10
    } else {
        1.0
    };
    let megacycles_required =
        (mailboxes * mc_active + mailboxes * (copies as f64 - 1.0) * mc_passive) * virt;
    let megacycles_required_per_server =
        (active_worst * mc_active + passive_worst * mc_passive) * virt;
    let cpu = &input.cpu;
    let (megacycles_per_core, megacycles_per_core_basis) = core_megacycles(method, cpu, w);
    let peak = cpu.peak_cpu_pct / 100.0;
    // Validated processor figures: a core has megacycles and the peak target is above 0.
    assert!(
        megacycles_per_core > 0.0 && peak > 0.0,
        "sizing: {megacycles_per_core} megacycles per core at a {peak} peak"
    );
    let cores_required = megacycles_required / (megacycles_per_core * peak);
    let cores_required_per_server = megacycles_required_per_server / (megacycles_per_core * peak);
    let cpu_peak_utilization_pct = cpu
        .cores_per_server
        .map(|cores| megacycles_required_per_server / (cores as f64 * megacycles_per_core) * 100.0);
    utilization_warnings(
        method,
        cpu,
        cpu_peak_utilization_pct,
        cores_required_per_server,
        w,
    );
    let client_access_servers = if method == Method::Exchange2013 && !input.multi_role {
        let mc = mailboxes * megacycles_client_access(m) * virt;
        let per_server = cpu.client_access_cores as f64 * megacycles_per_core * peak;
        let servers = f64_to_u64("client_access_cores", round_up(mc / per_server).max(1.0))?;
        Some(to_u32("client_access_cores", servers)?)
    } else {
        None
    };
    Ok(Cpu {
        multi_role,
        mc_active,
        mc_passive,
        virt,
        megacycles_required,
        megacycles_required_per_server,
        megacycles_per_core,
        megacycles_per_core_basis,
        cores_required,
        cores_required_per_server,
        cpu_peak_utilization_pct,
        client_access_servers,
    })
}

/// What the method makes of `--multi-role` and `--virtualized`, and where its megacycles come from.
fn cpu_method_warnings(input: &SizingInput, method: Method, w: &mut Vec<Warning>) {
    let mut warn = |code: &'static str, message: String| w.push(Warning { code, message });
    if input.multi_role && method != Method::Exchange2013 {
        warn(
            "multi-role-not-applicable",
            format!(
                "--multi-role has no effect with {}: {}",
                method.label(),
                if method.is_calculator() {
                    "its megacycles already include client access"
                } else {
                    "the guide sizes the mailbox role alone"
                }
            ),
        );
    }
    if method.figures() == Method::Exchange2019 {
        warn(
            "megacycles-from-2016",
            "Microsoft publishes no separate Exchange 2019 megacycle figures; the 2016 figures are used".into(),
        );
    }
    if input.virtualized && !method.is_calculator() {
        warn(
            "virtualization-factor-not-applied",
            "the Exchange 2010 / VMware guide's per-core adjustment has no separate hypervisor factor; --virtualized adds nothing with this method".into(),
        );
    }
}

/// The peak CPU utilization and the cores per server against the method's targets.
fn utilization_warnings(
    method: Method,
    cpu: &CpuInput,
    cpu_peak_utilization_pct: Option<f64>,
    cores_required_per_server: f64,
    w: &mut Vec<Warning>,
) {
    let mut warn = |code: &'static str, message: String| w.push(Warning { code, message });
    match cpu_peak_utilization_pct {
        Some(u) if u > cpu.peak_cpu_pct => warn(
            "cpu-utilization-above-target",
            format!(
                "peak CPU utilization {u:.1}% is above the {}% target; {:.1} cores per server would meet it",
                cpu.peak_cpu_pct, cores_required_per_server
            ),
        ),
        Some(u) if u > 80.0 => warn(
            "cpu-utilization-above-80",
            format!("peak CPU utilization {u:.1}% is above 80%, which the calculator flags"),
        ),
        Some(_) => {}
        None => warn(
            "cpu-utilization-unknown",
            "give --cores-per-server to compute peak CPU utilization".into(),
        ),
    }
    if let Some(ceiling) = core_ceiling(method) {
        let cores = cpu
            .cores_per_server
            .map(f64::from)
            .unwrap_or(cores_required_per_server);
        if cores > ceiling as f64 {
            warn(
                "cores-above-recommended",
                format!(
                    "{cores:.1} cores per server is above the {ceiling} recommended by the {}; add servers",
                    method.label()
                ),
            );
        }
    }
}

/// Megacycles per core of the server's processor, and how they were found.
fn core_megacycles(method: Method, cpu: &CpuInput, w: &mut Vec<Warning>) -> (f64, String) {
    let mut warn = |code: &'static str, message: String| w.push(Warning { code, message });
    match (cpu.specint_rate, cpu.specint_cores) {
        (Some(rate), Some(cores)) => {
            let per_core = rate / cores as f64;
            let mhz = cpu.cpu_mhz.unwrap_or(0.0);
            let v = formulas::megacycles_per_core(method, per_core, mhz);
            let basis = if method.is_calculator() {
                format!("SPECint_rate2006 {rate} / {cores} cores = {per_core:.2} per core x 2000 / 33.75")
            } else {
                format!("SPECint_rate2006 {rate} / {cores} cores = {per_core:.2} per core x {mhz} MHz / 18.75")
            };
            (v, basis)
        }
        _ => {
            let (v, basis) = if method.is_calculator() {
                (
                    2000.0,
                    "assumed baseline core (SPECint_rate2006 33.75 per core = 2,000 megacycles)"
                        .to_string(),
                )
            } else if let Some(mhz) = cpu.cpu_mhz {
                (
                    mhz,
                    format!(
                        "assumed baseline core: {mhz} MHz at the guide's 18.75 SPECint per core"
                    ),
                )
            } else {
                (
                    3333.0,
                    "assumed baseline core of 3,333 MHz (Microsoft's Exchange 2010 baseline)"
                        .to_string(),
                )
            };
            warn(
                    "cpu-baseline-assumed",
                    format!("no --specint-rate/--specint-cores given: {basis}; give them for your processor"),
                );
            (v, basis)
        }
    }
}

/// Database cache and RAM.
#[derive(Debug, Clone, Copy)]
struct Memory {
    cache_mb: f64,
    db_cache_gb: f64,
    db_cache_gb_total: f64,
    ram_per_active: Option<f64>,
    ram_active_gb: Option<f64>,
    ram_gb_per_server: f64,
    ram_gb_total: f64,
}

// ---- Memory ----------------------------------------------------------------------------
fn memory(b: Basics, f: &Failover, c: &Capacity, cpu: &Cpu, w: &mut Vec<Warning>) -> Memory {
    let Basics {
        method, m, servers, ..
    } = b;
    let Failover {
        mailboxes,
        active_worst,
        ..
    } = *f;
    let databases_per_server = c.databases_per_server;
    let (multi_role, virt, megacycles_per_core) =
        (cpu.multi_role, cpu.virt, cpu.megacycles_per_core);
    let cache_mb = db_cache_mb_per_mailbox(m);
    let (db_cache_gb, db_cache_gb_total, ram_per_active, ram_active_gb, ram_gb_per_server) =
        if method.is_calculator() {
            let cache_gb = round_up(active_worst * cache_mb / 1024.0);
            let ram_per = ram_per_active_mailbox_mb(m);
            let mut needed = 4.0 * cache_gb;
            if multi_role {
                // Client Access on the same server: 2 GB plus 2 GB per core it needs.
                let ca_cores = round_up(
                    active_worst * megacycles_client_access(m) * virt / megacycles_per_core,
                );
                needed += 2.0 + 2.0 * ca_cores;
            }
            let ram = round_ram_gb(needed.max(min_ram_gb_by_database_count(databases_per_server)));
            (
                cache_gb,
                cache_gb * servers as f64,
                Some(ram_per),
                Some(active_worst * ram_per / 1000.0),
                ram,
            )
        } else {
            // The guide works in decimal GB: 16,000 x 9 MB = 144 GB.
            let cache_gb = active_worst * cache_mb / 1000.0;
            (
                cache_gb,
                mailboxes * cache_mb / 1000.0,
                None,
                None,
                ram_gb_for_cache_2010(cache_gb),
            )
        };
    let ram_gb_total = if method.is_calculator() {
        ram_gb_per_server * servers as f64
    } else {
        ram_gb_for_cache_2010(db_cache_gb_total)
    };
    ram_warning(method, ram_gb_per_server, w);
    Memory {
        cache_mb,
        db_cache_gb,
        db_cache_gb_total,
        ram_per_active,
        ram_active_gb,
        ram_gb_per_server,
        ram_gb_total,
    }
}

/// RAM per server above what the method recommends.
fn ram_warning(method: Method, ram_gb_per_server: f64, w: &mut Vec<Warning>) {
    let mut warn = |code: &'static str, message: String| w.push(Warning { code, message });
    if let Some(ceiling) = ram_ceiling_gb(method) {
        if ram_gb_per_server > ceiling {
            warn(
                "ram-above-recommended",
                format!(
                    "{ram_gb_per_server:.0} GB of RAM per server is above the {ceiling:.0} GB recommended by the {}; add servers",
                    method.label()
                ),
            );
        }
    }
}

// ---- Storage design: disks per server ----------------------------------------------------
fn storage_design(
    input: &SizingInput,
    b: Basics,
    sources: Sources,
    c: &Capacity,
    i: &Iops,
    w: &mut Vec<Warning>,
) -> Result<StorageDesign, InputError> {
    let Basics {
        servers, copies, ..
    } = b;
    let (database_space_per_server_tib, log_space_per_server_tib) =
        (c.database_space_per_server_tib, c.log_space_per_server_tib);
    let (target_iops_per_server, log_writes_per_s_per_server_estimate) = (
        i.target_iops_per_server,
        i.log_writes_per_s_per_server_estimate,
    );
    let st = &input.storage;
    let disk_capacity_gb = st
        .disk_capacity_gb
        .unwrap_or(st.disk_class.default_capacity_gb());
    let disk_iops = st.disk_iops.unwrap_or(st.disk_class.default_iops());
    let db_disks = storage::volume_disks(
        st.db_raid,
        database_space_per_server_tib * 1024.0,
        target_iops_per_server,
        storage::READ_FRACTION,
        disk_capacity_gb,
        disk_iops,
    )
    .ok_or_else(|| too_large("mailboxes"))?;
    // Log writes are sequential; sizing them as random disk I/O is conservative (assumption).
    let log_disks = storage::volume_disks(
        st.log_raid,
        log_space_per_server_tib * 1024.0,
        log_writes_per_s_per_server_estimate,
        0.0,
        disk_capacity_gb,
        disk_iops,
    )
    .ok_or_else(|| too_large("mailboxes"))?;
    let active_disks = db_disks.disks.saturating_add(log_disks.disks);
    let hot_spares = storage::hot_spares(active_disks);
    let disks_per_server = active_disks.saturating_add(hot_spares);
    let storage_design = StorageDesign {
        method: sources.capacity,
        source: "Role Requirements Calculator storage design: disks by capacity and by IOPS with the RAID write penalty, the larger wins",
        disk_class: st.disk_class,
        disk_label: st.disk_class.label(),
        disk_capacity_gb,
        disk_capacity_source: if st.disk_capacity_gb.is_some() {
            "input (--disk-capacity-gb)"
        } else {
            st.disk_class.source()
        },
        disk_iops,
        disk_iops_source: if st.disk_iops.is_some() {
            "input (--disk-iops)"
        } else {
            st.disk_class.source()
        },
        raid_group_disks: storage::RAID_GROUP_DISKS,
        database: db_disks,
        log: log_disks,
        hot_spares_per_server: hot_spares,
        hot_spares_rule: "one per started 12 active disks (assumption fitted to the Dell PS6210E ESRP: 22 active, 2 spares)",
        disks_per_server,
        disks_total: disks_per_server.saturating_mul(servers as u64),
    };
    disk_warnings(input, copies, disks_per_server, w);
    Ok(storage_design)
}

/// JBOD with too few copies, and more disks than the enclosures an assumption allows.
fn disk_warnings(input: &SizingInput, copies: u32, disks_per_server: u64, w: &mut Vec<Warning>) {
    let st = &input.storage;
    let mut warn = |code: &'static str, message: String| w.push(Warning { code, message });
    let ha = copies - input.lagged_copies;
    if (st.db_raid == storage::Raid::Jbod || st.log_raid == storage::Raid::Jbod) && ha < 3 {
        warn(
            "jbod-needs-3-copies",
            format!(
                "JBOD volumes need at least 3 highly available copies of each database (Microsoft's guidance); this design has {ha}: use RAID, or more copies"
            ),
        );
    }
    if disks_per_server > storage::DISKS_PER_SERVER_GUIDANCE {
        warn(
            "disks-per-server-above-guidance",
            format!(
                "{disks_per_server} disks per server is more than {} (two 24-bay enclosures, an assumption); use larger disks, more servers or a smaller quota",
                storage::DISKS_PER_SERVER_GUIDANCE
            ),
        );
    }
}

// ---- Log replication ---------------------------------------------------------------------
fn log_replication(
    input: &SizingInput,
    b: Basics,
    sources: Sources,
    f: &Failover,
    c: &Capacity,
) -> LogReplication {
    let Basics {
        servers, copies, ..
    } = b;
    let Failover {
        mailboxes,
        active_normal,
        active_worst,
        ..
    } = *f;
    let (logs_per_day, mailboxes_per_database) = (c.logs_per_day, c.mailboxes_per_database);
    let ha = copies - input.lagged_copies;
    let peak_share = input.peak_hour_log_pct / 100.0;
    let log_mib_per_mailbox_peak_hour = logs_per_day * peak_share;
    let passive = (copies - 1) as f64;
    let per_site = storage::copies_per_site(copies, input.sites);
    // Every copy is in one site.
    assert_eq!(
        per_site.iter().sum::<u32>(),
        copies,
        "sizing: copies over {} sites",
        input.sites
    );
    let cross_site = copies - per_site.first().copied().unwrap_or(copies);
    let dags = servers.div_ceil(MAX_SERVERS_PER_DAG);
    let all_peak_mbit =
        storage::mbit_per_s_from_mib_per_hour(mailboxes * log_mib_per_mailbox_peak_hour);
    LogReplication {
        method: sources.capacity,
        source: "Role Requirements Calculator log replication: logs per day per database x the busiest hour's share, sent to each other copy; the share is an assumption (docs/sizing.md), no compression or protocol overhead",
        log_gb_per_database_per_day: mailboxes_per_database * logs_per_day / 1024.0,
        peak_hour_log_pct: input.peak_hour_log_pct,
        peak_hour_source: if (input.peak_hour_log_pct - DEFAULT_PEAK_HOUR_LOG_PCT).abs() < 1e-12 {
            "assumption: a working day concentrated in about 8 hours (1/8 = 12.5%), rounded to 12%"
        } else {
            "input (--peak-hour-log-pct)"
        },
        mbit_per_s_per_database_copy: storage::mbit_per_s_from_mib_per_hour(
            mailboxes_per_database * log_mib_per_mailbox_peak_hour,
        ),
        copies_replicated_per_database: copies - 1,
        mbit_per_s_per_server: storage::mbit_per_s_from_mib_per_hour(
            active_normal * log_mib_per_mailbox_peak_hour,
        ) * passive,
        mbit_per_s_per_server_worst: storage::mbit_per_s_from_mib_per_hour(
            active_worst * log_mib_per_mailbox_peak_hour,
        ) * (copies - (ha - 1) - 1) as f64,
        dags,
        mbit_per_s_per_dag: all_peak_mbit * passive / dags as f64,
        mbit_per_s_total: all_peak_mbit * passive,
        sites: input.sites,
        copies_per_site: per_site,
        cross_site_copies_per_database: cross_site,
        mbit_per_s_cross_site: all_peak_mbit * cross_site as f64,
    }
}

/// What a server count is judged by: the worst failure mode's CPU and RAM against the method's
/// ceilings.
struct CountModel<'a> {
    input: &'a SizingInput,
    b: Basics,
    mailboxes: f64,
    databases_total: u32,
    cpu: &'a Cpu,
    cache_mb: f64,
    cores_for_count: Option<u32>,
    ram_ceiling: Option<f64>,
}

impl CountModel<'_> {
    /// Server count `n` (at least the highly available copies) judged.
    fn evaluate(&self, n: u32) -> ServerCandidate {
        let input = self.input;
        let Basics {
            method, m, copies, ..
        } = self.b;
        let ha = copies - input.lagged_copies;
        // Candidates start at the copies: a server survives the worst failure mode.
        assert!(
            n >= ha,
            "sizing: {n} servers judged for {ha} highly available copies"
        );
        let cpu = &input.cpu;
        let &Cpu {
            multi_role,
            mc_active,
            mc_passive,
            virt,
            megacycles_per_core,
            ..
        } = self.cpu;
        let (mailboxes, databases_total, cache_mb) =
            (self.mailboxes, self.databases_total, self.cache_mb);
        let (cores_for_count, ram_ceiling) = (self.cores_for_count, self.ram_ceiling);
        let surviving_n = n - (ha - 1);
        let active = mailboxes / surviving_n as f64;
        let hosted = mailboxes * copies as f64 / n as f64;
        let mc = (active * mc_active + (hosted - active).max(0.0) * mc_passive) * virt;
        let util = cores_for_count.map(|c| mc / (c as f64 * megacycles_per_core) * 100.0);
        let dbs = (databases_total as u64 * copies as u64).div_ceil(n as u64);
        let dbs = u32::try_from(dbs).unwrap_or(u32::MAX);
        let ram = if method.is_calculator() {
            let cache_gb = round_up(active * cache_mb / 1024.0);
            let mut needed = 4.0 * cache_gb;
            if multi_role {
                needed += 2.0
                    + 2.0
                        * round_up(
                            active * megacycles_client_access(m) * virt / megacycles_per_core,
                        );
            }
            round_ram_gb(needed.max(min_ram_gb_by_database_count(dbs)))
        } else {
            ram_gb_for_cache_2010(active * cache_mb / 1000.0)
        };
        let cpu_ok = util.is_none_or(|u| u <= cpu.peak_cpu_pct + 1e-9);
        let ram_ok = ram_ceiling.is_none_or(|c| ram <= c);
        ServerCandidate {
            servers: n,
            active_mailboxes_worst: input.mailboxes.div_ceil(surviving_n as u64),
            cpu_utilization_pct: util,
            ram_gb: ram,
            valid: cpu_ok && ram_ok && (util.is_some() || ram_ceiling.is_some()),
        }
    }
}

// ---- Server count: the smallest that keeps CPU and RAM within the method's ceilings ----
fn server_count(
    input: &SizingInput,
    b: Basics,
    f: &Failover,
    c: &Capacity,
    cpu_figures: &Cpu,
    mem: &Memory,
    w: &mut Vec<Warning>,
) -> ServerCount {
    let Basics {
        method,
        servers,
        copies,
        ..
    } = b;
    let cpu = &input.cpu;
    let mut warn = |code: &'static str, message: String| w.push(Warning { code, message });
    let cores_for_count = cpu.cores_per_server.or(core_ceiling(method));
    let ram_ceiling = ram_ceiling_gb(method);
    let model = CountModel {
        input,
        b,
        mailboxes: f.mailboxes,
        databases_total: c.databases_total,
        cpu: cpu_figures,
        cache_mb: mem.cache_mb,
        cores_for_count,
        ram_ceiling,
    };
    let evaluate = |n: u32| model.evaluate(n);
    let min_servers = copies.max(1);
    let smallest_valid = if cores_for_count.is_none() && ram_ceiling.is_none() {
        None
    } else {
        (min_servers..=MAX_SERVERS).find(|&n| evaluate(n).valid)
    };
    let shown = shown_counts(servers, min_servers, smallest_valid);
    let candidates: Vec<ServerCandidate> = shown.into_iter().map(evaluate).collect();
    let asked_valid = candidates
        .iter()
        .find(|c| c.servers == servers)
        .map(|c| c.valid);
    assert!(
        asked_valid.is_some(),
        "sizing: the {servers} servers asked are not among the candidates"
    );
    let server_count = ServerCount {
        method,
        source: "the method's ceilings in the worst failure mode: peak CPU target at the cores per server, and the recommended maximum RAM",
        asked: servers,
        asked_is_valid: asked_valid.unwrap_or(false),
        smallest_valid,
        cores_per_server: cores_for_count,
        cores_basis: match (cpu.cores_per_server, cores_for_count) {
            (Some(_), _) => "input (--cores-per-server)",
            (None, Some(_)) => "the method's recommended maximum cores per server (Microsoft's guidance: 24 for 2013/2016, 48 for 2019/SE)",
            (None, None) => "none: give --cores-per-server (the 2010 / VMware guide has no core or RAM ceiling)",
        },
        peak_cpu_target_pct: cpu.peak_cpu_pct,
        ram_ceiling_gb: ram_ceiling,
        candidates,
    };
    match smallest_valid {
        Some(n) if n > servers => warn(
            "servers-below-smallest-valid",
            format!(
                "{servers} servers exceed the method's CPU or RAM ceilings in the worst failure mode; {n} is the smallest count within them"
            ),
        ),
        None if cores_for_count.is_some() || ram_ceiling.is_some() => warn(
            "no-valid-server-count",
            format!(
                "no server count up to {MAX_SERVERS} keeps CPU and RAM within the method's ceilings; use faster or more cores per server"
            ),
        ),
        _ => {}
    }
    server_count
}

/// The server counts a report shows: around the count asked and the smallest valid one (at
/// most 8 in a row), and both of those.
fn shown_counts(
    servers: u32,
    min_servers: u32,
    smallest_valid: Option<u32>,
) -> std::collections::BTreeSet<u32> {
    let mut shown: std::collections::BTreeSet<u32> = std::collections::BTreeSet::new();
    let lo = smallest_valid
        .unwrap_or(servers)
        .min(servers)
        .saturating_sub(1)
        .max(min_servers);
    let hi = smallest_valid
        .unwrap_or(servers)
        .max(servers)
        .saturating_add(1)
        .min(MAX_SERVERS);
    shown.extend((lo..=hi).take(8));
    shown.insert(servers);
    if let Some(n) = smallest_valid {
        shown.insert(n);
    }
    shown
}

// ---- The storage-test profile of one server ----------------------------------------------
fn profile(
    input: &SizingInput,
    b: Basics,
    c: &Capacity,
    i: &Iops,
    w: &mut Vec<Warning>,
) -> Result<(u64, Profile), InputError> {
    let Basics {
        servers, copies, ..
    } = b;
    let databases_per_server = c.databases_per_server;
    let Iops {
        iops,
        profile_iops,
        target_iops_per_server,
        ..
    } = *i;
    let mut warn = |code: &'static str, message: String| w.push(Warning { code, message });
    // Exact in integers: mailboxes x copies / servers, rounded up; never above `mailboxes`
    // because copies <= servers.
    let profile_mailboxes =
        checked("mailboxes", input.mailboxes.checked_mul(copies as u64))?.div_ceil(servers as u64);
    assert!(
        (1..=input.mailboxes).contains(&profile_mailboxes),
        "sizing: {profile_mailboxes} mailboxes hosted per server of {} in all",
        input.mailboxes
    );
    check_profile_iops(input, iops, profile_iops)?;
    if target_iops_per_server < mbx_config::MIN_TARGET_IOPS {
        warn(
            "target-below-1-iops",
            format!(
                "the storage test of one server targets {target_iops_per_server:.3} IOPS; `mbxstress run` needs a target of at least 1 IOPS (more mailboxes or IOPS per mailbox)"
            ),
        );
    }

    // The storage test simulates at most Jetstress's 3 copies per database; a larger DAG is
    // tested as 3 (the log replication reads of further copies are not simulated).
    let profile_copies = copies.min(mbx_config::MAX_COPIES_PER_DATABASE);
    if profile_copies < copies {
        warn(
            "profile-copies-capped",
            format!(
                "{copies} copies per database: the storage test simulates at most {} (as Jetstress does), so the profile says {}",
                mbx_config::MAX_COPIES_PER_DATABASE,
                profile_copies
            ),
        );
    }
    // `loadgen` sends messages of at most 10 MiB; a larger average is not written to the profile.
    let profile_message_kb = (input.message_size_kb <= mbx_config::MAX_PROFILE_MESSAGE_SIZE_KB)
        .then_some(input.message_size_kb);
    if profile_message_kb.is_none() {
        warn(
            "profile-message-size-omitted",
            format!(
                "{} KB messages are above the {} KB a test profile (and `loadgen`) accepts; the profile leaves message_size_kb out",
                mbx_config::show_number(input.message_size_kb),
                mbx_config::MAX_PROFILE_MESSAGE_SIZE_KB
            ),
        );
    }
    let profile = Profile {
        mailboxes: profile_mailboxes,
        iops_per_mailbox: profile_iops,
        mailbox_quota_mb: input.quota_mb,
        databases: databases_per_server,
        copies_per_database: profile_copies,
        // What `loadgen run --profile` simulates.
        messages_per_day: Some(input.messages_per_day.round().clamp(1.0, 10_000.0) as u32),
        message_size_kb: profile_message_kb,
    };
    if profile.target_iops() > mbx_config::MAX_TARGET_IOPS {
        warn(
            "target-above-1000000-iops",
            format!(
                "the storage test of one server targets {:.0} IOPS; `mbxstress run` tests at most {} IOPS per server (more servers, or fewer mailboxes per server)",
                profile.target_iops(),
                mbx_config::MAX_TARGET_IOPS
            ),
        );
    }
    Ok((profile_mailboxes, profile))
}

/// The IOPS per mailbox a profile says, with headroom, within what a test profile accepts.
fn check_profile_iops(input: &SizingInput, iops: f64, profile_iops: f64) -> Result<(), InputError> {
    if profile_iops > mbx_config::MAX_IOPS_PER_MAILBOX {
        let field = if input.iops_per_mailbox.is_some() {
            "iops_per_mailbox"
        } else {
            "headroom_pct"
        };
        return Err(InputError {
            field,
            reason: format!(
                "{} IOPS per mailbox with {}% headroom is {} IOPS per mailbox, above the {} a test profile accepts",
                mbx_config::show_number(iops),
                mbx_config::show_number(input.headroom_pct),
                mbx_config::show_number(profile_iops),
                mbx_config::MAX_IOPS_PER_MAILBOX
            ),
        });
    }
    Ok(())
}

/// Every section's figures, for the report.
struct Sections {
    f: Failover,
    c: Capacity,
    i: Iops,
    cpu: Cpu,
    mem: Memory,
    storage_design: StorageDesign,
    log_replication: LogReplication,
    server_count: ServerCount,
    profile_mailboxes: u64,
    profile: Profile,
}

/// The report of the sections' figures.
fn report(
    input: &SizingInput,
    sources: Sources,
    s: Sections,
    warnings: Vec<Warning>,
) -> SizingReport {
    let Basics {
        method,
        servers,
        copies,
        ..
    } = Basics::of(input);
    let cpu = &input.cpu;
    SizingReport {
        method,
        method_label: method.label(),
        sources,
        input: input.clone(),
        mailboxes_total: input.mailboxes,
        servers,
        copies_per_database: copies,
        mailboxes_per_server: s.f.mailboxes_per_server,
        active_mailboxes_per_server_normal: s.f.active_normal,
        active_mailboxes_per_server_worst: s.f.active_worst,
        surviving_servers_worst: s.f.surviving,
        iops_per_mailbox: s.i.iops,
        iops_per_mailbox_published: round_half_up(s.i.iops, 3),
        iops_per_mailbox_overridden: input.iops_per_mailbox.is_some(),
        iops_per_mailbox_esrp: s.i.iops_esrp,
        headroom_pct: input.headroom_pct,
        target_iops_per_server: s.i.target_iops_per_server,
        target_iops_per_server_unrounded: s.i.target_iops_per_server_unrounded,
        target_iops_total: s.i.target_iops_total,
        log_writes_per_s_per_server_estimate: s.i.log_writes_per_s_per_server_estimate,
        bdm_mb_per_s_per_server_estimate: s.i.bdm_mb_per_s_per_server_estimate,
        megacycles_per_active_mailbox: s.cpu.mc_active,
        megacycles_per_passive_mailbox: s.cpu.mc_passive,
        megacycles_required: s.cpu.megacycles_required,
        megacycles_required_per_server: s.cpu.megacycles_required_per_server,
        megacycles_per_core: s.cpu.megacycles_per_core,
        megacycles_per_core_basis: s.cpu.megacycles_per_core_basis,
        cores_required: s.cpu.cores_required,
        cores_required_per_server: s.cpu.cores_required_per_server,
        cores_per_server: cpu.cores_per_server,
        cpu_peak_utilization_pct: s.cpu.cpu_peak_utilization_pct,
        peak_cpu_target_pct: cpu.peak_cpu_pct,
        client_access_servers: s.cpu.client_access_servers,
        db_cache_mb_per_mailbox: s.mem.cache_mb,
        db_cache_gb: s.mem.db_cache_gb,
        db_cache_gb_total: s.mem.db_cache_gb_total,
        ram_per_active_mailbox_mb: s.mem.ram_per_active,
        ram_for_active_mailboxes_gb: s.mem.ram_active_gb,
        ram_gb_per_server: s.mem.ram_gb_per_server,
        ram_gb_total: s.mem.ram_gb_total,
        mailbox_size_on_disk_mb: s.c.mailbox_size_mb,
        databases_per_server: s.c.databases_per_server,
        databases_total: s.c.databases_total,
        mailboxes_per_database: s.c.mailboxes_per_database,
        database_size_gb: s.c.database_size_gb,
        logs_per_mailbox_per_day: s.c.logs_per_day,
        log_space_per_database_gb: s.c.log_space_per_database_gb,
        database_volume_gb: s.c.database_volume_gb,
        log_volume_gb: s.c.log_volume_gb,
        database_space_per_server_tib: s.c.database_space_per_server_tib,
        log_space_per_server_tib: s.c.log_space_per_server_tib,
        database_space_total_tib: s.c.database_space_total_tib,
        log_space_total_tib: s.c.log_space_total_tib,
        jetstress_database_size_gib: s.c.jetstress_database_size_gib,
        mailboxes_per_server_whole: s.profile_mailboxes,
        active_mailboxes_per_server_normal_whole: input.mailboxes.div_ceil(servers as u64),
        active_mailboxes_per_server_worst_whole: input.mailboxes.div_ceil(s.f.surviving as u64),
        mailboxes_per_database_whole: input.mailboxes.div_ceil(s.c.databases_total as u64),
        highly_available_copies: s.f.ha_copies,
        lagged_copies: input.lagged_copies,
        lagged_log_space_per_database_copy_gb: s.c.lagged_log_space_per_database_copy_gb,
        lagged_log_space_per_server_tib: s.c.lagged_log_space_per_server_tib,
        archive_size_on_disk_mb: s.c.archive_size_mb,
        storage_design: s.storage_design,
        log_replication: s.log_replication,
        server_count: s.server_count,
        warnings,
        profile: s.profile,
    }
}

/// A count computed with checked arithmetic; `None` (overflow) is an error naming `field`.
/// Unreachable within the documented input ranges, kept so that no count ever saturates.
fn checked(field: &'static str, v: Option<u64>) -> Result<u64, InputError> {
    v.ok_or_else(|| too_large(field))
}

/// A count as `u32`, or an error naming `field` (never a saturated `u32::MAX`).
fn to_u32(field: &'static str, v: u64) -> Result<u32, InputError> {
    u32::try_from(v).map_err(|_| too_large(field))
}

/// A whole, non-negative float (after `ceil`) as `u64`, or an error naming `field`: `as` would
/// saturate silently on infinity and turn NaN into 0.
fn f64_to_u64(field: &'static str, v: f64) -> Result<u64, InputError> {
    // 2^64 is exactly representable; anything below it converts exactly when whole.
    if v.is_finite() && (0.0..18_446_744_073_709_551_616.0).contains(&v) {
        Ok(v as u64)
    } else {
        Err(too_large(field))
    }
}

fn too_large(field: &'static str) -> InputError {
    InputError {
        field,
        reason: "the deployment is too large to size; use a smaller value".into(),
    }
}
