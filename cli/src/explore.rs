//! `resumable explore`: stateright's web Explorer on 127.0.0.1, so a person can click through
//! the world's state space, step by step, with each property's status.
//!
//! It takes the same subject and world flags as `check`. Exit status: 2 on misuse or when
//! the port cannot be bound; otherwise it serves until interrupted.

use crate::check::ModelArgs;
use resumable_model::checker;
use resumable_model::world::World;
use resumable_model::{Kernel, Lifecycle};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;

/// Arguments of `explore`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The subject and its world.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The port on 127.0.0.1 to serve the Explorer on.
    #[arg(long, default_value_t = 3000)]
    pub port: u16,
}

/// Runs the command: serves until the process is interrupted, or returns 2.
pub fn run(args: &Args) -> ExitCode {
    let setup = match args.model.setup(None) {
        Ok(setup) => setup,
        Err(message) => {
            eprintln!("resumable explore: {message}");
            return ExitCode::from(2);
        }
    };
    // Loopback only: the Explorer has no authentication.
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
    let served = match setup.lifecycle {
        None => serve(Kernel, &setup, address),
        Some(reference) => serve(reference, &setup, address),
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("resumable explore: {message}");
            ExitCode::from(2)
        }
    }
}

fn serve<L: Lifecycle>(
    lifecycle: L,
    setup: &crate::check::Setup,
    address: SocketAddr,
) -> Result<(), String> {
    let world = World::new(lifecycle, setup.config).map_err(|e| e.to_string())?;
    let unavailable = |e: std::io::Error| format!("cannot serve on {address}: {e}");
    // Refuse a port in use before announcing anything (`explore` checks again itself).
    drop(std::net::TcpListener::bind(address).map_err(unavailable)?);
    eprintln!(
        "exploring {} in {}\nExplorer on http://{address}/ (interrupt to stop)",
        setup.name,
        crate::check::describe(&setup.config)
    );
    checker::explore(world, address).map_err(unavailable)
}
