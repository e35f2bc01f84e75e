//! The list of properties a model is checked against: each property with the key of the rule
//! it checks (the world's are the kernel's `SpecId`), and each `always` with the `sometimes`
//! partners that show the states it speaks about occur.
//!
//! Partners are the `sometimes` properties of the same key. The list is refused when it is
//! built if an `always` has none: an `always` without a partner could hold only because
//! nothing it speaks about ever happens, and nothing in the report would show it. There is
//! no way to mark an `always` as needing no partner.

use stateright::{Expectation, Model, Property};
use std::collections::HashSet;
use std::fmt;

/// The condition of a property, as stateright's [`Property`] holds it.
pub type Condition<M> = fn(&M, &<M as Model>::State) -> bool;

/// A model's properties, each keyed by the rule it checks, every `always` partnered. Made only
/// by [`Builder::build`], which refuses a list that could pass vacuously.
pub struct PropertyList<M: Model, K> {
    keys: Vec<K>,
    properties: Vec<Property<M>>,
    partners: Vec<Vec<usize>>,
}

/// Why a list of properties was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListError {
    /// The list is empty: there is nothing to judge.
    Empty,
    /// An `eventually` property, which a search cannot judge on cycles or where a bound cuts
    /// a path.
    Eventually {
        /// The property.
        name: String,
    },
    /// Two properties share a name, so a report could not tell them apart.
    Duplicate {
        /// The shared name.
        name: String,
    },
    /// An `always` property has no `sometimes` property of its key.
    Unpartnered {
        /// The property.
        name: String,
        /// Its key.
        key: String,
    },
}

impl fmt::Display for ListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListError::Empty => write!(f, "the model has no properties to check"),
            ListError::Eventually { name } => write!(
                f,
                "property \"{name}\" is an `eventually` property, which a search cannot judge \
                 on cycles or where a bound cuts a path; express it as an `always` over a \
                 budgeted model"
            ),
            ListError::Duplicate { name } => write!(f, "two properties are named \"{name}\""),
            ListError::Unpartnered { name, key } => write!(
                f,
                "the `always` property \"{name}\" has no `sometimes` partner of its key {key}, \
                 so nothing would show that the states it speaks about occur"
            ),
        }
    }
}

impl std::error::Error for ListError {}

/// Collects properties in the order the report will list them; [`Builder::build`] pairs and
/// checks them.
pub struct Builder<M: Model, K> {
    keys: Vec<K>,
    properties: Vec<Property<M>>,
}

impl<M: Model, K: Copy + Eq + fmt::Debug> Builder<M, K> {
    /// An `always` property of the rule `key`.
    pub fn always(self, key: K, name: &'static str, condition: Condition<M>) -> Self {
        self.property(key, Property::always(name, condition))
    }

    /// A `sometimes` property of the rule `key`: a partner of each `always` of that key.
    pub fn sometimes(self, key: K, name: &'static str, condition: Condition<M>) -> Self {
        self.property(key, Property::sometimes(name, condition))
    }

    /// A property of any expectation (an `eventually` is refused by [`Builder::build`]).
    pub fn property(mut self, key: K, property: Property<M>) -> Self {
        self.keys.push(key);
        self.properties.push(property);
        self
    }

    /// The list, or why it cannot be judged honestly: it is empty, holds an `eventually`
    /// property or two properties of one name, or an `always` without a partner.
    pub fn build(self) -> Result<PropertyList<M, K>, ListError> {
        let Builder { keys, properties } = self;
        if properties.is_empty() {
            return Err(ListError::Empty);
        }
        let mut names = HashSet::new();
        for p in &properties {
            if p.expectation == Expectation::Eventually {
                return Err(ListError::Eventually {
                    name: p.name.to_owned(),
                });
            }
            if !names.insert(p.name) {
                return Err(ListError::Duplicate {
                    name: p.name.to_owned(),
                });
            }
        }
        let mut partners = Vec::with_capacity(properties.len());
        for (p, key) in properties.iter().zip(&keys) {
            let mine: Vec<usize> = match p.expectation {
                Expectation::Always => (properties.iter().zip(&keys).enumerate())
                    .filter(|(_, (q, k))| q.expectation == Expectation::Sometimes && *k == key)
                    .map(|(j, _)| j)
                    .collect(),
                _ => Vec::new(),
            };
            if p.expectation == Expectation::Always && mine.is_empty() {
                return Err(ListError::Unpartnered {
                    name: p.name.to_owned(),
                    key: format!("{key:?}"),
                });
            }
            partners.push(mine);
        }
        Ok(PropertyList {
            keys,
            properties,
            partners,
        })
    }
}

