//! The report of `mbxstress size` as text, and a built-in example's paper beside it. Pure
//! functions: data in, text out.

use mbx_sizing::{Method, SizingReport};

use crate::num::num;

/// Like [`num`], but drops the decimals of a whole number (4000.0 -> "4,000", 833.33 stays).
pub fn num_auto(x: f64, decimals: usize) -> String {
    if (x - x.round()).abs() < 1e-9 {
        num(x, 0)
    } else {
        num(x, decimals)
    }
}

/// Short tag for the method column.
fn tag(m: Method) -> &'static str {
    match m {
        Method::Exchange2013 => "2013 calculator",
        Method::Exchange2016 => "2016 calculator",
        Method::Exchange2019 => "2019 calculator",
        Method::ExchangeSe => "SE (2019 calculator)",
        Method::Exchange2010Vmware => "2010/VMware guide",
    }
}

fn raid_label(r: mbx_sizing::storage::Raid) -> &'static str {
    use mbx_sizing::storage::Raid;
    match r {
        Raid::Raid10 => "RAID 10",
        Raid::Raid5 => "RAID 5",
        Raid::Raid6 => "RAID 6",
        Raid::Jbod => "JBOD",
    }
}

/// A table of labelled rows with per-server, total and method columns, grouped under headings.
struct Table {
    rows: Vec<Row>,
}

enum Row {
    Heading(String),
    Figure {
        label: String,
        per_server: String,
        total: String,
        method: String,
    },
}

impl Table {
    fn new() -> Self {
        Table { rows: Vec::new() }
    }
    fn heading(&mut self, h: &str) {
        self.rows.push(Row::Heading(h.to_string()));
    }
    fn row(&mut self, label: impl Into<String>, per_server: String, total: String, method: &str) {
        self.rows.push(Row::Figure {
            label: label.into(),
            per_server,
            total,
            method: method.to_string(),
        });
    }
    fn render(&self) -> String {
        let (mut wl, mut ws, mut wt) = (0, "per server".len(), "total".len());
        for r in &self.rows {
            if let Row::Figure {
                label,
                per_server,
                total,
                ..
            } = r
            {
                wl = wl.max(label.chars().count());
                ws = ws.max(per_server.chars().count());
                wt = wt.max(total.chars().count());
            }
        }
        let mut out = format!(
            "  {:wl$}  {:>ws$}  {:>wt$}  method\n",
            "", "per server", "total"
        );
        for r in &self.rows {
            match r {
                Row::Heading(h) => out.push_str(&format!("{h}\n")),
                Row::Figure {
                    label,
                    per_server,
                    total,
                    method,
                } => out.push_str(&format!(
                    "  {label:wl$}  {per_server:>ws$}  {total:>wt$}  {method}\n"
                )),
            }
        }
        out
    }
}

const NONE: &str = "-";

/// The report of `mbxstress size`.
pub fn size_report(r: &SizingReport, inputs_from: &str) -> String {
    let mut out = header(r, inputs_from);
    let mut t = Table::new();
    mailbox_rows(&mut t, r);
    iops_rows(&mut t, r);
    cpu_rows(&mut t, r);
    memory_rows(&mut t, r);
    storage_rows(&mut t, r);
    storage_design_rows(&mut t, r);
    log_replication_rows(&mut t, r);
    out.push_str(&t.render());
    out.push_str(&server_count(r));
    out.push_str(&profile_and_warnings(r));
    out
}

/// What is sized, from which inputs, by which method.
fn header(r: &SizingReport, inputs_from: &str) -> String {
    let i = &r.input;
    let mut out = String::new();
    out.push_str(&format!(
        "Sizing {} mailboxes: {} messages/day of {} KB, {} MB quota, {} cop{}, {} server{}\n",
        num(r.mailboxes_total as f64, 0),
        num(i.messages_per_day, 0),
        num(i.message_size_kb, 0),
        num(i.quota_mb as f64, 0),
        r.copies_per_database,
        if r.copies_per_database == 1 {
            "y"
        } else {
            "ies"
        },
        r.servers,
        if r.servers == 1 { "" } else { "s" },
    ));
    out.push_str(&format!("Inputs: {inputs_from}\n"));
    out.push_str(&format!("Method: {} ({})", r.method_label, r.method.id()));
    if r.sources.capacity != r.method {
        out.push_str(&format!(
            "; storage figures from the {}",
            r.sources.capacity.label()
        ));
    }
    out.push_str(&format!(
        "\nPer server = one of {} servers in the worst failure mode ({} of {} failed).\n\n",
        r.servers,
        r.servers - r.surviving_servers_worst,
        r.servers
    ));
    out
}

