# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_agentprof_global_optspecs
    string join \n h/help V/version
end

function __fish_agentprof_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_agentprof_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_agentprof_using_subcommand
    set -l cmd (__fish_agentprof_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c agentprof -n "__fish_agentprof_needs_command" -s h -l help -d 'Print help'
complete -c agentprof -n "__fish_agentprof_needs_command" -s V -l version -d 'Print version'
complete -c agentprof -n "__fish_agentprof_needs_command" -f -a "check" -d 'Run one check once (or -t N times) and print its metrics and what each run cost'
complete -c agentprof -n "__fish_agentprof_needs_command" -f -a "start" -d 'Run every configured check on its interval: the agent, in developer mode with --profile'
complete -c agentprof -n "__fish_agentprof_needs_command" -f -a "list" -d 'List the checks agentprof can run, where their configuration comes from, and their instances'
complete -c agentprof -n "__fish_agentprof_needs_command" -f -a "top" -d 'Print a pprof profile\'s top functions, row for row as `go tool pprof -top`'
complete -c agentprof -n "__fish_agentprof_needs_command" -f -a "gate" -d 'CI performance gate: run a check N times and compare with a baseline; exit 1 on a regression'
complete -c agentprof -n "__fish_agentprof_needs_command" -f -a "pull" -d 'Pull pprof profiles from Go services\' net/http/pprof: files, top tables, deltas, uploads'
complete -c agentprof -n "__fish_agentprof_needs_command" -f -a "k8s" -d 'Discover the Go pprof endpoints of this node\'s pods and capture their profiles on a schedule and when they cross CPU or memory thresholds (run as a DaemonSet)'
complete -c agentprof -n "__fish_agentprof_needs_command" -f -a "receive" -d 'Receive the uploads of dd-trace profilers (Go, Python, Java…) on DataKit\'s port and path, Pyroscope\'s SDKs (/ingest, push) and OTLP profiles (/v1development/profiles): each stored under <out>/<service>/, listed in uploads.jsonl, printed'
complete -c agentprof -n "__fish_agentprof_needs_command" -f -a "ui" -d 'A local web page over the profiles agentprof wrote or received: lists with the cause of each capture, top tables, flamegraphs and comparisons (read-only, offline)'
complete -c agentprof -n "__fish_agentprof_needs_command" -f -a "diff" -d 'Compare two pprof profiles: per function the change of flat and cum, biggest first'
complete -c agentprof -n "__fish_agentprof_needs_command" -f -a "delta" -d 'The delta of two snapshots of a cumulative profile (heap, allocs, mutex, block), as pull makes it'
complete -c agentprof -n "__fish_agentprof_needs_command" -f -a "flamegraph" -d 'Draw a pprof profile as a flamegraph (SVG)'
complete -c agentprof -n "__fish_agentprof_needs_command" -f -a "completions" -d 'Print a shell completion script to stdout'
complete -c agentprof -n "__fish_agentprof_needs_command" -f -a "man" -d 'Write the man pages (agentprof.1 and one page per subcommand)'
complete -c agentprof -n "__fish_agentprof_needs_command" -f -a "init" -d 'Write the example configurations (conf.d/*.yaml.example, agentprof.yaml.example) and the plugin checks agentprof ships (checks/) into DIR, for an installed binary'
complete -c agentprof -n "__fish_agentprof_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l profile -d 'Profile the runs and print the top calls by cumulative time. Built-in and Python checks are sampled (Python: each thread\'s stack, wall and CPU time, read from outside the worker where the interpreter allows); `--profile=cprofile` traces a Python check with cProfile instead (exact call counts, slower calls)' -r -f -a "sample\t'Sampled stacks, as py-spy takes them (the default)'
cprofile\t'cProfile\'s tracing: exact call counts; every call costs more'"
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -s t -l times -l check-times -d 'Run the check N times, 1 to 1000000 (rates and deltas need at least two runs)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -s d -l delay -d 'Wait this long after the runs before the report (as `agent check -d`, whose aggregator takes in what a run sent in the meantime; agentprof\'s takes it in as the run returns, so this is only a wait)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l pause -d 'Pause between runs (e.g. 250, 500ms, 2s; a bare number is milliseconds)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l top -d 'Rows in the profile\'s top table' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l frequency -d 'Sampling frequency of the profile, in Hz [default: 4999 for built-in checks, whose runs take microseconds; 1000 for Python checks]' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l flamegraph -d 'Write a flamegraph (SVG) of the sampled runs; implies --profile' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l pprof -d 'Write the sampled runs as a gzip pprof file for `go tool pprof`; implies --profile' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l pstats -d 'Write a Python check\'s cProfile statistics as a pstats dump (python -m pstats, snakeviz); implies --profile=cprofile' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -s l -l log-level -d 'Keep the check\'s own log records from this level up with each run, shown in the table and in --json (as `agent check -l`; default warning; off keeps none): a Python check\'s logger, a built-in\'s own records, an exec plugin\'s stderr lines (INFO unless a line starts with a level word)' -r -f -a "trace\t''
debug\t''
info\t''
warn\t''
warning\t''
error\t''
critical\t''
off\t''"
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l run-timeout -d 'Each run\'s deadline (e.g. 5s, 500ms; a bare number is seconds), for every instance, over the configuration\'s run_timeout (default 30s); an instance\'s own `timeout` is the check\'s' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l log -d 'Append the collector.log block of every run to FILE (overrides log_file)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l m-frames -d 'With --memory: stack frames kept per allocation (tracemalloc\'s nframe; default 1)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l m-limit -d 'With --memory: lines shown per run and for the growth (default 10)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l m-sort -d 'With --memory: group allocations by line, by file, or by whole traceback' -r -f -a "lineno\t''
filename\t''
traceback\t''"
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l m-filters -d 'With --memory: only allocations made in files matching these comma-separated glob patterns, by the allocating frame (e.g. \'*/datadog_checks/*\')' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l instance -d 'Run only instance N of the check\'s configuration (0-based, as in instances[N])' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l instance-filter -d 'Run only the instances this jq expression selects, as `agent check --instance-filter`: paths, comparisons, and/or, `|`, `not`, `select(…)` (e.g. \'.port == 8080\', \'select(.tls.verify | not)\'); an instance is run when the output is neither false nor null' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -s b -l breakpoint -d 'Stop a Python check in pdb at this line of its file, on the terminal (as `agent check -b`): a line of its check() method, 0 for the method\'s first statement, -1 for its last line; the run has no deadline then' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l discovery-timeout -d 'Accepted for `agent check` users; agentprof has no Autodiscovery (it reads conf.d)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l discovery-retry-interval -d 'Accepted for `agent check` users; agentprof has no Autodiscovery (it reads conf.d)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l discovery-min-instances -d 'Accepted for `agent check` users; agentprof has no Autodiscovery (it reads conf.d)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l config -d 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l confd -d 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l checks -d 'Directory of plugin checks' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l python -d 'Python interpreter for Python checks (a virtualenv\'s python works)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -s r -l rate -l check-rate -d 'Run twice, one second apart, so rates and deltas have a value (as `agent check -r`, this overrides --check-times and --pause)'
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l json -d 'Print one JSON document (schema in docs/json.md)'
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l table -d 'Draw bordered tables instead of plain aligned columns'
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l profile-first-run -d 'Profile a Python check\'s first run too (by default one warm-up run of each instance, dominated by first imports, comes before the runs and is left out of the profile)'
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -s m -l memory -l profile-memory -d 'Trace a Python check\'s allocations (tracemalloc): top allocating lines per run, and with --times the lines that grew most from the first run to the last'
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -l flare -d 'Also write the report, with secrets scrubbed, to a file for a support case (as `agent check --flare`): checks/check_NAME_TIMESTAMP.log under the log_file\'s directory, else under agentprof\'s state directory'
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentprof -n "__fish_agentprof_using_subcommand check" -s V -l version -d 'Print version'
complete -c agentprof -n "__fish_agentprof_using_subcommand start" -l duration -d 'Stop by itself after this long (e.g. 30s, 10m)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand start" -l log -d 'Write collector.log here (overrides log_file; - is stdout)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand start" -l metrics-listen -d 'Serve the agent\'s own figures as OpenMetrics on http://ADDR/metrics (e.g. 127.0.0.1:9494)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand start" -l config -d 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand start" -l confd -d 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand start" -l checks -d 'Directory of plugin checks' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand start" -l python -d 'Python interpreter for Python checks (a virtualenv\'s python works)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand start" -l profile -d 'Developer mode: log each run\'s memory before and after and the agent\'s own figures (also `developer_mode: true` in agentprof.yaml)'
complete -c agentprof -n "__fish_agentprof_using_subcommand start" -l json -d 'At stop, print the summary as one JSON document (metrics then go only to the configured forwarders)'
complete -c agentprof -n "__fish_agentprof_using_subcommand start" -s h -l help -d 'Print help'
complete -c agentprof -n "__fish_agentprof_using_subcommand start" -s V -l version -d 'Print version'
complete -c agentprof -n "__fish_agentprof_using_subcommand list" -l config -d 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand list" -l confd -d 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand list" -l checks -d 'Directory of plugin checks' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand list" -l python -d 'Python interpreter for Python checks (a virtualenv\'s python works)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand list" -l json -d 'Print one JSON document'
complete -c agentprof -n "__fish_agentprof_using_subcommand list" -s h -l help -d 'Print help'
complete -c agentprof -n "__fish_agentprof_using_subcommand list" -s V -l version -d 'Print version'
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -l sample-index -d 'Which sample type to report: a name (alloc_space, inuse_space, contentions, delay, …) or an index; default: the profile\'s default sample type, else the last' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -s n -l nodes -d 'Show at most N rows (default: every node above 0.5% of the total)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -l node-fraction -d 'Leave out nodes whose cum is under this fraction of the total, as go tool pprof\'s -nodefraction (0 keeps every node)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -l focus -d 'Keep only samples with a frame matching RE, as go tool pprof -focus' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -l ignore -d 'Drop samples with a frame matching RE, as go tool pprof -ignore' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -l hide -d 'Take frames matching RE out of every stack, as go tool pprof -hide' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -l show -d 'Keep only frames matching RE in every stack, as go tool pprof -show' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -l peek -d 'Instead of the top table: each function matching RE with its callers above and its callees below, as go tool pprof -peek' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -l list -d 'Instead of the top table: the source lines of each function matching RE with their flat and cum, as go tool pprof -list' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -l source-path -d 'With --list: where to look for source files (\':\'-separated; default: the working directory and its parents), as go tool pprof -source_path' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -l trim-path -d 'With --list: path prefixes to take off the profile\'s file names before looking for them (\':\'-separated), as go tool pprof -trim_path' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -l max-size-mb -d 'Largest file accepted, compressed or not (MiB)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -l max-decompressed-mb -d 'Largest decompressed profile accepted (MiB); checked while inflating' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -l max-fields -d 'Most protobuf fields and packed elements accepted, counted before decoding' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -l max-memory-mb -d 'Most memory decoding may take (MiB), estimated from the profile\'s samples and elements before anything is allocated' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -l cum -d 'Sort by cumulative value instead of flat'
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -l json -d 'Print one JSON document (see docs/json.md)'
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -s h -l help -d 'Print help'
complete -c agentprof -n "__fish_agentprof_using_subcommand top" -s V -l version -d 'Print version'
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l baseline -d 'The baseline file: written by --update-baseline, compared with otherwise' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l against -d 'A/B in this job: the baseline version\'s checks directory (DIR), or the checks directory as git revision REV has it, run in interleaved rounds with this one' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l measure -d 'What the verdict on cost rests on: cpu (default), wall, or instructions (counted by the CPU\'s counter where the kernel offers one, else by valgrind; deterministic)' -r -f -a "cpu\t'CPU time of each run (the default)'
wall\t'Wall time of each run (checks that wait on the network or disk)'
instructions\t'User-space instructions of each run, counted: deterministic'"
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l times -d 'Timed runs, spread evenly over the worker processes (8; more for a small --alpha), each after a warm-up run: rounded up to a multiple of them, said when it is. With --against, per side and round, at least 5 [default: 10]' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l compare -d 'Compare two reports made elsewhere (baseline files, `--format json` outputs or `agentprof check --json` reports)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l gate-config -d 'Thresholds from this YAML file (the keys of a check conf\'s `gate:` section); flags override it, it overrides the check conf\'s `gate:` section' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l threshold -d 'A slowdown under this percentage is never a regression [default: 10 against a baseline file, 5 with --against, 2 for instructions]' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l alpha -d 'Significance level of the timing test (one-sided: Mann-Whitney U against a baseline file, Wilcoxon signed-rank with --against) [default: 0.01]' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l min-slowdown-us -d 'A slowdown of fewer microseconds per run is never a regression [default: 50]' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l rss-slope-kib -d 'RSS growth per run (KiB, least-squares slope) that counts as a leak [default: 512]' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l peak-rss-pct -d 'Peak RSS growth over the baseline (percent, and at least 1 MiB) that fails [default: 25]' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l calls-pct -d 'Growth of Python calls per run, in total or of a top function, that fails [default: 1]' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l alloc-pct -d 'With --memory: growth of traced bytes per run (peak and kept; and at least 1 KiB) that fails [default: 1]' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l series-pct -d 'Growth of the metric series a run emits that fails [default: 0]' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l counter -d 'With --measure instructions: what counts them [default: the CPU\'s counter where the kernel offers one, else valgrind; against a baseline, what counted it]' -r -f -a "perf\t'The CPU\'s counter, through perf_event_open'
valgrind\t'valgrind\'s callgrind: slower, and the report then lists the functions whose count changed'"
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l max-time -d 'With --against: when the planned rounds cannot tell (the interval straddles the threshold), rounds are added until they can, or until the A/B has taken this long (0: none added) [default: 60s]' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l cannot-tell -d 'What CANNOT TELL exits with: pass (0) or fail (4)' -r -f -a "pass\t'Exit 0: the verdict line, the Markdown report\'s heading and JUnit\'s `<skipped>` say it'
fail\t'Exit 4, its own code: the job fails (or a CI rule tells it from a regression)'"
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l flamegraph-diff -d 'Write a differential flamegraph of the baseline\'s and this run\'s stacks (red: more time per run, blue: less); cProfile stacks for Python checks, sampled for built-ins; with --measure instructions counted by valgrind, instructions per run from callgrind\'s call graph, for every kind of check' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l format -d 'Output format' -r -f -a "table\t''
json\t''
markdown\t''
junit\t''"
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -s o -l output -d 'Write the report here instead of stdout' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l instance -d 'Run only instances[N] (0-based; default 0)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l config -d 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l confd -d 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l checks -d 'Directory of plugin checks' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l python -d 'Python interpreter for Python checks (a virtualenv\'s python works)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l update-baseline -d 'Write the baseline from this run and exit 0'
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l strict -d 'A metric the baseline had and this run does not fails the gate, and so do more Python calls in a change the gated measure found faster (default: warnings)'
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l compat-base -d 'Python checks: when the interpreter has no importable datadog_checks_base, gate the check on agentprof\'s compatible AgentCheck (default: refused, exit 2)'
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -l memory -d 'Python checks: trace allocations (tracemalloc) and compare the bytes each run allocates and keeps; the baseline must be made with it too'
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentprof -n "__fish_agentprof_using_subcommand gate" -s V -l version -d 'Print version'
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l types -d 'Profile types, comma-separated: cpu,heap,allocs,goroutine,mutex,block,threadcreate' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l profile-duration -d 'How long the CPU profile records (its seconds=)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l interval -d 'Collect again every D (at least 10s); runs until SIGINT/SIGTERM unless --count is given' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l count -d 'Collect N times, --interval apart (default 60s)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l http-timeout -d 'Timeout of one request; must exceed the profile duration (default: duration + 10s)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l out -d 'Write <DIR>/<service>/<type>-<time>.pb.gz (and delta-<type>-… for cumulative types)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l top -d 'Print each profile\'s top N functions (the delta when there is one)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l retention-mb -d 'Keep --out within N MiB: after each collection the oldest files are deleted first' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l retention-days -d 'Delete files under --out older than N days after each collection' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l service -d 'Service name (default: the URL\'s host)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l env -d 'Environment tag (env:)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l version -d 'Version tag (version:)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l tag -d 'A tag added to uploads and figures, k:v (repeatable)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l tls-ca -d 'CA certificate(s) (PEM) to trust for https targets' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l tls-cert -d 'Client certificate (PEM) for https targets that ask for one' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l tls-key -d 'The client certificate\'s private key (PEM)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l upload -d 'POST each collection here in dd-trace-go\'s format (DataKit: http://host:9529/profiling/v1/input)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l otlp -d 'Also send each collection as OTLP profiles to an OpenTelemetry Collector (http://host:4318; a URL without a path gets /v1development/profiles)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l otlp-header -d 'A header of every OTLP request, NAME=VALUE (repeatable; for credentials: never written to the spool)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l spool -d 'Where uploads that failed wait to be sent (default: $AGENTPROF_STATE_DIR or the XDG state dir)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l upload-timeout -d 'Longest wait for one upload request (--upload, --otlp), connecting included; a target that does not answer in time is retried, then the upload waits in the spool' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l body-size-limit-mb -d 'Largest response accepted (MiB); decompressed at most min(this, 8 MiB)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l delta-cache-mb -d 'Memory for delta baselines (MiB), least recently used evicted first' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l config -d 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l confd -d 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l once -d 'Collect once (the default without --interval)'
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l flamegraph -d 'Also write an SVG flamegraph of each profile next to it (needs --out)'
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l insecure-skip-verify -d 'Do not verify the target\'s certificate (not for production)'
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l otlp-original-payload -d 'Attach each pprof profile to its OTLP profiles as original_payload (larger requests)'
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -l json -d 'Print one JSON document per collection (see docs/json.md)'
complete -c agentprof -n "__fish_agentprof_using_subcommand pull" -s h -l help -d 'Print help'
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -l node -d 'This node\'s name (default: $NODE_NAME, from the downward API\'s spec.nodeName)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -l kubeconfig -d 'kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, else in-cluster)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -l context -d 'The kubeconfig\'s context to use (default: its current-context)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -l config -d 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -l confd -d 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -l out -d 'Write captures under DIR/<namespace>/<pod>/<container>/ and DIR/captures.jsonl (default: profile.yaml\'s out_dir)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -l upload -d 'POST each capture in dd-trace-go\'s format here (default: profile.yaml\'s upload_url)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -l otlp -d 'Also send each capture as OTLP profiles to an OpenTelemetry Collector (http://host:4318; a URL without a path gets /v1development/profiles; default: profile.yaml\'s otlp_url)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -l otlp-header -d 'A header of every OTLP request, NAME=VALUE (repeatable; for credentials: never written to the spool; default: profile.yaml\'s otlp_headers)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -l spool -d 'Where uploads that failed wait to be sent (default: $AGENTPROF_STATE_DIR or the XDG state dir)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -l upload-timeout -d 'Longest wait for one upload request (--upload, --otlp), connecting included; a target that does not answer in time is retried, then the capture waits in the spool' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -l metrics-listen -d 'Serve /metrics (OpenMetrics), /healthz and /readyz here, e.g. 0.0.0.0:9090' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -l duration -d 'Stop after D (default: run until SIGTERM or Ctrl-C)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -l otlp-original-payload -d 'Attach each pprof profile to its OTLP profiles as original_payload (larger requests; default: profile.yaml\'s otlp_original_payload)'
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -l json -d 'Print one JSON line per event (target found or removed, capture, skip) instead of text'
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -s h -l help -d 'Print help'
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -f -a "targets" -d 'Print once every pod on the node, the rule that matched, the endpoints that would be collected, and why each other pod or container is not a target'
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and not __fish_seen_subcommand_from targets help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and __fish_seen_subcommand_from targets" -l node -d 'This node\'s name (default: $NODE_NAME, from the downward API\'s spec.nodeName)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and __fish_seen_subcommand_from targets" -l kubeconfig -d 'kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, else in-cluster)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and __fish_seen_subcommand_from targets" -l context -d 'The kubeconfig\'s context to use (default: its current-context)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and __fish_seen_subcommand_from targets" -l config -d 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and __fish_seen_subcommand_from targets" -l confd -d 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and __fish_seen_subcommand_from targets" -l json -d 'Print one JSON document (see docs/json.md)'
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and __fish_seen_subcommand_from targets" -s h -l help -d 'Print help'
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and __fish_seen_subcommand_from help" -f -a "targets" -d 'Print once every pod on the node, the rule that matched, the endpoints that would be collected, and why each other pod or container is not a target'
complete -c agentprof -n "__fish_agentprof_using_subcommand k8s; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -l listen -d 'Address to listen on (default: agentprof.yaml\'s receive.listen, else 127.0.0.1:9529; 0.0.0.0:9529 to take uploads from other hosts)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -l out -d 'Store uploads under DIR/<service>/ and DIR/uploads.jsonl (default: receive.out_dir, else ./profiles)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -l queue -d 'The durable queue of uploads acknowledged and not yet stored (default: receive.queue_dir, else $AGENTPROF_STATE_DIR or the XDG state dir\'s receive-queue)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -l top -d 'Print each profile\'s top N functions with its upload' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -l forward -d 'Post each upload on to URL (DataKit, a Datadog Agent, Datadog\'s intake with agentprof.yaml\'s api_key) with agentprof.yaml\'s tags added (default: receive.forward_url)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -l forward-otlp -d 'Also send each upload\'s pprof profiles on as OTLP profiles to an OpenTelemetry Collector (http://host:4318; a URL without a path gets /v1development/profiles; default: receive.forward_otlp_url)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -l otlp-header -d 'A header of every OTLP request, NAME=VALUE (repeatable; for credentials: never written to the spool; default: receive.otlp_headers)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -l spool -d 'Where forwards that failed wait to be sent (default: receive.spool_dir, else $AGENTPROF_STATE_DIR or the XDG state dir\'s receive-spool; OTLP\'s in otlp/ under it)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -l forward-timeout -d 'Longest wait for one forward request (--forward, --forward-otlp), connecting included; a target that does not answer in time is retried from the spool (default: receive.forward_timeout_s, else 30s)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -l tls-cert -d 'Listen over TLS with this certificate chain (PEM; default: receive.tls_cert)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -l tls-key -d 'The certificate\'s private key (PEM; default: receive.tls_key)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -l metrics-listen -d 'Serve /metrics (OpenMetrics) and /healthz here, e.g. 127.0.0.1:9091' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -l duration -d 'Stop after D (default: run until SIGTERM or Ctrl-C)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -l config -d 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -l otlp-original-payload -d 'Attach each pprof profile to its OTLP profiles as original_payload (larger requests; default: receive.otlp_original_payload)'
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -l json -d 'Print one JSON line per upload (an uploads.jsonl line, see docs/json.md) instead of text'
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -s h -l help -d 'Print help'
complete -c agentprof -n "__fish_agentprof_using_subcommand receive" -s V -l version -d 'Print version'
complete -c agentprof -n "__fish_agentprof_using_subcommand ui" -l listen -d 'Address to serve the page on (default 127.0.0.1:7070; another host\'s address exposes the profiles to it, and agentprof says so)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand ui" -l allow-host -d 'A name the page is also reached by (NAME or NAME:PORT, repeatable): requests whose Host header is neither the listen address, localhost nor one of these get 421, so a web page on another site cannot read the profiles through DNS rebinding' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand ui" -l memory-mb -d 'Memory the profiles being read and kept may hold together (MiB): each file\'s bytes, its decompressed size and its decoded model are reserved before they are held, kept profiles given back least recently used first; without room a request gets 503' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand ui" -l keep-idle -d 'After D without a request, the profiles and flamegraphs kept are dropped and their memory given back to the system (the next request reads them again)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand ui" -l source-path -d 'A directory of source files the source view may read (repeatable): a profile\'s file names are looked for under it as go tool pprof -source_path does, and nothing outside these directories is read. Without one, a ui on a loopback address reads the source files (.go, .py, .rs and the like) at the paths the profile records, and a ui on another address shows the lines with samples and no text' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand ui" -l cache-dir -d 'Where the merges of each ended hour\'s captures (hourly rollups) are kept, so that a day\'s merge reads 24 profiles rather than every capture (default: $XDG_CACHE_HOME/agentprof/ui, else ~/.cache/agentprof/ui); the directories shown are only read' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand ui" -l duration -d 'Stop after D (default: run until SIGTERM or Ctrl-C)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand ui" -l config -d 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand ui" -l max-size-mb -d 'Largest file accepted, compressed or not (MiB)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand ui" -l max-decompressed-mb -d 'Largest decompressed profile accepted (MiB); checked while inflating' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand ui" -l max-fields -d 'Most protobuf fields and packed elements accepted, counted before decoding' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand ui" -l max-memory-mb -d 'Most memory decoding may take (MiB), estimated from the profile\'s samples and elements before anything is allocated' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand ui" -l open -d 'Open the page in the desktop\'s browser once it is served'
complete -c agentprof -n "__fish_agentprof_using_subcommand ui" -l no-cache -d 'Keep no hourly rollups: every merge reads its captures'
complete -c agentprof -n "__fish_agentprof_using_subcommand ui" -s h -l help -d 'Print help'
complete -c agentprof -n "__fish_agentprof_using_subcommand ui" -s V -l version -d 'Print version'
complete -c agentprof -n "__fish_agentprof_using_subcommand diff" -l sample-index -d 'Sample type to compare (name or index); default: the new profile\'s default' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand diff" -s n -l nodes -d 'Show at most N changed functions (default: 30 in the table, all in --json); 0 shows all' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand diff" -l flamegraph -d 'Also write a differential flamegraph here (red grew, blue shrank)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand diff" -l max-size-mb -d 'Largest file accepted, compressed or not (MiB)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand diff" -l max-decompressed-mb -d 'Largest decompressed profile accepted (MiB); checked while inflating' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand diff" -l max-fields -d 'Most protobuf fields and packed elements accepted, counted before decoding' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand diff" -l max-memory-mb -d 'Most memory decoding may take (MiB), estimated from the profile\'s samples and elements before anything is allocated' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand diff" -l cum -d 'Sort by the change of cum instead of flat'
complete -c agentprof -n "__fish_agentprof_using_subcommand diff" -l normalize -d 'Scale the base so both totals are equal (profiles of different lengths)'
complete -c agentprof -n "__fish_agentprof_using_subcommand diff" -l json -d 'Print one JSON document (see docs/json.md)'
complete -c agentprof -n "__fish_agentprof_using_subcommand diff" -s h -l help -d 'Print help'
complete -c agentprof -n "__fish_agentprof_using_subcommand diff" -s V -l version -d 'Print version'
complete -c agentprof -n "__fish_agentprof_using_subcommand delta" -s o -l output -d 'Where to write the delta profile (gzip)' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand delta" -l max-size-mb -d 'Largest file accepted, compressed or not (MiB)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand delta" -l max-decompressed-mb -d 'Largest decompressed profile accepted (MiB); checked while inflating' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand delta" -l max-fields -d 'Most protobuf fields and packed elements accepted, counted before decoding' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand delta" -l max-memory-mb -d 'Most memory decoding may take (MiB), estimated from the profile\'s samples and elements before anything is allocated' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand delta" -l json -d 'Print what was done as JSON (stacks, time taken)'
complete -c agentprof -n "__fish_agentprof_using_subcommand delta" -s h -l help -d 'Print help'
complete -c agentprof -n "__fish_agentprof_using_subcommand delta" -s V -l version -d 'Print version'
complete -c agentprof -n "__fish_agentprof_using_subcommand flamegraph" -s o -l output -d 'Where to write the SVG' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand flamegraph" -l sample-index -d 'Sample type to draw (name or index); default: the profile\'s default, else the last' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand flamegraph" -l title -d 'Title of the flamegraph (default: the file name and sample type)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand flamegraph" -l focus -d 'Keep only samples with a frame matching RE, as go tool pprof -focus' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand flamegraph" -l ignore -d 'Drop samples with a frame matching RE, as go tool pprof -ignore' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand flamegraph" -l hide -d 'Take frames matching RE out of every stack, as go tool pprof -hide' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand flamegraph" -l show -d 'Keep only frames matching RE in every stack, as go tool pprof -show' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand flamegraph" -l max-size-mb -d 'Largest file accepted, compressed or not (MiB)' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand flamegraph" -l max-decompressed-mb -d 'Largest decompressed profile accepted (MiB); checked while inflating' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand flamegraph" -l max-fields -d 'Most protobuf fields and packed elements accepted, counted before decoding' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand flamegraph" -l max-memory-mb -d 'Most memory decoding may take (MiB), estimated from the profile\'s samples and elements before anything is allocated' -r
complete -c agentprof -n "__fish_agentprof_using_subcommand flamegraph" -s h -l help -d 'Print help'
complete -c agentprof -n "__fish_agentprof_using_subcommand flamegraph" -s V -l version -d 'Print version'
complete -c agentprof -n "__fish_agentprof_using_subcommand completions" -s h -l help -d 'Print help'
complete -c agentprof -n "__fish_agentprof_using_subcommand completions" -s V -l version -d 'Print version'
complete -c agentprof -n "__fish_agentprof_using_subcommand man" -l out -d 'Directory to write the pages into' -r -F
complete -c agentprof -n "__fish_agentprof_using_subcommand man" -s h -l help -d 'Print help'
complete -c agentprof -n "__fish_agentprof_using_subcommand man" -s V -l version -d 'Print version'
complete -c agentprof -n "__fish_agentprof_using_subcommand init" -l force -d 'Overwrite files that differ from agentprof\'s (by default they are kept)'
complete -c agentprof -n "__fish_agentprof_using_subcommand init" -s h -l help -d 'Print help'
complete -c agentprof -n "__fish_agentprof_using_subcommand init" -s V -l version -d 'Print version'
complete -c agentprof -n "__fish_agentprof_using_subcommand help; and not __fish_seen_subcommand_from check start list top gate pull k8s receive ui diff delta flamegraph completions man init help" -f -a "check" -d 'Run one check once (or -t N times) and print its metrics and what each run cost'
complete -c agentprof -n "__fish_agentprof_using_subcommand help; and not __fish_seen_subcommand_from check start list top gate pull k8s receive ui diff delta flamegraph completions man init help" -f -a "start" -d 'Run every configured check on its interval: the agent, in developer mode with --profile'
complete -c agentprof -n "__fish_agentprof_using_subcommand help; and not __fish_seen_subcommand_from check start list top gate pull k8s receive ui diff delta flamegraph completions man init help" -f -a "list" -d 'List the checks agentprof can run, where their configuration comes from, and their instances'
complete -c agentprof -n "__fish_agentprof_using_subcommand help; and not __fish_seen_subcommand_from check start list top gate pull k8s receive ui diff delta flamegraph completions man init help" -f -a "top" -d 'Print a pprof profile\'s top functions, row for row as `go tool pprof -top`'
complete -c agentprof -n "__fish_agentprof_using_subcommand help; and not __fish_seen_subcommand_from check start list top gate pull k8s receive ui diff delta flamegraph completions man init help" -f -a "gate" -d 'CI performance gate: run a check N times and compare with a baseline; exit 1 on a regression'
complete -c agentprof -n "__fish_agentprof_using_subcommand help; and not __fish_seen_subcommand_from check start list top gate pull k8s receive ui diff delta flamegraph completions man init help" -f -a "pull" -d 'Pull pprof profiles from Go services\' net/http/pprof: files, top tables, deltas, uploads'
complete -c agentprof -n "__fish_agentprof_using_subcommand help; and not __fish_seen_subcommand_from check start list top gate pull k8s receive ui diff delta flamegraph completions man init help" -f -a "k8s" -d 'Discover the Go pprof endpoints of this node\'s pods and capture their profiles on a schedule and when they cross CPU or memory thresholds (run as a DaemonSet)'
complete -c agentprof -n "__fish_agentprof_using_subcommand help; and not __fish_seen_subcommand_from check start list top gate pull k8s receive ui diff delta flamegraph completions man init help" -f -a "receive" -d 'Receive the uploads of dd-trace profilers (Go, Python, Java…) on DataKit\'s port and path, Pyroscope\'s SDKs (/ingest, push) and OTLP profiles (/v1development/profiles): each stored under <out>/<service>/, listed in uploads.jsonl, printed'
complete -c agentprof -n "__fish_agentprof_using_subcommand help; and not __fish_seen_subcommand_from check start list top gate pull k8s receive ui diff delta flamegraph completions man init help" -f -a "ui" -d 'A local web page over the profiles agentprof wrote or received: lists with the cause of each capture, top tables, flamegraphs and comparisons (read-only, offline)'
complete -c agentprof -n "__fish_agentprof_using_subcommand help; and not __fish_seen_subcommand_from check start list top gate pull k8s receive ui diff delta flamegraph completions man init help" -f -a "diff" -d 'Compare two pprof profiles: per function the change of flat and cum, biggest first'
complete -c agentprof -n "__fish_agentprof_using_subcommand help; and not __fish_seen_subcommand_from check start list top gate pull k8s receive ui diff delta flamegraph completions man init help" -f -a "delta" -d 'The delta of two snapshots of a cumulative profile (heap, allocs, mutex, block), as pull makes it'
complete -c agentprof -n "__fish_agentprof_using_subcommand help; and not __fish_seen_subcommand_from check start list top gate pull k8s receive ui diff delta flamegraph completions man init help" -f -a "flamegraph" -d 'Draw a pprof profile as a flamegraph (SVG)'
complete -c agentprof -n "__fish_agentprof_using_subcommand help; and not __fish_seen_subcommand_from check start list top gate pull k8s receive ui diff delta flamegraph completions man init help" -f -a "completions" -d 'Print a shell completion script to stdout'
complete -c agentprof -n "__fish_agentprof_using_subcommand help; and not __fish_seen_subcommand_from check start list top gate pull k8s receive ui diff delta flamegraph completions man init help" -f -a "man" -d 'Write the man pages (agentprof.1 and one page per subcommand)'
complete -c agentprof -n "__fish_agentprof_using_subcommand help; and not __fish_seen_subcommand_from check start list top gate pull k8s receive ui diff delta flamegraph completions man init help" -f -a "init" -d 'Write the example configurations (conf.d/*.yaml.example, agentprof.yaml.example) and the plugin checks agentprof ships (checks/) into DIR, for an installed binary'
complete -c agentprof -n "__fish_agentprof_using_subcommand help; and not __fish_seen_subcommand_from check start list top gate pull k8s receive ui diff delta flamegraph completions man init help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentprof -n "__fish_agentprof_using_subcommand help; and __fish_seen_subcommand_from k8s" -f -a "targets" -d 'Print once every pod on the node, the rule that matched, the endpoints that would be collected, and why each other pod or container is not a target'
