//! Devices: `gridarena devices` lists the adapters (`--device gpu:K` numbers them), the CPU
//! backend and what `auto` and `gpu` take, as text and as JSON; `--device gpu:K` trains on
//! adapter K and is saved in the run's config (a resume reads it back); an index past the
//! adapters present, a malformed value and a malformed launcher local rank are refused with a
//! message naming them. Runs on lavapipe in CI; the tests needing an adapter skip loudly
//! without one, except when `CI` is set, where they fail.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

mod common;

/// `cmd` with every launcher variable removed (the tests set the ones they need).
fn without_launcher(mut cmd: Command) -> Command {
    for var in gridarena::critic::LOCAL_RANK_VARS {
        cmd.env_remove(var);
    }
    cmd
}

fn bin() -> Command {
    without_launcher(Command::new(env!("CARGO_BIN_EXE_gridarena")))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gridarena-dev-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(mut cmd: Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        text(&out.stderr)
    );
    out
}

/// `gridarena devices --json`, parsed.
fn devices_json(env: &[(&str, &str)]) -> Value {
    let mut cmd = bin();
    cmd.args(["devices", "--json"]).envs(env.iter().copied());
    serde_json::from_slice(&ok(cmd).stdout).expect("devices --json prints one JSON object")
}

/// The adapters `devices --json` lists; `None` (after saying so loudly) when there are none,
/// a failure when `CI` is set.
fn adapters_or_skip(what: &str) -> Option<Vec<Value>> {
    let list = devices_json(&[])["adapters"].as_array().unwrap().clone();
    if !list.is_empty() {
        return Some(list);
    }
    common::skip::skip(&format!(
        "{what}: no GPU adapter listed (install mesa-vulkan-drivers for lavapipe)"
    ));
    None
}

/// A tiny training run on `device` (`--device` as given) into `dir/run`, without launcher
/// variables.
fn train(dir: &std::path::Path, device: &str) -> Command {
    without_launcher(common::tiny_train(device, 64, &dir.join("run")))
}

#[test]
fn devices_lists_adapters_the_cpu_and_what_auto_and_gpu_take() {
    let mut cmd = bin();
    cmd.arg("devices");
    let out = text(&ok(cmd).stdout);
    assert!(
        out.contains("GPU adapters (--device gpu:K):") || out.contains("no GPU adapter"),
        "{out}"
    );
    assert!(out.contains("(--device cpu): the CPU backend on"), "{out}");
    assert!(out.contains("threads (rayon)"), "{out}");
    assert!(out.contains("--device auto -> "), "{out}");
    assert!(out.contains("--device gpu  -> "), "{out}");

    let json = devices_json(&[]);
    let adapters = json["adapters"].as_array().unwrap();
    for (k, a) in adapters.iter().enumerate() {
        assert_eq!(a["index"], k, "adapters are numbered in order: {a}");
        for key in ["name", "backend", "device_type", "driver"] {
            assert!(a[key].is_string(), "{key} in {a}");
        }
        assert!(a["software"].is_boolean(), "{a}");
        assert!(a["max_buffer_size"].as_u64().unwrap() > 0, "{a}");
        assert!(
            a["max_storage_buffer_binding_size"].as_u64().unwrap() > 0,
            "{a}"
        );
        assert!(
            out.contains(a["name"].as_str().unwrap()),
            "text lists {a}:\n{out}"
        );
    }
    assert!(json["cpu"]["threads"].as_u64().unwrap() >= 1, "{json}");
    assert_eq!(json["local_rank"], Value::Null, "{json}");
    assert!(json["auto"]["reason"].is_string(), "{json}");
    // `gpu` takes an adapter when one exists and fails without one.
    match adapters.len() {
        0 => assert!(json["gpu"]["error"].is_string(), "{json}"),
        n => assert!(json["gpu"]["index"].as_u64().unwrap() < n as u64, "{json}"),
    }
}

