//! Column names and section titles several outputs share (report.html, instances.csv, the
//! importer's tables).

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

/// Jetstress's section titles, in report order (report.html's sections; the importer reads a
/// report's by them).
pub const SECTIONS: [&str; 10] = [
    "Test Summary",
    "Database Sizing and Throughput",
    "System Parameters",
    "Database Configuration",
    "Transactional I/O Performance",
    "Background Database Maintenance I/O Performance",
    "Log Replication I/O Performance",
    "Total I/O Performance",
    "Host System Performance",
    "Test Log",
];
