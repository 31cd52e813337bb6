//! A profile whose flamegraph is large, shared by tests/cli/ui_range.rs and
//! examples/ui_bench.rs.

/// A CPU profile of 113,430 distinct frames each wide enough for inferno to draw (0.1 % of
/// the total): 900 stacks 126 calls deep (a deep recursion's or a framework's), all but
/// their first frame on a path of their own, of 20,000 functions with long package paths.
pub fn large_profile() -> Vec<u8> {
    use agentprof::pprof::proto::{Function, Line, Location, Profile, Sample, ValueType};
    use prost::Message;
    let mut p = Profile {
        string_table: vec![
            String::new(),
            "samples".into(),
            "count".into(),
            "cpu".into(),
            "nanoseconds".into(),
        ],
        sample_type: vec![
            ValueType { r#type: 1, unit: 2 },
            ValueType { r#type: 3, unit: 4 },
        ],
        period_type: Some(ValueType { r#type: 3, unit: 4 }),
        period: 10_000_000,
        duration_nanos: 60_000_000_000,
        ..Profile::default()
    };
    const FUNCS: u64 = 20_000;
    for f in 0..FUNCS {
        p.string_table.push(format!(
            "github.com/acme/checkout/internal/pkg{}.(*Handler{}).Serve{}",
            f % 97,
            f % 13,
            f
        ));
        let name = p.string_table.len() as i64 - 1;
        p.function.push(Function {
            id: f + 1,
            name,
            system_name: name,
            ..Function::default()
        });
        p.location.push(Location {
            id: f + 1,
            line: vec![Line {
                function_id: f + 1,
                line: 10 + (f % 300) as i64,
                column: 0,
            }],
            ..Location::default()
        });
    }
    for i in 0..900u64 {
        let stack: Vec<u64> = (0..126u64)
            .map(|level| match level {
                0 => i % 30 + 1,
                _ => (i * 7919 + level * 104_729) % FUNCS + 1,
            })
            .rev()
            .collect();
        p.sample.push(Sample {
            location_id: stack,
            value: vec![1, 10_000_000],
            label: Vec::new(),
        });
    }
    p.encode_to_vec()
}