impl<M: Model, K: Copy + Eq + fmt::Debug> PropertyList<M, K> {
    /// An empty builder.
    pub fn builder() -> Builder<M, K> {
        Builder {
            keys: Vec::new(),
            properties: Vec::new(),
        }
    }

    /// The properties, in order.
    pub fn properties(&self) -> &[Property<M>] {
        &self.properties
    }

    /// Each property's key, in the same order.
    pub fn keys(&self) -> &[K] {
        &self.keys
    }

    /// Per property, the positions of its partners: for an `always`, every `sometimes` of
    /// its key (never none); none for a `sometimes`.
    pub fn partners(&self) -> &[Vec<usize>] {
        &self.partners
    }

    /// The key of the property of this name, if there is one.
    pub fn key_of(&self, name: &str) -> Option<K> {
        (self.properties.iter().zip(&self.keys))
            .find(|(p, _)| p.name == name)
            .map(|(_, k)| *k)
    }

    /// The names of the properties of `key` with this expectation, in order.
    pub fn names_of(&self, key: K, expectation: Expectation) -> Vec<&'static str> {
        (self.properties.iter().zip(&self.keys))
            .filter(|(p, k)| **k == key && p.expectation == expectation)
            .map(|(p, _)| p.name)
            .collect()
    }

    /// Every property with its key, in order.
    pub fn iter(&self) -> impl Iterator<Item = (K, &Property<M>)> {
        self.keys.iter().copied().zip(&self.properties)
    }

    /// The properties alone, as stateright's [`Model::properties`] gives them (to its web
    /// Explorer).
    pub fn into_properties(self) -> Vec<Property<M>> {
        self.properties
    }
}

impl<M: Model, K: fmt::Debug> fmt::Debug for PropertyList<M, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let named: Vec<(&K, &str)> = (self.keys.iter().zip(&self.properties))
            .map(|(k, p)| (k, p.name))
            .collect();
        f.debug_struct("PropertyList")
            .field("properties", &named)
            .field("partners", &self.partners)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::twopc::{RmPhase, TmPhase, TwoPhaseCommit};

    fn consistent(_: &TwoPhaseCommit, s: &<TwoPhaseCommit as Model>::State) -> bool {
        !(s.tm == TmPhase::Committed && s.rms.iter().any(|rm| rm.phase == RmPhase::Aborted))
    }

    fn committed(_: &TwoPhaseCommit, s: &<TwoPhaseCommit as Model>::State) -> bool {
        s.tm == TmPhase::Committed
    }

    #[test]
    fn an_always_without_a_partner_of_its_key_is_refused() {
        let refused = PropertyList::builder()
            .always("A", "A every rm agrees", consistent)
            .sometimes("B", "B the tm commits", committed)
            .build();
        assert_eq!(
            refused.err(),
            Some(ListError::Unpartnered {
                name: "A every rm agrees".to_owned(),
                key: "\"A\"".to_owned(),
            })
        );
    }

    #[test]
    fn a_partner_is_a_sometimes_of_the_same_key_whatever_its_name() {
        let list = PropertyList::builder()
            .always("A", "every rm agrees", consistent)
            .sometimes("B", "B the tm commits", committed)
            .sometimes("A", "the tm commits", committed)
            .always("B", "B every rm agrees", consistent)
            .build()
            .expect("every always has a partner");
        assert_eq!(list.partners(), [vec![2], vec![], vec![], vec![1]]);
        assert_eq!(list.key_of("the tm commits"), Some("A"));
        assert_eq!(
            list.names_of("B", Expectation::Always),
            ["B every rm agrees"]
        );
    }

    #[test]
    fn an_empty_list_an_eventually_and_a_shared_name_are_refused() {
        let empty: Result<PropertyList<TwoPhaseCommit, u8>, _> = PropertyList::builder().build();
        assert_eq!(empty.err(), Some(ListError::Empty));
        let eventually = PropertyList::builder()
            .property(0, Property::eventually("decided", committed))
            .build();
        assert!(matches!(
            eventually.err(),
            Some(ListError::Eventually { .. })
        ));
        let shared = PropertyList::builder()
            .sometimes(0, "the tm commits", committed)
            .sometimes(1, "the tm commits", committed)
            .build();
        assert!(matches!(shared.err(), Some(ListError::Duplicate { .. })));
    }
}
