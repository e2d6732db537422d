//! The exact analysis' successor cache under a byte cap: eviction costs only recomputation, so
//! NashConv with a cap of a tenth of the table equals the uncapped and the uncached NashConv bit
//! for bit, on 3-agent Pursuit with slip, and the cap is respected.

use gridarena::analysis::TransitionModel;
use gridarena::analysis::exact::{PolicyTable, Tolerance, nashconv};
use gridarena::analysis::successors::SuccessorCache;
use gridarena::scenario::Scenario;

fn hidden() -> indicatif::ProgressBar {
    indicatif::ProgressBar::hidden()
}

#[test]
fn a_capped_successor_cache_gives_the_uncapped_nashconv_bit_for_bit() {
    // Three learners (two pursuers, one evader) with 20% slip on the 3x3 map: 512 states, 125
    // applied joint actions each, so the whole successor table is 512 x 125 x 16 B = 1 MB.
    let tiny = std::fs::read_to_string("tests/data/tiny_pursuit.ron").unwrap();
    let text = tiny.replace(
        "(kind: pursuer, count: 1, control: learner)",
        "(kind: pursuer, count: 2, control: learner)",
    );
    let model = TransitionModel::new(&Scenario::parse(&text, "inline.ron").unwrap(), None).unwrap();
    assert_eq!((model.states(), model.applied_joint()), (512, 125));
    let policy = PolicyTable::from_fn(&model, |s, i, d| {
        let mut total = 0.0;
        for (a, v) in d.iter_mut().enumerate() {
            *v = 1.0 + ((s as usize * 5 + i * 7 + a * 3) % 13) as f32;
            total += *v;
        }
        d.iter_mut().for_each(|v| *v /= total);
    });
    let tol = Tolerance {
        delta: 1e-10,
        max_sweeps: 25,
    };
    let run =
        |cache: Option<SuccessorCache>| nashconv(&model, &policy, 0.9, tol, cache, None, &hidden());
    let full = SuccessorCache::bytes(&model);
    assert_eq!(full, 512 * 125 * 16);
    let none = run(None);
    let uncapped = run(Some(SuccessorCache::new(&model, full * 2)));
    let cap = full / 10;
    let capped = run(Some(SuccessorCache::new(&model, cap)));
    assert!(none.nashconv > 0.01, "{}", none.nashconv);
    let bits = |r: &gridarena::analysis::exact::NashConv| {
        (
            r.nashconv.to_bits(),
            r.per_agent_gain
                .iter()
                .map(|g| g.to_bits())
                .collect::<Vec<_>>(),
        )
    };
    assert_eq!(bits(&capped), bits(&uncapped));
    assert_eq!(bits(&none), bits(&uncapped));
    assert_eq!(none.sweeps, vec![25; 4]);
    // 100 sweeps x 512 state lookups. Uncapped: only the first sweep misses, with every
    // state's row in memory. Capped: 3 blocks of 16 states fit in a tenth, kept all along.
    let u = uncapped.cache.unwrap();
    assert_eq!((u.hits, u.misses, u.evictions), (99 * 512, 512, 0));
    assert!(u.bytes_used >= full && u.bytes_used <= full * 2, "{u:?}");
    let c = capped.cache.unwrap();
    assert!(c.bytes_used <= cap, "{c:?}");
    assert_eq!(c.slots, 3, "{c:?}");
    assert_eq!(
        (c.hits, c.misses, c.evictions),
        (99 * 48, 100 * 512 - 99 * 48, 0),
        "{c:?}"
    );
}
