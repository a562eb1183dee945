//! Progress display for long work: a bar with MB/s and ETA on a terminal, nothing otherwise
//! (machine-readable modes print their own output).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A byte-count progress bar on stderr.
pub fn bytes_bar(total: u64, label: &str, quiet: bool) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        Some(total),
        if quiet {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        },
    );
    let style = ProgressStyle::with_template(
        "{msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} elapsed {elapsed} ETA {eta}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(label.to_string());
    bar
}

/// Renders database creation events (`mbx_store::prepare`) as one byte-count bar over all
/// databases, and remembers what happened to each database. Shared by `prepare` and `run`.
pub struct CreateProgress {
    per_db: std::sync::Mutex<Vec<u64>>,
    planned: std::sync::atomic::AtomicU64,
    bar: std::sync::Mutex<Option<ProgressBar>>,
    actions: std::sync::Mutex<Vec<(u32, &'static str, std::path::PathBuf)>>,
    quiet: bool,
    echo_plan: bool,
}

impl CreateProgress {
    /// For `databases` databases; `quiet` hides the bar, `echo_plan` prints each plan line.
    pub fn new(databases: usize, quiet: bool, echo_plan: bool) -> Self {
        CreateProgress {
            per_db: std::sync::Mutex::new(vec![0; databases]),
            planned: std::sync::atomic::AtomicU64::new(0),
            bar: std::sync::Mutex::new(None),
            actions: std::sync::Mutex::new(Vec::new()),
            quiet,
            echo_plan,
        }
    }

    /// Handles one event (called from the creation threads).
    pub fn on_event(&self, e: mbx_store::CreateEvent) {
        use std::sync::atomic::Ordering;
        match e {
            mbx_store::CreateEvent::Planned {
                index,
                path,
                action,
                bytes_to_write,
            } => {
                self.planned.fetch_add(bytes_to_write, Ordering::Relaxed);
                if self.echo_plan && !self.quiet {
                    errln!("  {action:<6} {}", path.display());
                }
                if let Ok(mut a) = self.actions.lock() {
                    a.push((index, action, path));
                }
            }
            mbx_store::CreateEvent::Progress { index, bytes_done } => {
                let sum: u64 = match self.per_db.lock() {
                    Ok(mut v) => {
                        // The store reports only the databases it was asked to create.
                        debug_assert!(
                            (index as usize) < v.len(),
                            "database {index} of {}",
                            v.len()
                        );
                        if let Some(slot) = v.get_mut(index as usize) {
                            *slot = bytes_done;
                        }
                        v.iter().sum()
                    }
                    Err(_) => return,
                };
                if let Ok(mut b) = self.bar.lock() {
                    b.get_or_insert_with(|| {
                        bytes_bar(
                            self.planned.load(Ordering::Relaxed),
                            "creating databases",
                            self.quiet,
                        )
                    })
                    .set_position(sum);
                }
            }
            mbx_store::CreateEvent::Finished { .. } => {}
        }
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        if let Ok(Some(b)) = self.bar.lock().map(|mut b| b.take()) {
            b.finish_and_clear();
        }
    }

    /// Bytes the plan said would be written.
    pub fn planned_bytes(&self) -> u64 {
        self.planned.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// What happened to each database, in plan order: (index, action, path).
    pub fn actions(&self) -> Vec<(u32, &'static str, std::path::PathBuf)> {
        self.actions.lock().map(|a| a.clone()).unwrap_or_default()
    }
}
