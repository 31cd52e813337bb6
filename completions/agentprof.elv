
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
            cand gate 'CI performance gate: run a check N times and compare with a baseline; exit 1 on a regression'
            cand pull 'Pull pprof profiles from Go services'' net/http/pprof: files, top tables, deltas, uploads'
            cand k8s 'Discover the Go pprof endpoints of this node''s pods and capture their profiles on a schedule and when they cross CPU or memory thresholds (run as a DaemonSet)'
            cand receive 'Receive the uploads of dd-trace profilers (Go, Python, Java…) on DataKit''s port and path, Pyroscope''s SDKs (/ingest, push) and OTLP profiles (/v1development/profiles): each stored under <out>/<service>/, listed in uploads.jsonl, printed'
            cand ui 'A local web page over the profiles agentprof wrote or received: lists with the cause of each capture, top tables, flamegraphs and comparisons (read-only, offline)'
            cand diff 'Compare two pprof profiles: per function the change of flat and cum, biggest first'
            cand delta 'The delta of two snapshots of a cumulative profile (heap, allocs, mutex, block), as pull makes it'
            cand flamegraph 'Draw a pprof profile as a flamegraph (SVG)'
            cand completions 'Print a shell completion script to stdout'
            cand man 'Write the man pages (agentprof.1 and one page per subcommand)'
            cand init 'Write the example configurations (conf.d/*.yaml.example, agentprof.yaml.example) and the plugin checks agentprof ships (checks/) into DIR, for an installed binary'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'agentprof;check'= {
            cand --profile 'Profile the runs and print the top calls by cumulative time. Built-in and Python checks are sampled (Python: each thread''s stack, wall and CPU time, read from outside the worker where the interpreter allows); `--profile=cprofile` traces a Python check with cProfile instead (exact call counts, slower calls)'
            cand -t 'Run the check N times, 1 to 1000000 (rates and deltas need at least two runs)'
            cand --times 'Run the check N times, 1 to 1000000 (rates and deltas need at least two runs)'
            cand --check-times 'Run the check N times, 1 to 1000000 (rates and deltas need at least two runs)'
            cand -d 'Wait this long after the runs before the report (as `agent check -d`, whose aggregator takes in what a run sent in the meantime; agentprof''s takes it in as the run returns, so this is only a wait)'
            cand --delay 'Wait this long after the runs before the report (as `agent check -d`, whose aggregator takes in what a run sent in the meantime; agentprof''s takes it in as the run returns, so this is only a wait)'
            cand --pause 'Pause between runs (e.g. 250, 500ms, 2s; a bare number is milliseconds)'
            cand --top 'Rows in the profile''s top table'
            cand --frequency 'Sampling frequency of the profile, in Hz [default: 4999 for built-in checks, whose runs take microseconds; 1000 for Python checks]'
            cand --flamegraph 'Write a flamegraph (SVG) of the sampled runs; implies --profile'
            cand --pprof 'Write the sampled runs as a gzip pprof file for `go tool pprof`; implies --profile'
            cand --pstats 'Write a Python check''s cProfile statistics as a pstats dump (python -m pstats, snakeviz); implies --profile=cprofile'
            cand -l 'Keep the check''s own log records from this level up with each run, shown in the table and in --json (as `agent check -l`; default warning; off keeps none): a Python check''s logger, a built-in''s own records, an exec plugin''s stderr lines (INFO unless a line starts with a level word)'
            cand --log-level 'Keep the check''s own log records from this level up with each run, shown in the table and in --json (as `agent check -l`; default warning; off keeps none): a Python check''s logger, a built-in''s own records, an exec plugin''s stderr lines (INFO unless a line starts with a level word)'
            cand --run-timeout 'Each run''s deadline (e.g. 5s, 500ms; a bare number is seconds), for every instance, over the configuration''s run_timeout (default 30s); an instance''s own `timeout` is the check''s'
            cand --log 'Append the collector.log block of every run to FILE (overrides log_file)'
            cand --m-frames 'With --memory: stack frames kept per allocation (tracemalloc''s nframe; default 1)'
            cand --m-limit 'With --memory: lines shown per run and for the growth (default 10)'
            cand --m-sort 'With --memory: group allocations by line, by file, or by whole traceback'
            cand --m-filters 'With --memory: only allocations made in files matching these comma-separated glob patterns, by the allocating frame (e.g. ''*/datadog_checks/*'')'
            cand --instance 'Run only instance N of the check''s configuration (0-based, as in instances[N])'
            cand --instance-filter 'Run only the instances this jq expression selects, as `agent check --instance-filter`: paths, comparisons, and/or, `|`, `not`, `select(…)` (e.g. ''.port == 8080'', ''select(.tls.verify | not)''); an instance is run when the output is neither false nor null'
            cand -b 'Stop a Python check in pdb at this line of its file, on the terminal (as `agent check -b`): a line of its check() method, 0 for the method''s first statement, -1 for its last line; the run has no deadline then'
            cand --breakpoint 'Stop a Python check in pdb at this line of its file, on the terminal (as `agent check -b`): a line of its check() method, 0 for the method''s first statement, -1 for its last line; the run has no deadline then'
            cand --discovery-timeout 'Accepted for `agent check` users; agentprof has no Autodiscovery (it reads conf.d)'
            cand --discovery-retry-interval 'Accepted for `agent check` users; agentprof has no Autodiscovery (it reads conf.d)'
            cand --discovery-min-instances 'Accepted for `agent check` users; agentprof has no Autodiscovery (it reads conf.d)'
            cand --config 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)'
            cand --confd 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)'
            cand --checks 'Directory of plugin checks'
            cand --python 'Python interpreter for Python checks (a virtualenv''s python works)'
            cand -r 'Run twice, one second apart, so rates and deltas have a value (as `agent check -r`, this overrides --check-times and --pause)'
            cand --rate 'Run twice, one second apart, so rates and deltas have a value (as `agent check -r`, this overrides --check-times and --pause)'
            cand --check-rate 'Run twice, one second apart, so rates and deltas have a value (as `agent check -r`, this overrides --check-times and --pause)'
            cand --json 'Print one JSON document (schema in docs/json.md)'
            cand --table 'Draw bordered tables instead of plain aligned columns'
            cand --profile-first-run 'Profile a Python check''s first run too (by default one warm-up run of each instance, dominated by first imports, comes before the runs and is left out of the profile)'
            cand -m 'Trace a Python check''s allocations (tracemalloc): top allocating lines per run, and with --times the lines that grew most from the first run to the last'
            cand --memory 'Trace a Python check''s allocations (tracemalloc): top allocating lines per run, and with --times the lines that grew most from the first run to the last'
            cand --profile-memory 'Trace a Python check''s allocations (tracemalloc): top allocating lines per run, and with --times the lines that grew most from the first run to the last'
            cand --flare 'Also write the report, with secrets scrubbed, to a file for a support case (as `agent check --flare`): checks/check_NAME_TIMESTAMP.log under the log_file''s directory, else under agentprof''s state directory'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentprof;start'= {
            cand --duration 'Stop by itself after this long (e.g. 30s, 10m)'
            cand --log 'Write collector.log here (overrides log_file; - is stdout)'
            cand --metrics-listen 'Serve the agent''s own figures as OpenMetrics on http://ADDR/metrics (e.g. 127.0.0.1:9494)'
            cand --config 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)'
            cand --confd 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)'
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
            cand --confd 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)'
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
            cand --node-fraction 'Leave out nodes whose cum is under this fraction of the total, as go tool pprof''s -nodefraction (0 keeps every node)'
            cand --focus 'Keep only samples with a frame matching RE, as go tool pprof -focus'
            cand --ignore 'Drop samples with a frame matching RE, as go tool pprof -ignore'
            cand --hide 'Take frames matching RE out of every stack, as go tool pprof -hide'
            cand --show 'Keep only frames matching RE in every stack, as go tool pprof -show'
            cand --peek 'Instead of the top table: each function matching RE with its callers above and its callees below, as go tool pprof -peek'
            cand --list 'Instead of the top table: the source lines of each function matching RE with their flat and cum, as go tool pprof -list'
            cand --source-path 'With --list: where to look for source files ('':''-separated; default: the working directory and its parents), as go tool pprof -source_path'
            cand --trim-path 'With --list: path prefixes to take off the profile''s file names before looking for them ('':''-separated), as go tool pprof -trim_path'
            cand --max-size-mb 'Largest file accepted, compressed or not (MiB)'
            cand --max-decompressed-mb 'Largest decompressed profile accepted (MiB); checked while inflating'
            cand --max-fields 'Most protobuf fields and packed elements accepted, counted before decoding'
            cand --max-memory-mb 'Most memory decoding may take (MiB), estimated from the profile''s samples and elements before anything is allocated'
            cand --cum 'Sort by cumulative value instead of flat'
            cand --json 'Print one JSON document (see docs/json.md)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentprof;gate'= {
            cand --baseline 'The baseline file: written by --update-baseline, compared with otherwise'
            cand --against 'A/B in this job: the baseline version''s checks directory (DIR), or the checks directory as git revision REV has it, run in interleaved rounds with this one'
            cand --measure 'What the verdict on cost rests on: cpu (default), wall, or instructions (counted by the CPU''s counter where the kernel offers one, else by valgrind; deterministic)'
            cand --times 'Timed runs, spread evenly over the worker processes (8; more for a small --alpha), each after a warm-up run: rounded up to a multiple of them, said when it is. With --against, per side and round, at least 5 [default: 10]'
            cand --compare 'Compare two reports made elsewhere (baseline files, `--format json` outputs or `agentprof check --json` reports)'
            cand --gate-config 'Thresholds from this YAML file (the keys of a check conf''s `gate:` section); flags override it, it overrides the check conf''s `gate:` section'
            cand --threshold 'A slowdown under this percentage is never a regression [default: 10 against a baseline file, 5 with --against, 2 for instructions]'
            cand --alpha 'Significance level of the timing test (one-sided: Mann-Whitney U against a baseline file, Wilcoxon signed-rank with --against) [default: 0.01]'
            cand --min-slowdown-us 'A slowdown of fewer microseconds per run is never a regression [default: 50]'
            cand --rss-slope-kib 'RSS growth per run (KiB, least-squares slope) that counts as a leak [default: 512]'
            cand --peak-rss-pct 'Peak RSS growth over the baseline (percent, and at least 1 MiB) that fails [default: 25]'
            cand --calls-pct 'Growth of Python calls per run, in total or of a top function, that fails [default: 1]'
            cand --alloc-pct 'With --memory: growth of traced bytes per run (peak and kept; and at least 1 KiB) that fails [default: 1]'
            cand --series-pct 'Growth of the metric series a run emits that fails [default: 0]'
            cand --counter 'With --measure instructions: what counts them [default: the CPU''s counter where the kernel offers one, else valgrind; against a baseline, what counted it]'
            cand --max-time 'With --against: when the planned rounds cannot tell (the interval straddles the threshold), rounds are added until they can, or until the A/B has taken this long (0: none added) [default: 60s]'
            cand --cannot-tell 'What CANNOT TELL exits with: pass (0) or fail (4)'
            cand --flamegraph-diff 'Write a differential flamegraph of the baseline''s and this run''s stacks (red: more time per run, blue: less); cProfile stacks for Python checks, sampled for built-ins; with --measure instructions counted by valgrind, instructions per run from callgrind''s call graph, for every kind of check'
            cand --format 'Output format'
            cand -o 'Write the report here instead of stdout'
            cand --output 'Write the report here instead of stdout'
            cand --instance 'Run only instances[N] (0-based; default 0)'
            cand --config 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)'
            cand --confd 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)'
            cand --checks 'Directory of plugin checks'
            cand --python 'Python interpreter for Python checks (a virtualenv''s python works)'
            cand --update-baseline 'Write the baseline from this run and exit 0'
            cand --strict 'A metric the baseline had and this run does not fails the gate, and so do more Python calls in a change the gated measure found faster (default: warnings)'
            cand --compat-base 'Python checks: when the interpreter has no importable datadog_checks_base, gate the check on agentprof''s compatible AgentCheck (default: refused, exit 2)'
            cand --memory 'Python checks: trace allocations (tracemalloc) and compare the bytes each run allocates and keeps; the baseline must be made with it too'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentprof;pull'= {
            cand --types 'Profile types, comma-separated: cpu,heap,allocs,goroutine,mutex,block,threadcreate'
            cand --profile-duration 'How long the CPU profile records (its seconds=)'
            cand --interval 'Collect again every D (at least 10s); runs until SIGINT/SIGTERM unless --count is given'
            cand --count 'Collect N times, --interval apart (default 60s)'
            cand --http-timeout 'Timeout of one request; must exceed the profile duration (default: duration + 10s)'
            cand --out 'Write <DIR>/<service>/<type>-<time>.pb.gz (and delta-<type>-… for cumulative types)'
            cand --top 'Print each profile''s top N functions (the delta when there is one)'
            cand --retention-mb 'Keep --out within N MiB: after each collection the oldest files are deleted first'
            cand --retention-days 'Delete files under --out older than N days after each collection'
            cand --service 'Service name (default: the URL''s host)'
            cand --env 'Environment tag (env:)'
            cand --version 'Version tag (version:)'
            cand --tag 'A tag added to uploads and figures, k:v (repeatable)'
            cand --tls-ca 'CA certificate(s) (PEM) to trust for https targets'
            cand --tls-cert 'Client certificate (PEM) for https targets that ask for one'
            cand --tls-key 'The client certificate''s private key (PEM)'
            cand --upload 'POST each collection here in dd-trace-go''s format (DataKit: http://host:9529/profiling/v1/input)'
            cand --otlp 'Also send each collection as OTLP profiles to an OpenTelemetry Collector (http://host:4318; a URL without a path gets /v1development/profiles)'
            cand --otlp-header 'A header of every OTLP request, NAME=VALUE (repeatable; for credentials: never written to the spool)'
            cand --spool 'Where uploads that failed wait to be sent (default: $AGENTPROF_STATE_DIR or the XDG state dir)'
            cand --upload-timeout 'Longest wait for one upload request (--upload, --otlp), connecting included; a target that does not answer in time is retried, then the upload waits in the spool'
            cand --body-size-limit-mb 'Largest response accepted (MiB); decompressed at most min(this, 8 MiB)'
            cand --delta-cache-mb 'Memory for delta baselines (MiB), least recently used evicted first'
            cand --config 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)'
            cand --confd 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)'
            cand --once 'Collect once (the default without --interval)'
            cand --flamegraph 'Also write an SVG flamegraph of each profile next to it (needs --out)'
            cand --insecure-skip-verify 'Do not verify the target''s certificate (not for production)'
            cand --otlp-original-payload 'Attach each pprof profile to its OTLP profiles as original_payload (larger requests)'
            cand --json 'Print one JSON document per collection (see docs/json.md)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'agentprof;k8s'= {
            cand --node 'This node''s name (default: $NODE_NAME, from the downward API''s spec.nodeName)'
            cand --kubeconfig 'kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, else in-cluster)'
            cand --context 'The kubeconfig''s context to use (default: its current-context)'
            cand --config 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)'
            cand --confd 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)'
            cand --out 'Write captures under DIR/<namespace>/<pod>/<container>/ and DIR/captures.jsonl (default: profile.yaml''s out_dir)'
            cand --upload 'POST each capture in dd-trace-go''s format here (default: profile.yaml''s upload_url)'
            cand --otlp 'Also send each capture as OTLP profiles to an OpenTelemetry Collector (http://host:4318; a URL without a path gets /v1development/profiles; default: profile.yaml''s otlp_url)'
            cand --otlp-header 'A header of every OTLP request, NAME=VALUE (repeatable; for credentials: never written to the spool; default: profile.yaml''s otlp_headers)'
            cand --spool 'Where uploads that failed wait to be sent (default: $AGENTPROF_STATE_DIR or the XDG state dir)'
            cand --upload-timeout 'Longest wait for one upload request (--upload, --otlp), connecting included; a target that does not answer in time is retried, then the capture waits in the spool'
            cand --metrics-listen 'Serve /metrics (OpenMetrics), /healthz and /readyz here, e.g. 0.0.0.0:9090'
            cand --duration 'Stop after D (default: run until SIGTERM or Ctrl-C)'
            cand --otlp-original-payload 'Attach each pprof profile to its OTLP profiles as original_payload (larger requests; default: profile.yaml''s otlp_original_payload)'
            cand --json 'Print one JSON line per event (target found or removed, capture, skip) instead of text'
            cand -h 'Print help'
            cand --help 'Print help'
            cand targets 'Print once every pod on the node, the rule that matched, the endpoints that would be collected, and why each other pod or container is not a target'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'agentprof;k8s;targets'= {
            cand --node 'This node''s name (default: $NODE_NAME, from the downward API''s spec.nodeName)'
            cand --kubeconfig 'kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, else in-cluster)'
            cand --context 'The kubeconfig''s context to use (default: its current-context)'
            cand --config 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)'
            cand --confd 'Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)'
            cand --json 'Print one JSON document (see docs/json.md)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'agentprof;k8s;help'= {
            cand targets 'Print once every pod on the node, the rule that matched, the endpoints that would be collected, and why each other pod or container is not a target'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'agentprof;k8s;help;targets'= {
        }
        &'agentprof;k8s;help;help'= {
        }
        &'agentprof;receive'= {
            cand --listen 'Address to listen on (default: agentprof.yaml''s receive.listen, else 127.0.0.1:9529; 0.0.0.0:9529 to take uploads from other hosts)'
            cand --out 'Store uploads under DIR/<service>/ and DIR/uploads.jsonl (default: receive.out_dir, else ./profiles)'
            cand --queue 'The durable queue of uploads acknowledged and not yet stored (default: receive.queue_dir, else $AGENTPROF_STATE_DIR or the XDG state dir''s receive-queue)'
            cand --top 'Print each profile''s top N functions with its upload'
            cand --forward 'Post each upload on to URL (DataKit, a Datadog Agent, Datadog''s intake with agentprof.yaml''s api_key) with agentprof.yaml''s tags added (default: receive.forward_url)'
            cand --forward-otlp 'Also send each upload''s pprof profiles on as OTLP profiles to an OpenTelemetry Collector (http://host:4318; a URL without a path gets /v1development/profiles; default: receive.forward_otlp_url)'
            cand --otlp-header 'A header of every OTLP request, NAME=VALUE (repeatable; for credentials: never written to the spool; default: receive.otlp_headers)'
            cand --spool 'Where forwards that failed wait to be sent (default: receive.spool_dir, else $AGENTPROF_STATE_DIR or the XDG state dir''s receive-spool; OTLP''s in otlp/ under it)'
            cand --forward-timeout 'Longest wait for one forward request (--forward, --forward-otlp), connecting included; a target that does not answer in time is retried from the spool (default: receive.forward_timeout_s, else 30s)'
            cand --tls-cert 'Listen over TLS with this certificate chain (PEM; default: receive.tls_cert)'
            cand --tls-key 'The certificate''s private key (PEM; default: receive.tls_key)'
            cand --metrics-listen 'Serve /metrics (OpenMetrics) and /healthz here, e.g. 127.0.0.1:9091'
            cand --duration 'Stop after D (default: run until SIGTERM or Ctrl-C)'
            cand --config 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)'
            cand --otlp-original-payload 'Attach each pprof profile to its OTLP profiles as original_payload (larger requests; default: receive.otlp_original_payload)'
            cand --json 'Print one JSON line per upload (an uploads.jsonl line, see docs/json.md) instead of text'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentprof;ui'= {
            cand --listen 'Address to serve the page on (default 127.0.0.1:7070; another host''s address exposes the profiles to it, and agentprof says so)'
            cand --allow-host 'A name the page is also reached by (NAME or NAME:PORT, repeatable): requests whose Host header is neither the listen address, localhost nor one of these get 421, so a web page on another site cannot read the profiles through DNS rebinding'
            cand --memory-mb 'Memory the profiles being read and kept may hold together (MiB): each file''s bytes, its decompressed size and its decoded model are reserved before they are held, kept profiles given back least recently used first; without room a request gets 503'
            cand --keep-idle 'After D without a request, the profiles and flamegraphs kept are dropped and their memory given back to the system (the next request reads them again)'
            cand --source-path 'A directory of source files the source view may read (repeatable): a profile''s file names are looked for under it as go tool pprof -source_path does, and nothing outside these directories is read. Without one, a ui on a loopback address reads the source files (.go, .py, .rs and the like) at the paths the profile records, and a ui on another address shows the lines with samples and no text'
            cand --cache-dir 'Where the merges of each ended hour''s captures (hourly rollups) are kept, so that a day''s merge reads 24 profiles rather than every capture (default: $XDG_CACHE_HOME/agentprof/ui, else ~/.cache/agentprof/ui); the directories shown are only read'
            cand --duration 'Stop after D (default: run until SIGTERM or Ctrl-C)'
            cand --config 'agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)'
            cand --max-size-mb 'Largest file accepted, compressed or not (MiB)'
            cand --max-decompressed-mb 'Largest decompressed profile accepted (MiB); checked while inflating'
            cand --max-fields 'Most protobuf fields and packed elements accepted, counted before decoding'
            cand --max-memory-mb 'Most memory decoding may take (MiB), estimated from the profile''s samples and elements before anything is allocated'
            cand --open 'Open the page in the desktop''s browser once it is served'
            cand --no-cache 'Keep no hourly rollups: every merge reads its captures'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentprof;diff'= {
            cand --sample-index 'Sample type to compare (name or index); default: the new profile''s default'
            cand -n 'Show at most N changed functions (default: 30 in the table, all in --json); 0 shows all'
            cand --nodes 'Show at most N changed functions (default: 30 in the table, all in --json); 0 shows all'
            cand --flamegraph 'Also write a differential flamegraph here (red grew, blue shrank)'
            cand --max-size-mb 'Largest file accepted, compressed or not (MiB)'
            cand --max-decompressed-mb 'Largest decompressed profile accepted (MiB); checked while inflating'
            cand --max-fields 'Most protobuf fields and packed elements accepted, counted before decoding'
            cand --max-memory-mb 'Most memory decoding may take (MiB), estimated from the profile''s samples and elements before anything is allocated'
            cand --cum 'Sort by the change of cum instead of flat'
            cand --normalize 'Scale the base so both totals are equal (profiles of different lengths)'
            cand --json 'Print one JSON document (see docs/json.md)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentprof;delta'= {
            cand -o 'Where to write the delta profile (gzip)'
            cand --output 'Where to write the delta profile (gzip)'
            cand --max-size-mb 'Largest file accepted, compressed or not (MiB)'
            cand --max-decompressed-mb 'Largest decompressed profile accepted (MiB); checked while inflating'
            cand --max-fields 'Most protobuf fields and packed elements accepted, counted before decoding'
            cand --max-memory-mb 'Most memory decoding may take (MiB), estimated from the profile''s samples and elements before anything is allocated'
            cand --json 'Print what was done as JSON (stacks, time taken)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentprof;flamegraph'= {
            cand -o 'Where to write the SVG'
            cand --output 'Where to write the SVG'
            cand --sample-index 'Sample type to draw (name or index); default: the profile''s default, else the last'
            cand --title 'Title of the flamegraph (default: the file name and sample type)'
            cand --focus 'Keep only samples with a frame matching RE, as go tool pprof -focus'
            cand --ignore 'Drop samples with a frame matching RE, as go tool pprof -ignore'
            cand --hide 'Take frames matching RE out of every stack, as go tool pprof -hide'
            cand --show 'Keep only frames matching RE in every stack, as go tool pprof -show'
            cand --max-size-mb 'Largest file accepted, compressed or not (MiB)'
            cand --max-decompressed-mb 'Largest decompressed profile accepted (MiB); checked while inflating'
            cand --max-fields 'Most protobuf fields and packed elements accepted, counted before decoding'
            cand --max-memory-mb 'Most memory decoding may take (MiB), estimated from the profile''s samples and elements before anything is allocated'
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
        &'agentprof;init'= {
            cand --force 'Overwrite files that differ from agentprof''s (by default they are kept)'
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
            cand gate 'CI performance gate: run a check N times and compare with a baseline; exit 1 on a regression'
            cand pull 'Pull pprof profiles from Go services'' net/http/pprof: files, top tables, deltas, uploads'
            cand k8s 'Discover the Go pprof endpoints of this node''s pods and capture their profiles on a schedule and when they cross CPU or memory thresholds (run as a DaemonSet)'
            cand receive 'Receive the uploads of dd-trace profilers (Go, Python, Java…) on DataKit''s port and path, Pyroscope''s SDKs (/ingest, push) and OTLP profiles (/v1development/profiles): each stored under <out>/<service>/, listed in uploads.jsonl, printed'
            cand ui 'A local web page over the profiles agentprof wrote or received: lists with the cause of each capture, top tables, flamegraphs and comparisons (read-only, offline)'
            cand diff 'Compare two pprof profiles: per function the change of flat and cum, biggest first'
            cand delta 'The delta of two snapshots of a cumulative profile (heap, allocs, mutex, block), as pull makes it'
            cand flamegraph 'Draw a pprof profile as a flamegraph (SVG)'
            cand completions 'Print a shell completion script to stdout'
            cand man 'Write the man pages (agentprof.1 and one page per subcommand)'
            cand init 'Write the example configurations (conf.d/*.yaml.example, agentprof.yaml.example) and the plugin checks agentprof ships (checks/) into DIR, for an installed binary'
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
        &'agentprof;help;gate'= {
        }
        &'agentprof;help;pull'= {
        }
        &'agentprof;help;k8s'= {
            cand targets 'Print once every pod on the node, the rule that matched, the endpoints that would be collected, and why each other pod or container is not a target'
        }
        &'agentprof;help;k8s;targets'= {
        }
        &'agentprof;help;receive'= {
        }
        &'agentprof;help;ui'= {
        }
        &'agentprof;help;diff'= {
        }
        &'agentprof;help;delta'= {
        }
        &'agentprof;help;flamegraph'= {
        }
        &'agentprof;help;completions'= {
        }
        &'agentprof;help;man'= {
        }
        &'agentprof;help;init'= {
        }
        &'agentprof;help;help'= {
        }
    ]
    $completions[$command]
}
