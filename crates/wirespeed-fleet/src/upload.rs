//! A fleet too large for one request body, sent in parts: the controller
//! splits the agents into [`FleetPart`]s under the agent's body limit
//! ([`split`]); the agent assembles them ([`Assembly`]) and installs the
//! fleet once every part is in. A fleet of 1,000 agents with two NICs is
//! about 150 KB of JSON against a 64 KiB body limit; the limit stays, and
//! one upload's memory is bounded by [`MAX_PARTS`] parts of at most that
//! limit and by the fleet's own agent bound.

use crate::fleet::{AgentSpec, Fleet, MAX_AGENTS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

/// Why a part is refused, or a fleet cannot be split.
#[derive(Debug, thiserror::Error)]
pub enum PartError {
    /// The upload's name is not 1-64 letters or digits.
    #[error("upload must be 1-64 letters or digits")]
    Upload,
    /// The part count is 0 or over [`MAX_PARTS`].
    #[error("count {0}: 1-{MAX_PARTS} parts")]
    Count(u32),
    /// The index is not below the count.
    #[error("index {index} of {count} parts")]
    Index {
        /// The part's index.
        index: u32,
        /// Its count.
        count: u32,
    },
    /// The part's count is not its upload's.
    #[error("upload {upload} has {had} parts, this part says {says}")]
    CountChanged {
        /// The upload.
        upload: String,
        /// Its count.
        had: u32,
        /// The part's.
        says: u32,
    },
    /// The upload has more agents than a fleet may.
    #[error("{0} agents; at most {MAX_AGENTS}")]
    Agents(usize),
    /// One agent alone is over the body limit.
    #[error("agent {agent} alone is {size} bytes: over the body limit")]
    AgentTooLarge {
        /// The agent.
        agent: String,
        /// Its JSON's size.
        size: usize,
    },
    /// The fleet needs more than [`MAX_PARTS`] parts.
    #[error("{0} parts; at most {MAX_PARTS}")]
    Parts(u32),
    /// An agent could not be encoded.
    #[error("cannot encode agent {agent}: {error}")]
    Encode {
        /// The agent.
        agent: String,
        /// serde_json's error.
        error: serde_json::Error,
    },
}

/// The most parts one upload may have.
pub const MAX_PARTS: u32 = 256;

/// One part of a fleet upload (`PUT /v1/fleet/part`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetPart {
    /// Names the upload: the same for every part of one fleet.
    pub upload: String,
    /// This part's place, 0-based.
    pub index: u32,
    /// How many parts the upload has.
    pub count: u32,
    /// Its agents, in fleet order.
    #[serde(rename = "agent")]
    pub agents: Vec<AgentSpec>,
}

/// An upload being assembled on an agent.
#[derive(Debug, Default)]
pub struct Assembly {
    upload: String,
    count: u32,
    agents: usize,
    parts: BTreeMap<u32, Vec<AgentSpec>>,
}

/// Where an upload stands after a part.
#[derive(Debug, PartialEq)]
pub enum Progress {
    /// Parts received so far, of the count.
    Partial(usize, u32),
    /// Every part is in: the whole fleet (not yet validated).
    Complete(Fleet),
}

impl Assembly {
    /// Takes one part. A part of another upload starts over (the last
    /// upload wins, as a whole `PUT /v1/fleet` does); a part that
    /// contradicts its upload or passes the bounds is an error.
    pub fn add(&mut self, p: FleetPart) -> Result<Progress, PartError> {
        if p.upload.is_empty()
            || p.upload.len() > 64
            || !p.upload.bytes().all(|b| b.is_ascii_alphanumeric())
        {
            return Err(PartError::Upload);
        }
        if p.count == 0 || p.count > MAX_PARTS {
            return Err(PartError::Count(p.count));
        }
        if p.index >= p.count {
            return Err(PartError::Index {
                index: p.index,
                count: p.count,
            });
        }
        if p.upload != self.upload {
            *self = Assembly {
                upload: p.upload.clone(),
                count: p.count,
                ..Assembly::default()
            };
        } else if p.count != self.count {
            return Err(PartError::CountChanged {
                upload: p.upload,
                had: self.count,
                says: p.count,
            });
        }
        let had = self.parts.get(&p.index).map_or(0, Vec::len);
        let agents = self.agents - had + p.agents.len();
        if agents > MAX_AGENTS {
            return Err(PartError::Agents(agents));
        }
        self.agents = agents;
        self.parts.insert(p.index, p.agents);
        if self.parts.len() < self.count as usize {
            return Ok(Progress::Partial(self.parts.len(), self.count));
        }
        let done = std::mem::take(self);
        Ok(Progress::Complete(Fleet {
            agents: done.parts.into_values().flatten().collect(),
        }))
    }
}

