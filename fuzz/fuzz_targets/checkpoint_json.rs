//! Checkpoint JSON and anchor files: any bytes are decoded without a panic; a checkpoint that
//! decodes has no repeated key, verifies, and decodes again to itself after re-encoding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resumable_audit::Anchor;
use resumable_audit::json::decode_checkpoint;
use resumable_kernel::checkpoint::Decoded;

fuzz_target!(|data: &[u8]| {
    let _ = Anchor::from_json(data);
    if let Ok(Decoded::Current(cp)) = decode_checkpoint(data) {
        assert!(cp.verify().is_ok());
        let again = serde_json::to_vec(&cp).expect("a checkpoint serialises");
        assert_eq!(decode_checkpoint(&again), Ok(Decoded::Current(cp)));
    }
});
