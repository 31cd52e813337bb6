//! pprof → OTLP → pprof, on the dd-trace-go fixtures and on hand-made profiles with every
//! field pprof has: what comes back is the same profile, but for the ids (numbered afresh)
//! and identical locations, functions and mappings written once.

use pprof::proto as pp;
use prost::Message;

use crate::Error;
use crate::export::{Export, Source};
use crate::import::import;
use crate::proto::ExportProfilesServiceRequest;

/// A profile as text without its ids: everything a report or `go tool pprof -raw` shows.
fn canonical(p: &pp::Profile) -> Vec<String> {
    let s = |i: i64| p.string_table.get(i as usize).cloned().unwrap_or_default();
    let func = |id: u64| {
        p.function
            .iter()
            .find(|f| f.id == id)
            .map(|f| {
                format!(
                    "{}|{}|{}|{}",
                    s(f.name),
                    s(f.system_name),
                    s(f.filename),
                    f.start_line
                )
            })
            .unwrap_or_else(|| "-".into())
    };
    let mapping = |id: u64| {
        p.mapping
            .iter()
            .find(|m| m.id == id)
            .map(|m| {
                format!(
                    "{:x}-{:x}@{:x} {} {} {}{}{}{}",
                    m.memory_start,
                    m.memory_limit,
                    m.file_offset,
                    s(m.filename),
                    s(m.build_id),
                    m.has_functions,
                    m.has_filenames,
                    m.has_line_numbers,
                    m.has_inline_frames
                )
            })
            .unwrap_or_else(|| "-".into())
    };
    let loc = |id: u64| {
        p.location
            .iter()
            .find(|l| l.id == id)
            .map(|l| {
                let lines: Vec<String> = l
                    .line
                    .iter()
                    .map(|ln| format!("{}:{}:{}", func(ln.function_id), ln.line, ln.column))
                    .collect();
                format!(
                    "[{} {:x} {} {}]",
                    mapping(l.mapping_id),
                    l.address,
                    l.is_folded,
                    lines.join(";")
                )
            })
            .unwrap_or_else(|| "?".into())
    };
    let vt = |v: &pp::ValueType| format!("{}/{}", s(v.r#type), s(v.unit));
    let mut out = vec![
        format!(
            "types {:?}",
            p.sample_type.iter().map(vt).collect::<Vec<_>>()
        ),
        format!("period {:?} {}", p.period_type.as_ref().map(vt), p.period),
        format!("time {} {}", p.time_nanos, p.duration_nanos),
        format!(
            "extra {:?} {} {} {} {}",
            p.comment.iter().map(|c| s(*c)).collect::<Vec<_>>(),
            s(p.drop_frames),
            s(p.keep_frames),
            s(p.default_sample_type),
            s(p.doc_url)
        ),
    ];
    for smp in &p.sample {
        let labels: Vec<String> = smp
            .label
            .iter()
            .map(|l| {
                if l.str != 0 {
                    format!("{}={}", s(l.key), s(l.str))
                } else {
                    format!("{}={}{}", s(l.key), l.num, s(l.num_unit))
                }
            })
            .collect();
        let stack: Vec<String> = smp.location_id.iter().map(|&id| loc(id)).collect();
        out.push(format!(
            "{:?} {} {}",
            smp.value,
            labels.join(","),
            stack.join(" ")
        ));
    }
    out
}

fn fixture(name: &str) -> (Vec<u8>, pp::Profile) {
    let path = format!(
        "{}/../../tests/fixtures/dd-trace-go-upload/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let bytes = std::fs::read(&path).expect("fixture");
    let p = pprof::decode(&bytes, &pprof::Limits::local()).expect("decodes");
    (bytes, p)
}

fn round_trip(
    profiles: &[pp::Profile],
) -> (ExportProfilesServiceRequest, Vec<crate::import::Imported>) {
    let resource = vec![("service.name".to_string(), "api".to_string())];
    let mut e = Export::new();
    for p in profiles {
        e.add(
            p,
            &Source {
                resource: &resource,
                original: None,
            },
        );
    }
    let req = e.finish();
    let wire = req.encode_to_vec();
    crate::scan::scan(&wire, u64::MAX, u64::MAX).expect("scans");
    let back = ExportProfilesServiceRequest::decode(wire.as_slice()).expect("decodes");
    assert_eq!(back, req);
    let imported = import(&back).expect("imports");
    (req, imported)
}

#[test]
fn dd_trace_go_profiles_cross_twice_unchanged() {
    let names = [
        "cpu.pprof",
        "delta-heap.pprof",
        "delta-block.pprof",
        "delta-mutex.pprof",
        "goroutines.pprof",
    ];
    let profiles: Vec<pp::Profile> = names.iter().map(|n| fixture(n).1).collect();
    let (req, imported) = round_trip(&profiles);
    // One resource, one scope per pprof profile, one OTLP profile per sample type.
    assert_eq!(req.resource_profiles.len(), 1);
    assert_eq!(req.resource_profiles[0].scope_profiles.len(), names.len());
    for (sp, p) in req.resource_profiles[0]
        .scope_profiles
        .iter()
        .zip(&profiles)
    {
        assert_eq!(sp.profiles.len(), p.sample_type.len());
    }
    assert_eq!(imported.len(), names.len());
    for ((name, p), got) in names.iter().zip(&profiles).zip(&imported) {
        assert_eq!(canonical(&got.profile), canonical(p), "{name}");
        assert_eq!(
            got.resource,
            vec![("service.name".to_string(), "api".to_string())]
        );
        assert_eq!(got.scope, "agentprof");
        assert!(got.original.is_none());
    }
}

/// Every pprof field, labels of both kinds, a folded location, a mapping's flags and build
/// id, comments and the frames regexes.
fn everything() -> pp::Profile {
    let strings = [
        "",
        "cpu",
        "nanoseconds",
        "samples",
        "count",
        "main",
        "main.go",
        "runtime.main",
        "/bin/app",
        "abc123",
        "span id",
        "42",
        "bytes",
        "size",
        "a comment",
        "^runtime\\.",
        "keep",
        "https://doc",
    ];
    let st = |s: &str| strings.iter().position(|x| *x == s).expect("string") as i64;
    pp::Profile {
        sample_type: vec![
            pp::ValueType {
                r#type: st("samples"),
                unit: st("count"),
            },
            pp::ValueType {
                r#type: st("cpu"),
                unit: st("nanoseconds"),
            },
        ],
        sample: vec![
            pp::Sample {
                location_id: vec![2, 1],
                value: vec![3, 30_000_000],
                label: vec![
                    pp::Label {
                        key: st("span id"),
                        str: st("42"),
                        ..Default::default()
                    },
                    pp::Label {
                        key: st("size"),
                        num: 512,
                        num_unit: st("bytes"),
                        ..Default::default()
                    },
                ],
            },
            pp::Sample {
                location_id: vec![1],
                value: vec![0, 0],
                label: vec![],
            },
            pp::Sample {
                location_id: vec![2, 1],
                value: vec![1, 10_000_000],
                label: vec![],
            },
        ],
        mapping: vec![pp::Mapping {
            id: 7,
            memory_start: 0x400000,
            memory_limit: 0x800000,
            file_offset: 0x1000,
            filename: st("/bin/app"),
            build_id: st("abc123"),
            has_functions: true,
            has_filenames: true,
            has_line_numbers: false,
            has_inline_frames: true,
        }],
        location: vec![
            pp::Location {
                id: 1,
                mapping_id: 7,
                address: 0x401000,
                line: vec![pp::Line {
                    function_id: 9,
                    line: 10,
                    column: 2,
                }],
                is_folded: false,
            },
            pp::Location {
                id: 2,
                mapping_id: 7,
                address: 0x402000,
                line: vec![
                    pp::Line {
                        function_id: 8,
                        line: 20,
                        column: 0,
                    },
                    pp::Line {
                        function_id: 9,
                        line: 11,
                        column: 0,
                    },
                ],
                is_folded: true,
            },
        ],
        function: vec![
            pp::Function {
                id: 8,
                name: st("main"),
                system_name: st("main"),
                filename: st("main.go"),
                start_line: 5,
            },
            pp::Function {
                id: 9,
                name: st("runtime.main"),
                system_name: st("runtime.main"),
                filename: st("main.go"),
                start_line: 1,
            },
        ],
        string_table: strings.iter().map(|s| s.to_string()).collect(),
        drop_frames: st("^runtime\\."),
        keep_frames: st("keep"),
        time_nanos: 1_700_000_000_000_000_000,
        duration_nanos: 10_000_000_000,
        period_type: Some(pp::ValueType {
            r#type: st("cpu"),
            unit: st("nanoseconds"),
        }),
        period: 10_000_000,
        comment: vec![st("a comment")],
        default_sample_type: st("cpu"),
        doc_url: st("https://doc"),
    }
}

#[test]
fn every_pprof_field_crosses() {
    let p = everything();
    let (req, imported) = round_trip(std::slice::from_ref(&p));
    assert_eq!(imported.len(), 1);
    assert_eq!(canonical(&imported[0].profile), canonical(&p));
    // Labels became attributes; the int one keeps its unit.
    let d = req.dictionary.as_ref().expect("dictionary");
    let size = d
        .attribute_table
        .iter()
        .find(|a| d.string_table[a.key_strindex as usize] == "size")
        .expect("size attribute");
    assert_eq!(d.string_table[size.unit_strindex as usize], "bytes");
    // Entry 0 of every table is its zero value.
    assert_eq!(d.string_table[0], "");
    assert_eq!(d.stack_table[0], Default::default());
    assert_eq!(d.location_table[0], Default::default());
    assert_eq!(d.function_table[0], Default::default());
    assert_eq!(d.mapping_table[0], Default::default());
    assert_eq!(d.attribute_table[0], Default::default());
}

#[test]
fn the_original_rides_on_the_first_profile_when_asked() {
    let (bytes, p) = fixture("cpu.pprof");
    let mut e = Export::new();
    e.add(
        &p,
        &Source {
            resource: &[],
            original: Some(&bytes),
        },
    );
    let req = e.finish();
    let profiles = &req.resource_profiles[0].scope_profiles[0].profiles;
    assert_eq!(profiles[0].original_payload, bytes);
    assert_eq!(profiles[0].original_payload_format, "pprof");
    assert!(profiles[1..].iter().all(|x| x.original_payload.is_empty()));
    let imported = import(&req).expect("imports");
    assert_eq!(
        imported[0].original.as_ref().map(|o| o.1.len()),
        Some(bytes.len())
    );
}

#[test]
fn indices_outside_their_tables_are_refused_with_where() {
    let (mut req, _) = round_trip(&[everything()]);
    req.resource_profiles[0].scope_profiles[0].profiles[0].samples[1].stack_index = 999;
    let e = import(&req).expect_err("out of range");
    let text = e.to_string();
    assert!(
        text.contains("resource 0, scope 0, profile 0, sample 1: stack index 999"),
        "{text}"
    );
    let (mut req, _) = round_trip(&[everything()]);
    if let Some(d) = req.dictionary.as_mut() {
        d.location_table[1].lines[0].function_index = -3;
    }
    assert!(
        import(&req)
            .expect_err("negative")
            .to_string()
            .contains("function index -3")
    );
}

#[test]
fn a_hostile_request_is_refused_before_it_is_decoded() {
    // A million empty samples in 2 MB: counted against the budget first.
    let mut profile = Vec::new();
    for _ in 0..1_000_000 {
        profile.extend_from_slice(&[0x12, 0x00]);
    }
    let mut scope = vec![0x12];
    pprof::proto::put_varint(&mut scope, profile.len() as u64);
    scope.extend_from_slice(&profile);
    let mut resource = vec![0x12];
    pprof::proto::put_varint(&mut resource, scope.len() as u64);
    resource.extend_from_slice(&scope);
    let mut req = vec![0x0a];
    pprof::proto::put_varint(&mut req, resource.len() as u64);
    req.extend_from_slice(&resource);
    let e = crate::scan::scan(&req, 100_000, u64::MAX).expect_err("budget");
    assert_eq!(e, Error::Fields(100_000));
    let e = crate::scan::scan(&req, u64::MAX, 16 << 20).expect_err("memory");
    assert!(matches!(e, Error::Memory { .. }), "{e}");
    assert!(crate::scan::scan(&req[..req.len() - 1], u64::MAX, u64::MAX).is_err());
}
