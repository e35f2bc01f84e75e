//! stateright's web Explorer, for clicking through a model's state space.

use stateright::Model;
use std::fmt::Debug;
use std::hash::Hash;
use std::net::{SocketAddr, TcpListener};

/// Serves stateright's web Explorer for `model` on `address`, so a person can click through
/// the state space; returns only if the address cannot be bound, or if the server stops.
pub fn explore<M>(model: M, address: SocketAddr) -> std::io::Result<()>
where
    M: Model + Send + Sync + 'static,
    M::State: Debug + Hash + Send + Sync + Clone + PartialEq,
    M::Action: Debug + Send + Sync + Clone + PartialEq,
{
    // stateright binds with `unwrap` and so panics on a port in use: bind once first, to
    // report the error instead. (Another process may still take the port in between.)
    drop(TcpListener::bind(address)?);
    let checker = model.checker();
    checker.serve(address);
    Ok(())
}