/// The table's rows on the mailboxes each server hosts.
fn mailbox_rows(t: &mut Table, r: &SizingReport) {
    t.heading("Mailboxes");
    t.row(
        "Mailbox copies hosted (all active in the test)",
        num(r.mailboxes_per_server_whole as f64, 0),
        num(r.mailboxes_total as f64 * r.copies_per_database as f64, 0),
        "input",
    );
    t.row(
        "Active mailboxes, all servers up",
        num(r.active_mailboxes_per_server_normal_whole as f64, 0),
        num(r.mailboxes_total as f64, 0),
        "input",
    );
    t.row(
        "Active mailboxes, worst failure mode",
        num(r.active_mailboxes_per_server_worst_whole as f64, 0),
        NONE.into(),
        "input",
    );
}

/// The table's rows on the transactional IOPS and what comes with them.
fn iops_rows(t: &mut Table, r: &SizingReport) {
    let iops_m = tag(r.sources.iops);
    t.heading("IOPS");
    let iops_label = if r.iops_per_mailbox_overridden {
        "IOPS per mailbox (--iops-per-mailbox)"
    } else {
        "IOPS per mailbox (profile table)"
    };
    t.row(
        iops_label,
        num(r.iops_per_mailbox, 4),
        NONE.into(),
        if r.iops_per_mailbox_overridden {
            "input"
        } else {
            iops_m
        },
    );
    if r.headroom_pct > 0.0 {
        t.row(
            format!(
                "IOPS per mailbox + {}% headroom (ESRP, 2 places)",
                num(r.headroom_pct, 0)
            ),
            num(r.iops_per_mailbox_esrp, 2),
            NONE.into(),
            iops_m,
        );
    } else {
        t.row(
            "IOPS per mailbox, no headroom (as published, 3 places)",
            num(r.iops_per_mailbox_esrp, 3),
            NONE.into(),
            iops_m,
        );
    }
    t.row(
        "Target transactional IOPS",
        num(r.target_iops_per_server, 1),
        num(r.target_iops_total, 1),
        iops_m,
    );
    t.row(
        "Log writes/s (estimate)",
        num(r.log_writes_per_s_per_server_estimate, 1),
        NONE.into(),
        iops_m,
    );
    t.row(
        "Background maintenance reads, MB/s (estimate)",
        num(r.bdm_mb_per_s_per_server_estimate, 1),
        NONE.into(),
        iops_m,
    );
}

/// The table's rows on cores and CPU.
fn cpu_rows(t: &mut Table, r: &SizingReport) {
    let i = &r.input;
    let cpu_m = tag(r.sources.cpu);
    t.heading("CPU");
    t.row(
        "Megacycles per active mailbox",
        num(r.megacycles_per_active_mailbox, 3),
        NONE.into(),
        cpu_m,
    );
    t.row(
        "Megacycles per passive copy",
        num(r.megacycles_per_passive_mailbox, 3),
        NONE.into(),
        cpu_m,
    );
    t.row(
        format!(
            "Megacycles required{}",
            if i.virtualized && r.method.is_calculator() {
                " (+10% virtualized)"
            } else {
                ""
            }
        ),
        num(r.megacycles_required_per_server, 0),
        num(r.megacycles_required, 0),
        cpu_m,
    );
    t.row(
        "Megacycles per core",
        num(r.megacycles_per_core, 0),
        NONE.into(),
        cpu_m,
    );
    t.row(
        format!("Cores required at {}% peak", num(r.peak_cpu_target_pct, 0)),
        format!(
            "{} ({})",
            num(r.cores_required_per_server, 2),
            num(r.cores_required_per_server.ceil(), 0)
        ),
        format!(
            "{} ({})",
            num(r.cores_required, 2),
            num(r.cores_required.ceil(), 0)
        ),
        cpu_m,
    );
    if let (Some(u), Some(c)) = (r.cpu_peak_utilization_pct, r.cores_per_server) {
        t.row(
            format!("Peak CPU utilization with {c} cores per server"),
            format!("{}%", num(u, 1)),
            NONE.into(),
            cpu_m,
        );
    }
    if let Some(n) = r.client_access_servers {
        t.row(
            format!(
                "Client Access servers ({} cores each)",
                i.cpu.client_access_cores
            ),
            NONE.into(),
            n.to_string(),
            cpu_m,
        );
    }
}

