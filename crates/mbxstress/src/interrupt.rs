//! Ctrl-C handling: the first press asks the running work to stop cleanly (what is done is kept);
//! a second press exits at once. On Windows, closing the console window also stops cleanly.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Exit code after an interruption (128 + SIGINT, as shells report it).
pub const INTERRUPTED: u8 = 130;

/// Installs the handler and returns the flag it sets.
pub fn install() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = Arc::clone(&flag);
    // Fails only if a handler is already installed; then Ctrl-C keeps its default behaviour.
    let _ = ctrlc::set_handler(move || {
        if f.swap(true, Ordering::SeqCst) {
            errln!("\ninterrupted again: exiting now");
            std::process::exit(INTERRUPTED as i32);
        }
        errln!("\nstopping cleanly (work so far is kept); press Ctrl-C again to exit at once");
    });
    // Windows: closing the console window ends the process as soon as a handler returns (the
    // ctrlc crate's returns at once); this one holds it while the work stops and writes results.
    let f = Arc::clone(&flag);
    let _ = mbx_io::platform::on_console_close(move || f.store(true, Ordering::SeqCst));
    flag
}

/// `fleet run`'s handler: counts the requests to stop (Ctrl-C, SIGTERM, SIGHUP). The first asks
/// every host to stop cleanly. Once `runs_started` is set (remote runs exist, with results to
/// collect), the second stops waiting for the hosts that have not answered (the finished ones
/// are still collected and fleet.json written) and only a third exits at once; before, the
/// second exits at once, as everywhere else.
pub fn install_counting(runs_started: Arc<AtomicBool>) -> Arc<std::sync::atomic::AtomicUsize> {
    use std::sync::atomic::AtomicUsize;
    let count = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&count);
    let _ = ctrlc::set_handler(move || {
        let started = runs_started.load(Ordering::SeqCst);
        match c.fetch_add(1, Ordering::SeqCst) {
            0 if started => errln!(
                "\nstopping every host cleanly (results so far are kept); press Ctrl-C again to stop waiting for hosts that do not answer"
            ),
            0 => errln!("\nstopping; press Ctrl-C again to exit at once"),
            1 if started => errln!(
                "\nnot waiting for the hosts any longer: collecting the finished results and writing fleet.json; press Ctrl-C again to exit at once"
            ),
            _ => {
                errln!("\ninterrupted again: exiting now");
                std::process::exit(INTERRUPTED as i32);
            }
        }
    });
    let c = Arc::clone(&count);
    let _ = mbx_io::platform::on_console_close(move || {
        c.fetch_max(1, Ordering::SeqCst);
    });
    count
}
