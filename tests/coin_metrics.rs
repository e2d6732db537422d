//! The coin game's own-colour share in the evaluation report: the share of coins picked up by
//! their own colour's player, which opponent shaping should raise above the selfish 0.5.

use std::path::PathBuf;

use gridarena::policy::RandomPolicy;
use gridarena::scenario::Scenario;
use gridarena::train::eval::evaluate_policy;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn evaluation_reports_the_own_colour_share_of_the_coins() {
    let loaded = Scenario::load(&root().join("assets/scenarios/coin_game.ron")).unwrap();
    let episodes = 64;
    let mut random = RandomPolicy::new(3, episodes, 5);
    let r = evaluate_policy(&loaded, episodes, 7, &mut random).unwrap();
    let p = r.own_coin_proportion.expect("the coin game reports it");
    // The share is the counters' own over own + other (the same episodes under both means).
    let (own, other) = (r.counters["coins_own"], r.counters["coins_other"]);
    assert!(
        own + other > 1.0,
        "random players pick up coins: {own} + {other}"
    );
    assert!(
        (p - own / (own + other)).abs() < 1e-12,
        "{p} vs {own} / {}",
        own + other
    );
    // Random players take either colour alike.
    assert!((p - 0.5).abs() < 0.1, "{p}");
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["own_coin_proportion"], serde_json::json!(p));
    // Other substrates have no such share, and the report leaves the field out.
    let stag = Scenario::load(&root().join("assets/scenarios/stag_hunt.ron")).unwrap();
    let mut random = RandomPolicy::new(3, 8, 2);
    let s = evaluate_policy(&stag, 8, 7, &mut random).unwrap();
    assert_eq!(s.own_coin_proportion, None);
    assert!(
        serde_json::to_value(&s)
            .unwrap()
            .get("own_coin_proportion")
            .is_none()
    );
}