/// The table's rows on memory.
fn memory_rows(t: &mut Table, r: &SizingReport) {
    let mem_m = tag(r.sources.memory);
    t.heading("Memory");
    t.row(
        "Database cache per mailbox, MB",
        num(r.db_cache_mb_per_mailbox, 1),
        NONE.into(),
        mem_m,
    );
    if let Some(mb) = r.ram_per_active_mailbox_mb {
        t.row("RAM per active mailbox, MB", num(mb, 1), NONE.into(), mem_m);
    }
    if let Some(gb) = r.ram_for_active_mailboxes_gb {
        // The JSON's `ram_for_active_mailboxes_gb` (D1 Table 3's figure), before the rounding to
        // a configuration below.
        t.row(
            "RAM for the active mailboxes, GB (per mailbox x active)",
            num(gb, 1),
            NONE.into(),
            mem_m,
        );
    }
    t.row(
        if r.method.is_calculator() {
            "Database cache, GB (GiB, rounded up)"
        } else {
            "Database cache, GB (decimal)"
        },
        num(r.db_cache_gb, 1),
        num(r.db_cache_gb_total, 1),
        mem_m,
    );
    t.row(
        if r.method.is_calculator() {
            "RAM, GB (rounded to a configuration)"
        } else {
            "RAM, GB (cache / 92 x 128)"
        },
        num(r.ram_gb_per_server, 1),
        num(r.ram_gb_total, 1),
        mem_m,
    );
}

/// The table's rows on capacity: mailboxes, databases, logs, volumes.
fn storage_rows(t: &mut Table, r: &SizingReport) {
    let i = &r.input;
    let cap_m = tag(r.sources.capacity);
    t.heading("Storage");
    t.row(
        "Mailbox size on disk, MB",
        num(r.mailbox_size_on_disk_mb, 0),
        NONE.into(),
        cap_m,
    );
    t.row(
        "Databases (copies on each server / distinct)",
        r.databases_per_server.to_string(),
        r.databases_total.to_string(),
        cap_m,
    );
    t.row(
        "Mailboxes per database (largest)",
        num(r.mailboxes_per_database_whole as f64, 0),
        NONE.into(),
        cap_m,
    );
    if r.archive_size_on_disk_mb > 0.0 {
        t.row(
            "Archive mailbox size on disk, MB (in the same databases)",
            num(r.archive_size_on_disk_mb, 0),
            NONE.into(),
            "assumption",
        );
    }
    if r.lagged_copies > 0 {
        t.row(
            format!(
                "Lagged copies: extra log space per lagged copy, GB ({} days)",
                num_auto(i.lag_days, 1)
            ),
            num(r.lagged_log_space_per_database_copy_gb, 1),
            NONE.into(),
            cap_m,
        );
    }
    t.row(
        "Database size, GB",
        num(r.database_size_gb, 1),
        NONE.into(),
        cap_m,
    );
    t.row(
        "Log files per mailbox per day (1 MB each)",
        num(r.logs_per_mailbox_per_day, 1),
        NONE.into(),
        cap_m,
    );
    t.row(
        format!("Log space per database, GB ({} days)", i.log_retention_days),
        num(r.log_space_per_database_gb, 1),
        NONE.into(),
        cap_m,
    );
    t.row(
        "Database volumes, TiB (index, 5% free)",
        num(r.database_space_per_server_tib, 2),
        num(r.database_space_total_tib, 2),
        cap_m,
    );
    t.row(
        "Log volumes, TiB (5% free)",
        num(r.log_space_per_server_tib, 2),
        num(r.log_space_total_tib, 2),
        cap_m,
    );
    t.row(
        "Storage-test database size, GiB (each)",
        num(r.jetstress_database_size_gib, 1),
        NONE.into(),
        "Jetstress rule",
    );
}