#[test]
fn a_launcher_local_rank_picks_the_adapter_and_says_why() {
    let json = devices_json(&[("OMPI_COMM_WORLD_LOCAL_RANK", "5")]);
    assert_eq!(json["local_rank"]["rank"], 5, "{json}");
    assert_eq!(
        json["local_rank"]["var"], "OMPI_COMM_WORLD_LOCAL_RANK",
        "{json}"
    );
    let adapters = json["adapters"].as_array().unwrap();
    if !adapters.is_empty() {
        let reason = json["gpu"]["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("local rank 5 of OMPI_COMM_WORLD_LOCAL_RANK"),
            "{json}"
        );
        assert!(json["gpu"]["index"].as_u64().unwrap() < adapters.len() as u64);
    }
    // A malformed value stops `gpu` and `auto`, naming the variable, before any probe.
    let json = devices_json(&[("SLURM_LOCALID", "first")]);
    for choice in ["auto", "gpu"] {
        let err = json[choice]["error"].as_str().unwrap();
        assert!(err.contains("SLURM_LOCALID=\"first\""), "{json}");
    }
    let dir = temp_dir("bad-local-rank");
    let out = train(&dir, "auto")
        .env("SLURM_LOCALID", "first")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("SLURM_LOCALID"),
        "{}",
        text(&out.stderr)
    );
    // `cpu` does not read it.
    let mut cpu = train(&dir, "cpu");
    cpu.env("SLURM_LOCALID", "first");
    ok(cpu);
}

#[test]
fn malformed_device_values_are_usage_errors_naming_the_value() {
    for bad in ["gpu:x", "gpu:-1", "tpu"] {
        let dir = temp_dir("bad-value");
        let out = train(&dir, bad).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(
            err.contains(&format!("invalid value '{bad}' for '--device")),
            "{err}"
        );
        assert!(err.contains("gpu:K"), "{err}");
    }
}

#[test]
fn gpu_k_trains_on_adapter_k_and_an_index_past_the_adapters_is_refused() {
    let Some(adapters) = adapters_or_skip("gpu:K training") else {
        return;
    };
    let dir = temp_dir("gpu-k");
    let out = text(&ok(train(&dir, "gpu:0")).stdout);
    assert!(out.contains("on gpu:0 ("), "{out}");
    assert!(out.contains("asked for"), "{out}");
    let config = std::fs::read_to_string(dir.join("run/config.ron")).unwrap();
    assert!(config.contains("device: gpu(0),"), "{config}");
    // The saved form loads back: the run resumes on adapter 0.
    let mut resume = bin();
    resume
        .args(["train", "--steps", "128", "--resume"])
        .arg(dir.join("run"));
    let out = text(&ok(resume).stdout);
    assert!(out.contains("on gpu:0 ("), "{out}");

    let n = adapters.len();
    let dir = temp_dir("gpu-99");
    let out = train(&dir, "gpu:99").output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("there is no adapter 99, {n} found")),
        "{err}"
    );
    assert!(err.contains("gridarena devices"), "{err}");
}

#[cfg(feature = "gpu")]
#[test]
fn a_gpu_critic_opens_the_adapter_it_is_given() {
    use gridarena::critic::gpu::GpuCritic;
    use gridarena::critic::{CriticError, StackSpec};
    let Some(adapters) = adapters_or_skip("GpuCritic::on_adapter") else {
        return;
    };
    let spec = StackSpec {
        network: Default::default(),
        nets: 1,
        input: 2,
        hidden: 4,
        layers: 1,
        head: 2,
    };
    let last = adapters.len() - 1;
    let critic = GpuCritic::on_adapter(spec, 1, last).unwrap();
    assert_eq!(critic.info().index, last);
    assert_eq!(critic.info().name, adapters[last]["name"].as_str().unwrap());
    match GpuCritic::on_adapter(spec, 1, adapters.len()) {
        Err(CriticError::NoSuchAdapter { index, count }) => {
            assert_eq!((index, count), (adapters.len(), adapters.len()))
        }
        Err(e) => panic!("expected NoSuchAdapter, got {e}"),
        Ok(_) => panic!("opened an adapter past the last one"),
    }
}
