//! Column names several outputs share (report.html, instances.csv, the importer's tables).

/// Jetstress's 12 column names.
pub const IO12_COLUMNS: [&str; 12] = [
    "I/O Database Reads Average Latency (msec)",
    "I/O Database Writes Average Latency (msec)",
    "I/O Database Reads/sec",
    "I/O Database Writes/sec",
    "I/O Database Reads Average Bytes",
    "I/O Database Writes Average Bytes",
    "I/O Log Reads Average Latency (msec)",
    "I/O Log Writes Average Latency (msec)",
    "I/O Log Reads/sec",
    "I/O Log Writes/sec",
    "I/O Log Reads Average Bytes",
    "I/O Log Writes Average Bytes",
];
