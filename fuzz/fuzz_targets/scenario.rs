//! Scenarios: any bytes are parsed (whole, and streamed line by line, which must agree) and,
//! when they parse, replayed through the kernel, without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resumable_conformance::{scenario, trace};

fuzz_target!(|data: &[u8]| {
    let whole = scenario::parse(data);
    // The streaming reader is what `replay` uses: it must see the same scenario.
    let mut reader = scenario::Reader::new(data);
    let streamed = reader.header().and_then(|(header, header_line)| {
        let mut steps = Vec::new();
        while let Some(step) = reader.next_step()? {
            steps.push(step);
        }
        if steps.is_empty() {
            return Err(scenario::no_inputs(header_line));
        }
        Ok(scenario::Scenario {
            header,
            header_line,
            steps,
        })
    });
    assert_eq!(whole, streamed);
    if let Ok(s) = whole {
        let _ = trace::replay(&s).map(|t| (t.to_text(), t.to_json_lines()));
    }
});
