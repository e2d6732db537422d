//! The memory preflight: before a run allocates anything, the bytes of every large tensor it
//! will hold (with the formula that gives its size), the total, and the budget. A run that does
//! not fit is refused with the biggest tensors, their numbers and the knobs that shrink them.
//! `gridarena plan` prints the same table.

use serde::Serialize;

use super::algorithms::algorithm;
use super::config::RunConfig;
pub use super::sizing::PlanTensor;
use crate::critic::{Backend, Chosen};
use crate::error::human_bytes;
use crate::layout::Layout;
use crate::scenario::LoadedScenario;

/// The whole plan.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Every large tensor.
    pub tensors: Vec<PlanTensor>,
    /// Their sum.
    pub total_bytes: u64,
    /// The budget.
    pub budget_bytes: u64,
    /// Whether the total fits the budget.
    pub fits: bool,
}

/// The default budget: three quarters of the memory available now (all of it unknown: 8 GiB).
pub fn default_budget() -> u64 {
    crate::sys::available_memory_bytes().map_or(8 << 30, |b| b / 4 * 3)
}

/// Plans a run of `cfg` on `loaded` with the critic on `device`, against `budget` bytes: the
/// algorithm lists its own tensors.
pub fn plan(cfg: &RunConfig, loaded: &LoadedScenario, device: &Chosen, budget: u64) -> Plan {
    let layout = Layout::derive(loaded);
    let tensors = (algorithm(cfg.algo).plan)(cfg, loaded, &layout, backend_of(device));
    let total_bytes = tensors
        .iter()
        .fold(0u64, |acc, t| acc.saturating_add(t.bytes));
    Plan {
        tensors,
        total_bytes,
        budget_bytes: budget,
        fits: total_bytes <= budget,
    }
}

fn backend_of(device: &Chosen) -> Backend {
    match device {
        Chosen::Cpu { .. } => Backend::Cpu,
        #[cfg(feature = "gpu")]
        Chosen::Gpu { .. } => Backend::Gpu,
    }
}

impl Plan {
    /// The table for humans.
    pub fn table(&self) -> String {
        let mut out = String::new();
        for t in &self.tensors {
            out.push_str(&format!(
                "{:<52} {:>11}   {}\n",
                t.name,
                human_bytes(t.bytes),
                t.shape
            ));
        }
        out.push_str(&format!(
            "{:<52} {:>11}   budget {} ({})\n",
            "total",
            human_bytes(self.total_bytes),
            human_bytes(self.budget_bytes),
            if self.fits { "fits" } else { "DOES NOT FIT" }
        ));
        out
    }

    /// The refusal message: the biggest tensor with its numbers and knobs.
    pub fn refusal(&self) -> Option<String> {
        if self.fits {
            return None;
        }
        let big = self.tensors.iter().max_by_key(|t| t.bytes)?;
        Some(format!(
            "{} {} = {} of {} in all > budget {}: {}",
            big.name,
            big.shape,
            human_bytes(big.bytes),
            human_bytes(self.total_bytes),
            human_bytes(self.budget_bytes),
            big.knobs
        ))
    }
}

/// Parses a byte count: a number with an optional K, M, G or T suffix (binary units, `B`, `iB`
/// optional), e.g. `512M`, `2GiB`, `1.5G`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (num, scale) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        Some('T' | 't') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a size like 512M or 2GiB"))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("{text:?} is not a size like 512M or 2GiB"));
    }
    Ok((v * scale as f64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_bytes("512M").unwrap(), 512 << 20);
        assert_eq!(parse_bytes("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_bytes("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_bytes("100").unwrap(), 100);
        assert!(parse_bytes("lots").is_err());
    }
}
