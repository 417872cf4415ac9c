_wirespeed() {
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
                cmd="wirespeed"
                ;;
            wirespeed,agent)
                cmd="wirespeed__subcmd__agent"
                ;;
            wirespeed,bench)
                cmd="wirespeed__subcmd__bench"
                ;;
            wirespeed,completions)
                cmd="wirespeed__subcmd__completions"
                ;;
            wirespeed,demo)
                cmd="wirespeed__subcmd__demo"
                ;;
            wirespeed,doctor)
                cmd="wirespeed__subcmd__doctor"
                ;;
            wirespeed,experiment)
                cmd="wirespeed__subcmd__experiment"
                ;;
            wirespeed,explain)
                cmd="wirespeed__subcmd__explain"
                ;;
            wirespeed,fleet)
                cmd="wirespeed__subcmd__fleet"
                ;;
            wirespeed,help)
                cmd="wirespeed__subcmd__help"
                ;;
            wirespeed,inspect)
                cmd="wirespeed__subcmd__inspect"
                ;;
            wirespeed,k8s)
                cmd="wirespeed__subcmd__k8s"
                ;;
            wirespeed,lab)
                cmd="wirespeed__subcmd__lab"
                ;;
            wirespeed,man)
                cmd="wirespeed__subcmd__man"
                ;;
            wirespeed,model)
                cmd="wirespeed__subcmd__model"
                ;;
            wirespeed,optimize)
                cmd="wirespeed__subcmd__optimize"
                ;;
            wirespeed,report)
                cmd="wirespeed__subcmd__report"
                ;;
            wirespeed,serve)
                cmd="wirespeed__subcmd__serve"
                ;;
            wirespeed,tune)
                cmd="wirespeed__subcmd__tune"
                ;;
            wirespeed__subcmd__fleet,help)
                cmd="wirespeed__subcmd__fleet__subcmd__help"
                ;;
            wirespeed__subcmd__fleet,history)
                cmd="wirespeed__subcmd__fleet__subcmd__history"
                ;;
            wirespeed__subcmd__fleet,plan)
                cmd="wirespeed__subcmd__fleet__subcmd__plan"
                ;;
            wirespeed__subcmd__fleet,run)
                cmd="wirespeed__subcmd__fleet__subcmd__run"
                ;;
            wirespeed__subcmd__fleet,token)
                cmd="wirespeed__subcmd__fleet__subcmd__token"
                ;;
            wirespeed__subcmd__fleet,watch)
                cmd="wirespeed__subcmd__fleet__subcmd__watch"
                ;;
            wirespeed__subcmd__fleet__subcmd__help,help)
                cmd="wirespeed__subcmd__fleet__subcmd__help__subcmd__help"
                ;;
            wirespeed__subcmd__fleet__subcmd__help,history)
                cmd="wirespeed__subcmd__fleet__subcmd__help__subcmd__history"
                ;;
            wirespeed__subcmd__fleet__subcmd__help,plan)
                cmd="wirespeed__subcmd__fleet__subcmd__help__subcmd__plan"
                ;;
            wirespeed__subcmd__fleet__subcmd__help,run)
                cmd="wirespeed__subcmd__fleet__subcmd__help__subcmd__run"
                ;;
            wirespeed__subcmd__fleet__subcmd__help,token)
                cmd="wirespeed__subcmd__fleet__subcmd__help__subcmd__token"
                ;;
            wirespeed__subcmd__fleet__subcmd__help,watch)
                cmd="wirespeed__subcmd__fleet__subcmd__help__subcmd__watch"
                ;;
            wirespeed__subcmd__help,agent)
                cmd="wirespeed__subcmd__help__subcmd__agent"
                ;;
            wirespeed__subcmd__help,bench)
                cmd="wirespeed__subcmd__help__subcmd__bench"
                ;;
            wirespeed__subcmd__help,completions)
                cmd="wirespeed__subcmd__help__subcmd__completions"
                ;;
            wirespeed__subcmd__help,demo)
                cmd="wirespeed__subcmd__help__subcmd__demo"
                ;;
            wirespeed__subcmd__help,doctor)
                cmd="wirespeed__subcmd__help__subcmd__doctor"
                ;;
            wirespeed__subcmd__help,experiment)
                cmd="wirespeed__subcmd__help__subcmd__experiment"
                ;;
            wirespeed__subcmd__help,explain)
                cmd="wirespeed__subcmd__help__subcmd__explain"
                ;;
            wirespeed__subcmd__help,fleet)
                cmd="wirespeed__subcmd__help__subcmd__fleet"
                ;;
            wirespeed__subcmd__help,help)
                cmd="wirespeed__subcmd__help__subcmd__help"
                ;;
            wirespeed__subcmd__help,inspect)
                cmd="wirespeed__subcmd__help__subcmd__inspect"
                ;;
            wirespeed__subcmd__help,k8s)
                cmd="wirespeed__subcmd__help__subcmd__k8s"
                ;;
            wirespeed__subcmd__help,lab)
                cmd="wirespeed__subcmd__help__subcmd__lab"
                ;;
            wirespeed__subcmd__help,man)
                cmd="wirespeed__subcmd__help__subcmd__man"
                ;;
            wirespeed__subcmd__help,model)
                cmd="wirespeed__subcmd__help__subcmd__model"
                ;;
            wirespeed__subcmd__help,optimize)
                cmd="wirespeed__subcmd__help__subcmd__optimize"
                ;;
            wirespeed__subcmd__help,report)
                cmd="wirespeed__subcmd__help__subcmd__report"
                ;;
            wirespeed__subcmd__help,serve)
                cmd="wirespeed__subcmd__help__subcmd__serve"
                ;;
            wirespeed__subcmd__help,tune)
                cmd="wirespeed__subcmd__help__subcmd__tune"
                ;;
            wirespeed__subcmd__help__subcmd__fleet,history)
                cmd="wirespeed__subcmd__help__subcmd__fleet__subcmd__history"
                ;;
            wirespeed__subcmd__help__subcmd__fleet,plan)
                cmd="wirespeed__subcmd__help__subcmd__fleet__subcmd__plan"
                ;;
            wirespeed__subcmd__help__subcmd__fleet,run)
                cmd="wirespeed__subcmd__help__subcmd__fleet__subcmd__run"
                ;;
            wirespeed__subcmd__help__subcmd__fleet,token)
                cmd="wirespeed__subcmd__help__subcmd__fleet__subcmd__token"
                ;;
            wirespeed__subcmd__help__subcmd__fleet,watch)
                cmd="wirespeed__subcmd__help__subcmd__fleet__subcmd__watch"
                ;;
            wirespeed__subcmd__help__subcmd__k8s,cleanup)
                cmd="wirespeed__subcmd__help__subcmd__k8s__subcmd__cleanup"
                ;;
            wirespeed__subcmd__help__subcmd__k8s,image)
                cmd="wirespeed__subcmd__help__subcmd__k8s__subcmd__image"
                ;;
            wirespeed__subcmd__help__subcmd__k8s,manifests)
                cmd="wirespeed__subcmd__help__subcmd__k8s__subcmd__manifests"
                ;;
            wirespeed__subcmd__help__subcmd__k8s,run)
                cmd="wirespeed__subcmd__help__subcmd__k8s__subcmd__run"
                ;;
            wirespeed__subcmd__help__subcmd__k8s,watch)
                cmd="wirespeed__subcmd__help__subcmd__k8s__subcmd__watch"
                ;;
            wirespeed__subcmd__help__subcmd__k8s__subcmd__image,build)
                cmd="wirespeed__subcmd__help__subcmd__k8s__subcmd__image__subcmd__build"
                ;;
            wirespeed__subcmd__help__subcmd__k8s__subcmd__watch,apply)
                cmd="wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__apply"
                ;;
            wirespeed__subcmd__help__subcmd__k8s__subcmd__watch,delete)
                cmd="wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__delete"
                ;;
            wirespeed__subcmd__help__subcmd__k8s__subcmd__watch,in-cluster)
                cmd="wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__in__subcmd__cluster"
                ;;
            wirespeed__subcmd__help__subcmd__k8s__subcmd__watch,manifests)
                cmd="wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__manifests"
                ;;
            wirespeed__subcmd__help__subcmd__k8s__subcmd__watch,status)
                cmd="wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__status"
                ;;
            wirespeed__subcmd__help__subcmd__lab,delayer)
                cmd="wirespeed__subcmd__help__subcmd__lab__subcmd__delayer"
                ;;
            wirespeed__subcmd__help__subcmd__lab,demo)
                cmd="wirespeed__subcmd__help__subcmd__lab__subcmd__demo"
                ;;
            wirespeed__subcmd__help__subcmd__lab,down)
                cmd="wirespeed__subcmd__help__subcmd__lab__subcmd__down"
                ;;
            wirespeed__subcmd__help__subcmd__lab,exec)
                cmd="wirespeed__subcmd__help__subcmd__lab__subcmd__exec"
                ;;
            wirespeed__subcmd__help__subcmd__lab,fault)
                cmd="wirespeed__subcmd__help__subcmd__lab__subcmd__fault"
                ;;
            wirespeed__subcmd__help__subcmd__lab,up)
                cmd="wirespeed__subcmd__help__subcmd__lab__subcmd__up"
                ;;
            wirespeed__subcmd__help__subcmd__tune,apply)
                cmd="wirespeed__subcmd__help__subcmd__tune__subcmd__apply"
                ;;
            wirespeed__subcmd__help__subcmd__tune,confirm)
                cmd="wirespeed__subcmd__help__subcmd__tune__subcmd__confirm"
                ;;
            wirespeed__subcmd__help__subcmd__tune,plan)
                cmd="wirespeed__subcmd__help__subcmd__tune__subcmd__plan"
                ;;
            wirespeed__subcmd__help__subcmd__tune,rollback)
                cmd="wirespeed__subcmd__help__subcmd__tune__subcmd__rollback"
                ;;
            wirespeed__subcmd__help__subcmd__tune,status)
                cmd="wirespeed__subcmd__help__subcmd__tune__subcmd__status"
                ;;
            wirespeed__subcmd__help__subcmd__tune,watchdog)
                cmd="wirespeed__subcmd__help__subcmd__tune__subcmd__watchdog"
                ;;
            wirespeed__subcmd__k8s,cleanup)
                cmd="wirespeed__subcmd__k8s__subcmd__cleanup"
                ;;
            wirespeed__subcmd__k8s,help)
                cmd="wirespeed__subcmd__k8s__subcmd__help"
                ;;
            wirespeed__subcmd__k8s,image)
                cmd="wirespeed__subcmd__k8s__subcmd__image"
                ;;
            wirespeed__subcmd__k8s,manifests)
                cmd="wirespeed__subcmd__k8s__subcmd__manifests"
                ;;
            wirespeed__subcmd__k8s,run)
                cmd="wirespeed__subcmd__k8s__subcmd__run"
                ;;
            wirespeed__subcmd__k8s,watch)
                cmd="wirespeed__subcmd__k8s__subcmd__watch"
                ;;
            wirespeed__subcmd__k8s__subcmd__help,cleanup)
                cmd="wirespeed__subcmd__k8s__subcmd__help__subcmd__cleanup"
                ;;
            wirespeed__subcmd__k8s__subcmd__help,help)
                cmd="wirespeed__subcmd__k8s__subcmd__help__subcmd__help"
                ;;
            wirespeed__subcmd__k8s__subcmd__help,image)
                cmd="wirespeed__subcmd__k8s__subcmd__help__subcmd__image"
                ;;
            wirespeed__subcmd__k8s__subcmd__help,manifests)
                cmd="wirespeed__subcmd__k8s__subcmd__help__subcmd__manifests"
                ;;
            wirespeed__subcmd__k8s__subcmd__help,run)
                cmd="wirespeed__subcmd__k8s__subcmd__help__subcmd__run"
                ;;
            wirespeed__subcmd__k8s__subcmd__help,watch)
                cmd="wirespeed__subcmd__k8s__subcmd__help__subcmd__watch"
                ;;
            wirespeed__subcmd__k8s__subcmd__help__subcmd__image,build)
                cmd="wirespeed__subcmd__k8s__subcmd__help__subcmd__image__subcmd__build"
                ;;
            wirespeed__subcmd__k8s__subcmd__help__subcmd__watch,apply)
                cmd="wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__apply"
                ;;
            wirespeed__subcmd__k8s__subcmd__help__subcmd__watch,delete)
                cmd="wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__delete"
                ;;
            wirespeed__subcmd__k8s__subcmd__help__subcmd__watch,in-cluster)
                cmd="wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__in__subcmd__cluster"
                ;;
            wirespeed__subcmd__k8s__subcmd__help__subcmd__watch,manifests)
                cmd="wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__manifests"
                ;;
            wirespeed__subcmd__k8s__subcmd__help__subcmd__watch,status)
                cmd="wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__status"
                ;;
            wirespeed__subcmd__k8s__subcmd__image,build)
                cmd="wirespeed__subcmd__k8s__subcmd__image__subcmd__build"
                ;;
            wirespeed__subcmd__k8s__subcmd__image,help)
                cmd="wirespeed__subcmd__k8s__subcmd__image__subcmd__help"
                ;;
            wirespeed__subcmd__k8s__subcmd__image__subcmd__help,build)
                cmd="wirespeed__subcmd__k8s__subcmd__image__subcmd__help__subcmd__build"
                ;;
            wirespeed__subcmd__k8s__subcmd__image__subcmd__help,help)
                cmd="wirespeed__subcmd__k8s__subcmd__image__subcmd__help__subcmd__help"
                ;;
            wirespeed__subcmd__k8s__subcmd__watch,apply)
                cmd="wirespeed__subcmd__k8s__subcmd__watch__subcmd__apply"
                ;;
            wirespeed__subcmd__k8s__subcmd__watch,delete)
                cmd="wirespeed__subcmd__k8s__subcmd__watch__subcmd__delete"
                ;;
            wirespeed__subcmd__k8s__subcmd__watch,help)
                cmd="wirespeed__subcmd__k8s__subcmd__watch__subcmd__help"
                ;;
            wirespeed__subcmd__k8s__subcmd__watch,in-cluster)
                cmd="wirespeed__subcmd__k8s__subcmd__watch__subcmd__in__subcmd__cluster"
                ;;
            wirespeed__subcmd__k8s__subcmd__watch,manifests)
                cmd="wirespeed__subcmd__k8s__subcmd__watch__subcmd__manifests"
                ;;
            wirespeed__subcmd__k8s__subcmd__watch,status)
                cmd="wirespeed__subcmd__k8s__subcmd__watch__subcmd__status"
                ;;
            wirespeed__subcmd__k8s__subcmd__watch__subcmd__help,apply)
                cmd="wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__apply"
                ;;
            wirespeed__subcmd__k8s__subcmd__watch__subcmd__help,delete)
                cmd="wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__delete"
                ;;
            wirespeed__subcmd__k8s__subcmd__watch__subcmd__help,help)
                cmd="wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__help"
                ;;
            wirespeed__subcmd__k8s__subcmd__watch__subcmd__help,in-cluster)
                cmd="wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__in__subcmd__cluster"
                ;;
            wirespeed__subcmd__k8s__subcmd__watch__subcmd__help,manifests)
                cmd="wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__manifests"
                ;;
            wirespeed__subcmd__k8s__subcmd__watch__subcmd__help,status)
                cmd="wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__status"
                ;;
            wirespeed__subcmd__lab,delayer)
                cmd="wirespeed__subcmd__lab__subcmd__delayer"
                ;;
            wirespeed__subcmd__lab,demo)
                cmd="wirespeed__subcmd__lab__subcmd__demo"
                ;;
            wirespeed__subcmd__lab,down)
                cmd="wirespeed__subcmd__lab__subcmd__down"
                ;;
            wirespeed__subcmd__lab,exec)
                cmd="wirespeed__subcmd__lab__subcmd__exec"
                ;;
            wirespeed__subcmd__lab,fault)
                cmd="wirespeed__subcmd__lab__subcmd__fault"
                ;;
            wirespeed__subcmd__lab,help)
                cmd="wirespeed__subcmd__lab__subcmd__help"
                ;;
            wirespeed__subcmd__lab,up)
                cmd="wirespeed__subcmd__lab__subcmd__up"
                ;;
            wirespeed__subcmd__lab__subcmd__help,delayer)
                cmd="wirespeed__subcmd__lab__subcmd__help__subcmd__delayer"
                ;;
            wirespeed__subcmd__lab__subcmd__help,demo)
                cmd="wirespeed__subcmd__lab__subcmd__help__subcmd__demo"
                ;;
            wirespeed__subcmd__lab__subcmd__help,down)
                cmd="wirespeed__subcmd__lab__subcmd__help__subcmd__down"
                ;;
            wirespeed__subcmd__lab__subcmd__help,exec)
                cmd="wirespeed__subcmd__lab__subcmd__help__subcmd__exec"
                ;;
            wirespeed__subcmd__lab__subcmd__help,fault)
                cmd="wirespeed__subcmd__lab__subcmd__help__subcmd__fault"
                ;;
            wirespeed__subcmd__lab__subcmd__help,help)
                cmd="wirespeed__subcmd__lab__subcmd__help__subcmd__help"
                ;;
            wirespeed__subcmd__lab__subcmd__help,up)
                cmd="wirespeed__subcmd__lab__subcmd__help__subcmd__up"
                ;;
            wirespeed__subcmd__tune,apply)
                cmd="wirespeed__subcmd__tune__subcmd__apply"
                ;;
            wirespeed__subcmd__tune,confirm)
                cmd="wirespeed__subcmd__tune__subcmd__confirm"
                ;;
            wirespeed__subcmd__tune,help)
                cmd="wirespeed__subcmd__tune__subcmd__help"
                ;;
            wirespeed__subcmd__tune,plan)
                cmd="wirespeed__subcmd__tune__subcmd__plan"
                ;;
            wirespeed__subcmd__tune,rollback)
                cmd="wirespeed__subcmd__tune__subcmd__rollback"
                ;;
            wirespeed__subcmd__tune,status)
                cmd="wirespeed__subcmd__tune__subcmd__status"
                ;;
            wirespeed__subcmd__tune,watchdog)
                cmd="wirespeed__subcmd__tune__subcmd__watchdog"
                ;;
            wirespeed__subcmd__tune__subcmd__help,apply)
                cmd="wirespeed__subcmd__tune__subcmd__help__subcmd__apply"
                ;;
            wirespeed__subcmd__tune__subcmd__help,confirm)
                cmd="wirespeed__subcmd__tune__subcmd__help__subcmd__confirm"
                ;;
            wirespeed__subcmd__tune__subcmd__help,help)
                cmd="wirespeed__subcmd__tune__subcmd__help__subcmd__help"
                ;;
            wirespeed__subcmd__tune__subcmd__help,plan)
                cmd="wirespeed__subcmd__tune__subcmd__help__subcmd__plan"
                ;;
            wirespeed__subcmd__tune__subcmd__help,rollback)
                cmd="wirespeed__subcmd__tune__subcmd__help__subcmd__rollback"
                ;;
            wirespeed__subcmd__tune__subcmd__help,status)
                cmd="wirespeed__subcmd__tune__subcmd__help__subcmd__status"
                ;;
            wirespeed__subcmd__tune__subcmd__help,watchdog)
                cmd="wirespeed__subcmd__tune__subcmd__help__subcmd__watchdog"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        wirespeed)
            opts="-h -V --help --version bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help"
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
        wirespeed__subcmd__agent)
            opts="-p -h --name --http --fleet --max-client-tests --metrics-open --bind --port --max-tests --key-file --max-duration --max-flows --max-threads --max-msg-size --max-connections --max-unauthenticated --max-per-source --handshake-timeout --idle-timeout --preamble-timeout --stop-grace --data-ports --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --http)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fleet)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-client-tests)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bind)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-tests)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-flows)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-msg-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-connections)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-unauthenticated)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-per-source)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --handshake-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --idle-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --preamble-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stop-grace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --data-ports)
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
        wirespeed__subcmd__bench)
            opts="-p -w -u -R -d -n -k -O -T -F -l -b -s -S -m -Z -i -4 -6 -B -h --port --workload --udp --direction --reverse --bidir --time --duration --bytes --blockcount --blocks --omit --warmup --threads --parallel --flows --path --paths --length --msg-size --rate --bitrate --no-gso --no-gro --rr-timeout --size --request --response --window --socket-buffer --sndbuf --rcvbuf --cc --congestion --no-delay --nodelay --no-nodelay --zerocopy --skip-rx-copy --rx-zerocopy --busy-poll --io --breakdown --tos --dscp --mptcp --sendfile --dont-fragment --pacing --pin --remote-pin --interval --probe-rr --format --json --per-flow --key-file --timeout --connect-timeout --version4 --ipv4 --version6 --ipv6 --bind --cport --loaders --loaders-from --json-stream --logfile --timestamps --profile --vcpus --nics --instance --nic-cap --flow-cap --vm-cap --encap --path-cap --interference --loader --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --workload)
                    COMPREPLY=($(compgen -W "stream rr crr udp-stream udp-rr" -- "${cur}"))
                    return 0
                    ;;
                -w)
                    COMPREPLY=($(compgen -W "stream rr crr udp-stream udp-rr" -- "${cur}"))
                    return 0
                    ;;
                --direction)
                    COMPREPLY=($(compgen -W "forward reverse bidir" -- "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --blocks)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --blockcount)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -k)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --warmup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --omit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -O)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -T)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --flows)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --parallel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -F)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --paths)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --msg-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --length)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -l)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bitrate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -b)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rr-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --response)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --socket-buffer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sndbuf)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rcvbuf)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --congestion)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cc)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --busy-poll)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --io)
                    COMPREPLY=($(compgen -W "epoll uring" -- "${cur}"))
                    return 0
                    ;;
                --tos)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -S)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dscp)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pacing)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pin)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --remote-pin)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "table json kv iperf3-json" -- "${cur}"))
                    return 0
                    ;;
                --key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --connect-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bind)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -B)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cport)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --loaders)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --loaders-from)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --logfile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timestamps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --profile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --vcpus)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nic-cap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --flow-cap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --vm-cap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --encap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --path-cap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interference)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --loader)
                    COMPREPLY=($(compgen -W "stream same" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        wirespeed__subcmd__completions)
            opts="-h --help bash elvish fish powershell zsh"
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
        wirespeed__subcmd__demo)
            opts="-h --duration --loopback --out --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
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
        wirespeed__subcmd__doctor)
            opts="-h --netns --root --goal --rtt --rr --peer --port --key-file --test-duration --no-probe --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --netns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --goal)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rtt)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --test-duration)
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
        wirespeed__subcmd__experiment)
            opts="-o -d -h --out --repeats --duration --warmup --resume --fresh --json --dry-run --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --repeats)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --warmup)
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
        wirespeed__subcmd__explain)
            opts="-h --profile --vcpus --nics --instance --nic-cap --flow-cap --vm-cap --encap --path-cap --format --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --profile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --vcpus)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nic-cap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --flow-cap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --vm-cap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --encap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --path-cap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "table json" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        wirespeed__subcmd__fleet)
            opts="-h --help run plan token history watch help"
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
        wirespeed__subcmd__fleet__subcmd__help)
            opts="run plan token history watch help"
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
        wirespeed__subcmd__fleet__subcmd__help__subcmd__help)
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
        wirespeed__subcmd__fleet__subcmd__help__subcmd__history)
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
        wirespeed__subcmd__fleet__subcmd__help__subcmd__plan)
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
        wirespeed__subcmd__fleet__subcmd__help__subcmd__run)
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
        wirespeed__subcmd__fleet__subcmd__help__subcmd__token)
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
        wirespeed__subcmd__fleet__subcmd__help__subcmd__watch)
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
        wirespeed__subcmd__fleet__subcmd__history)
            opts="-h --db --pair --since --workload --limit --incidents --prune --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --db)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pair)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --since)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --workload)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --limit)
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
        wirespeed__subcmd__fleet__subcmd__plan)
            opts="-h --agents --synthetic --pattern --concurrent --rounds --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --agents)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --synthetic)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pattern)
                    COMPREPLY=($(compgen -W "pairs ring all-to-all one-to-many many-to-one" -- "${cur}"))
                    return 0
                    ;;
                --concurrent)
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
        wirespeed__subcmd__fleet__subcmd__run)
            opts="-p -w -u -R -d -n -k -O -T -F -l -b -s -S -m -Z -i -4 -6 -B -h --agents --pattern --concurrent --repeats --retries --min --baseline --tolerance --out --resume --html --history --interference --loader --interference-server --port --workload --udp --direction --reverse --bidir --time --duration --bytes --blockcount --blocks --omit --warmup --threads --parallel --flows --path --paths --length --msg-size --rate --bitrate --no-gso --no-gro --rr-timeout --size --request --response --window --socket-buffer --sndbuf --rcvbuf --cc --congestion --no-delay --nodelay --no-nodelay --zerocopy --skip-rx-copy --rx-zerocopy --busy-poll --io --breakdown --tos --dscp --mptcp --sendfile --dont-fragment --pacing --pin --remote-pin --interval --probe-rr --format --json --per-flow --key-file --timeout --connect-timeout --version4 --ipv4 --version6 --ipv6 --bind --cport --loaders --loaders-from --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --agents)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pattern)
                    COMPREPLY=($(compgen -W "pairs ring all-to-all one-to-many many-to-one" -- "${cur}"))
                    return 0
                    ;;
                --concurrent)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --repeats)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retries)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --min)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --baseline)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tolerance)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --resume)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --html)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --history)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interference)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --loader)
                    COMPREPLY=($(compgen -W "stream same" -- "${cur}"))
                    return 0
                    ;;
                --interference-server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --workload)
                    COMPREPLY=($(compgen -W "stream rr crr udp-stream udp-rr" -- "${cur}"))
                    return 0
                    ;;
                -w)
                    COMPREPLY=($(compgen -W "stream rr crr udp-stream udp-rr" -- "${cur}"))
                    return 0
                    ;;
                --direction)
                    COMPREPLY=($(compgen -W "forward reverse bidir" -- "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --blocks)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --blockcount)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -k)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --warmup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --omit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -O)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -T)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --flows)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --parallel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -F)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --paths)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --msg-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --length)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -l)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bitrate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -b)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rr-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --response)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --socket-buffer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sndbuf)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rcvbuf)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --congestion)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cc)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --busy-poll)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --io)
                    COMPREPLY=($(compgen -W "epoll uring" -- "${cur}"))
                    return 0
                    ;;
                --tos)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -S)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dscp)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pacing)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pin)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --remote-pin)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "table json kv iperf3-json" -- "${cur}"))
                    return 0
                    ;;
                --key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --connect-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bind)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -B)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cport)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --loaders)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --loaders-from)
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
        wirespeed__subcmd__fleet__subcmd__token)
            opts="-h --key-file --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --key-file)
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
        wirespeed__subcmd__fleet__subcmd__watch)
            opts="-h --agents --synthetic --key-file --history --budget --link-rate --probe-period --probes --bandwidth-duration --peers --drift-ratio --min-change --for --retain --listen --dry-run --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --agents)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --synthetic)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --history)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --link-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --probe-period)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --probes)
                    COMPREPLY=($(compgen -W "rr crr rr-64k" -- "${cur}"))
                    return 0
                    ;;
                --bandwidth-duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peers)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --drift-ratio)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --min-change)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --for)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retain)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --listen)
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
        wirespeed__subcmd__help)
            opts="bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help"
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
        wirespeed__subcmd__help__subcmd__agent)
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
        wirespeed__subcmd__help__subcmd__bench)
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
        wirespeed__subcmd__help__subcmd__completions)
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
        wirespeed__subcmd__help__subcmd__demo)
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
        wirespeed__subcmd__help__subcmd__doctor)
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
        wirespeed__subcmd__help__subcmd__experiment)
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
        wirespeed__subcmd__help__subcmd__explain)
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
        wirespeed__subcmd__help__subcmd__fleet)
            opts="run plan token history watch"
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
        wirespeed__subcmd__help__subcmd__fleet__subcmd__history)
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
        wirespeed__subcmd__help__subcmd__fleet__subcmd__plan)
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
        wirespeed__subcmd__help__subcmd__fleet__subcmd__run)
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
        wirespeed__subcmd__help__subcmd__fleet__subcmd__token)
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
        wirespeed__subcmd__help__subcmd__fleet__subcmd__watch)
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
        wirespeed__subcmd__help__subcmd__help)
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
        wirespeed__subcmd__help__subcmd__inspect)
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
        wirespeed__subcmd__help__subcmd__k8s)
            opts="manifests run image watch cleanup"
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
        wirespeed__subcmd__help__subcmd__k8s__subcmd__cleanup)
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
        wirespeed__subcmd__help__subcmd__k8s__subcmd__image)
            opts="build"
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
        wirespeed__subcmd__help__subcmd__k8s__subcmd__image__subcmd__build)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__help__subcmd__k8s__subcmd__manifests)
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
        wirespeed__subcmd__help__subcmd__k8s__subcmd__run)
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
        wirespeed__subcmd__help__subcmd__k8s__subcmd__watch)
            opts="apply manifests status delete in-cluster"
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
        wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__apply)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__delete)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__in__subcmd__cluster)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__manifests)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__status)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__help__subcmd__lab)
            opts="up down demo fault delayer exec"
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
        wirespeed__subcmd__help__subcmd__lab__subcmd__delayer)
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
        wirespeed__subcmd__help__subcmd__lab__subcmd__demo)
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
        wirespeed__subcmd__help__subcmd__lab__subcmd__down)
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
        wirespeed__subcmd__help__subcmd__lab__subcmd__exec)
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
        wirespeed__subcmd__help__subcmd__lab__subcmd__fault)
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
        wirespeed__subcmd__help__subcmd__lab__subcmd__up)
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
        wirespeed__subcmd__help__subcmd__man)
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
        wirespeed__subcmd__help__subcmd__model)
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
        wirespeed__subcmd__help__subcmd__optimize)
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
        wirespeed__subcmd__help__subcmd__report)
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
        wirespeed__subcmd__help__subcmd__serve)
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
        wirespeed__subcmd__help__subcmd__tune)
            opts="plan apply confirm rollback status watchdog"
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
        wirespeed__subcmd__help__subcmd__tune__subcmd__apply)
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
        wirespeed__subcmd__help__subcmd__tune__subcmd__confirm)
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
        wirespeed__subcmd__help__subcmd__tune__subcmd__plan)
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
        wirespeed__subcmd__help__subcmd__tune__subcmd__rollback)
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
        wirespeed__subcmd__help__subcmd__tune__subcmd__status)
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
        wirespeed__subcmd__help__subcmd__tune__subcmd__watchdog)
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
        wirespeed__subcmd__inspect)
            opts="-h --netns --root --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --netns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --root)
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
        wirespeed__subcmd__k8s)
            opts="-h --context --help manifests run image watch cleanup help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --context)
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
        wirespeed__subcmd__k8s__subcmd__cleanup)
            opts="-n -h --run --namespace --force --kubeconfig --context --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --run)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
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
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        wirespeed__subcmd__k8s__subcmd__help)
            opts="manifests run image watch cleanup help"
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
        wirespeed__subcmd__k8s__subcmd__help__subcmd__cleanup)
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
        wirespeed__subcmd__k8s__subcmd__help__subcmd__help)
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
        wirespeed__subcmd__k8s__subcmd__help__subcmd__image)
            opts="build"
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
        wirespeed__subcmd__k8s__subcmd__help__subcmd__image__subcmd__build)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__k8s__subcmd__help__subcmd__manifests)
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
        wirespeed__subcmd__k8s__subcmd__help__subcmd__run)
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
        wirespeed__subcmd__k8s__subcmd__help__subcmd__watch)
            opts="apply manifests status delete in-cluster"
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
        wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__apply)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__delete)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__in__subcmd__cluster)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__manifests)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__status)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__k8s__subcmd__image)
            opts="-h --context --help build help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --context)
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
        wirespeed__subcmd__k8s__subcmd__image__subcmd__build)
            opts="-h --binary --output --name --push --plain-http --registry-user --registry-password-file --context --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --binary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --push)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --registry-user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --registry-password-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
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
        wirespeed__subcmd__k8s__subcmd__image__subcmd__help)
            opts="build help"
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
        wirespeed__subcmd__k8s__subcmd__image__subcmd__help__subcmd__build)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__k8s__subcmd__image__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__k8s__subcmd__manifests)
            opts="-h --network --image --http-port --profile --network-prefix --ifname-prefix --dra-selector --nic-cel --device-class --nics --keep-ebpf --node-selector --toleration --tolerate-all --requests --limits --priority-class --data-ports --privileged-namespace --no-network-policy --api-source --namespace --port --key-file --output --runner --context --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --network)
                    COMPREPLY=($(compgen -W "host pod dra" -- "${cur}"))
                    return 0
                    ;;
                --image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --http-port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --profile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --network-prefix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ifname-prefix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nic-cel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dra-selector)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --device-class)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --node-selector)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --toleration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --requests)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --limits)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --priority-class)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --data-ports)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --api-source)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "yaml json" -- "${cur}"))
                    return 0
                    ;;
                --context)
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
        wirespeed__subcmd__k8s__subcmd__run)
            opts="-n -p -w -u -R -d -k -O -T -F -l -b -s -S -m -Z -i -4 -6 -B -h --network --image --http-port --profile --network-prefix --ifname-prefix --dra-selector --nic-cel --device-class --nics --keep-ebpf --node-selector --toleration --tolerate-all --requests --limits --priority-class --data-ports --privileged-namespace --no-network-policy --api-source --paths --nodes --sample --seed --pairs --min --min-tps --baseline --tolerance --max-gap --csv --junit --html --sweep-sizes --sweep-flows --kubeconfig --namespace --pattern --concurrent --repeat --repeats --retries --allow-contended --ready-timeout --api-retry --keep --reach --out --resume --policy-load --interference --loader --interference-server --workloads --port --workload --udp --direction --reverse --bidir --time --duration --blockcount --blocks --omit --warmup --threads --parallel --flows --path --length --msg-size --rate --bitrate --no-gso --no-gro --rr-timeout --size --request --response --window --socket-buffer --sndbuf --rcvbuf --cc --congestion --no-delay --nodelay --no-nodelay --zerocopy --skip-rx-copy --rx-zerocopy --busy-poll --io --breakdown --tos --dscp --mptcp --sendfile --dont-fragment --pacing --pin --remote-pin --interval --probe-rr --format --json --per-flow --key-file --timeout --connect-timeout --version4 --ipv4 --version6 --ipv6 --bind --cport --loaders --loaders-from --engine-paths --bytes --context --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --network)
                    COMPREPLY=($(compgen -W "host pod dra" -- "${cur}"))
                    return 0
                    ;;
                --image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --http-port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --profile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --network-prefix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ifname-prefix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nic-cel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dra-selector)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --device-class)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --node-selector)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --toleration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --requests)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --limits)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --priority-class)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --data-ports)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --api-source)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --paths)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nodes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sample)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pairs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --min)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --min-tps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --baseline)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tolerance)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-gap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --csv)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --junit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --html)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sweep-sizes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sweep-flows)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pattern)
                    COMPREPLY=($(compgen -W "pairs ring all-to-all one-to-many many-to-one" -- "${cur}"))
                    return 0
                    ;;
                --concurrent)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --repeats)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --repeat)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retries)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ready-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --api-retry)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reach)
                    COMPREPLY=($(compgen -W "api direct" -- "${cur}"))
                    return 0
                    ;;
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --resume)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --policy-load)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interference)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --loader)
                    COMPREPLY=($(compgen -W "stream same" -- "${cur}"))
                    return 0
                    ;;
                --interference-server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --workloads)
                    COMPREPLY=($(compgen -W "stream rr crr udp-stream udp-rr" -- "${cur}"))
                    return 0
                    ;;
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --workload)
                    COMPREPLY=($(compgen -W "stream rr crr udp-stream udp-rr" -- "${cur}"))
                    return 0
                    ;;
                -w)
                    COMPREPLY=($(compgen -W "stream rr crr udp-stream udp-rr" -- "${cur}"))
                    return 0
                    ;;
                --direction)
                    COMPREPLY=($(compgen -W "forward reverse bidir" -- "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --blocks)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --blockcount)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -k)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --warmup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --omit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -O)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -T)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --flows)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --parallel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -F)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --msg-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --length)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -l)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bitrate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -b)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rr-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --response)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --socket-buffer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sndbuf)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rcvbuf)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --congestion)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cc)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --busy-poll)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --io)
                    COMPREPLY=($(compgen -W "epoll uring" -- "${cur}"))
                    return 0
                    ;;
                --tos)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -S)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dscp)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pacing)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pin)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --remote-pin)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "table json kv iperf3-json" -- "${cur}"))
                    return 0
                    ;;
                --key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --connect-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bind)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -B)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cport)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --loaders)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --loaders-from)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --engine-paths)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
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
        wirespeed__subcmd__k8s__subcmd__watch)
            opts="-h --context --help apply manifests status delete in-cluster help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --context)
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
        wirespeed__subcmd__k8s__subcmd__watch__subcmd__apply)
            opts="-n -h --network --image --http-port --profile --network-prefix --ifname-prefix --dra-selector --nic-cel --device-class --nics --keep-ebpf --node-selector --toleration --tolerate-all --requests --limits --priority-class --data-ports --privileged-namespace --no-network-policy --api-source --namespace --port --key-file --history-claim --rediscover --ready-timeout --kubeconfig --output --context --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --network)
                    COMPREPLY=($(compgen -W "host pod dra" -- "${cur}"))
                    return 0
                    ;;
                --image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --http-port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --profile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --network-prefix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ifname-prefix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nic-cel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dra-selector)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --device-class)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --node-selector)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --toleration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --requests)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --limits)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --priority-class)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --data-ports)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --api-source)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --history-claim)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rediscover)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ready-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "yaml json" -- "${cur}"))
                    return 0
                    ;;
                --context)
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
        wirespeed__subcmd__k8s__subcmd__watch__subcmd__delete)
            opts="-n -h --namespace --kubeconfig --json --context --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
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
        wirespeed__subcmd__k8s__subcmd__watch__subcmd__help)
            opts="apply manifests status delete in-cluster help"
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
        wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__apply)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__delete)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__in__subcmd__cluster)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__manifests)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__status)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
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
        wirespeed__subcmd__k8s__subcmd__watch__subcmd__in__subcmd__cluster)
            opts="-h --namespace --network --port --http-port --rediscover --ready-timeout --agents --synthetic --key-file --history --budget --link-rate --probe-period --probes --bandwidth-duration --peers --drift-ratio --min-change --for --retain --listen --dry-run --context --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --network)
                    COMPREPLY=($(compgen -W "host pod" -- "${cur}"))
                    return 0
                    ;;
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --http-port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rediscover)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ready-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --agents)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --synthetic)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --history)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --link-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --probe-period)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --probes)
                    COMPREPLY=($(compgen -W "rr crr rr-64k" -- "${cur}"))
                    return 0
                    ;;
                --bandwidth-duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peers)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --drift-ratio)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --min-change)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --for)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retain)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
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
        wirespeed__subcmd__k8s__subcmd__watch__subcmd__manifests)
            opts="-n -h --network --image --http-port --profile --network-prefix --ifname-prefix --dra-selector --nic-cel --device-class --nics --keep-ebpf --node-selector --toleration --tolerate-all --requests --limits --priority-class --data-ports --privileged-namespace --no-network-policy --api-source --namespace --port --key-file --history-claim --rediscover --ready-timeout --kubeconfig --output --context --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --network)
                    COMPREPLY=($(compgen -W "host pod dra" -- "${cur}"))
                    return 0
                    ;;
                --image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --http-port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --profile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --network-prefix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ifname-prefix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nic-cel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dra-selector)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --device-class)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --node-selector)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --toleration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --requests)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --limits)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --priority-class)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --data-ports)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --api-source)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --history-claim)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rediscover)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ready-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "yaml json" -- "${cur}"))
                    return 0
                    ;;
                --context)
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
        wirespeed__subcmd__k8s__subcmd__watch__subcmd__status)
            opts="-n -h --namespace --kubeconfig --json --context --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
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
        wirespeed__subcmd__lab)
            opts="-h --help up down demo fault delayer exec help"
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
        wirespeed__subcmd__lab__subcmd__delayer)
            opts="-h --queue --delay-ms --exit-on-eof --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --queue)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --delay-ms)
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
        wirespeed__subcmd__lab__subcmd__demo)
            opts="-h --duration --loopback --out --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
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
        wirespeed__subcmd__lab__subcmd__down)
            opts="-h --state-dir --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --state-dir)
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
        wirespeed__subcmd__lab__subcmd__exec)
            opts="-h --state-dir --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --state-dir)
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
        wirespeed__subcmd__lab__subcmd__fault)
            opts="-h --delay --loss --rate --to --nic --forwarded --state-dir --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --delay)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --loss)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nic)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --forwarded)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-dir)
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
        wirespeed__subcmd__lab__subcmd__help)
            opts="up down demo fault delayer exec help"
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
        wirespeed__subcmd__lab__subcmd__help__subcmd__delayer)
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
        wirespeed__subcmd__lab__subcmd__help__subcmd__demo)
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
        wirespeed__subcmd__lab__subcmd__help__subcmd__down)
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
        wirespeed__subcmd__lab__subcmd__help__subcmd__exec)
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
        wirespeed__subcmd__lab__subcmd__help__subcmd__fault)
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
        wirespeed__subcmd__lab__subcmd__help__subcmd__help)
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
        wirespeed__subcmd__lab__subcmd__help__subcmd__up)
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
        wirespeed__subcmd__lab__subcmd__up)
            opts="-h --state-dir --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --state-dir)
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
        wirespeed__subcmd__man)
            opts="-h --out --help"
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
        wirespeed__subcmd__model)
            opts="-h --profile --vcpus --nics --instance --nic-cap --flow-cap --vm-cap --price --target --list --format --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --profile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --vcpus)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nic-cap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --flow-cap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --vm-cap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --price)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --target)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "table json" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        wirespeed__subcmd__optimize)
            opts="-p -o -h --port --key-file --goal --size --paths --budget --step-duration --warmup --repeats --max-repeats --noise --keep --no-host --state-dir --out --json --timeout --netns --root --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --goal)
                    COMPREPLY=($(compgen -W "throughput bidir rr" -- "${cur}"))
                    return 0
                    ;;
                --size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --paths)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --step-duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --warmup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --repeats)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-repeats)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --noise)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --netns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --root)
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
        wirespeed__subcmd__report)
            opts="-l -o -f -h --label --output --format --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --label)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -l)
                    COMPREPLY=($(compgen -f "${cur}"))
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
                --format)
                    COMPREPLY=($(compgen -W "html md csv" -- "${cur}"))
                    return 0
                    ;;
                -f)
                    COMPREPLY=($(compgen -W "html md csv" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        wirespeed__subcmd__serve)
            opts="-p -h --bind --port --max-tests --key-file --max-duration --max-flows --max-threads --max-msg-size --max-connections --max-unauthenticated --max-per-source --handshake-timeout --idle-timeout --preamble-timeout --stop-grace --data-ports --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --bind)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-tests)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-flows)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-msg-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-connections)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-unauthenticated)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-per-source)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --handshake-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --idle-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --preamble-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stop-grace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --data-ports)
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
        wirespeed__subcmd__tune)
            opts="-h --help plan apply confirm rollback status watchdog help"
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
        wirespeed__subcmd__tune__subcmd__apply)
            opts="-h --netns --root --state-dir --lock-wait --goal --rtt --rr --profile --dev --peer --json --confirm-within --no-confirm --force --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --netns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lock-wait)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --goal)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rtt)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --profile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dev)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --confirm-within)
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
        wirespeed__subcmd__tune__subcmd__confirm)
            opts="-h --netns --root --state-dir --lock-wait --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --netns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lock-wait)
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
        wirespeed__subcmd__tune__subcmd__help)
            opts="plan apply confirm rollback status watchdog help"
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
        wirespeed__subcmd__tune__subcmd__help__subcmd__apply)
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
        wirespeed__subcmd__tune__subcmd__help__subcmd__confirm)
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
        wirespeed__subcmd__tune__subcmd__help__subcmd__help)
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
        wirespeed__subcmd__tune__subcmd__help__subcmd__plan)
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
        wirespeed__subcmd__tune__subcmd__help__subcmd__rollback)
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
        wirespeed__subcmd__tune__subcmd__help__subcmd__status)
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
        wirespeed__subcmd__tune__subcmd__help__subcmd__watchdog)
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
        wirespeed__subcmd__tune__subcmd__plan)
            opts="-h --netns --root --state-dir --lock-wait --goal --rtt --rr --profile --dev --peer --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --netns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lock-wait)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --goal)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rtt)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --profile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dev)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peer)
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
        wirespeed__subcmd__tune__subcmd__rollback)
            opts="-h --netns --root --state-dir --lock-wait --if-overdue --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --netns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lock-wait)
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
        wirespeed__subcmd__tune__subcmd__status)
            opts="-h --netns --root --state-dir --lock-wait --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --netns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lock-wait)
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
        wirespeed__subcmd__tune__subcmd__watchdog)
            opts="-h --netns --root --state-dir --lock-wait --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --netns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lock-wait)
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
    complete -F _wirespeed -o nosort -o bashdefault -o default wirespeed
else
    complete -F _wirespeed -o bashdefault -o default wirespeed
fi
