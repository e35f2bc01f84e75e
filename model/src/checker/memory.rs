//! How much memory the process holds, read from the operating system, and the default bound.
//!
//! The bound is on the resident set, read from `/proc/self/statm` on Linux: what the machine
//! actually gives the process, whatever the allocator does. Where an address-space limit is
//! set (`ulimit -v`), allocation fails at that limit long before the resident set reaches
//! the machine's memory, and Rust aborts the process; so the address space the process has
//! reserved is also held below nine tenths of that limit. Elsewhere (no `/proc`) nothing is
//! measured and no memory bound applies: the report then says `peak_memory_mib: null`.

use std::sync::OnceLock;

/// The size of a page, in bytes, where the kernel does not say: Linux on x86-64 and most
/// arm64 kernels use 4 KiB.
const DEFAULT_PAGE: u64 = 4096;

/// What the process holds now: (address space reserved, resident), in bytes.
pub(crate) fn usage() -> Option<(u64, u64)> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let mut fields = statm.split_whitespace().map(|f| f.parse::<u64>().ok());
    let size = fields.next()??;
    let resident = fields.next()??;
    let page = page_size();
    Some((size.saturating_mul(page), resident.saturating_mul(page)))
}

/// The process's resident memory now, in bytes.
pub fn resident_bytes() -> Option<u64> {
    usage().map(|(_, resident)| resident)
}

/// The most memory the process has held resident so far, in bytes (`VmHWM`).
pub(crate) fn peak_resident_bytes() -> Option<u64> {
    status_kib("VmHWM:").map(|kib| kib.saturating_mul(1024))
}

/// The page size `statm` counts in: the kernel's page size as `/proc/self/smaps` gives it for
/// the first mapping, or 4 KiB where it cannot be read.
fn page_size() -> u64 {
    static PAGE: OnceLock<u64> = OnceLock::new();
    *PAGE.get_or_init(|| {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
        (smaps.lines())
            .find_map(|l| l.strip_prefix("KernelPageSize:"))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(DEFAULT_PAGE, |kib| kib * 1024)
    })
}

/// A `kB` field of `/proc/self/status`.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.get(field.len()..)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The machine's memory, in bytes (`MemTotal` of `/proc/meminfo`).
pub fn machine_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// The address-space limit of the process (`ulimit -v`), in bytes, if one is set.
fn address_space_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    // "Max address space  <soft>  <hard>  bytes": the soft limit is the one enforced.
    let soft = line
        .get("Max address space".len()..)?
        .split_whitespace()
        .next()?;
    soft.parse().ok()
}

/// The default bound on the resident set: half the machine's memory, so that a check never
/// drives the machine into swap or the out-of-memory killer. `None` where the machine's
/// memory cannot be read.
pub fn default_bound() -> Option<u64> {
    machine_bytes().map(|total| total / 2)
}

/// What the search holds memory against.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bound {
    /// The bound on the resident set.
    resident: Option<u64>,
    /// Nine tenths of the address-space limit, if one is set.
    reserved: Option<u64>,
}

impl Bound {
    /// The bound for `max_resident` (the caller's), with the address-space limit read now.
    pub(crate) fn new(max_resident: Option<u64>) -> Bound {
        Bound {
            resident: max_resident,
            reserved: address_space_limit().map(|limit| limit / 10 * 9),
        }
    }

    /// The bound a quarter higher (up to nineteen twentieths of an address-space limit), for
    /// rebuilding counterexamples after the search: the search's memory is freed by then,
    /// but the allocator may keep it, so the resident set does not fall below the bound.
    pub(crate) fn relaxed(self) -> Bound {
        Bound {
            resident: self.resident.map(|max| max.saturating_add(max / 4)),
            reserved: self.reserved.map(|max| max / 9 * 10 / 20 * 19),
        }
    }

    /// The bound on the address space, where an address-space limit is set.
    pub(crate) fn reserved_bytes(&self) -> Option<u64> {
        self.reserved
    }

    /// Whether the process holds more than the bound allows now. `false` where memory
    /// cannot be measured.
    pub(crate) fn crossed(&self) -> bool {
        let Some((size, resident)) = usage() else {
            return false;
        };
        self.resident.is_some_and(|max| resident > max)
            || self.reserved.is_some_and(|max| size > max)
    }
}

/// Parses a memory size: a number with an optional unit `K`, `M`, `G` or `T` (powers of
/// 1024; `KiB`, `MB` and the like are accepted too). A bare number is in MiB.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a size, e.g. 512M, 4G or 4096 (MiB)"))?;
    let unit = unit.trim().to_ascii_uppercase();
    let unit = unit.trim_end_matches('B').trim_end_matches('I');
    let scale: u64 = match unit {
        "" | "M" => 1 << 20,
        "K" => 1 << 10,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => return Err(format!("{text:?}: the unit must be K, M, G or T")),
    };
    let bytes = value * scale as f64;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(format!("{text:?}: the size must be at least one byte"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units_and_a_bare_number_in_mib() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("4GiB"), Ok(4 << 30));
        assert_eq!(parse_size("1.5g"), Ok(3 << 29));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("100"), Ok(100 << 20));
        assert!(parse_size("0").is_err());
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5X").is_err());
    }

    #[test]
    fn resident_memory_is_measured_on_linux() {
        if cfg!(target_os = "linux") {
            let (size, resident) = usage().expect("statm is readable");
            assert!(resident > 0 && size >= resident);
            assert!(peak_resident_bytes().is_some_and(|peak| peak > 0));
            assert!(default_bound().is_some_and(|b| b > 0));
            assert!(Bound::new(Some(1)).crossed());
            assert!(!Bound::new(Some(u64::MAX)).crossed() || address_space_limit().is_some());
        }
    }
}
