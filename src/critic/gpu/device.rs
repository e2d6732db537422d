//! Finding a GPU: the adapters present (in the order `gridarena devices` numbers them), what
//! each is (hardware or software), the one wgpu would prefer, and opening a device on one.

use crate::critic::{Chosen, CriticError, GpuLimits};

/// One adapter found when looking for a GPU.
#[derive(Debug, Clone)]
pub struct GpuInfo {
    /// Its index in the enumeration (`--device gpu:K`).
    pub index: usize,
    /// Adapter name.
    pub name: String,
    /// Backend (Vulkan, Metal, ...).
    pub backend: String,
    /// wgpu's device type (DiscreteGpu, IntegratedGpu, Cpu, ...).
    pub device_type: String,
    /// Driver and its version.
    pub driver: String,
    /// True for software rasterisers such as lavapipe.
    pub software: bool,
    /// The adapter's buffer limits (`adapter.limits()`).
    pub limits: GpuLimits,
    /// wgpu's preference for a high-performance adapter: lower is preferred.
    preference: u8,
}

impl GpuInfo {
    /// One line for logs.
    pub fn describe(&self) -> String {
        let kind = if self.software {
            "software"
        } else {
            "hardware"
        };
        format!(
            "{} via {}, {} ({kind})",
            self.name, self.backend, self.driver
        )
    }

    /// This adapter as the chosen device, `reason` saying why it was taken; its limits go to
    /// the memory preflight.
    pub fn chosen(&self, reason: impl Into<String>) -> Chosen {
        Chosen::Gpu {
            index: self.index,
            adapter: self.describe(),
            reason: reason.into(),
            software: self.software,
            limits: self.limits,
        }
    }
}

fn instance() -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::all();
    wgpu::Instance::new(desc)
}

/// Every adapter of every backend, in wgpu's enumeration order (stable on a machine: backends
/// in a fixed order, each backend's adapters in its driver's order).
fn enumerate() -> Vec<wgpu::Adapter> {
    pollster::block_on(instance().enumerate_adapters(wgpu::Backends::all()))
}

/// The adapters present, numbered as `--device gpu:K` counts them; empty without any.
pub fn adapters() -> Vec<GpuInfo> {
    enumerate()
        .iter()
        .enumerate()
        .map(|(index, a)| info_of(index, a))
        .collect()
}

/// The adapter wgpu's `request_adapter` takes for high performance: the first of the most
/// preferred device type (discrete, integrated, other, virtual, then software).
pub(crate) fn preferred(adapters: &[GpuInfo]) -> Option<&GpuInfo> {
    adapters.iter().min_by_key(|a| a.preference)
}

/// Looks for the adapter `--device gpu` takes without a launcher's local rank, without opening
/// a device; its info carries the adapter's limits.
pub fn probe() -> Result<GpuInfo, CriticError> {
    preferred(&adapters())
        .cloned()
        .ok_or_else(|| CriticError::NoGpu(NO_ADAPTER.into()))
}

/// Why there is no GPU when the enumeration is empty.
pub(crate) const NO_ADAPTER: &str =
    "no adapter found (Vulkan, Metal or DX12); `gridarena devices` lists what is present";

/// wgpu's order for `PowerPreference::HighPerformance` (wgpu-core's `request_adapter`).
fn preference(device_type: wgpu::DeviceType) -> u8 {
    match device_type {
        wgpu::DeviceType::DiscreteGpu => 1,
        wgpu::DeviceType::IntegratedGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::VirtualGpu => 4,
        wgpu::DeviceType::Cpu => 5,
    }
}

/// Adapter `index` of the enumeration, with its info; [`CriticError::NoSuchAdapter`] past the
/// last one.
pub(super) fn adapter(index: usize) -> Result<(GpuInfo, wgpu::Adapter), CriticError> {
    let mut all = enumerate();
    let count = all.len();
    if index >= count {
        return Err(CriticError::NoSuchAdapter { index, count });
    }
    let adapter = all.swap_remove(index);
    Ok((info_of(index, &adapter), adapter))
}

/// The adapter [`probe`] describes, with its info.
pub(super) fn preferred_adapter() -> Result<(GpuInfo, wgpu::Adapter), CriticError> {
    adapter(probe()?.index)
}

fn info_of(index: usize, adapter: &wgpu::Adapter) -> GpuInfo {
    let i = adapter.get_info();
    let l = adapter.limits();
    GpuInfo {
        index,
        name: i.name.clone(),
        backend: format!("{:?}", i.backend),
        device_type: format!("{:?}", i.device_type),
        driver: format!("{} {}", i.driver, i.driver_info).trim().to_string(),
        software: i.device_type == wgpu::DeviceType::Cpu,
        limits: GpuLimits {
            max_buffer_size: l.max_buffer_size,
            max_storage_buffer_binding_size: l.max_storage_buffer_binding_size,
        },
        preference: preference(i.device_type),
    }
}

/// Opens a device and its queue on `adapter`, with the adapter's own limits.
pub(super) fn open(adapter: &wgpu::Adapter) -> Result<(wgpu::Device, wgpu::Queue), CriticError> {
    pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("gridarena critic"),
        required_features: wgpu::Features::empty(),
        required_limits: adapter.limits(),
        experimental_features: Default::default(),
        memory_hints: wgpu::MemoryHints::Performance,
        trace: Default::default(),
    }))
    .map_err(|e| CriticError::NoGpu(e.to_string()))
}

#[cfg(test)]
pub(crate) fn fake(index: usize, device_type: wgpu::DeviceType) -> GpuInfo {
    GpuInfo {
        index,
        name: format!("fake {index}"),
        backend: "Vulkan".into(),
        device_type: format!("{device_type:?}"),
        driver: "test".into(),
        software: device_type == wgpu::DeviceType::Cpu,
        limits: GpuLimits {
            max_buffer_size: 1 << 30,
            max_storage_buffer_binding_size: 1 << 27,
        },
        preference: preference(device_type),
    }
}

#[cfg(test)]
mod tests {
    use super::{fake, preferred};
    use wgpu::DeviceType::{Cpu, DiscreteGpu, IntegratedGpu, Other};

    #[test]
    fn the_preferred_adapter_is_wgpus_high_performance_pick() {
        let pick = |types: &[wgpu::DeviceType]| {
            let list: Vec<_> = types.iter().enumerate().map(|(i, &t)| fake(i, t)).collect();
            preferred(&list).map(|a| a.index)
        };
        assert_eq!(pick(&[]), None);
        assert_eq!(pick(&[Cpu]), Some(0));
        assert_eq!(
            pick(&[Cpu, IntegratedGpu, DiscreteGpu, DiscreteGpu]),
            Some(2)
        );
        assert_eq!(pick(&[Cpu, Other, IntegratedGpu]), Some(2));
        assert_eq!(pick(&[Cpu, Other]), Some(1));
    }
}
