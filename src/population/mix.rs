//! Several policies acting together in one batch: each (arena, learner slot) takes its action
//! from the member assigned to it. Every member used acts on the whole batch and the slots
//! pick from its answer, so a member keeps its own per-arena state (random streams, recurrent
//! hidden states) exactly as if it acted alone.

use crate::policy::{Policy, PolicyError};

/// Members acting together: `assign[r * N + i]` is the member acting for learner slot i of
/// arena r.
pub struct SlotMix<'a> {
    members: Vec<&'a mut dyn Policy>,
    assign: Vec<usize>,
    scratch: Vec<Vec<u8>>,
}

impl<'a> SlotMix<'a> {
    /// `members` acting for the rows `assign` gives them (`[R x N]`, member indices).
    pub fn new(members: Vec<&'a mut dyn Policy>, assign: Vec<usize>) -> SlotMix<'a> {
        let scratch = vec![Vec::new(); members.len()];
        SlotMix {
            members,
            assign,
            scratch,
        }
    }

    fn act(&mut self, obs: &[u8], mask: Option<&[u8]>, out: &mut [u8]) -> Result<(), PolicyError> {
        if out.len() != self.assign.len() {
            return Err(PolicyError::Shape {
                what: "actions of a population mix",
                expected: self.assign.len(),
                got: out.len(),
            });
        }
        let mut used = vec![false; self.members.len()];
        for &m in &self.assign {
            if let Some(u) = used.get_mut(m) {
                *u = true;
            }
        }
        for (m, member) in self.members.iter_mut().enumerate() {
            if !used[m] {
                continue;
            }
            let buf = &mut self.scratch[m];
            buf.resize(out.len(), 0);
            member.actions_within(obs, mask, buf)?;
        }
        for (row, (o, &m)) in out.iter_mut().zip(&self.assign).enumerate() {
            *o = self
                .scratch
                .get(m)
                .and_then(|s| s.get(row))
                .copied()
                .ok_or(PolicyError::Shape {
                    what: "member index of a population mix",
                    expected: self.members.len(),
                    got: m,
                })?;
        }
        Ok(())
    }
}

impl Policy for SlotMix<'_> {
    fn actions(&mut self, obs: &[u8], out: &mut [u8]) -> Result<(), PolicyError> {
        self.act(obs, None, out)
    }

    fn actions_within(
        &mut self,
        obs: &[u8],
        mask: Option<&[u8]>,
        out: &mut [u8],
    ) -> Result<(), PolicyError> {
        self.act(obs, mask, out)
    }

    fn episodes_start(&mut self, started: &[bool]) {
        for m in &mut self.members {
            m.episodes_start(started);
        }
    }

    fn has_memory(&self) -> bool {
        self.members.iter().any(|m| m.has_memory())
    }
}
