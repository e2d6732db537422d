//! `--device` as text and in run configs: parsing (`auto`, `cpu`, `gpu`, `gpu:K`), printing,
//! and its serde form (`auto`, `cpu`, `gpu`, `gpu(K)` in RON; the command line's text is also
//! accepted as a string, `"gpu:1"`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Device;

/// A `--device` value that is not `auto`, `cpu`, `gpu` or `gpu:K`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceParseError {
    /// Not one of the device names.
    #[error(
        "unknown device `{0}`: expected auto, cpu, gpu or gpu:K (K an adapter index from `gridarena devices`)"
    )]
    Unknown(String),
    /// `gpu:` followed by something that is not an adapter index.
    #[error("`{0}`: K in gpu:K is an adapter index, 0, 1, 2, ... (see `gridarena devices`)")]
    BadIndex(String),
}

impl std::str::FromStr for Device {
    type Err = DeviceParseError;

    fn from_str(s: &str) -> Result<Device, DeviceParseError> {
        let text = s.trim();
        match text {
            "auto" => return Ok(Device::Auto),
            "cpu" => return Ok(Device::Cpu),
            "gpu" => return Ok(Device::Gpu),
            _ => {}
        }
        let Some(index) = text.strip_prefix("gpu:") else {
            return Err(DeviceParseError::Unknown(s.to_string()));
        };
        // `usize::from_str` takes a leading `+`; an index is digits only.
        if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
            return Err(DeviceParseError::BadIndex(s.to_string()));
        }
        index
            .parse()
            .map(Device::GpuIndex)
            .map_err(|_| DeviceParseError::BadIndex(s.to_string()))
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Auto => f.write_str("auto"),
            Device::Cpu => f.write_str("cpu"),
            Device::Gpu => f.write_str("gpu"),
            Device::GpuIndex(k) => write!(f, "gpu:{k}"),
        }
    }
}

/// The enum's name and its variants' names in the serde form.
const NAME: &str = "Device";

impl Serialize for Device {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Device::Auto => s.serialize_unit_variant(NAME, 0, "auto"),
            Device::Cpu => s.serialize_unit_variant(NAME, 1, "cpu"),
            Device::Gpu => s.serialize_unit_variant(NAME, 2, "gpu"),
            Device::GpuIndex(k) => s.serialize_newtype_variant(NAME, 3, "gpu", k),
        }
    }
}

/// What a config may hold: a name (RON's bare `gpu` arrives as the string "gpu") or the
/// command line's text (`"gpu:1"`), or `gpu(K)` (a map `{gpu: K}` to a self-describing reader).
#[derive(Deserialize)]
#[serde(untagged)]
enum Repr {
    Text(String),
    Indexed { gpu: usize },
}

impl<'de> Deserialize<'de> for Device {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Device, D::Error> {
        match Repr::deserialize(d) {
            Ok(Repr::Text(text)) => text.parse().map_err(serde::de::Error::custom),
            Ok(Repr::Indexed { gpu }) => Ok(Device::GpuIndex(gpu)),
            Err(_) => Err(serde::de::Error::custom(
                "expected a device: auto, cpu, gpu or gpu(K) (K an adapter index from `gridarena devices`)",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Device, DeviceParseError};
    use crate::RunConfig;

    const EVERY_FORM: [Device; 6] = [
        Device::Auto,
        Device::Cpu,
        Device::Gpu,
        Device::GpuIndex(0),
        Device::GpuIndex(1),
        Device::GpuIndex(12),
    ];

    #[test]
    fn command_line_forms_parse_and_print_back() {
        for (text, device) in [
            ("auto", Device::Auto),
            ("cpu", Device::Cpu),
            ("gpu", Device::Gpu),
            ("gpu:0", Device::GpuIndex(0)),
            ("gpu:12", Device::GpuIndex(12)),
        ] {
            assert_eq!(text.parse::<Device>(), Ok(device), "{text}");
            assert_eq!(device.to_string(), text);
        }
    }

    #[test]
    fn bad_forms_are_refused_with_what_is_expected() {
        for bad in ["tpu", "GPU", "gpu0", "gpu(1)", "", "cpu:0"] {
            let err = bad.parse::<Device>().unwrap_err();
            assert_eq!(err, DeviceParseError::Unknown(bad.into()));
            assert!(err.to_string().contains("auto, cpu, gpu or gpu:K"), "{err}");
        }
        for bad in [
            "gpu:x",
            "gpu:-1",
            "gpu:+1",
            "gpu:",
            "gpu:1.5",
            "gpu:99999999999999999999999",
        ] {
            let err = bad.parse::<Device>().unwrap_err();
            assert_eq!(err, DeviceParseError::BadIndex(bad.into()));
            assert!(err.to_string().contains("adapter index"), "{err}");
        }
    }

    #[test]
    fn every_form_survives_a_run_config_round_trip() {
        for device in EVERY_FORM {
            let cfg = RunConfig {
                device,
                ..RunConfig::default()
            };
            let text = cfg.to_ron();
            let back = RunConfig::parse(&text, "config.ron").unwrap();
            assert_eq!(back.device, device, "{text}");
            let json = serde_json::to_string(&cfg.device).unwrap();
            assert_eq!(serde_json::from_str::<Device>(&json).unwrap(), device);
        }
    }

    #[test]
    fn configs_written_before_adapter_indices_still_load() {
        // The form config.ron files have today (unit variants), and `gpu(K)` / "gpu:K".
        let base = RunConfig::default().to_ron();
        let line = |d: &str| base.replace("device: auto,", &format!("device: {d},"));
        assert_ne!(line("gpu"), base, "config.ron has a `device: auto,` line");
        for (text, device) in [
            ("auto", Device::Auto),
            ("cpu", Device::Cpu),
            ("gpu", Device::Gpu),
            ("gpu(3)", Device::GpuIndex(3)),
            ("\"gpu:3\"", Device::GpuIndex(3)),
            ("\"cpu\"", Device::Cpu),
        ] {
            let cfg = RunConfig::parse(&line(text), "config.ron").unwrap();
            assert_eq!(cfg.device, device, "{text}");
        }
        for bad in ["tpu", "gpu(x)", "\"gpu:-1\"", "3"] {
            let err = RunConfig::parse(&line(bad), "config.ron").unwrap_err();
            assert!(err.to_string().contains("device"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_set_override_takes_every_form() {
        for (value, device) in [
            ("gpu", Device::Gpu),
            ("gpu(2)", Device::GpuIndex(2)),
            ("\"gpu:2\"", Device::GpuIndex(2)),
        ] {
            let mut cfg = RunConfig::default();
            cfg.set(&format!("device={value}")).unwrap();
            assert_eq!(cfg.device, device, "{value}");
        }
    }
}
