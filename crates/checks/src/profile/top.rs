//! The top-N functions of a call profile, as `check --profile` and the agent show them:
//! flat is the time a function was the leaf, cum the time it was anywhere on the stack,
//! counted once per sample even when it recurses. [`call_top`] computes them
//! with the nodes and sums of every other top agentprof prints.

use serde::Serialize;

use super::CallProfile;
use crate::pprof::Pprof;
use crate::pprof::{TopOptions, top_nodes};

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

/// A call profile's `n` functions with the highest cum — `check --profile`'s and the
/// agent's top calls. They come from the same nodes, sums and order as `go tool pprof
/// -top -cum -nodefraction=0 -nodecount=N` of the profile agentprof writes (inlined frames
/// are functions of their own; recursion counts once in cum); file and line are where the
/// function was first seen.
pub fn call_top(profile: &CallProfile, n: usize) -> TopTable {
    let empty = |functions| TopTable {
        total_samples: profile.total_samples(),
        functions,
        rows: Vec::new(),
    };
    let Ok(p) = Pprof::new(super::to_proto(profile)) else {
        return empty(0);
    };
    let opts = TopOptions {
        sample_index: Some("samples".into()),
        cum: true,
        nodes: n,
        node_fraction: 0.0,
        edge_fraction: 0.0,
    };
    let Ok((nodes, functions)) = top_nodes(&p, &opts) else {
        return empty(0);
    };
    let rows = nodes
        .into_iter()
        .take(n)
        .map(|n| {
            let first = profile.frames.iter().find(|f| f.function == n.name);
            TopRow {
                file: first.and_then(|f| f.file.clone()),
                line: first.and_then(|f| f.line),
                function: n.name,
                flat: n.flat.unsigned_abs(),
                cum: n.cum.unsigned_abs(),
            }
        })
        .collect();
    TopTable {
        total_samples: profile.total_samples(),
        functions,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::call_top as top;
    use crate::profile::{CallProfile, Frame, ProfileKind};

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