/// The table's rows on the disks under the database and log volumes.
fn storage_design_rows(t: &mut Table, r: &SizingReport) {
    let i = &r.input;
    let cap_m = tag(r.sources.capacity);
    let sd = &r.storage_design;
    let disk_src = |given: bool| if given { "input" } else { "assumption" };
    t.heading(&format!(
        "Disks ({}, {} GB, {} IOPS each)",
        sd.disk_label,
        num_auto(sd.disk_capacity_gb, 1),
        num_auto(sd.disk_iops, 1)
    ));
    t.row(
        "Disk capacity, GB / random IOPS",
        format!(
            "{} / {}",
            num_auto(sd.disk_capacity_gb, 1),
            num_auto(sd.disk_iops, 1)
        ),
        NONE.into(),
        disk_src(i.storage.disk_iops.is_some() && i.storage.disk_capacity_gb.is_some()),
    );
    for (name, v) in [("Database", &sd.database), ("Log", &sd.log)] {
        t.row(
            format!(
                "{name} volumes: {} (write penalty {}), IOPS needed / on disks",
                raid_label(v.raid),
                v.write_penalty
            ),
            format!(
                "{} / {}",
                num(v.required_host_iops, 1),
                num(v.required_disk_iops, 1)
            ),
            NONE.into(),
            cap_m,
        );
        t.row(
            format!("{name} disks by capacity / by IOPS"),
            format!("{} / {}", v.disks_by_capacity, v.disks_by_iops),
            NONE.into(),
            cap_m,
        );
        t.row(
            format!(
                "{name} disks ({})",
                match v.decided_by {
                    "iops" => "IOPS decide",
                    "capacity" => "capacity decides",
                    _ => "capacity and IOPS agree",
                }
            ),
            v.disks.to_string(),
            num((v.disks * r.servers as u64) as f64, 0),
            cap_m,
        );
        t.row(
            format!("{name} IOPS headroom / capacity used"),
            format!(
                "{} / {}%",
                v.iops_headroom_pct
                    .map(|h| format!("{}%", num(h, 0)))
                    .unwrap_or_else(|| NONE.into()),
                num(v.capacity_used_pct, 0)
            ),
            NONE.into(),
            cap_m,
        );
    }
    t.row(
        "Hot spares (1 per 12 active disks)",
        sd.hot_spares_per_server.to_string(),
        num((sd.hot_spares_per_server * r.servers as u64) as f64, 0),
        "assumption",
    );
    t.row(
        "Disks per server",
        sd.disks_per_server.to_string(),
        num(sd.disks_total as f64, 0),
        cap_m,
    );
}

/// The table's rows on log replication between copies.
fn log_replication_rows(t: &mut Table, r: &SizingReport) {
    let i = &r.input;
    let cap_m = tag(r.sources.capacity);
    let lr = &r.log_replication;
    t.heading(&format!(
        "Log replication, busiest hour ({}% of a day's logs{})",
        num_auto(lr.peak_hour_log_pct, 2),
        if i.peak_hour_log_pct == mbx_sizing::DEFAULT_PEAK_HOUR_LOG_PCT {
            ", assumption"
        } else {
            ""
        }
    ));
    t.row(
        "Logs per database per day, GB",
        num(lr.log_gb_per_database_per_day, 1),
        NONE.into(),
        cap_m,
    );
    t.row(
        "Mbit/s per database to each other copy",
        num(lr.mbit_per_s_per_database_copy, 2),
        NONE.into(),
        cap_m,
    );
    t.row(
        format!(
            "Mbit/s sent to {} other cop{} (server; DAG{})",
            lr.copies_replicated_per_database,
            if lr.copies_replicated_per_database == 1 {
                "y"
            } else {
                "ies"
            },
            if lr.dags > 1 {
                format!(", {} DAGs", lr.dags)
            } else {
                String::new()
            }
        ),
        num(lr.mbit_per_s_per_server, 1),
        num(lr.mbit_per_s_per_dag, 1),
        cap_m,
    );
    t.row(
        "Mbit/s sent per survivor, worst failure mode",
        num(lr.mbit_per_s_per_server_worst, 1),
        NONE.into(),
        cap_m,
    );
    t.row(
        format!(
            "Mbit/s across sites ({} site{}, copies {})",
            lr.sites,
            if lr.sites == 1 { "" } else { "s" },
            lr.copies_per_site
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join("+")
        ),
        NONE.into(),
        num(lr.mbit_per_s_cross_site, 1),
        cap_m,
    );
}

