//! The "Mail servers" section of a `fleet loadgen` report: each mail server watched over ssh
//! during the run ([`mbx_result::ServerWatch`], the result's `servers[]`) in a table, and its
//! CPU and disk latency over time ([`mbx_result::ServerSample`], `servers/<name>.jsonl`) in an
//! inline SVG chart ([`crate::svg`]). Every text is escaped by maud.

use std::path::Path;

use maud::html;
use mbx_result::{ServerSample, ServerWatch};

use crate::folder::read_jsonl;
use crate::html::f3;
use crate::input::folder_file;
use crate::svg::{LineChart, Series};

/// The section's title.
pub const TITLE: &str = "Mail servers";

const WHAT: &str = "the samples of a watched mail server (servers/NAME.jsonl)";

/// The most points drawn per line (a day at one sample a second is 86,400): every n-th sample
/// beyond that.
const MAX_POINTS: usize = 2000;

/// The samples of each server whose samples file (`samples_file`, relative to `folder`) can be
/// read: a regular file inside the folder, never through a symbolic link (a folder copied from
/// another machine could link it anywhere), bounded in size (the reader of samples.jsonl, whose
/// torn last line is skipped). A server whose file is absent, outside the folder or not samples
/// is left out (its table row still shows its summary).
pub fn read_samples(folder: &Path, servers: &[ServerWatch]) -> Vec<(String, Vec<ServerSample>)> {
    servers
        .iter()
        .filter_map(|s| {
            let path = folder_file(folder, &s.samples_file, WHAT).ok()?;
            let (samples, _torn) =
                read_jsonl::<ServerSample>(&path, WHAT, "a server's sample").ok()?;
            Some((s.name.clone(), samples))
        })
        .collect()
}

/// GiB, two decimals.
fn gib(bytes: u64) -> String {
    format!("{:.2}", bytes as f64 / f64::from(1u32 << 30))
}

/// A latency, or `-` without I/O.
fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), f3)
}

/// One server's chart: CPU busy and disk latency over seconds since its first sample.
fn chart(name: &str, samples: &[ServerSample]) -> LineChart {
    let t0 = samples.first().map_or(0.0, |s| s.t_unix_s);
    let step = samples.len().div_ceil(MAX_POINTS).max(1);
    let line = |label: &str, f: &dyn Fn(&ServerSample) -> Option<f64>| Series {
        name: label.into(),
        points: samples
            .iter()
            .step_by(step)
            .filter_map(|s| f(s).map(|v| (s.t_unix_s - t0, v)))
            .collect(),
    };
    let series = vec![
        line("CPU busy %", &|s| Some(s.cpu_pct)),
        line("read ms", &|s| s.disk_read_ms),
        line("write ms", &|s| s.disk_write_ms),
    ];
    // A run of any length is drawn with at most MAX_POINTS points a line (every step-th sample).
    assert!(series.iter().all(|s| s.points.len() <= MAX_POINTS));
    LineChart {
        title: format!("{name}: CPU busy (%) and disk latency (ms)"),
        x_label: "seconds since the first sample".into(),
        y_label: "% / ms".into(),
        series,
    }
}

