
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'agentprof' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'agentprof'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'agentprof' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Run one check once (or -t N times) and print its metrics and what each run cost')
            [CompletionResult]::new('start', 'start', [CompletionResultType]::ParameterValue, 'Run every configured check on its interval: the agent, in developer mode with --profile')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the checks agentprof can run, where their configuration comes from, and their instances')
            [CompletionResult]::new('top', 'top', [CompletionResultType]::ParameterValue, 'Print a pprof profile''s top functions, row for row as `go tool pprof -top`')
            [CompletionResult]::new('gate', 'gate', [CompletionResultType]::ParameterValue, 'CI performance gate: run a check N times and compare with a baseline; exit 1 on a regression')
            [CompletionResult]::new('pull', 'pull', [CompletionResultType]::ParameterValue, 'Pull pprof profiles from Go services'' net/http/pprof: files, top tables, deltas, uploads')
            [CompletionResult]::new('k8s', 'k8s', [CompletionResultType]::ParameterValue, 'Discover the Go pprof endpoints of this node''s pods and capture their profiles on a schedule and when they cross CPU or memory thresholds (run as a DaemonSet)')
            [CompletionResult]::new('receive', 'receive', [CompletionResultType]::ParameterValue, 'Receive the uploads of dd-trace profilers (Go, Python, Java…) on DataKit''s port and path, Pyroscope''s SDKs (/ingest, push) and OTLP profiles (/v1development/profiles): each stored under <out>/<service>/, listed in uploads.jsonl, printed')
            [CompletionResult]::new('ui', 'ui', [CompletionResultType]::ParameterValue, 'A local web page over the profiles agentprof wrote or received: lists with the cause of each capture, top tables, flamegraphs and comparisons (read-only, offline)')
            [CompletionResult]::new('diff', 'diff', [CompletionResultType]::ParameterValue, 'Compare two pprof profiles: per function the change of flat and cum, biggest first')
            [CompletionResult]::new('delta', 'delta', [CompletionResultType]::ParameterValue, 'The delta of two snapshots of a cumulative profile (heap, allocs, mutex, block), as pull makes it')
            [CompletionResult]::new('flamegraph', 'flamegraph', [CompletionResultType]::ParameterValue, 'Draw a pprof profile as a flamegraph (SVG)')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script to stdout')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Write the man pages (agentprof.1 and one page per subcommand)')
            [CompletionResult]::new('init', 'init', [CompletionResultType]::ParameterValue, 'Write the example configurations (conf.d/*.yaml.example, agentprof.yaml.example) and the plugin checks agentprof ships (checks/) into DIR, for an installed binary')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentprof;check' {
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile the runs and print the top calls by cumulative time. Built-in and Python checks are sampled (Python: each thread''s stack, wall and CPU time, read from outside the worker where the interpreter allows); `--profile=cprofile` traces a Python check with cProfile instead (exact call counts, slower calls)')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Run the check N times, 1 to 1000000 (rates and deltas need at least two runs)')
            [CompletionResult]::new('--times', '--times', [CompletionResultType]::ParameterName, 'Run the check N times, 1 to 1000000 (rates and deltas need at least two runs)')
            [CompletionResult]::new('--check-times', '--check-times', [CompletionResultType]::ParameterName, 'Run the check N times, 1 to 1000000 (rates and deltas need at least two runs)')
            [CompletionResult]::new('-d', '-d', [CompletionResultType]::ParameterName, 'Wait this long after the runs before the report (as `agent check -d`, whose aggregator takes in what a run sent in the meantime; agentprof''s takes it in as the run returns, so this is only a wait)')
            [CompletionResult]::new('--delay', '--delay', [CompletionResultType]::ParameterName, 'Wait this long after the runs before the report (as `agent check -d`, whose aggregator takes in what a run sent in the meantime; agentprof''s takes it in as the run returns, so this is only a wait)')
            [CompletionResult]::new('--pause', '--pause', [CompletionResultType]::ParameterName, 'Pause between runs (e.g. 250, 500ms, 2s; a bare number is milliseconds)')
            [CompletionResult]::new('--top', '--top', [CompletionResultType]::ParameterName, 'Rows in the profile''s top table')
            [CompletionResult]::new('--frequency', '--frequency', [CompletionResultType]::ParameterName, 'Sampling frequency of the profile, in Hz [default: 4999 for built-in checks, whose runs take microseconds; 1000 for Python checks]')
            [CompletionResult]::new('--flamegraph', '--flamegraph', [CompletionResultType]::ParameterName, 'Write a flamegraph (SVG) of the sampled runs; implies --profile')
            [CompletionResult]::new('--pprof', '--pprof', [CompletionResultType]::ParameterName, 'Write the sampled runs as a gzip pprof file for `go tool pprof`; implies --profile')
            [CompletionResult]::new('--pstats', '--pstats', [CompletionResultType]::ParameterName, 'Write a Python check''s cProfile statistics as a pstats dump (python -m pstats, snakeviz); implies --profile=cprofile')
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Keep the check''s own log records from this level up with each run, shown in the table and in --json (as `agent check -l`; default warning; off keeps none): a Python check''s logger, a built-in''s own records, an exec plugin''s stderr lines (INFO unless a line starts with a level word)')
            [CompletionResult]::new('--log-level', '--log-level', [CompletionResultType]::ParameterName, 'Keep the check''s own log records from this level up with each run, shown in the table and in --json (as `agent check -l`; default warning; off keeps none): a Python check''s logger, a built-in''s own records, an exec plugin''s stderr lines (INFO unless a line starts with a level word)')
            [CompletionResult]::new('--run-timeout', '--run-timeout', [CompletionResultType]::ParameterName, 'Each run''s deadline (e.g. 5s, 500ms; a bare number is seconds), for every instance, over the configuration''s run_timeout (default 30s); an instance''s own `timeout` is the check''s')
            [CompletionResult]::new('--log', '--log', [CompletionResultType]::ParameterName, 'Append the collector.log block of every run to FILE (overrides log_file)')
            [CompletionResult]::new('--m-frames', '--m-frames', [CompletionResultType]::ParameterName, 'With --memory: stack frames kept per allocation (tracemalloc''s nframe; default 1)')
            [CompletionResult]::new('--m-limit', '--m-limit', [CompletionResultType]::ParameterName, 'With --memory: lines shown per run and for the growth (default 10)')
            [CompletionResult]::new('--m-sort', '--m-sort', [CompletionResultType]::ParameterName, 'With --memory: group allocations by line, by file, or by whole traceback')
            [CompletionResult]::new('--m-filters', '--m-filters', [CompletionResultType]::ParameterName, 'With --memory: only allocations made in files matching these comma-separated glob patterns, by the allocating frame (e.g. ''*/datadog_checks/*'')')
            [CompletionResult]::new('--instance', '--instance', [CompletionResultType]::ParameterName, 'Run only instance N of the check''s configuration (0-based, as in instances[N])')
            [CompletionResult]::new('--instance-filter', '--instance-filter', [CompletionResultType]::ParameterName, 'Run only the instances this jq expression selects, as `agent check --instance-filter`: paths, comparisons, and/or, `|`, `not`, `select(…)` (e.g. ''.port == 8080'', ''select(.tls.verify | not)''); an instance is run when the output is neither false nor null')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Stop a Python check in pdb at this line of its file, on the terminal (as `agent check -b`): a line of its check() method, 0 for the method''s first statement, -1 for its last line; the run has no deadline then')
            [CompletionResult]::new('--breakpoint', '--breakpoint', [CompletionResultType]::ParameterName, 'Stop a Python check in pdb at this line of its file, on the terminal (as `agent check -b`): a line of its check() method, 0 for the method''s first statement, -1 for its last line; the run has no deadline then')
            [CompletionResult]::new('--discovery-timeout', '--discovery-timeout', [CompletionResultType]::ParameterName, 'Accepted for `agent check` users; agentprof has no Autodiscovery (it reads conf.d)')
            [CompletionResult]::new('--discovery-retry-interval', '--discovery-retry-interval', [CompletionResultType]::ParameterName, 'Accepted for `agent check` users; agentprof has no Autodiscovery (it reads conf.d)')
            [CompletionResult]::new('--discovery-min-instances', '--discovery-min-instances', [CompletionResultType]::ParameterName, 'Accepted for `agent check` users; agentprof has no Autodiscovery (it reads conf.d)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)')
            [CompletionResult]::new('--confd', '--confd', [CompletionResultType]::ParameterName, 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)')
            [CompletionResult]::new('--checks', '--checks', [CompletionResultType]::ParameterName, 'Directory of plugin checks')
            [CompletionResult]::new('--python', '--python', [CompletionResultType]::ParameterName, 'Python interpreter for Python checks (a virtualenv''s python works)')
            [CompletionResult]::new('-r', '-r', [CompletionResultType]::ParameterName, 'Run twice, one second apart, so rates and deltas have a value (as `agent check -r`, this overrides --check-times and --pause)')
            [CompletionResult]::new('--rate', '--rate', [CompletionResultType]::ParameterName, 'Run twice, one second apart, so rates and deltas have a value (as `agent check -r`, this overrides --check-times and --pause)')
            [CompletionResult]::new('--check-rate', '--check-rate', [CompletionResultType]::ParameterName, 'Run twice, one second apart, so rates and deltas have a value (as `agent check -r`, this overrides --check-times and --pause)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (schema in docs/json.md)')
            [CompletionResult]::new('--table', '--table', [CompletionResultType]::ParameterName, 'Draw bordered tables instead of plain aligned columns')
            [CompletionResult]::new('--profile-first-run', '--profile-first-run', [CompletionResultType]::ParameterName, 'Profile a Python check''s first run too (by default one warm-up run of each instance, dominated by first imports, comes before the runs and is left out of the profile)')
            [CompletionResult]::new('-m', '-m', [CompletionResultType]::ParameterName, 'Trace a Python check''s allocations (tracemalloc): top allocating lines per run, and with --times the lines that grew most from the first run to the last')
            [CompletionResult]::new('--memory', '--memory', [CompletionResultType]::ParameterName, 'Trace a Python check''s allocations (tracemalloc): top allocating lines per run, and with --times the lines that grew most from the first run to the last')
            [CompletionResult]::new('--profile-memory', '--profile-memory', [CompletionResultType]::ParameterName, 'Trace a Python check''s allocations (tracemalloc): top allocating lines per run, and with --times the lines that grew most from the first run to the last')
            [CompletionResult]::new('--flare', '--flare', [CompletionResultType]::ParameterName, 'Also write the report, with secrets scrubbed, to a file for a support case (as `agent check --flare`): checks/check_NAME_TIMESTAMP.log under the log_file''s directory, else under agentprof''s state directory')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentprof;start' {
            [CompletionResult]::new('--duration', '--duration', [CompletionResultType]::ParameterName, 'Stop by itself after this long (e.g. 30s, 10m)')
            [CompletionResult]::new('--log', '--log', [CompletionResultType]::ParameterName, 'Write collector.log here (overrides log_file; - is stdout)')
            [CompletionResult]::new('--metrics-listen', '--metrics-listen', [CompletionResultType]::ParameterName, 'Serve the agent''s own figures as OpenMetrics on http://ADDR/metrics (e.g. 127.0.0.1:9494)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)')
            [CompletionResult]::new('--confd', '--confd', [CompletionResultType]::ParameterName, 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)')
            [CompletionResult]::new('--checks', '--checks', [CompletionResultType]::ParameterName, 'Directory of plugin checks')
            [CompletionResult]::new('--python', '--python', [CompletionResultType]::ParameterName, 'Python interpreter for Python checks (a virtualenv''s python works)')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Developer mode: log each run''s memory before and after and the agent''s own figures (also `developer_mode: true` in agentprof.yaml)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'At stop, print the summary as one JSON document (metrics then go only to the configured forwarders)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentprof;list' {
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)')
            [CompletionResult]::new('--confd', '--confd', [CompletionResultType]::ParameterName, 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)')
            [CompletionResult]::new('--checks', '--checks', [CompletionResultType]::ParameterName, 'Directory of plugin checks')
            [CompletionResult]::new('--python', '--python', [CompletionResultType]::ParameterName, 'Python interpreter for Python checks (a virtualenv''s python works)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentprof;top' {
            [CompletionResult]::new('--sample-index', '--sample-index', [CompletionResultType]::ParameterName, 'Which sample type to report: a name (alloc_space, inuse_space, contentions, delay, …) or an index; default: the profile''s default sample type, else the last')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Show at most N rows (default: every node above 0.5% of the total)')
            [CompletionResult]::new('--nodes', '--nodes', [CompletionResultType]::ParameterName, 'Show at most N rows (default: every node above 0.5% of the total)')
            [CompletionResult]::new('--node-fraction', '--node-fraction', [CompletionResultType]::ParameterName, 'Leave out nodes whose cum is under this fraction of the total, as go tool pprof''s -nodefraction (0 keeps every node)')
            [CompletionResult]::new('--focus', '--focus', [CompletionResultType]::ParameterName, 'Keep only samples with a frame matching RE, as go tool pprof -focus')
            [CompletionResult]::new('--ignore', '--ignore', [CompletionResultType]::ParameterName, 'Drop samples with a frame matching RE, as go tool pprof -ignore')
            [CompletionResult]::new('--hide', '--hide', [CompletionResultType]::ParameterName, 'Take frames matching RE out of every stack, as go tool pprof -hide')
            [CompletionResult]::new('--show', '--show', [CompletionResultType]::ParameterName, 'Keep only frames matching RE in every stack, as go tool pprof -show')
            [CompletionResult]::new('--peek', '--peek', [CompletionResultType]::ParameterName, 'Instead of the top table: each function matching RE with its callers above and its callees below, as go tool pprof -peek')
            [CompletionResult]::new('--list', '--list', [CompletionResultType]::ParameterName, 'Instead of the top table: the source lines of each function matching RE with their flat and cum, as go tool pprof -list')
            [CompletionResult]::new('--source-path', '--source-path', [CompletionResultType]::ParameterName, 'With --list: where to look for source files ('':''-separated; default: the working directory and its parents), as go tool pprof -source_path')
            [CompletionResult]::new('--trim-path', '--trim-path', [CompletionResultType]::ParameterName, 'With --list: path prefixes to take off the profile''s file names before looking for them ('':''-separated), as go tool pprof -trim_path')
            [CompletionResult]::new('--max-size-mb', '--max-size-mb', [CompletionResultType]::ParameterName, 'Largest file accepted, compressed or not (MiB)')
            [CompletionResult]::new('--max-decompressed-mb', '--max-decompressed-mb', [CompletionResultType]::ParameterName, 'Largest decompressed profile accepted (MiB); checked while inflating')
            [CompletionResult]::new('--max-fields', '--max-fields', [CompletionResultType]::ParameterName, 'Most protobuf fields and packed elements accepted, counted before decoding')
            [CompletionResult]::new('--max-memory-mb', '--max-memory-mb', [CompletionResultType]::ParameterName, 'Most memory decoding may take (MiB), estimated from the profile''s samples and elements before anything is allocated')
            [CompletionResult]::new('--cum', '--cum', [CompletionResultType]::ParameterName, 'Sort by cumulative value instead of flat')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (see docs/json.md)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentprof;gate' {
            [CompletionResult]::new('--baseline', '--baseline', [CompletionResultType]::ParameterName, 'The baseline file: written by --update-baseline, compared with otherwise')
            [CompletionResult]::new('--against', '--against', [CompletionResultType]::ParameterName, 'A/B in this job: the baseline version''s checks directory (DIR), or the checks directory as git revision REV has it, run in interleaved rounds with this one')
            [CompletionResult]::new('--measure', '--measure', [CompletionResultType]::ParameterName, 'What the verdict on cost rests on: cpu (default), wall, or instructions (counted by the CPU''s counter where the kernel offers one, else by valgrind; deterministic)')
            [CompletionResult]::new('--times', '--times', [CompletionResultType]::ParameterName, 'Timed runs, spread evenly over the worker processes (8; more for a small --alpha), each after a warm-up run: rounded up to a multiple of them, said when it is. With --against, per side and round, at least 5 [default: 10]')
            [CompletionResult]::new('--compare', '--compare', [CompletionResultType]::ParameterName, 'Compare two reports made elsewhere (baseline files, `--format json` outputs or `agentprof check --json` reports)')
            [CompletionResult]::new('--gate-config', '--gate-config', [CompletionResultType]::ParameterName, 'Thresholds from this YAML file (the keys of a check conf''s `gate:` section); flags override it, it overrides the check conf''s `gate:` section')
            [CompletionResult]::new('--threshold', '--threshold', [CompletionResultType]::ParameterName, 'A slowdown under this percentage is never a regression [default: 10 against a baseline file, 5 with --against, 2 for instructions]')
            [CompletionResult]::new('--alpha', '--alpha', [CompletionResultType]::ParameterName, 'Significance level of the timing test (one-sided: Mann-Whitney U against a baseline file, Wilcoxon signed-rank with --against) [default: 0.01]')
            [CompletionResult]::new('--min-slowdown-us', '--min-slowdown-us', [CompletionResultType]::ParameterName, 'A slowdown of fewer microseconds per run is never a regression [default: 50]')
            [CompletionResult]::new('--rss-slope-kib', '--rss-slope-kib', [CompletionResultType]::ParameterName, 'RSS growth per run (KiB, least-squares slope) that counts as a leak [default: 512]')
            [CompletionResult]::new('--peak-rss-pct', '--peak-rss-pct', [CompletionResultType]::ParameterName, 'Peak RSS growth over the baseline (percent, and at least 1 MiB) that fails [default: 25]')
            [CompletionResult]::new('--calls-pct', '--calls-pct', [CompletionResultType]::ParameterName, 'Growth of Python calls per run, in total or of a top function, that fails [default: 1]')
            [CompletionResult]::new('--alloc-pct', '--alloc-pct', [CompletionResultType]::ParameterName, 'With --memory: growth of traced bytes per run (peak and kept; and at least 1 KiB) that fails [default: 1]')
            [CompletionResult]::new('--series-pct', '--series-pct', [CompletionResultType]::ParameterName, 'Growth of the metric series a run emits that fails [default: 0]')
            [CompletionResult]::new('--counter', '--counter', [CompletionResultType]::ParameterName, 'With --measure instructions: what counts them [default: the CPU''s counter where the kernel offers one, else valgrind; against a baseline, what counted it]')
            [CompletionResult]::new('--max-time', '--max-time', [CompletionResultType]::ParameterName, 'With --against: when the planned rounds cannot tell (the interval straddles the threshold), rounds are added until they can, or until the A/B has taken this long (0: none added) [default: 60s]')
            [CompletionResult]::new('--cannot-tell', '--cannot-tell', [CompletionResultType]::ParameterName, 'What CANNOT TELL exits with: pass (0) or fail (4)')
            [CompletionResult]::new('--flamegraph-diff', '--flamegraph-diff', [CompletionResultType]::ParameterName, 'Write a differential flamegraph of the baseline''s and this run''s stacks (red: more time per run, blue: less); cProfile stacks for Python checks, sampled for built-ins; with --measure instructions counted by valgrind, instructions per run from callgrind''s call graph, for every kind of check')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Write the report here instead of stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Write the report here instead of stdout')
            [CompletionResult]::new('--instance', '--instance', [CompletionResultType]::ParameterName, 'Run only instances[N] (0-based; default 0)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)')
            [CompletionResult]::new('--confd', '--confd', [CompletionResultType]::ParameterName, 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)')
            [CompletionResult]::new('--checks', '--checks', [CompletionResultType]::ParameterName, 'Directory of plugin checks')
            [CompletionResult]::new('--python', '--python', [CompletionResultType]::ParameterName, 'Python interpreter for Python checks (a virtualenv''s python works)')
            [CompletionResult]::new('--update-baseline', '--update-baseline', [CompletionResultType]::ParameterName, 'Write the baseline from this run and exit 0')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'A metric the baseline had and this run does not fails the gate, and so do more Python calls in a change the gated measure found faster (default: warnings)')
            [CompletionResult]::new('--compat-base', '--compat-base', [CompletionResultType]::ParameterName, 'Python checks: when the interpreter has no importable datadog_checks_base, gate the check on agentprof''s compatible AgentCheck (default: refused, exit 2)')
            [CompletionResult]::new('--memory', '--memory', [CompletionResultType]::ParameterName, 'Python checks: trace allocations (tracemalloc) and compare the bytes each run allocates and keeps; the baseline must be made with it too')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentprof;pull' {
            [CompletionResult]::new('--types', '--types', [CompletionResultType]::ParameterName, 'Profile types, comma-separated: cpu,heap,allocs,goroutine,mutex,block,threadcreate')
            [CompletionResult]::new('--profile-duration', '--profile-duration', [CompletionResultType]::ParameterName, 'How long the CPU profile records (its seconds=)')
            [CompletionResult]::new('--interval', '--interval', [CompletionResultType]::ParameterName, 'Collect again every D (at least 10s); runs until SIGINT/SIGTERM unless --count is given')
            [CompletionResult]::new('--count', '--count', [CompletionResultType]::ParameterName, 'Collect N times, --interval apart (default 60s)')
            [CompletionResult]::new('--http-timeout', '--http-timeout', [CompletionResultType]::ParameterName, 'Timeout of one request; must exceed the profile duration (default: duration + 10s)')
            [CompletionResult]::new('--out', '--out', [CompletionResultType]::ParameterName, 'Write <DIR>/<service>/<type>-<time>.pb.gz (and delta-<type>-… for cumulative types)')
            [CompletionResult]::new('--top', '--top', [CompletionResultType]::ParameterName, 'Print each profile''s top N functions (the delta when there is one)')
            [CompletionResult]::new('--retention-mb', '--retention-mb', [CompletionResultType]::ParameterName, 'Keep --out within N MiB: after each collection the oldest files are deleted first')
            [CompletionResult]::new('--retention-days', '--retention-days', [CompletionResultType]::ParameterName, 'Delete files under --out older than N days after each collection')
            [CompletionResult]::new('--service', '--service', [CompletionResultType]::ParameterName, 'Service name (default: the URL''s host)')
            [CompletionResult]::new('--env', '--env', [CompletionResultType]::ParameterName, 'Environment tag (env:)')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Version tag (version:)')
            [CompletionResult]::new('--tag', '--tag', [CompletionResultType]::ParameterName, 'A tag added to uploads and figures, k:v (repeatable)')
            [CompletionResult]::new('--tls-ca', '--tls-ca', [CompletionResultType]::ParameterName, 'CA certificate(s) (PEM) to trust for https targets')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Client certificate (PEM) for https targets that ask for one')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'The client certificate''s private key (PEM)')
            [CompletionResult]::new('--upload', '--upload', [CompletionResultType]::ParameterName, 'POST each collection here in dd-trace-go''s format (DataKit: http://host:9529/profiling/v1/input)')
            [CompletionResult]::new('--otlp', '--otlp', [CompletionResultType]::ParameterName, 'Also send each collection as OTLP profiles to an OpenTelemetry Collector (http://host:4318; a URL without a path gets /v1development/profiles)')
            [CompletionResult]::new('--otlp-header', '--otlp-header', [CompletionResultType]::ParameterName, 'A header of every OTLP request, NAME=VALUE (repeatable; for credentials: never written to the spool)')
            [CompletionResult]::new('--spool', '--spool', [CompletionResultType]::ParameterName, 'Where uploads that failed wait to be sent (default: $AGENTPROF_STATE_DIR or the XDG state dir)')
            [CompletionResult]::new('--upload-timeout', '--upload-timeout', [CompletionResultType]::ParameterName, 'Longest wait for one upload request (--upload, --otlp), connecting included; a target that does not answer in time is retried, then the upload waits in the spool')
            [CompletionResult]::new('--body-size-limit-mb', '--body-size-limit-mb', [CompletionResultType]::ParameterName, 'Largest response accepted (MiB); decompressed at most min(this, 8 MiB)')
            [CompletionResult]::new('--delta-cache-mb', '--delta-cache-mb', [CompletionResultType]::ParameterName, 'Memory for delta baselines (MiB), least recently used evicted first')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)')
            [CompletionResult]::new('--confd', '--confd', [CompletionResultType]::ParameterName, 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)')
            [CompletionResult]::new('--once', '--once', [CompletionResultType]::ParameterName, 'Collect once (the default without --interval)')
            [CompletionResult]::new('--flamegraph', '--flamegraph', [CompletionResultType]::ParameterName, 'Also write an SVG flamegraph of each profile next to it (needs --out)')
            [CompletionResult]::new('--insecure-skip-verify', '--insecure-skip-verify', [CompletionResultType]::ParameterName, 'Do not verify the target''s certificate (not for production)')
            [CompletionResult]::new('--otlp-original-payload', '--otlp-original-payload', [CompletionResultType]::ParameterName, 'Attach each pprof profile to its OTLP profiles as original_payload (larger requests)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document per collection (see docs/json.md)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentprof;k8s' {
            [CompletionResult]::new('--node', '--node', [CompletionResultType]::ParameterName, 'This node''s name (default: $NODE_NAME, from the downward API''s spec.nodeName)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, else in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig''s context to use (default: its current-context)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)')
            [CompletionResult]::new('--confd', '--confd', [CompletionResultType]::ParameterName, 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)')
            [CompletionResult]::new('--out', '--out', [CompletionResultType]::ParameterName, 'Write captures under DIR/<namespace>/<pod>/<container>/ and DIR/captures.jsonl (default: profile.yaml''s out_dir)')
            [CompletionResult]::new('--upload', '--upload', [CompletionResultType]::ParameterName, 'POST each capture in dd-trace-go''s format here (default: profile.yaml''s upload_url)')
            [CompletionResult]::new('--otlp', '--otlp', [CompletionResultType]::ParameterName, 'Also send each capture as OTLP profiles to an OpenTelemetry Collector (http://host:4318; a URL without a path gets /v1development/profiles; default: profile.yaml''s otlp_url)')
            [CompletionResult]::new('--otlp-header', '--otlp-header', [CompletionResultType]::ParameterName, 'A header of every OTLP request, NAME=VALUE (repeatable; for credentials: never written to the spool; default: profile.yaml''s otlp_headers)')
            [CompletionResult]::new('--spool', '--spool', [CompletionResultType]::ParameterName, 'Where uploads that failed wait to be sent (default: $AGENTPROF_STATE_DIR or the XDG state dir)')
            [CompletionResult]::new('--upload-timeout', '--upload-timeout', [CompletionResultType]::ParameterName, 'Longest wait for one upload request (--upload, --otlp), connecting included; a target that does not answer in time is retried, then the capture waits in the spool')
            [CompletionResult]::new('--metrics-listen', '--metrics-listen', [CompletionResultType]::ParameterName, 'Serve /metrics (OpenMetrics), /healthz and /readyz here, e.g. 0.0.0.0:9090')
            [CompletionResult]::new('--duration', '--duration', [CompletionResultType]::ParameterName, 'Stop after D (default: run until SIGTERM or Ctrl-C)')
            [CompletionResult]::new('--otlp-original-payload', '--otlp-original-payload', [CompletionResultType]::ParameterName, 'Attach each pprof profile to its OTLP profiles as original_payload (larger requests; default: profile.yaml''s otlp_original_payload)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON line per event (target found or removed, capture, skip) instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('targets', 'targets', [CompletionResultType]::ParameterValue, 'Print once every pod on the node, the rule that matched, the endpoints that would be collected, and why each other pod or container is not a target')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentprof;k8s;targets' {
            [CompletionResult]::new('--node', '--node', [CompletionResultType]::ParameterName, 'This node''s name (default: $NODE_NAME, from the downward API''s spec.nodeName)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, else in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig''s context to use (default: its current-context)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)')
            [CompletionResult]::new('--confd', '--confd', [CompletionResultType]::ParameterName, 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (see docs/json.md)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentprof;k8s;help' {
            [CompletionResult]::new('targets', 'targets', [CompletionResultType]::ParameterValue, 'Print once every pod on the node, the rule that matched, the endpoints that would be collected, and why each other pod or container is not a target')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentprof;k8s;help;targets' {
            break
        }
        'agentprof;k8s;help;help' {
            break
        }
        'agentprof;receive' {
            [CompletionResult]::new('--listen', '--listen', [CompletionResultType]::ParameterName, 'Address to listen on (default: agentprof.yaml''s receive.listen, else 127.0.0.1:9529; 0.0.0.0:9529 to take uploads from other hosts)')
            [CompletionResult]::new('--out', '--out', [CompletionResultType]::ParameterName, 'Store uploads under DIR/<service>/ and DIR/uploads.jsonl (default: receive.out_dir, else ./profiles)')
            [CompletionResult]::new('--queue', '--queue', [CompletionResultType]::ParameterName, 'The durable queue of uploads acknowledged and not yet stored (default: receive.queue_dir, else $AGENTPROF_STATE_DIR or the XDG state dir''s receive-queue)')
            [CompletionResult]::new('--top', '--top', [CompletionResultType]::ParameterName, 'Print each profile''s top N functions with its upload')
            [CompletionResult]::new('--forward', '--forward', [CompletionResultType]::ParameterName, 'Post each upload on to URL (DataKit, a Datadog Agent, Datadog''s intake with agentprof.yaml''s api_key) with agentprof.yaml''s tags added (default: receive.forward_url)')
            [CompletionResult]::new('--forward-otlp', '--forward-otlp', [CompletionResultType]::ParameterName, 'Also send each upload''s pprof profiles on as OTLP profiles to an OpenTelemetry Collector (http://host:4318; a URL without a path gets /v1development/profiles; default: receive.forward_otlp_url)')
            [CompletionResult]::new('--otlp-header', '--otlp-header', [CompletionResultType]::ParameterName, 'A header of every OTLP request, NAME=VALUE (repeatable; for credentials: never written to the spool; default: receive.otlp_headers)')
            [CompletionResult]::new('--spool', '--spool', [CompletionResultType]::ParameterName, 'Where forwards that failed wait to be sent (default: receive.spool_dir, else $AGENTPROF_STATE_DIR or the XDG state dir''s receive-spool; OTLP''s in otlp/ under it)')
            [CompletionResult]::new('--forward-timeout', '--forward-timeout', [CompletionResultType]::ParameterName, 'Longest wait for one forward request (--forward, --forward-otlp), connecting included; a target that does not answer in time is retried from the spool (default: receive.forward_timeout_s, else 30s)')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Listen over TLS with this certificate chain (PEM; default: receive.tls_cert)')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'The certificate''s private key (PEM; default: receive.tls_key)')
            [CompletionResult]::new('--metrics-listen', '--metrics-listen', [CompletionResultType]::ParameterName, 'Serve /metrics (OpenMetrics) and /healthz here, e.g. 127.0.0.1:9091')
            [CompletionResult]::new('--duration', '--duration', [CompletionResultType]::ParameterName, 'Stop after D (default: run until SIGTERM or Ctrl-C)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)')
            [CompletionResult]::new('--otlp-original-payload', '--otlp-original-payload', [CompletionResultType]::ParameterName, 'Attach each pprof profile to its OTLP profiles as original_payload (larger requests; default: receive.otlp_original_payload)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON line per upload (an uploads.jsonl line, see docs/json.md) instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentprof;ui' {
            [CompletionResult]::new('--listen', '--listen', [CompletionResultType]::ParameterName, 'Address to serve the page on (default 127.0.0.1:7070; another host''s address exposes the profiles to it, and agentprof says so)')
            [CompletionResult]::new('--allow-host', '--allow-host', [CompletionResultType]::ParameterName, 'A name the page is also reached by (NAME or NAME:PORT, repeatable): requests whose Host header is neither the listen address, localhost nor one of these get 421, so a web page on another site cannot read the profiles through DNS rebinding')
            [CompletionResult]::new('--memory-mb', '--memory-mb', [CompletionResultType]::ParameterName, 'Memory the profiles being read and kept may hold together (MiB): each file''s bytes, its decompressed size and its decoded model are reserved before they are held, kept profiles given back least recently used first; without room a request gets 503')
            [CompletionResult]::new('--keep-idle', '--keep-idle', [CompletionResultType]::ParameterName, 'After D without a request, the profiles and flamegraphs kept are dropped and their memory given back to the system (the next request reads them again)')
            [CompletionResult]::new('--source-path', '--source-path', [CompletionResultType]::ParameterName, 'A directory of source files the source view may read (repeatable): a profile''s file names are looked for under it as go tool pprof -source_path does, and nothing outside these directories is read. Without one, a ui on a loopback address reads the source files (.go, .py, .rs and the like) at the paths the profile records, and a ui on another address shows the lines with samples and no text')
            [CompletionResult]::new('--cache-dir', '--cache-dir', [CompletionResultType]::ParameterName, 'Where the merges of each ended hour''s captures (hourly rollups) are kept, so that a day''s merge reads 24 profiles rather than every capture (default: $XDG_CACHE_HOME/agentprof/ui, else ~/.cache/agentprof/ui); the directories shown are only read')
            [CompletionResult]::new('--duration', '--duration', [CompletionResultType]::ParameterName, 'Stop after D (default: run until SIGTERM or Ctrl-C)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)')
            [CompletionResult]::new('--max-size-mb', '--max-size-mb', [CompletionResultType]::ParameterName, 'Largest file accepted, compressed or not (MiB)')
            [CompletionResult]::new('--max-decompressed-mb', '--max-decompressed-mb', [CompletionResultType]::ParameterName, 'Largest decompressed profile accepted (MiB); checked while inflating')
            [CompletionResult]::new('--max-fields', '--max-fields', [CompletionResultType]::ParameterName, 'Most protobuf fields and packed elements accepted, counted before decoding')
            [CompletionResult]::new('--max-memory-mb', '--max-memory-mb', [CompletionResultType]::ParameterName, 'Most memory decoding may take (MiB), estimated from the profile''s samples and elements before anything is allocated')
            [CompletionResult]::new('--open', '--open', [CompletionResultType]::ParameterName, 'Open the page in the desktop''s browser once it is served')
            [CompletionResult]::new('--no-cache', '--no-cache', [CompletionResultType]::ParameterName, 'Keep no hourly rollups: every merge reads its captures')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentprof;diff' {
            [CompletionResult]::new('--sample-index', '--sample-index', [CompletionResultType]::ParameterName, 'Sample type to compare (name or index); default: the new profile''s default')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Show at most N changed functions (default: 30 in the table, all in --json); 0 shows all')
            [CompletionResult]::new('--nodes', '--nodes', [CompletionResultType]::ParameterName, 'Show at most N changed functions (default: 30 in the table, all in --json); 0 shows all')
            [CompletionResult]::new('--flamegraph', '--flamegraph', [CompletionResultType]::ParameterName, 'Also write a differential flamegraph here (red grew, blue shrank)')
            [CompletionResult]::new('--max-size-mb', '--max-size-mb', [CompletionResultType]::ParameterName, 'Largest file accepted, compressed or not (MiB)')
            [CompletionResult]::new('--max-decompressed-mb', '--max-decompressed-mb', [CompletionResultType]::ParameterName, 'Largest decompressed profile accepted (MiB); checked while inflating')
            [CompletionResult]::new('--max-fields', '--max-fields', [CompletionResultType]::ParameterName, 'Most protobuf fields and packed elements accepted, counted before decoding')
            [CompletionResult]::new('--max-memory-mb', '--max-memory-mb', [CompletionResultType]::ParameterName, 'Most memory decoding may take (MiB), estimated from the profile''s samples and elements before anything is allocated')
            [CompletionResult]::new('--cum', '--cum', [CompletionResultType]::ParameterName, 'Sort by the change of cum instead of flat')
            [CompletionResult]::new('--normalize', '--normalize', [CompletionResultType]::ParameterName, 'Scale the base so both totals are equal (profiles of different lengths)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (see docs/json.md)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentprof;delta' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Where to write the delta profile (gzip)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Where to write the delta profile (gzip)')
            [CompletionResult]::new('--max-size-mb', '--max-size-mb', [CompletionResultType]::ParameterName, 'Largest file accepted, compressed or not (MiB)')
            [CompletionResult]::new('--max-decompressed-mb', '--max-decompressed-mb', [CompletionResultType]::ParameterName, 'Largest decompressed profile accepted (MiB); checked while inflating')
            [CompletionResult]::new('--max-fields', '--max-fields', [CompletionResultType]::ParameterName, 'Most protobuf fields and packed elements accepted, counted before decoding')
            [CompletionResult]::new('--max-memory-mb', '--max-memory-mb', [CompletionResultType]::ParameterName, 'Most memory decoding may take (MiB), estimated from the profile''s samples and elements before anything is allocated')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print what was done as JSON (stacks, time taken)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentprof;flamegraph' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Where to write the SVG')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Where to write the SVG')
            [CompletionResult]::new('--sample-index', '--sample-index', [CompletionResultType]::ParameterName, 'Sample type to draw (name or index); default: the profile''s default, else the last')
            [CompletionResult]::new('--title', '--title', [CompletionResultType]::ParameterName, 'Title of the flamegraph (default: the file name and sample type)')
            [CompletionResult]::new('--focus', '--focus', [CompletionResultType]::ParameterName, 'Keep only samples with a frame matching RE, as go tool pprof -focus')
            [CompletionResult]::new('--ignore', '--ignore', [CompletionResultType]::ParameterName, 'Drop samples with a frame matching RE, as go tool pprof -ignore')
            [CompletionResult]::new('--hide', '--hide', [CompletionResultType]::ParameterName, 'Take frames matching RE out of every stack, as go tool pprof -hide')
            [CompletionResult]::new('--show', '--show', [CompletionResultType]::ParameterName, 'Keep only frames matching RE in every stack, as go tool pprof -show')
            [CompletionResult]::new('--max-size-mb', '--max-size-mb', [CompletionResultType]::ParameterName, 'Largest file accepted, compressed or not (MiB)')
            [CompletionResult]::new('--max-decompressed-mb', '--max-decompressed-mb', [CompletionResultType]::ParameterName, 'Largest decompressed profile accepted (MiB); checked while inflating')
            [CompletionResult]::new('--max-fields', '--max-fields', [CompletionResultType]::ParameterName, 'Most protobuf fields and packed elements accepted, counted before decoding')
            [CompletionResult]::new('--max-memory-mb', '--max-memory-mb', [CompletionResultType]::ParameterName, 'Most memory decoding may take (MiB), estimated from the profile''s samples and elements before anything is allocated')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentprof;completions' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentprof;man' {
            [CompletionResult]::new('--out', '--out', [CompletionResultType]::ParameterName, 'Directory to write the pages into')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentprof;init' {
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Overwrite files that differ from agentprof''s (by default they are kept)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentprof;help' {
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Run one check once (or -t N times) and print its metrics and what each run cost')
            [CompletionResult]::new('start', 'start', [CompletionResultType]::ParameterValue, 'Run every configured check on its interval: the agent, in developer mode with --profile')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the checks agentprof can run, where their configuration comes from, and their instances')
            [CompletionResult]::new('top', 'top', [CompletionResultType]::ParameterValue, 'Print a pprof profile''s top functions, row for row as `go tool pprof -top`')
            [CompletionResult]::new('gate', 'gate', [CompletionResultType]::ParameterValue, 'CI performance gate: run a check N times and compare with a baseline; exit 1 on a regression')
            [CompletionResult]::new('pull', 'pull', [CompletionResultType]::ParameterValue, 'Pull pprof profiles from Go services'' net/http/pprof: files, top tables, deltas, uploads')
            [CompletionResult]::new('k8s', 'k8s', [CompletionResultType]::ParameterValue, 'Discover the Go pprof endpoints of this node''s pods and capture their profiles on a schedule and when they cross CPU or memory thresholds (run as a DaemonSet)')
            [CompletionResult]::new('receive', 'receive', [CompletionResultType]::ParameterValue, 'Receive the uploads of dd-trace profilers (Go, Python, Java…) on DataKit''s port and path, Pyroscope''s SDKs (/ingest, push) and OTLP profiles (/v1development/profiles): each stored under <out>/<service>/, listed in uploads.jsonl, printed')
            [CompletionResult]::new('ui', 'ui', [CompletionResultType]::ParameterValue, 'A local web page over the profiles agentprof wrote or received: lists with the cause of each capture, top tables, flamegraphs and comparisons (read-only, offline)')
            [CompletionResult]::new('diff', 'diff', [CompletionResultType]::ParameterValue, 'Compare two pprof profiles: per function the change of flat and cum, biggest first')
            [CompletionResult]::new('delta', 'delta', [CompletionResultType]::ParameterValue, 'The delta of two snapshots of a cumulative profile (heap, allocs, mutex, block), as pull makes it')
            [CompletionResult]::new('flamegraph', 'flamegraph', [CompletionResultType]::ParameterValue, 'Draw a pprof profile as a flamegraph (SVG)')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script to stdout')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Write the man pages (agentprof.1 and one page per subcommand)')
            [CompletionResult]::new('init', 'init', [CompletionResultType]::ParameterValue, 'Write the example configurations (conf.d/*.yaml.example, agentprof.yaml.example) and the plugin checks agentprof ships (checks/) into DIR, for an installed binary')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentprof;help;check' {
            break
        }
        'agentprof;help;start' {
            break
        }
        'agentprof;help;list' {
            break
        }
        'agentprof;help;top' {
            break
        }
        'agentprof;help;gate' {
            break
        }
        'agentprof;help;pull' {
            break
        }
        'agentprof;help;k8s' {
            [CompletionResult]::new('targets', 'targets', [CompletionResultType]::ParameterValue, 'Print once every pod on the node, the rule that matched, the endpoints that would be collected, and why each other pod or container is not a target')
            break
        }
        'agentprof;help;k8s;targets' {
            break
        }
        'agentprof;help;receive' {
            break
        }
        'agentprof;help;ui' {
            break
        }
        'agentprof;help;diff' {
            break
        }
        'agentprof;help;delta' {
            break
        }
        'agentprof;help;flamegraph' {
            break
        }
        'agentprof;help;completions' {
            break
        }
        'agentprof;help;man' {
            break
        }
        'agentprof;help;init' {
            break
        }
        'agentprof;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
