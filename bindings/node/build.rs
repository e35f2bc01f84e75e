//! Links the addon against Node-API as the host process provides it.

fn main() {
    napi_build::setup();
}
