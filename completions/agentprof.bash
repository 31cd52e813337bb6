_agentprof() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="agentprof"
                ;;
            agentprof,check)
                cmd="agentprof__subcmd__check"
                ;;
            agentprof,completions)
                cmd="agentprof__subcmd__completions"
                ;;
            agentprof,delta)
                cmd="agentprof__subcmd__delta"
                ;;
            agentprof,diff)
                cmd="agentprof__subcmd__diff"
                ;;
            agentprof,flamegraph)
                cmd="agentprof__subcmd__flamegraph"
                ;;
            agentprof,gate)
                cmd="agentprof__subcmd__gate"
                ;;
            agentprof,help)
                cmd="agentprof__subcmd__help"
                ;;
            agentprof,init)
                cmd="agentprof__subcmd__init"
                ;;
            agentprof,k8s)
                cmd="agentprof__subcmd__k8s"
                ;;
            agentprof,list)
                cmd="agentprof__subcmd__list"
                ;;
            agentprof,man)
                cmd="agentprof__subcmd__man"
                ;;
            agentprof,pull)
                cmd="agentprof__subcmd__pull"
                ;;
            agentprof,receive)
                cmd="agentprof__subcmd__receive"
                ;;
            agentprof,start)
                cmd="agentprof__subcmd__start"
                ;;
            agentprof,top)
                cmd="agentprof__subcmd__top"
                ;;
            agentprof,ui)
                cmd="agentprof__subcmd__ui"
                ;;
            agentprof__subcmd__help,check)
                cmd="agentprof__subcmd__help__subcmd__check"
                ;;
            agentprof__subcmd__help,completions)
                cmd="agentprof__subcmd__help__subcmd__completions"
                ;;
            agentprof__subcmd__help,delta)
                cmd="agentprof__subcmd__help__subcmd__delta"
                ;;
            agentprof__subcmd__help,diff)
                cmd="agentprof__subcmd__help__subcmd__diff"
                ;;
            agentprof__subcmd__help,flamegraph)
                cmd="agentprof__subcmd__help__subcmd__flamegraph"
                ;;
            agentprof__subcmd__help,gate)
                cmd="agentprof__subcmd__help__subcmd__gate"
                ;;
            agentprof__subcmd__help,help)
                cmd="agentprof__subcmd__help__subcmd__help"
                ;;
            agentprof__subcmd__help,init)
                cmd="agentprof__subcmd__help__subcmd__init"
                ;;
            agentprof__subcmd__help,k8s)
                cmd="agentprof__subcmd__help__subcmd__k8s"
                ;;
            agentprof__subcmd__help,list)
                cmd="agentprof__subcmd__help__subcmd__list"
                ;;
            agentprof__subcmd__help,man)
                cmd="agentprof__subcmd__help__subcmd__man"
                ;;
            agentprof__subcmd__help,pull)
                cmd="agentprof__subcmd__help__subcmd__pull"
                ;;
            agentprof__subcmd__help,receive)
                cmd="agentprof__subcmd__help__subcmd__receive"
                ;;
            agentprof__subcmd__help,start)
                cmd="agentprof__subcmd__help__subcmd__start"
                ;;
            agentprof__subcmd__help,top)
                cmd="agentprof__subcmd__help__subcmd__top"
                ;;
            agentprof__subcmd__help,ui)
                cmd="agentprof__subcmd__help__subcmd__ui"
                ;;
            agentprof__subcmd__help__subcmd__k8s,targets)
                cmd="agentprof__subcmd__help__subcmd__k8s__subcmd__targets"
                ;;
            agentprof__subcmd__k8s,help)
                cmd="agentprof__subcmd__k8s__subcmd__help"
                ;;
            agentprof__subcmd__k8s,targets)
                cmd="agentprof__subcmd__k8s__subcmd__targets"
                ;;
            agentprof__subcmd__k8s__subcmd__help,help)
                cmd="agentprof__subcmd__k8s__subcmd__help__subcmd__help"
                ;;
            agentprof__subcmd__k8s__subcmd__help,targets)
                cmd="agentprof__subcmd__k8s__subcmd__help__subcmd__targets"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        agentprof)
            opts="-h -V --help --version check start list top gate pull k8s receive ui diff delta flamegraph completions man init help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__check)
            opts="-t -r -d -l -m -b -h -V --profile --check-times --times --check-rate --rate --delay --pause --json --table --top --frequency --flamegraph --pprof --pstats --log-level --run-timeout --profile-first-run --log --profile-memory --memory --m-frames --m-limit --m-sort --m-filters --instance --instance-filter --breakpoint --flare --discovery-timeout --discovery-retry-interval --discovery-min-instances --config --confd --checks --python --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --profile)
                    COMPREPLY=($(compgen -W "sample cprofile" -- "${cur}"))
                    return 0
                    ;;
                --times)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --check-times)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -t)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --delay)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pause)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --top)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --frequency)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --flamegraph)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pprof)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pstats)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-level)
                    COMPREPLY=($(compgen -W "trace debug info warn warning error critical off" -- "${cur}"))
                    return 0
                    ;;
                -l)
                    COMPREPLY=($(compgen -W "trace debug info warn warning error critical off" -- "${cur}"))
                    return 0
                    ;;
                --run-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --m-frames)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --m-limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --m-sort)
                    COMPREPLY=($(compgen -W "lineno filename traceback" -- "${cur}"))
                    return 0
                    ;;
                --m-filters)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance-filter)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --breakpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -b)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --discovery-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --discovery-retry-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --discovery-min-instances)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --confd)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --checks)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --python)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__completions)
            opts="-h -V --help --version bash zsh fish elvish powershell"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__delta)
            opts="-o -h -V --output --json --max-size-mb --max-decompressed-mb --max-fields --max-memory-mb --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-size-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-decompressed-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-fields)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-memory-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__diff)
            opts="-n -h -V --sample-index --cum --normalize --nodes --flamegraph --json --max-size-mb --max-decompressed-mb --max-fields --max-memory-mb --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --sample-index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nodes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --flamegraph)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-size-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-decompressed-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-fields)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-memory-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__flamegraph)
            opts="-o -h -V --output --sample-index --title --focus --ignore --hide --show --max-size-mb --max-decompressed-mb --max-fields --max-memory-mb --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sample-index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --title)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --focus)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ignore)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hide)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --show)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-size-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-decompressed-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-fields)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-memory-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__gate)
            opts="-o -h -V --baseline --against --measure --times --update-baseline --compare --gate-config --threshold --alpha --min-slowdown-us --rss-slope-kib --peak-rss-pct --calls-pct --alloc-pct --series-pct --strict --counter --compat-base --max-time --cannot-tell --memory --flamegraph-diff --format --output --instance --config --confd --checks --python --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --baseline)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --against)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --measure)
                    COMPREPLY=($(compgen -W "cpu wall instructions" -- "${cur}"))
                    return 0
                    ;;
                --times)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --compare)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gate-config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --threshold)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --alpha)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --min-slowdown-us)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rss-slope-kib)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peak-rss-pct)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --calls-pct)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --alloc-pct)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --series-pct)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --counter)
                    COMPREPLY=($(compgen -W "perf valgrind" -- "${cur}"))
                    return 0
                    ;;
                --max-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cannot-tell)
                    COMPREPLY=($(compgen -W "pass fail" -- "${cur}"))
                    return 0
                    ;;
                --flamegraph-diff)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "table json markdown junit" -- "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --confd)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --checks)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --python)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help)
            opts="check start list top gate pull k8s receive ui diff delta flamegraph completions man init help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help__subcmd__check)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help__subcmd__completions)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help__subcmd__delta)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help__subcmd__diff)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help__subcmd__flamegraph)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help__subcmd__gate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help__subcmd__init)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help__subcmd__k8s)
            opts="targets"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help__subcmd__k8s__subcmd__targets)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help__subcmd__list)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help__subcmd__man)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help__subcmd__pull)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help__subcmd__receive)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help__subcmd__start)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help__subcmd__top)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__help__subcmd__ui)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__init)
            opts="-h -V --force --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__k8s)
            opts="-h --node --kubeconfig --context --config --confd --out --upload --otlp --otlp-header --otlp-original-payload --spool --upload-timeout --metrics-listen --duration --json --help targets help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --node)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --confd)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --otlp)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --otlp-header)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spool)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics-listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__k8s__subcmd__help)
            opts="targets help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__k8s__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__k8s__subcmd__help__subcmd__targets)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__k8s__subcmd__targets)
            opts="-h --node --kubeconfig --context --config --confd --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --node)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --confd)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__list)
            opts="-h -V --json --config --confd --checks --python --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --confd)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --checks)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --python)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__man)
            opts="-h -V --out --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__pull)
            opts="-h --types --profile-duration --interval --once --count --http-timeout --out --top --flamegraph --retention-mb --retention-days --service --env --version --tag --tls-ca --tls-cert --tls-key --insecure-skip-verify --upload --otlp --otlp-header --otlp-original-payload --spool --upload-timeout --body-size-limit-mb --delta-cache-mb --json --config --confd --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --types)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --profile-duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --count)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --http-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --top)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retention-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retention-days)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --service)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --env)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --version)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tag)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-ca)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --otlp)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --otlp-header)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spool)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --body-size-limit-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --delta-cache-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --confd)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__receive)
            opts="-h -V --listen --out --queue --top --forward --forward-otlp --otlp-header --otlp-original-payload --spool --forward-timeout --tls-cert --tls-key --metrics-listen --duration --json --config --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --queue)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --top)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --forward)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --forward-otlp)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --otlp-header)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spool)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --forward-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics-listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__start)
            opts="-h -V --profile --duration --json --log --metrics-listen --config --confd --checks --python --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics-listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --confd)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --checks)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --python)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__top)
            opts="-n -h -V --cum --sample-index --nodes --node-fraction --focus --ignore --hide --show --peek --list --source-path --trim-path --json --max-size-mb --max-decompressed-mb --max-fields --max-memory-mb --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --sample-index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nodes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --node-fraction)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --focus)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ignore)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hide)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --show)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peek)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --list)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --source-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --trim-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-size-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-decompressed-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-fields)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-memory-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        agentprof__subcmd__ui)
            opts="-h -V --listen --allow-host --open --memory-mb --keep-idle --source-path --cache-dir --no-cache --duration --config --max-size-mb --max-decompressed-mb --max-fields --max-memory-mb --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --allow-host)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --memory-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --keep-idle)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --source-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cache-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-size-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-decompressed-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-fields)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-memory-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _agentprof -o nosort -o bashdefault -o default agentprof
else
    complete -F _agentprof -o bashdefault -o default agentprof
fi
