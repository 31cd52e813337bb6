//! Top-N functions of a call profile, as pprof and pstats rank them: flat is the time a
//! function was the leaf, cum the time it was anywhere on the stack, counted once per sample
//! even when it recurses.

use std::collections::HashMap;

use serde::Serialize;

use super::CallProfile;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopRow {
    pub function: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    /// Samples with this function as the leaf.
    pub flat: u64,
    /// Samples with this function anywhere on the stack.
    pub cum: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopTable {
    pub total_samples: u64,
    /// Functions seen in all; the table shows the first `rows.len()`.
    pub functions: usize,
    pub rows: Vec<TopRow>,
}

/// The `n` functions with the highest cum (then flat, then name).
pub fn top(profile: &CallProfile, n: usize) -> TopTable {
    let mut by_name: HashMap<&str, TopRow> = HashMap::new();
    let mut seen: Vec<&str> = Vec::with_capacity(64);
    for sample in &profile.samples {
        seen.clear();
        for (depth, frame) in profile.stack(sample).enumerate() {
            let name = frame.function.as_str();
            let row = by_name.entry(name).or_insert_with(|| TopRow {
                function: frame.function.clone(),
                file: frame.file.clone(),
                line: frame.line,
                flat: 0,
                cum: 0,
            });
            if depth == 0 {
                row.flat += sample.count;
            }
            if !seen.contains(&name) {
                seen.push(name);
                row.cum += sample.count;
            }
        }
    }
    let functions = by_name.len();
    let mut rows: Vec<TopRow> = by_name.into_values().collect();
    rows.sort_by(|a, b| {
        b.cum
            .cmp(&a.cum)
            .then(b.flat.cmp(&a.flat))
            .then_with(|| a.function.cmp(&b.function))
    });
    rows.truncate(n);
    TopTable {
        total_samples: profile.total_samples(),
        functions,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Frame, ProfileKind};
    use super::*;

    fn frame(p: &mut CallProfile, name: &str) -> Vec<usize> {
        vec![p.intern(Frame {
            function: name.into(),
            ..Frame::default()
        })]
    }

    #[test]
    fn recursion_counts_once_in_cum_and_flat_is_the_leaf() {
        let mut p = CallProfile::new(ProfileKind::Cpu, 100, 0);
        let (main, fib, leaf) = (
            frame(&mut p, "main"),
            frame(&mut p, "fib"),
            frame(&mut p, "leaf"),
        );
        // main -> fib -> fib -> fib (leaf fib), 3 samples
        p.add(vec![fib.clone(), fib.clone(), fib.clone(), main.clone()], 3);
        // main -> fib -> leaf, 2 samples
        p.add(vec![leaf.clone(), fib.clone(), main.clone()], 2);
        // main alone, 1 sample
        p.add(vec![main.clone()], 1);
        let t = top(&p, 20);
        assert_eq!(t.total_samples, 6);
        let get = |n: &str| t.rows.iter().find(|r| r.function == n).unwrap().clone();
        assert_eq!((get("main").flat, get("main").cum), (1, 6));
        assert_eq!((get("fib").flat, get("fib").cum), (3, 5));
        assert_eq!((get("leaf").flat, get("leaf").cum), (2, 2));
        assert_eq!(t.rows[0].function, "main");
        assert_eq!(t.rows[1].function, "fib");
        assert_eq!(top(&p, 2).rows.len(), 2);
        assert_eq!(top(&p, 2).functions, 3);
    }

    #[test]
    fn inlined_frames_count_as_their_own_functions() {
        let mut p = CallProfile::new(ProfileKind::Cpu, 100, 0);
        let a = p.intern(Frame {
            function: "inner".into(),
            line: Some(3),
            ..Frame::default()
        });
        let b = p.intern(Frame {
            function: "outer".into(),
            line: Some(9),
            ..Frame::default()
        });
        p.add(vec![vec![a, b]], 4);
        let t = top(&p, 5);
        assert_eq!(
            t.rows
                .iter()
                .map(|r| (r.function.as_str(), r.flat, r.cum))
                .collect::<Vec<_>>(),
            vec![("inner", 4, 4), ("outer", 0, 4)]
        );
    }
}
