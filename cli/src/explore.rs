//! `resumable explore`: stateright's web Explorer on 127.0.0.1, so a person can click through
//! the world's state space, step by step, with each property's status.
//!
//! It takes the same subject and world flags as `check`. Exit status: 2 on misuse or when
//! the port cannot be bound; otherwise it serves until interrupted.
//!
//! # Threat model
//!
//! The Explorer has no authentication, and stateright's server answers any request: any
//! `Host`, any origin, and `POST /.runtocompletion` starts a search as large as the world. So
//! it listens only on a second, ephemeral loopback port, and users reach it through a small
//! front of ours ([`front`]) on the port asked for, which:
//!
//! - refuses a `Host` other than this server's own address (`127.0.0.1:PORT`,
//!   `localhost:PORT`, `[::1]:PORT`): a page of another site that rebinds its name to
//!   127.0.0.1 (DNS rebinding) sends its own name and is refused;
//! - refuses a `POST` from another origin (`Origin` or `Sec-Fetch-Site` naming another site):
//!   a page cannot start the search blind, as a cross-site form post;
//! - forwards only the Explorer's own paths, with no request body, after reading a bounded
//!   request head within a time limit, and serves a bounded number of connections at once.
//!
//! The search itself is bounded: the Explorer's checker stops after `--max-states` states
//! (default one million), so even a request that reaches the inner port directly cannot start
//! unbounded work. A local user can reach the inner port as they can any local port: the
//! Explorer is for one person's machine, not for a shared host.

use crate::check::ModelArgs;
use crate::output::{self, Error, Format};
use resumable_model::world::World;
use resumable_model::{Kernel, Lifecycle};
use stateright::Model;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::{Duration, Instant};

mod front;
mod learn;

/// Arguments of `explore`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The subject and its world.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The port on 127.0.0.1 to serve the Explorer on.
    #[arg(long, default_value_t = 3000)]
    pub port: u16,
    /// The most states the Explorer's search may generate ("run to completion" stops there).
    #[arg(long, default_value_t = 1_000_000, value_name = "N")]
    pub max_states: usize,
}

/// Runs the command: serves until the process is interrupted, or returns 2.
pub fn run(args: &Args) -> ExitCode {
    let setup = match args.model.setup(None) {
        Ok(setup) => setup,
        Err(message) => return output::fail(Format::Text, &Error::new("misuse", message)),
    };
    let served = match setup.lifecycle {
        None => serve(Kernel, &setup, args),
        Some(reference) => serve(reference, &setup, args),
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => output::fail(Format::Text, &Error::new("cannot_serve", message)),
    }
}

fn serve<L: Lifecycle>(
    lifecycle: L,
    setup: &crate::check::Setup,
    args: &Args,
) -> Result<(), String> {
    let world = World::new(lifecycle, setup.config).map_err(|e| e.to_string())?;
    // Loopback only: the Explorer has no authentication.
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
    let listener =
        TcpListener::bind(address).map_err(|e| format!("cannot serve on {address}: {e}"))?;
    let inner = inner_address()?;
    let max_states = args.max_states;
    let learner = world.clone();
    let local: front::Local = std::sync::Arc::new(move |path| learn::answer(&learner, path));
    std::thread::spawn(move || {
        // stateright's server blocks for good; it panics if it cannot bind (a process took the
        // port in between), which `wait_for` below reports.
        world.checker().target_state_count(max_states).serve(inner);
    });
    wait_for(inner)?;
    // The announcement goes to stderr; if no one can read it, serving goes on all the same.
    let _ = writeln!(
        std::io::stderr(),
        "exploring {} in {}\nExplorer on http://{address}/ (at most {max_states} states; \
         interrupt to stop)",
        setup.name,
        crate::check::describe(&setup.config)
    );
    front::serve(listener, address.port(), inner, local);
    Ok(())
}

/// A free port on 127.0.0.1 for stateright's own server.
fn inner_address() -> Result<SocketAddr, String> {
    let probe = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| format!("cannot find a free loopback port: {e}"))?;
    probe
        .local_addr()
        .map_err(|e| format!("cannot find a free loopback port: {e}"))
}

/// Waits until stateright's server accepts connections, for ten seconds at most.
fn wait_for(inner: SocketAddr) -> Result<(), String> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        if TcpStream::connect_timeout(&inner, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!("the Explorer did not start on {inner}"))
}
