//! Validation of a saved [`BatchState`] against the batch it is restored into, before any of
//! it is used: every vector's length against the layout (arenas x agents, cells, counters,
//! deck, step buffers) and every value that indexes something against its range (positions
//! inside the grid, facings, actions, dones, the spawn deck a permutation of the template).
//! A bad checkpoint gives a [`BadField`] naming the field, never a panic.

use super::BatchState;
use crate::error::BadField;
use crate::layout::Layout;

impl BatchState {
    /// Checks this saved state against `fresh`, the state of the batch it is restored into
    /// (which has every length right), and `layout`.
    pub(crate) fn validate(&self, fresh: &BatchState, layout: &Layout) -> Result<(), BadField> {
        let f = |name: &str| format!("batch.{name}");
        BadField::check_len(&f("arenas"), fresh.arenas, self.arenas)?;
        BadField::check_len(&f("agents"), fresh.agents, self.agents)?;
        let lengths = [
            ("pos", fresh.pos.len(), self.pos.len()),
            ("facing", fresh.facing.len(), self.facing.len()),
            ("alive", fresh.alive.len(), self.alive.len()),
            ("applied", fresh.applied.len(), self.applied.len()),
            ("reward", fresh.reward.len(), self.reward.len()),
            ("ret", fresh.ret.len(), self.ret.len()),
            ("carry", fresh.carry.len(), self.carry.len()),
            ("cooldown", fresh.cooldown.len(), self.cooldown.len()),
            ("rng", fresh.rng.len(), self.rng.len()),
            ("cells", fresh.cells.len(), self.cells.len()),
            ("counters", fresh.counters.len(), self.counters.len()),
            ("clock", fresh.clock.len(), self.clock.len()),
            ("deck", fresh.deck.len(), self.deck.len()),
            ("ended", fresh.ended.len(), self.ended.len()),
            ("obs", fresh.obs.len(), self.obs.len()),
            ("actions", fresh.actions.len(), self.actions.len()),
            ("rewards", fresh.rewards.len(), self.rewards.len()),
            ("terminated", fresh.terminated.len(), self.terminated.len()),
            ("truncated", fresh.truncated.len(), self.truncated.len()),
        ];
        for (name, expected, found) in lengths {
            BadField::check_len(&f(name), expected, found)?;
        }
        for (a, (mine, theirs)) in self.cells.iter().zip(&fresh.cells).enumerate() {
            BadField::check_len(&f(&format!("cells[{a}]")), theirs.len(), mine.len())?;
        }
        for (a, (mine, theirs)) in self.counters.iter().zip(&fresh.counters).enumerate() {
            BadField::check_len(&f(&format!("counters[{a}]")), theirs.len(), mine.len())?;
        }
        let mut template = layout.deck_template.clone();
        template.sort_unstable();
        for (a, deck) in self.deck.iter().enumerate() {
            let mut sorted = deck.clone();
            sorted.sort_unstable();
            if sorted != template {
                return Err(BadField::range(
                    &f(&format!("deck[{a}]")),
                    "a permutation of the scenario's spawn cells",
                    format!("{} entries, not a permutation", deck.len()),
                ));
            }
        }
        self.validate_ranges(layout)
    }

    /// The values that index something: positions of live agents inside the grid, facings,
    /// actions, dones and episode clocks.
    fn validate_ranges(&self, layout: &Layout) -> Result<(), BadField> {
        let (w, h) = (layout.width as i64, layout.height as i64);
        if w > 0 && h > 0 {
            let outside = self
                .pos
                .iter()
                .zip(&self.alive)
                .enumerate()
                .find(|(_, (p, alive))| {
                    **alive
                        && !((0..w).contains(&i64::from(p.0)) && (0..h).contains(&i64::from(p.1)))
                });
            if let Some((i, (p, _))) = outside {
                return Err(BadField::range(
                    &format!("batch.pos[{i}]"),
                    format!("a cell of the {w} x {h} grid"),
                    format!("({}, {})", p.0, p.1),
                ));
            }
        }
        let below = |name: &str, values: &[u8], limit: usize| -> Result<(), BadField> {
            match values
                .iter()
                .enumerate()
                .find(|(_, v)| usize::from(**v) >= limit)
            {
                Some((i, v)) => Err(BadField::range(
                    &format!("batch.{name}[{i}]"),
                    format!("a value below {limit}"),
                    v,
                )),
                None => Ok(()),
            }
        };
        below("facing", &self.facing, 4)?;
        below("applied", &self.applied, layout.actions)?;
        below("actions", &self.actions, layout.actions)?;
        below("terminated", &self.terminated, 2)?;
        below("truncated", &self.truncated, 2)?;
        if let Some((a, c)) = self
            .clock
            .iter()
            .enumerate()
            .find(|(_, c)| layout.max_steps > 0 && c.0 > layout.max_steps)
        {
            return Err(BadField::range(
                &format!("batch.clock[{a}]"),
                format!("a step of at most max_steps {}", layout.max_steps),
                c.0,
            ));
        }
        Ok(())
    }
}
