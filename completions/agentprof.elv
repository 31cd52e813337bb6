
use builtin;
use str;

set edit:completion:arg-completer[agentprof] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'agentprof'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'agentprof'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand check 'Run one check once (or -t N times) and print its metrics and what each run cost'
            cand start 'Run every configured check on its interval: the agent, in developer mode with --profile'
            cand list 'List the checks agentprof can run, where their configuration comes from, and their instances'
            cand top 'Print a pprof profile''s top functions, row for row as `go tool pprof -top`'
            cand completions 'Print a shell completion script to stdout'
            cand man 'Write the man pages (agentprof.1 and one page per subcommand)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'agentprof;check'= {
            cand -t 'Run the check N times, 1 to 1000000 (rates and deltas need at least two runs)'
            cand --times 'Run the check N times, 1 to 1000000 (rates and deltas need at least two runs)'
            cand --pause 'Pause between runs (e.g. 250, 500ms, 2s; a bare number is milliseconds)'
            cand --top 'Rows in the profile''s top table'
            cand --frequency 'Sampling frequency of the CPU profile, in Hz'
            cand --flamegraph 'Write a flamegraph (SVG) of the sampled runs; implies --profile'
            cand --pprof 'Write the sampled runs as a gzip pprof file for `go tool pprof`; implies --profile'
            cand --pstats 'Write a Python check''s cProfile statistics as a pstats dump (python -m pstats, snakeviz); implies --profile'
            cand --log 'Append the collector.log block of every run to FILE (overrides log_file)'
            cand --instance 'Run only instance N of the check''s configuration (0-based, as in instances[N])'
            cand --config 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)'
            cand --confd 'Directory of check configurations (NAME.yaml or NAME.d/conf.yaml)'
            cand --checks 'Directory of plugin checks'
            cand --python 'Python interpreter for Python checks (a virtualenv''s python works)'
            cand --profile 'Sample the run''s CPU and print the top calls by cumulative time'
            cand -r 'Run twice, one second apart, so rates and deltas have a value'
            cand --rate 'Run twice, one second apart, so rates and deltas have a value'
            cand --json 'Print one JSON document (schema in docs/json.md)'
            cand --table 'Draw bordered tables instead of plain aligned columns'
            cand --memory 'Trace a Python check''s allocations (tracemalloc): top allocating lines per run, and with --times the lines that grew most from the first run to the last'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentprof;start'= {
            cand --duration 'Stop by itself after this long (e.g. 30s, 10m)'
            cand --log 'Write collector.log here (overrides log_file; - is stdout)'
            cand --metrics-listen 'Serve the agent''s own figures as OpenMetrics on http://ADDR/metrics (e.g. 127.0.0.1:9494)'
            cand --config 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)'
            cand --confd 'Directory of check configurations (NAME.yaml or NAME.d/conf.yaml)'
            cand --checks 'Directory of plugin checks'
            cand --python 'Python interpreter for Python checks (a virtualenv''s python works)'
            cand --profile 'Developer mode: log each run''s memory before and after and the agent''s own figures (also `developer_mode: true` in agentprof.yaml)'
            cand --json 'At stop, print the summary as one JSON document (metrics then go only to the configured forwarders)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentprof;list'= {
            cand --config 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)'
            cand --confd 'Directory of check configurations (NAME.yaml or NAME.d/conf.yaml)'
            cand --checks 'Directory of plugin checks'
            cand --python 'Python interpreter for Python checks (a virtualenv''s python works)'
            cand --json 'Print one JSON document'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentprof;top'= {
            cand --sample-index 'Which sample type to report: a name (alloc_space, inuse_space, contentions, delay, …) or an index; default: the profile''s default sample type, else the last'
            cand -n 'Show at most N rows (default: every node above 0.5% of the total)'
            cand --nodes 'Show at most N rows (default: every node above 0.5% of the total)'
            cand --max-size-mb 'Largest file accepted, compressed or not (MiB)'
            cand --max-decompressed-mb 'Largest decompressed profile accepted (MiB); checked while inflating'
            cand --max-fields 'Most protobuf fields and packed elements accepted, counted before decoding'
            cand --cum 'Sort by cumulative value instead of flat'
            cand --json 'Print one JSON document (see docs/json.md)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentprof;completions'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentprof;man'= {
            cand --out 'Directory to write the pages into'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentprof;help'= {
            cand check 'Run one check once (or -t N times) and print its metrics and what each run cost'
            cand start 'Run every configured check on its interval: the agent, in developer mode with --profile'
            cand list 'List the checks agentprof can run, where their configuration comes from, and their instances'
            cand top 'Print a pprof profile''s top functions, row for row as `go tool pprof -top`'
            cand completions 'Print a shell completion script to stdout'
            cand man 'Write the man pages (agentprof.1 and one page per subcommand)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'agentprof;help;check'= {
        }
        &'agentprof;help;start'= {
        }
        &'agentprof;help;list'= {
        }
        &'agentprof;help;top'= {
        }
        &'agentprof;help;completions'= {
        }
        &'agentprof;help;man'= {
        }
        &'agentprof;help;help'= {
        }
    ]
    $completions[$command]
}
