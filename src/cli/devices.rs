//! `gridarena devices`: the GPU adapters present, numbered as `--device gpu:K` counts them,
//! the CPU backend, and what `--device auto` and `--device gpu` would take here and why
//! (under MPI or Slurm, from the rank's node-local index).

use anyhow::Result;
use clap::Args;
use serde_json::{Value, json};

use gridarena::critic::{Chosen, CriticError, Device, choose_device, local_rank};
use gridarena::error::human_bytes;

#[derive(Args, Debug)]
pub(crate) struct DevicesArgs {
    /// Print one JSON object: adapters [{index, name, backend, device_type, software, driver,
    /// max_buffer_size, max_storage_buffer_binding_size}], cpu {threads}, local_rank, and the
    /// choice of `auto` and `gpu` ({device, index, reason} or {error}).
    #[arg(long)]
    json: bool,
}

/// One adapter as `devices` shows it.
struct Adapter {
    index: usize,
    name: String,
    backend: String,
    device_type: String,
    software: bool,
    driver: String,
    max_buffer_size: u64,
    max_storage_buffer_binding_size: u64,
}

#[cfg(feature = "gpu")]
fn adapters() -> Vec<Adapter> {
    gridarena::critic::gpu::adapters()
        .into_iter()
        .map(|a| Adapter {
            index: a.index,
            name: a.name,
            backend: a.backend,
            device_type: a.device_type,
            software: a.software,
            driver: a.driver,
            max_buffer_size: a.limits.max_buffer_size,
            max_storage_buffer_binding_size: a.limits.max_storage_buffer_binding_size,
        })
        .collect()
}

#[cfg(not(feature = "gpu"))]
fn adapters() -> Vec<Adapter> {
    Vec::new()
}

/// A choice as JSON: `{device, index, reason}`, or `{error}`.
fn choice_json(choice: &Result<Chosen, CriticError>) -> Value {
    match choice {
        Ok(Chosen::Cpu { reason }) => json!({"device": "cpu", "index": null, "reason": reason}),
        #[cfg(feature = "gpu")]
        Ok(Chosen::Gpu { index, reason, .. }) => {
            json!({"device": format!("gpu:{index}"), "index": index, "reason": reason})
        }
        Err(e) => json!({"error": e.to_string()}),
    }
}

/// A choice in words.
fn choice_text(choice: &Result<Chosen, CriticError>) -> String {
    match choice {
        Ok(chosen) => chosen.to_string(),
        Err(e) => format!("fails: {e}"),
    }
}

/// Lists the adapters and the CPU backend, and what `auto` and `gpu` would choose.
pub(crate) fn run(args: DevicesArgs) -> Result<()> {
    let adapters = adapters();
    let threads = rayon::current_num_threads();
    let local = local_rank(|k| std::env::var(k).ok());
    let auto = choose_device(Device::Auto);
    let gpu = choose_device(Device::Gpu);
    let no_gpu = if cfg!(feature = "gpu") {
        "no GPU adapter"
    } else {
        "no GPU adapter (this build has no `gpu` feature)"
    };
    if args.json {
        let list: Vec<Value> = adapters
            .iter()
            .map(|a| {
                json!({
                    "index": a.index,
                    "name": a.name,
                    "backend": a.backend,
                    "device_type": a.device_type,
                    "software": a.software,
                    "driver": a.driver,
                    "max_buffer_size": a.max_buffer_size,
                    "max_storage_buffer_binding_size": a.max_storage_buffer_binding_size,
                })
            })
            .collect();
        let local = match &local {
            Ok(Some(l)) => json!({"rank": l.rank, "var": l.var}),
            Ok(None) => Value::Null,
            Err(e) => json!({"error": e.to_string()}),
        };
        let out = json!({
            "gpu_feature": cfg!(feature = "gpu"),
            "adapters": list,
            "cpu": {"threads": threads},
            "local_rank": local,
            "auto": choice_json(&auto),
            "gpu": choice_json(&gpu),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    if adapters.is_empty() {
        println!("{no_gpu}");
    } else {
        println!("GPU adapters (--device gpu:K):");
    }
    for a in &adapters {
        let kind = if a.software { "software" } else { "hardware" };
        println!(
            "  {}  {}  [{}, {}, {kind}]  driver: {}  max buffer {}, max storage binding {}",
            a.index,
            a.name,
            a.backend,
            a.device_type,
            a.driver,
            human_bytes(a.max_buffer_size),
            human_bytes(a.max_storage_buffer_binding_size)
        );
    }
    println!("cpu  (--device cpu): the CPU backend on {threads} threads (rayon)");
    match &local {
        Ok(Some(l)) => println!("launcher: {l}"),
        Ok(None) => {}
        Err(e) => println!("launcher: {e}"),
    }
    println!("--device auto -> {}", choice_text(&auto));
    println!("--device gpu  -> {}", choice_text(&gpu));
    Ok(())
}
