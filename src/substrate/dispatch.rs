//! The [`substrates!`] macro behind the [registry](super::registry): from the registry lines it
//! declares each substrate's folder as a module, generates the asset's [`Substrate`] enum and
//! the per-batch [`Rules`] enum, and writes every dispatch `match` over them (static dispatch:
//! one `match` per call, then a direct call into the substrate's folder).
//!
//! [`Substrate`]: super::registry::Substrate
//! [`Rules`]: super::registry::Rules

/// Generates the modules, the two enums and their dispatch from the registry lines.
macro_rules! substrates {
    ($(
        $(#[doc = $doc:literal])*
        $asset:ident($module:ident :: $params:ident) => $variant:ident($rmod:ident :: $rules:ident) in $path:literal,
    )*) => {
        $(
            #[doc = concat!("The `", stringify!($asset), "` substrate.")]
            #[path = $path]
            pub mod $module;
        )*

        /// The rules an arena runs, with their parameters, as written in a scenario asset.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub enum Substrate {
            $( $(#[doc = $doc])* $asset($module::$params), )*
        }

        /// Each substrate's derived per-batch data ([`Layout::rules`](crate::layout::Layout::rules)); its methods dispatch
        /// one arena's phases to the substrate's folder.
        #[derive(Debug, Clone)]
        pub enum Rules {
            $( #[doc = concat!("The `", stringify!($asset), "` substrate.")] $variant($rmod::$rules), )*
        }

        impl Substrate {
            /// Every substrate's name and commented template asset (`gridarena new`), in
            /// registry order.
            pub fn templates() -> &'static [(&'static str, &'static str)] {
                const ALL: &[(&str, &str)] = &[
                    $( (
                        <$rmod::$rules as SubstrateRules>::NAME,
                        <$rmod::$rules as SubstrateRules>::TEMPLATE,
                    ), )*
                ];
                ALL
            }
            /// Every substrate's name and one-line summary (the registry line's doc comment),
            /// in registry order.
            pub fn summaries() -> &'static [(&'static str, &'static str)] {
                const ALL: &[(&str, &str)] = &[
                    $( (<$rmod::$rules as SubstrateRules>::NAME, concat!($($doc),*)), )*
                ];
                ALL
            }
            /// Lower-case name for messages.
            pub fn name(&self) -> &'static str {
                match self { $( Substrate::$asset(_) => <$rmod::$rules as SubstrateRules>::NAME, )* }
            }
            /// The role kinds this substrate knows.
            pub fn role_kinds(&self) -> &'static [RoleKind] {
                match self { $( Substrate::$asset(_) => <$rmod::$rules>::role_kinds(), )* }
            }
            /// The configurable observation channels, in canonical order (empty: the layout
            /// is fixed by the substrate and documented in docs/scenarios.md).
            pub fn channels(&self) -> &'static [Channel] {
                match self { $( Substrate::$asset(_) => <$rmod::$rules>::channels(), )* }
            }
            /// The action set used when the asset names none.
            pub fn default_actions(&self) -> ActionSet {
                match self { $( Substrate::$asset(p) => <$rmod::$rules>::default_actions(p), )* }
            }
            /// Whether agents spawn on any open cell rather than on spawn symbols.
            pub fn spawns_anywhere(&self) -> bool {
                match self { $( Substrate::$asset(_) => <$rmod::$rules>::spawns_anywhere(), )* }
            }
            /// Whether the substrate plays on the ASCII map.
            pub fn uses_map(&self) -> bool {
                match self { $( Substrate::$asset(_) => <$rmod::$rules>::uses_map(), )* }
            }
            /// Whether a base-legend tile may appear in this substrate's maps.
            pub fn allows_tile(&self, tile: Tile) -> bool {
                match self { $( Substrate::$asset(_) => <$rmod::$rules>::allows_tile(tile), )* }
            }
            /// Extra map symbols the parameters declare (symbol k reads as `Tile::Compound(k)`).
            pub fn map_symbols(&self) -> Vec<char> {
                match self { $( Substrate::$asset(p) => <$rmod::$rules>::map_symbols(p), )* }
            }
            /// Observation bytes per learner of `scenario` (whose substrate this is).
            pub fn observation_len(&self, scenario: &ScenarioView) -> usize {
                match self {
                    $( Substrate::$asset(p) => <$rmod::$rules>::observation_len(p, scenario), )*
                }
            }
            /// A learner's observation block by block, in byte order.
            pub fn observation_layout(&self, scenario: &ScenarioView) -> Vec<ObsField> {
                match self {
                    $( Substrate::$asset(p) => <$rmod::$rules>::observation_layout(p, scenario), )*
                }
            }
            /// The arena's global state block by block, in byte order.
            pub fn global_state_layout(&self, scenario: &ScenarioView) -> Vec<ObsField> {
                match self {
                    $( Substrate::$asset(p) => <$rmod::$rules>::global_state_layout(p, scenario), )*
                }
            }
            /// Whether the substrate keeps an action mask.
            pub fn has_action_mask(&self) -> bool {
                match self { $( Substrate::$asset(p) => <$rmod::$rules>::has_action_mask(p), )* }
            }
            /// The `observation` block of `scenario` with the substrate's defaults filled in.
            pub fn resolved_observation(&self, scenario: &ScenarioView) -> ObservationSpec {
                match self {
                    $( Substrate::$asset(p) => <$rmod::$rules>::resolved_observation(p, scenario), )*
                }
            }
            /// Action names in index order.
            pub fn action_names(&self) -> Vec<String> {
                match self { $( Substrate::$asset(p) => <$rmod::$rules>::action_names(p), )* }
            }
            /// What extra map symbol `k` of [`Substrate::map_symbols`] means.
            pub fn symbol_meaning(&self, k: usize) -> String {
                match self { $( Substrate::$asset(p) => <$rmod::$rules>::symbol_meaning(p, k), )* }
            }
            /// A one-line summary of the parameters.
            pub fn describe(&self) -> String {
                match self { $( Substrate::$asset(p) => <$rmod::$rules>::describe(p), )* }
            }
            /// What a `substrate.<field>` accepts, asked of every substrate in registry order.
            pub(crate) fn field_help(field: &str) -> Option<&'static str> {
                None $( .or_else(|| <$rmod::$rules>::field_help(field)) )*
            }
            pub(crate) fn check_params(&self, s: &ScenarioView, c: &Check) -> Result<(), ScenarioError> {
                match self { $( Substrate::$asset(p) => <$rmod::$rules>::check_params(p, s, c), )* }
            }
            pub(crate) fn check_roles(&self, s: &ScenarioView, c: &Check) -> Result<(), ScenarioError> {
                match self { $( Substrate::$asset(p) => <$rmod::$rules>::check_roles(p, s, c), )* }
            }
            pub(crate) fn check_observation(
                &self,
                s: &ScenarioView,
                grid: &Grid,
                c: &Check,
            ) -> Result<(), ScenarioError> {
                match self {
                    $( Substrate::$asset(p) => <$rmod::$rules>::check_observation(p, s, grid, c), )*
                }
            }
            /// The substrate's part of [`Layout::derive`](crate::layout::Layout::derive), wrapped in [`Rules`].
            pub(crate) fn derive(&self, s: &ScenarioView, grid: &Grid) -> Derived<Rules> {
                match self {
                    $( Substrate::$asset(p) => {
                        let d = <$rmod::$rules>::derive(p, s, grid);
                        Derived {
                            rules: Rules::$variant(d.rules),
                            pad: d.pad,
                            cells_template: d.cells_template,
                            counter_names: d.counter_names,
                        }
                    } )*
                }
            }
        }

        impl Rules {
            /// Whether agents have facings, carry things and block each other.
            #[inline]
            pub fn has_avatars(&self) -> bool {
                match self { $( Rules::$variant(_) => <$rmod::$rules as SubstrateRules>::HAS_AVATARS, )* }
            }
            /// Movement phase.
            #[inline]
            pub fn apply_moves(&self, layout: &LayoutCore, a: &mut ArenaMut) {
                match self { $( Rules::$variant(r) => r.apply_moves(layout, a), )* }
            }
            /// Interactions after movement.
            #[inline]
            pub fn resolve_interactions(&self, layout: &LayoutCore, a: &mut ArenaMut) {
                match self { $( Rules::$variant(r) => r.resolve_interactions(layout, a), )* }
            }
            /// The substrate's per-step reward terms.
            #[inline]
            pub fn assign_rewards(&self, layout: &LayoutCore, a: &mut ArenaMut) {
                match self { $( Rules::$variant(r) => r.assign_rewards(layout, a), )* }
            }
            /// Writes every learner's observation.
            #[inline]
            pub fn write_observations(&self, layout: &LayoutCore, a: &mut ArenaMut) {
                match self { $( Rules::$variant(r) => r.write_observations(layout, a), )* }
            }
            /// Writes the arena's global state.
            #[inline]
            pub fn write_global_state(&self, layout: &LayoutCore, a: &ArenaMut, state: &mut [u8]) {
                match self { $( Rules::$variant(r) => r.write_global_state(layout, a, state), )* }
            }
            /// Writes every learner's legal actions.
            #[inline]
            pub fn write_action_mask(&self, layout: &LayoutCore, a: &ArenaMut, mask: &mut [u8]) {
                match self { $( Rules::$variant(r) => r.write_action_mask(layout, a, mask), )* }
            }
            /// Recomputes the cell layer's derived parts.
            #[inline]
            pub fn rebuild_cells(&self, layout: &LayoutCore, a: &mut ArenaMut) {
                match self { $( Rules::$variant(r) => r.rebuild_cells(layout, a), )* }
            }
            /// Completes a spawn after the agents were placed.
            #[inline]
            pub fn finish_spawn(&self, layout: &LayoutCore, a: &mut ArenaMut) {
                match self { $( Rules::$variant(r) => r.finish_spawn(layout, a), )* }
            }
            /// The items a rollout frame records.
            pub fn frame_items(&self, layout: &LayoutCore, cells: &[u8]) -> Vec<u8> {
                match self { $( Rules::$variant(r) => r.frame_items(layout, cells), )* }
            }
            /// The length `Frame::items` must have, if frames record items.
            pub fn frame_items_len(&self, layout: &LayoutCore) -> Option<usize> {
                match self { $( Rules::$variant(r) => r.frame_items_len(layout), )* }
            }
            /// Writes a frame's items back into a fresh cell layer.
            pub fn load_frame_items(&self, layout: &LayoutCore, items: &[u8], cells: &mut [u8]) -> Option<()> {
                match self { $( Rules::$variant(r) => r.load_frame_items(layout, items, cells), )* }
            }
            /// Pushes the frame's items as render instances.
            pub fn draw_items(&self, layout: &LayoutCore, frame: &Frame, out: &mut Vec<Instance>) {
                match self { $( Rules::$variant(r) => r.draw_items(layout, frame, out), )* }
            }
            /// Learner `slot`'s observation drawn as cells, if the substrate knows how.
            #[cfg(feature = "viewer")]
            pub fn observation_image(
                &self,
                layout: &LayoutCore,
                slot: usize,
                obs: &[u8],
            ) -> Option<crate::viewer::obs_image::ObsImage> {
                match self { $( Rules::$variant(r) => r.observation_image(layout, slot, obs), )* }
            }
            /// How exact analysis indexes the states.
            pub fn exact_model(&self) -> ExactModel {
                match self { $( Rules::$variant(r) => r.exact_model(), )* }
            }
            /// Whether the rules ended the episode in a state with these alive flags.
            pub fn terminated(&self, layout: &LayoutCore, alive: &[Alive]) -> bool {
                match self { $( Rules::$variant(r) => r.terminated(layout, alive), )* }
            }
        }
    };
}
