//! Lanes built again while `auto` runs: the overflow lane for another overflow trial, the
//! placement lane when the programs change after its placement was undone.

use super::{Auto, Lane, overflow_table, slot};
use crate::auto::detect::Placement;
use rondpoint_model::{Action, NodeId, Observation, ProcessInfo, Topology};
use rondpoint_policy_api::Refusal;

impl Auto {
    /// The overflow lane built again through the registry, its overflow kept off `avoid`, for
    /// the overflow trial's next placement; left out, with the reason, if it cannot be.
    pub(super) fn rebuild_overflow(
        &mut self,
        topology: &Topology,
        observation: &Observation,
        avoid: &[NodeId],
    ) {
        let Some(i) = self.slots.iter().position(|s| s.lane == Lane::Overflow) else {
            return;
        };
        let mut table = overflow_table(&self.config);
        let ids = avoid.iter().map(|n| toml::Value::Integer(i64::from(n.0)));
        table.insert("avoid_nodes".into(), toml::Value::Array(ids.collect()));
        let built = slot(
            Lane::Overflow,
            "usage-aware",
            &Some(table),
            self.config.seed,
        );
        let old = &mut self.slots[i];
        let mut s = match built {
            Ok(s) => s,
            Err(e) => {
                old.out = Some(format!("could not be built again for another trial: {e}"));
                return;
            }
        };
        if let Some(caps) = &self.capabilities {
            s.policy.configure(caps);
        }
        if let Err(Refusal(why)) = s.policy.accepts(topology, &observation.processes) {
            old.out = Some(why);
            return;
        }
        s.notes = std::mem::take(&mut old.notes);
        s.taken = std::mem::take(&mut old.taken);
        *old = s;
    }
}

impl Auto {
    /// Once the placement trial undid the placement lane's placement, a program that starts
    /// gives the lane another chance where N-MASS applies to the programs running now: its
    /// policies are built again, the lane is chosen again for those programs, and its placement
    /// (the actions returned) is tried as the first was.
    pub(super) fn readmit_placement(
        &mut self,
        topology: &Topology,
        observation: &Observation,
    ) -> Vec<Action> {
        if !self.trial.mix_changed(observation) {
            return Vec::new();
        }
        let running: Vec<ProcessInfo> = observation
            .processes
            .iter()
            .filter(|p| !p.threads.is_empty())
            .cloned()
            .collect();
        // Only a placement the trial can measure and undo comes back mid-run: N-MASS's pins.
        // OAAS's application moves carry their memory (not tried), and where neither applies
        // there is nothing to place.
        if crate::auto::detect::placement(topology, &running) != Placement::NMass {
            self.trial.hold_for(observation);
            return Vec::new();
        }
        for i in 0..self.slots.len() {
            let old = &self.slots[i];
            if old.lane != Lane::Placement {
                continue;
            }
            let name = old.policy.name().to_string();
            let table = match name.as_str() {
                "oaas" => Some(super::oaas_table(&self.config)),
                _ => self.config.n_mass.clone(),
            };
            let mut s = match slot(Lane::Placement, &name, &table, self.config.seed) {
                Ok(s) => s,
                Err(e) => {
                    self.slots[i].out = Some(format!("could not be built again: {e}"));
                    continue;
                }
            };
            if let Some(caps) = &self.capabilities {
                s.configure(caps);
            }
            let old = &mut self.slots[i];
            s.taken = std::mem::take(&mut old.taken);
            *old = s;
        }
        self.trial.readmit();
        self.placement = Placement::Unknown;
        self.choose_placement(topology, &running)
    }
}
