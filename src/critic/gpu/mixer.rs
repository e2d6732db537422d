//! QMIX's mixer in WGSL (`shaders/qmix_mixer.wgsl`): the rows of [`crate::critic::mixer`]'s
//! CPU reference, one thread each, a one-shot kernel on the adapter the critics use: every call
//! uploads its rows, dispatches once and reads the results back in one copy.

use bytemuck::{Pod, Zeroable};

use super::oneshot::{OneShot, bytes_or_placeholder};
use crate::critic::mixer::{MixedLoss, MixerShape};
use crate::critic::{CriticError, check_len};

/// Mirrors `MixParams` of qmix_mixer.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct MixParams {
    rows: u32,
    agents: u32,
    embed: u32,
    mode: u32,
    inv_rows: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}
const _: () = assert!(size_of::<MixParams>() == 32);

/// The mixer on a GPU.
pub struct GpuMixer {
    kernel: OneShot,
    shape: MixerShape,
}

impl GpuMixer {
    /// A mixer of `shape` on adapter `index` of wgpu's enumeration.
    pub fn on_adapter(shape: MixerShape, index: usize) -> Result<GpuMixer, CriticError> {
        GpuMixer::on(shape, Some(index))
    }

    /// A mixer of `shape` on the preferred adapter (the one [`super::probe`] names).
    pub fn new(shape: MixerShape) -> Result<GpuMixer, CriticError> {
        GpuMixer::on(shape, None)
    }

    fn on(shape: MixerShape, index: Option<usize>) -> Result<GpuMixer, CriticError> {
        if shape.agents == 0 || shape.embed == 0 {
            return Err(CriticError::Spec(
                "a mixer needs agents and embed >= 1".into(),
            ));
        }
        Ok(GpuMixer {
            kernel: OneShot::new("qmix_mixer", index)?,
            shape,
        })
    }

    /// `Q_tot` of every row.
    pub fn mix(&mut self, q: &[f32], hyper: &[f32]) -> Result<Vec<f32>, CriticError> {
        let rows = self.rows(q, hyper)?;
        let zeros = vec![0.0; rows];
        let mut out = self.run(0, (q, hyper, &zeros))?;
        Ok(out.swap_remove(0))
    }

    /// The mixed TD loss against `y` and its gradients.
    pub fn loss(&mut self, q: &[f32], hyper: &[f32], y: &[f32]) -> Result<MixedLoss, CriticError> {
        let rows = self.rows(q, hyper)?;
        check_len("mixer targets [R]", rows, y.len())?;
        let mut out = self.run(1, (q, hyper, y))?.into_iter();
        let mut next = || out.next().unwrap_or_default();
        let (_tot, d_q, d_hyper, row_loss) = (next(), next(), next(), next());
        Ok(MixedLoss {
            loss: row_loss.iter().map(|&v| v as f64).sum::<f64>() as f32,
            d_q,
            d_hyper,
        })
    }

    fn rows(&self, q: &[f32], hyper: &[f32]) -> Result<usize, CriticError> {
        let rows = q.len() / self.shape.agents;
        check_len("mixer values [R, N]", rows * self.shape.agents, q.len())?;
        check_len(
            "mixer hypernetwork outputs [R, N E + 2 E + 1]",
            rows * self.shape.hyper_width(),
            hyper.len(),
        )?;
        if rows > u32::MAX as usize / self.shape.hyper_width() {
            return Err(CriticError::Spec(format!(
                "{rows} mixer rows: too many for one dispatch"
            )));
        }
        Ok(rows)
    }

    /// One dispatch in `mode`; returns `[tot, d_q, d_hyper, row_loss]` (mode 0 computes the
    /// first alone).
    fn run(
        &mut self,
        mode: u32,
        (q, hyper, y): (&[f32], &[f32], &[f32]),
    ) -> Result<Vec<Vec<f32>>, CriticError> {
        let rows = y.len();
        if rows == 0 {
            return Ok(vec![Vec::new(); 4]);
        }
        let params = MixParams {
            rows: rows as u32,
            agents: self.shape.agents as u32,
            embed: self.shape.embed as u32,
            mode,
            inv_rows: 1.0 / rows as f32,
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        };
        let inputs = [q, hyper, y].map(bytes_or_placeholder);
        let outputs = [rows, q.len(), hyper.len(), rows];
        self.kernel
            .run(rows, bytemuck::bytes_of(&params), &inputs, &outputs)
    }
}
