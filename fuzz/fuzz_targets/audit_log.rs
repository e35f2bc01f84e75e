//! Audit logs: any bytes are validated with the examples' key and without a key, without a
//! panic; and the key only adds checks: a log that conforms under the key conforms without it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resumable_audit::{self as audit, sample, Options};

fuzz_target!(|data: &[u8]| {
    let keyed = Options {
        key: Some(sample::key()),
        ..Options::default()
    };
    let with_key = audit::validate(data, &keyed);
    let without = audit::validate(data, &Options::default());
    if with_key.is_ok() {
        assert!(
            without.is_ok(),
            "conforms with the key but not without: {without:?}"
        );
    }
    let _ = audit::report_json("fuzz", &with_key);
    let _ = audit::report_text("fuzz", &without);
});