/// Splits `fleet` into parts whose JSON bodies stay under `max_body`
/// bytes; an error when one agent alone does not fit.
pub fn split(fleet: &Fleet, max_body: usize) -> Result<Vec<FleetPart>, PartError> {
    let upload = upload_id(fleet);
    // Room for the part's own fields around the agents.
    let room = max_body.saturating_sub(200);
    let mut groups: Vec<Vec<AgentSpec>> = vec![Vec::new()];
    let mut used = 0;
    for a in &fleet.agents {
        let size = serde_json::to_vec(a)
            .map_err(|error| PartError::Encode {
                agent: a.name.clone(),
                error,
            })?
            .len()
            + 1;
        if size > room {
            return Err(PartError::AgentTooLarge {
                agent: a.name.clone(),
                size,
            });
        }
        if used + size > room {
            groups.push(Vec::new());
            used = 0;
        }
        used += size;
        groups
            .last_mut()
            .expect("one group at least")
            .push(a.clone());
    }
    let count = groups.len() as u32;
    if count > MAX_PARTS {
        return Err(PartError::Parts(count));
    }
    Ok(groups
        .into_iter()
        .enumerate()
        .map(|(i, agents)| FleetPart {
            upload: upload.clone(),
            index: i as u32,
            count,
            agents,
        })
        .collect())
}

/// The same fleet gets the same id, so a resent part joins its upload.
fn upload_id(fleet: &Fleet) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(fleet)
        .unwrap_or_default()
        .hash(&mut h);
    format!("{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::NicSpec;

    fn fleet(n: usize) -> Fleet {
        Fleet {
            agents: (0..n)
                .map(|i| AgentSpec {
                    name: format!("node-{i:04}"),
                    control: format!("10.1.{}.{}:5201", i / 250, i % 250 + 1),
                    http: format!("10.1.{}.{}:9190", i / 250, i % 250 + 1),
                    nics: (0..2)
                        .map(|k| NicSpec {
                            name: format!("eth{k}"),
                            address: std::net::IpAddr::from([
                                10,
                                2 + k as u8,
                                (i / 250) as u8,
                                (i % 250 + 1) as u8,
                            ]),
                        })
                        .collect(),
                    ..AgentSpec::default()
                })
                .collect(),
        }
    }

    #[test]
    fn a_thousand_agents_split_under_the_limit_and_assemble_in_any_order() {
        let f = fleet(1000);
        let whole = serde_json::to_vec(&f).unwrap().len();
        assert!(whole > 64 * 1024, "{whole} bytes fit one body: no test");
        let mut parts = split(&f, 64 * 1024).unwrap();
        assert!(parts.len() >= 2);
        for p in &parts {
            assert!(serde_json::to_vec(p).unwrap().len() <= 64 * 1024);
        }
        parts.reverse();
        let mut a = Assembly::default();
        let last = parts.pop().unwrap();
        // A resent part changes nothing.
        a.add(parts[0].clone()).unwrap();
        for p in parts {
            assert!(matches!(a.add(p).unwrap(), Progress::Partial(..)));
        }
        assert_eq!(a.add(last).unwrap(), Progress::Complete(f));
    }

    #[test]
    fn parts_that_lie_are_refused_and_a_new_upload_starts_over() {
        let parts = split(&fleet(1000), 32 * 1024).unwrap();
        let mut a = Assembly::default();
        a.add(parts[0].clone()).unwrap();
        let mut p = parts[1].clone();
        p.count += 1;
        assert!(matches!(
            a.add(p).unwrap_err(),
            PartError::CountChanged { .. }
        ));
        for (index, count) in [(5, 5), (0, 0), (0, MAX_PARTS + 1)] {
            let p = FleetPart {
                index,
                count,
                ..parts[0].clone()
            };
            assert!(a.add(p).is_err());
        }
        let bad = FleetPart {
            upload: "x/y".into(),
            ..parts[0].clone()
        };
        assert!(a.add(bad).is_err());
        let other = split(&fleet(3), 64 * 1024).unwrap();
        assert!(
            matches!(a.add(other[0].clone()).unwrap(), Progress::Complete(f) if f.agents.len() == 3)
        );
    }
}