/// The "Mail servers" section (empty when no server was watched): a table of each server's
/// summary (CPU average and maximum, memory used at most of the total, disk IOPS, MB/s and
/// latency, samples, what went wrong) and a chart per server of its `samples` (by name).
pub fn section(servers: &[ServerWatch], samples: &[(String, Vec<ServerSample>)]) -> String {
    if servers.is_empty() {
        return String::new();
    }
    html! {
        h2 { (TITLE) }
        table id="servers" {
            tr {
                th { "Server" } th { "ssh" } th { "Source" }
                th.n { "CPU avg (%)" } th.n { "CPU max (%)" } th.n { "Memory used max / total (GiB)" }
                th.n { "Disk read IOPS" } th.n { "Write IOPS" } th.n { "Read MB/s" } th.n { "Write MB/s" }
                th.n { "Read latency (ms)" } th.n { "Write latency (ms)" } th.n { "Samples" } th { "Error" }
            }
            @for s in servers {
                tr {
                    td { (s.name) } td { (s.ssh) } td { (s.source) }
                    td.n { (f3(s.cpu_pct_avg)) } td.n { (f3(s.cpu_pct_max)) }
                    td.n { (gib(s.mem_used_bytes_max)) " / " (gib(s.mem_total_bytes)) }
                    td.n { (f3(s.disk_read_iops_avg)) } td.n { (f3(s.disk_write_iops_avg)) }
                    td.n { (f3(s.disk_read_mb_s_avg)) } td.n { (f3(s.disk_write_mb_s_avg)) }
                    td.n { (ms(s.disk_read_ms_avg)) } td.n { (ms(s.disk_write_ms_avg)) }
                    td.n.fail[s.samples == 0] { (s.samples) }
                    td.fail[s.error.is_some()] { (s.error.as_deref().unwrap_or("")) }
                }
            }
        }
        p.note {
            "Read from each server's Linux /proc over ssh during the run: CPU busy is 1 - (idle + iowait) / total over all cores; memory used is MemTotal - MemAvailable; the disks are the whole disks (not partitions, loop, RAM, LVM or software RAID devices); the averages are over the samples, the latency is the time spent per I/O over the whole run. Each sample: servers/NAME.jsonl."
        }
        @if samples.iter().any(|(_, l)| !l.is_empty()) {
            div.charts {
                @for (name, list) in samples {
                    @if !list.is_empty() { (chart(name, list).render()) }
                }
            }
        }
    }
    .into_string()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const HOSTILE: &str = "<script>alert('mail')</script>&";

    /// A watched server's summary (the loadgen report's tests use it too).
    pub(crate) fn watch(name: &str) -> ServerWatch {
        ServerWatch {
            name: name.into(),
            ssh: format!("root@{name}"),
            source: "linux /proc".into(),
            samples: 2,
            samples_file: format!("servers/{name}.jsonl"),
            cpu_pct_avg: 42.5,
            cpu_pct_max: 97.25,
            mem_used_bytes_max: 3 << 30,
            mem_total_bytes: 8 << 30,
            disk_read_iops_avg: 120.0,
            disk_write_iops_avg: 340.5,
            disk_read_mb_s_avg: 1.5,
            disk_write_mb_s_avg: 12.25,
            disk_read_ms_avg: Some(2.5),
            disk_write_ms_avg: None,
            error: None,
        }
    }

    /// A server sample.
    pub(crate) fn sample(t: f64, cpu: f64) -> ServerSample {
        ServerSample {
            t_unix_s: t,
            interval_s: 1.0,
            cpu_pct: cpu,
            disk_read_ms: Some(3.0),
            ..ServerSample::default()
        }
    }

    #[test]
    fn the_section_escapes_names_and_shows_the_figures() {
        let mut bad = watch("mail2");
        bad.name = HOSTILE.into();
        bad.ssh = HOSTILE.into();
        bad.samples = 0;
        bad.source = "not read: no /proc/stat on <Windows>".into();
        bad.error = Some(format!("ssh: {HOSTILE}"));
        let page = section(
            &[watch("mail1"), bad],
            &[
                (
                    "mail1".into(),
                    vec![sample(100.0, 10.0), sample(101.0, 55.0)],
                ),
                (HOSTILE.into(), vec![sample(100.0, 1.0)]),
            ],
        );
        assert!(page.contains(&format!("<h2>{TITLE}</h2>")), "{page}");
        assert!(!page.contains("<script>"), "{page}");
        assert!(
            page.contains("&lt;script&gt;alert('mail')&lt;/script&gt;&amp;"),
            "{page}"
        );
        assert!(page.contains("no /proc/stat on &lt;Windows&gt;"));
        for figure in [
            "42.500",
            "97.250",
            "3.00 / 8.00",
            "120.000",
            "340.500",
            "1.500",
            "12.250",
            "2.500",
            "root@mail1",
            "linux /proc",
        ] {
            assert!(page.contains(figure), "{figure} not in {page}");
        }
        // No write I/O: no latency.
        assert!(page.contains("<td class=\"n\">-</td>"), "{page}");
        assert!(
            page.contains("<td class=\"fail\">ssh: &lt;script&gt;"),
            "{page}"
        );
        // A chart per server with samples, its text escaped too.
        assert_eq!(page.matches("<svg").count(), 2);
        assert!(page.contains("mail1: CPU busy (%) and disk latency (ms)"));
        assert!(section(&[], &[]).is_empty());
    }

    #[test]
    fn samples_are_read_from_inside_the_folder_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let folder = dir.path().join("result");
        std::fs::create_dir_all(folder.join("servers")).expect("mkdir");
        let line = |s: &ServerSample| serde_json::to_string(s).expect("json");
        std::fs::write(
            folder.join("servers/mail1.jsonl"),
            format!(
                "{}\n{}\n{{\"t_unix_s\":",
                line(&sample(1.0, 5.0)),
                line(&sample(2.0, 6.0))
            ),
        )
        .expect("write");
        // A link to a file outside, and a name leaving the folder.
        let outside = dir.path().join("secret.jsonl");
        std::fs::write(&outside, format!("{}\n", line(&sample(9.0, 9.0)))).expect("write");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&outside, folder.join("servers/mail2.jsonl")).expect("link");
        let mut escape = watch("mail3");
        escape.samples_file = "../secret.jsonl".into();
        let got = read_samples(
            &folder,
            &[watch("mail1"), watch("mail2"), escape, watch("absent")],
        );
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "mail1");
        // The torn last line (the run stopped while writing it) is skipped.
        assert_eq!(got[0].1, vec![sample(1.0, 5.0), sample(2.0, 6.0)]);
    }

    #[test]
    fn a_long_run_is_drawn_with_a_bounded_number_of_points() {
        let many: Vec<ServerSample> = (0..86_400).map(|i| sample(f64::from(i), 50.0)).collect();
        let c = chart("m", &many);
        assert!(c.series.iter().all(|s| s.points.len() <= MAX_POINTS));
        assert_eq!(c.series[0].points.first(), Some(&(0.0, 50.0)));
    }
}