/// The server counts tried against the CPU and RAM ceilings.
fn server_count(r: &SizingReport) -> String {
    let i = &r.input;
    let mut out = String::new();
    let sc = &r.server_count;
    out.push_str(&format!(
        "\nServer count, {}: CPU at most {}% of {} cores per server ({}), RAM at most {} in the worst failure mode\n",
        sc.method.label(),
        num(sc.peak_cpu_target_pct, 0),
        sc.cores_per_server
            .map(|c| c.to_string())
            .unwrap_or_else(|| "?".into()),
        if i.cpu.cores_per_server.is_some() {
            "input"
        } else {
            "the method's maximum"
        },
        sc.ram_ceiling_gb
            .map(|g| format!("{} GB", num(g, 0)))
            .unwrap_or_else(|| "no ceiling".into()),
    ));
    out.push_str("  servers  active mailboxes (worst)  CPU     RAM, GB  within\n");
    for c in &sc.candidates {
        let mark = match (c.servers == sc.asked, Some(c.servers) == sc.smallest_valid) {
            (true, true) => "  <- asked, smallest valid",
            (true, false) => "  <- asked",
            (false, true) => "  <- smallest valid",
            _ => "",
        };
        out.push_str(&format!(
            "{}\n",
            format!(
                "  {:>7}  {:>24}  {:>6}  {:>7}  {:<6}{mark}",
                c.servers,
                num(c.active_mailboxes_worst as f64, 0),
                c.cpu_utilization_pct
                    .map(|u| format!("{}%", num(u, 1)))
                    .unwrap_or_else(|| NONE.into()),
                num(c.ram_gb, 0),
                if c.valid { "yes" } else { "no" },
            )
            .trim_end()
        ));
    }
    match sc.smallest_valid {
        Some(n) => out.push_str(&format!(
            "Smallest valid server count: {n} (asked: {}, {})\n",
            sc.asked,
            if sc.asked_is_valid {
                "within the ceilings"
            } else {
                "outside them"
            }
        )),
        None => out.push_str("Smallest valid server count: none found (see warnings)\n"),
    }
    out.push_str(
        "Mailbox counts are whole: the busiest server or database holds the average rounded up (JSON keeps the averages).\n",
    );
    out
}

/// The test profile for one server, then the warnings.
fn profile_and_warnings(r: &SizingReport) -> String {
    let mut out = String::new();
    let p = &r.profile;
    out.push_str(&format!(
        "\nTest profile for one server (mbxstress run --profile): {} mailboxes x {} IOPS = {} IOPS target, {} MB quota, {} database{}, {} cop{}\n",
        num(p.mailboxes as f64, 0),
        p.iops_per_mailbox,
        num(p.mailboxes as f64 * p.iops_per_mailbox, 1),
        num(p.mailbox_quota_mb as f64, 0),
        p.databases,
        if p.databases == 1 { "" } else { "s" },
        p.copies_per_database,
        if p.copies_per_database == 1 { "y" } else { "ies" },
    ));
    if !r.warnings.is_empty() {
        out.push_str("\nWarnings:\n");
        for w in &r.warnings {
            out.push_str(&format!("  [{}] {}\n", w.code, w.message));
        }
    }
    out
}

/// The paper of a built-in example beside ours: each figure it reports, ours printed to its
/// precision, and "same" or why ours differs (method, input or the paper's own choice).
pub fn paper_comparison(e: &mbx_sizing::examples::Example, r: &SizingReport) -> String {
    let width = e
        .paper
        .iter()
        .map(|f| f.what.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = format!(
        "\nAgainst the paper ({}):\n  {:<width$}  {:>10}  {:>10}  difference\n",
        e.source, "figure", "paper", "ours"
    );
    for f in &e.paper {
        let ours = f
            .ours_of(r)
            .map_or_else(|| "-".to_string(), |v| num(v, f.decimals));
        let why = match (f.agrees(r), f.why) {
            (true, _) => "same".to_string(),
            (false, Some(why)) => why.to_string(),
            (false, None) => "differs (unexplained: a defect, please report it)".to_string(),
        };
        out.push_str(&format!(
            "  {:<width$}  {:>10}  {:>10}  {why}\n",
            f.what,
            num(f.paper, f.decimals),
            ours
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formatting() {
        assert_eq!(num(16000.0, 0), "16,000");
        assert_eq!(num(137142.857, 0), "137,143");
        assert_eq!(num(0.1005, 4), "0.1005");
        assert_eq!(num(999.0, 0), "999");
        assert_eq!(num(1234567.891, 2), "1,234,567.89");
        assert_eq!(num(-1500.0, 0), "-1,500");
        assert_eq!(num(-0.0001, 2), "0.00");
        assert_eq!(num_auto(4000.0, 1), "4,000");
        assert_eq!(num_auto(833.333, 2), "833.33");
    }

    #[test]
    fn every_figure_row_names_a_method() {
        let r = mbx_sizing::size(&mbx_sizing::examples::tintri().input).expect("valid");
        let text = size_report(&r, "test");
        let table: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("per server"))
            .skip(1)
            .take_while(|l| !l.is_empty())
            .filter(|l| l.starts_with("  "))
            .collect();
        assert!(table.len() > 20, "{text}");
        for line in table {
            assert!(
                [
                    "2010/VMware guide",
                    "2013 calculator",
                    "input",
                    "Jetstress rule",
                    "assumption"
                ]
                .iter()
                .any(|m| line.trim_end().ends_with(m)),
                "row without a method: {line}"
            );
        }
        assert!(text.contains("48,000"), "{text}");
        assert!(text.contains("9,333"), "{text}");
    }
}
