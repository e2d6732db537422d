//! PPO's losses in WGSL (`shaders/ppo_loss.wgsl`): the rows of [`crate::critic::ppo_loss`]'s
//! CPU reference, one thread each, a one-shot kernel on the adapter the policy uses.

use bytemuck::{Pod, Zeroable};

use super::oneshot::{OneShot, bytes_or_placeholder};
use crate::critic::CriticError;
use crate::critic::ppo_loss::{PolicyTerms, PpoCoefs, check_policy_shapes};

/// Mirrors `PpoParams` of ppo_loss.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct PpoParams {
    rows: u32,
    width: u32,
    mode: u32,
    has_mask: u32,
    clip: f32,
    ent_coef: f32,
    vf_coef: f32,
    clip_value: u32,
    inv_rows: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}
const _: () = assert!(size_of::<PpoParams>() == 48);

/// PPO's losses on a GPU.
pub struct GpuPpoLoss {
    kernel: OneShot,
}

impl GpuPpoLoss {
    /// The losses on adapter `index` of wgpu's enumeration.
    pub fn on_adapter(index: usize) -> Result<GpuPpoLoss, CriticError> {
        Ok(GpuPpoLoss {
            kernel: OneShot::new("ppo_loss", Some(index))?,
        })
    }

    /// The losses on the preferred adapter (the one [`super::probe`] names).
    pub fn new() -> Result<GpuPpoLoss, CriticError> {
        Ok(GpuPpoLoss {
            kernel: OneShot::new("ppo_loss", None)?,
        })
    }

    fn params(rows: usize, width: usize, mode: u32, has_mask: bool, c: PpoCoefs) -> PpoParams {
        PpoParams {
            rows: rows as u32,
            width: width as u32,
            mode,
            has_mask: u32::from(has_mask),
            clip: c.clip,
            ent_coef: c.ent_coef,
            vf_coef: c.vf_coef,
            clip_value: u32::from(c.clip_value),
            inv_rows: 1.0 / rows.max(1) as f32,
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        }
    }

    /// The policy loss's terms and its gradient with respect to `logits` `[R, A]`.
    pub fn policy(
        &mut self,
        logits: &[f32],
        mask: Option<&[u8]>,
        batch: (&[u32], &[f32], &[f32]),
        c: PpoCoefs,
    ) -> Result<(PolicyTerms, Vec<f32>), CriticError> {
        let width = check_policy_shapes(logits, mask, batch)?;
        let (taken, old_logp, adv) = batch;
        let rows = taken.len();
        if rows == 0 {
            return Ok((PolicyTerms::default(), Vec::new()));
        }
        self.check_rows(logits.len())?;
        let data: Vec<f32> = old_logp
            .iter()
            .zip(adv)
            .flat_map(|(&l, &a)| [l, a])
            .collect();
        let legal: Vec<f32> = mask.map_or(Vec::new(), |m| {
            m.iter().map(|&b| f32::from(b != 0)).collect()
        });
        let params = GpuPpoLoss::params(rows, width, 0, mask.is_some(), c);
        let inputs = [
            bytes_or_placeholder(logits),
            bytes_or_placeholder(taken),
            bytes_or_placeholder(&data),
            bytes_or_placeholder(&legal),
        ];
        let mut out = (self.kernel)
            .run(
                rows,
                bytemuck::bytes_of(&params),
                &inputs,
                &[logits.len(), 4 * rows],
            )?
            .into_iter();
        let (d, t) = (
            out.next().unwrap_or_default(),
            out.next().unwrap_or_default(),
        );
        let sum = |k: usize| t.chunks_exact(4).map(|r| r[k] as f64).sum::<f64>() as f32;
        let terms = PolicyTerms {
            surrogate: sum(0),
            entropy: sum(1),
            approx_kl: sum(2),
            clip_fraction: sum(3),
        };
        Ok((terms, d))
    }

    /// The value loss and its gradient with respect to `values` `[R]`.
    pub fn value(
        &mut self,
        values: &[f32],
        old: &[f32],
        returns: &[f32],
        c: PpoCoefs,
    ) -> Result<(f32, Vec<f32>), CriticError> {
        let rows = values.len();
        if rows == 0 {
            return Ok((0.0, Vec::new()));
        }
        self.check_rows(rows)?;
        let data: Vec<f32> = old
            .iter()
            .zip(returns)
            .flat_map(|(&o, &g)| [o, g])
            .collect();
        let params = GpuPpoLoss::params(rows, 1, 1, false, c);
        let none: [u32; 0] = [];
        let inputs = [
            bytes_or_placeholder(values),
            bytes_or_placeholder(&none),
            bytes_or_placeholder(&data),
            bytes_or_placeholder(&none),
        ];
        let mut out = (self.kernel)
            .run(
                rows,
                bytemuck::bytes_of(&params),
                &inputs,
                &[rows, 4 * rows],
            )?
            .into_iter();
        let (d, t) = (
            out.next().unwrap_or_default(),
            out.next().unwrap_or_default(),
        );
        let loss = t.chunks_exact(4).map(|r| r[0] as f64).sum::<f64>() as f32;
        Ok((loss, d))
    }

    /// Refuses a batch the kernel's 32-bit indices cannot address.
    fn check_rows(&self, elements: usize) -> Result<(), CriticError> {
        if elements > (u32::MAX / 4) as usize {
            return Err(CriticError::Spec(format!(
                "{elements} loss elements: too many for one dispatch"
            )));
        }
        Ok(())
    }
}
