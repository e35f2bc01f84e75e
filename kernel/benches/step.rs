//! Placeholder until the step benchmark lands.
fn main() {}
