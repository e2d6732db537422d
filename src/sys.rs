//! Small readings of the machine: available memory, resident set size.

/// `MemAvailable` from /proc/meminfo, in bytes (None off Linux).
pub fn available_memory_bytes() -> Option<u64> {
    proc_kib("/proc/meminfo", "MemAvailable:")
}

/// Current resident set size of this process in bytes.
pub fn resident_bytes() -> Option<u64> {
    proc_kib("/proc/self/status", "VmRSS:")
}

/// Peak resident set size of this process in bytes.
pub fn peak_resident_bytes() -> Option<u64> {
    proc_kib("/proc/self/status", "VmHWM:")
}

fn proc_kib(file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}
