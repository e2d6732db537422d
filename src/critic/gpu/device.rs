//! Finding a GPU: the adapter, what it is (hardware or software), and opening a device on it.

use crate::critic::{Chosen, CriticError, GpuLimits};

/// What was found when looking for a GPU.
#[derive(Debug, Clone)]
pub struct GpuInfo {
    /// Adapter name.
    pub name: String,
    /// Backend (Vulkan, Metal, ...).
    pub backend: String,
    /// Driver and its version.
    pub driver: String,
    /// True for software rasterisers such as lavapipe.
    pub software: bool,
    /// The adapter's buffer limits (`adapter.limits()`).
    pub limits: GpuLimits,
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

    /// This adapter as the chosen device, with its limits for the memory preflight.
    pub fn chosen(&self) -> Chosen {
        Chosen::Gpu {
            adapter: self.describe(),
            software: self.software,
            limits: self.limits,
        }
    }
}

pub(super) fn adapter() -> Result<wgpu::Adapter, CriticError> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::all();
    let instance = wgpu::Instance::new(desc);
    let options = wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        force_fallback_adapter: false,
        compatible_surface: None,
        apply_limit_buckets: false,
    };
    pollster::block_on(instance.request_adapter(&options))
        .map_err(|e| CriticError::NoGpu(e.to_string()))
}

pub(super) fn info_of(adapter: &wgpu::Adapter) -> GpuInfo {
    let i = adapter.get_info();
    let l = adapter.limits();
    GpuInfo {
        name: i.name.clone(),
        backend: format!("{:?}", i.backend),
        driver: format!("{} {}", i.driver, i.driver_info).trim().to_string(),
        software: i.device_type == wgpu::DeviceType::Cpu,
        limits: GpuLimits {
            max_buffer_size: l.max_buffer_size,
            max_storage_buffer_binding_size: l.max_storage_buffer_binding_size,
        },
    }
}

/// Looks for a GPU adapter without opening a device; its info carries the adapter's limits.
pub fn probe() -> Result<GpuInfo, CriticError> {
    adapter().map(|a| info_of(&a))
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
