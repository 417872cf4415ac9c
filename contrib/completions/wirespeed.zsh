#compdef wirespeed

autoload -U is-at-least

_wirespeed() {
    typeset -A opt_args
    typeset -a _arguments_options
    local ret=1

    if is-at-least 5.2; then
        _arguments_options=(-s -S -C)
    else
        _arguments_options=(-s -C)
    fi

    local context curcontext="$curcontext" state line
    _arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_wirespeed_commands" \
"*::: :->wirespeed" \
&& ret=0
    case $state in
    (wirespeed)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-command-$line[1]:"
        case $line[1] in
            (bench)
_arguments "${_arguments_options[@]}" : \
'-p+[Control port when HOST names none]:PORT:_default' \
'--port=[Control port when HOST names none]:PORT:_default' \
'-w+[Workload (each is one row of the engine'\''s registry)]:WORKLOAD:((stream\:"bulk TCP"
rr\:"TCP request/response"
crr\:"TCP connect/request/response/close"
udp-stream\:"bulk UDP (loss, reordering, jitter)"
udp-rr\:"UDP request/response with a per-request timeout"))' \
'--workload=[Workload (each is one row of the engine'\''s registry)]:WORKLOAD:((stream\:"bulk TCP"
rr\:"TCP request/response"
crr\:"TCP connect/request/response/close"
udp-stream\:"bulk UDP (loss, reordering, jitter)"
udp-rr\:"UDP request/response with a per-request timeout"))' \
'--direction=[Stream direction\: forward (client sends), reverse, bidir]:DIRECTION:(forward reverse bidir)' \
'-d+[Measured time, e.g. 10s (-t as in iperf3; a bare number is seconds)]:DURATION:_default' \
'--duration=[Measured time, e.g. 10s (-t as in iperf3; a bare number is seconds)]:DURATION:_default' \
'--time=[Measured time, e.g. 10s (-t as in iperf3; a bare number is seconds)]:DURATION:_default' \
'(-d --duration -k --blocks)-n+[End after this many bytes moved in the window instead of after a time (iperf3'\''s -n), e.g. 1G; with rr/crr requests and responses both count]:BYTES:_default' \
'(-d --duration -k --blocks)--bytes=[End after this many bytes moved in the window instead of after a time (iperf3'\''s -n), e.g. 1G; with rr/crr requests and responses both count]:BYTES:_default' \
'(-d --duration)-k+[End after this many messages (-l each) instead of after a time (iperf3'\''s -k)]:BLOCKS:_default' \
'(-d --duration)--blocks=[End after this many messages (-l each) instead of after a time (iperf3'\''s -k)]:BLOCKS:_default' \
'(-d --duration)--blockcount=[End after this many messages (-l each) instead of after a time (iperf3'\''s -k)]:BLOCKS:_default' \
'-O+[Traffic before measuring, excluded from figures (iperf3'\''s -O/--omit)]:WARMUP:_default' \
'--warmup=[Traffic before measuring, excluded from figures (iperf3'\''s -O/--omit)]:WARMUP:_default' \
'--omit=[Traffic before measuring, excluded from figures (iperf3'\''s -O/--omit)]:WARMUP:_default' \
'-T+[Worker threads per side (each one event loop)]:THREADS:_default' \
'--threads=[Worker threads per side (each one event loop)]:THREADS:_default' \
'-F+[Flows per direction (stream) or concurrent transactions (rr, crr)]:FLOWS:_default' \
'--flows=[Flows per direction (stream) or concurrent transactions (rr, crr)]:FLOWS:_default' \
'--parallel=[Flows per direction (stream) or concurrent transactions (rr, crr)]:FLOWS:_default' \
'*--path=[A path LOCAL=REMOTE (LOCAL an address or device); repeat for several NICs]:PATH:_default' \
'--paths=[Comma list of paths, e.g. 10.0.0.1=10.0.0.2,10.0.1.1=10.0.1.2]:PATHS:_default' \
'-l+[Bytes per send/recv call in stream tests (default 512k); the datagram size in udp-stream (default 1400)]:MSG_SIZE:_default' \
'--msg-size=[Bytes per send/recv call in stream tests (default 512k); the datagram size in udp-stream (default 1400)]:MSG_SIZE:_default' \
'--length=[Bytes per send/recv call in stream tests (default 512k); the datagram size in udp-stream (default 1400)]:MSG_SIZE:_default' \
'-b+[udp-stream\: target rate per flow, evenly paced, e.g. 1gbit; 0 (the default) sends as fast as the socket takes datagrams]:BITRATE:_default' \
'--bitrate=[udp-stream\: target rate per flow, evenly paced, e.g. 1gbit; 0 (the default) sends as fast as the socket takes datagrams]:BITRATE:_default' \
'--rate=[udp-stream\: target rate per flow, evenly paced, e.g. 1gbit; 0 (the default) sends as fast as the socket takes datagrams]:BITRATE:_default' \
'--rr-timeout=[udp-rr\: how long a request waits for its answer before it counts as lost and the next one goes (default 200ms)]:RR_TIMEOUT:_default' \
'-s+[rr/crr request and response size; a comma list runs a sweep]:SIZE:_default' \
'--size=[rr/crr request and response size; a comma list runs a sweep]:SIZE:_default' \
'--request=[rr/crr request size]:REQUEST:_default' \
'--response=[rr/crr response size]:RESPONSE:_default' \
'--socket-buffer=[SO_SNDBUF and SO_RCVBUF both (iperf3'\''s --window)]:SOCKET_BUFFER:_default' \
'--window=[SO_SNDBUF and SO_RCVBUF both (iperf3'\''s --window)]:SOCKET_BUFFER:_default' \
'--sndbuf=[SO_SNDBUF]:SNDBUF:_default' \
'--rcvbuf=[SO_RCVBUF]:RCVBUF:_default' \
'--congestion=[Congestion control, e.g. cubic or bbr]:CONGESTION:_default' \
'--cc=[Congestion control, e.g. cubic or bbr]:CONGESTION:_default' \
'--busy-poll=[Busy polling for USECS microseconds on every data socket (SO_BUSY_POLL; SO_PREFER_BUSY_POLL stays off) and on each worker'\''s epoll instance (EPIOCSPARAMS), both sides; 1-1000. Raising it needs CAP_NET_ADMIN; it acts only on NICs with NAPI (veth\: with GRO on)]:USECS:_default' \
'--io=[I/O engine of both sides'\'' workers\: epoll (the default) or uring (io_uring\: several sends in flight per flow, multishot receive into provided buffers, batched submissions; stream, rr and unpaced udp-stream only). A side whose kernel refuses io_uring (the io_uring_disabled sysctl, a container'\''s seccomp profile) runs epoll and says why in the notes]:ENGINE:(epoll uring)' \
'(--dscp)-S+[IP TOS byte on every flow, both sides, e.g. 0x10 (IPV6_TCLASS on IPv6)]:TOS:_default' \
'(--dscp)--tos=[IP TOS byte on every flow, both sides, e.g. 0x10 (IPV6_TCLASS on IPv6)]:TOS:_default' \
'--dscp=[DSCP on every flow\: a number 0-63 or a name (ef, af11..af43, cs0..cs7)]:DSCP:_default' \
'--pacing=[Pace each flow at this rate (SO_MAX_PACING_RATE), e.g. 2gbit]:PACING:_default' \
'--pin=[Pin client worker threads to these CPUs, e.g. 0,1 or 0-3]:PIN:_default' \
'--remote-pin=[Pin server worker threads to these CPUs]:REMOTE_PIN:_default' \
'-i+[Interval reports, e.g. 1s]:INTERVAL:_default' \
'--interval=[Interval reports, e.g. 1s]:INTERVAL:_default' \
'--format=[Output\: table, json, kv (neper-style key=value) or iperf3-json (iperf3 -J'\''s document)]:FORMAT:(table json kv iperf3-json)' \
'--key-file=[Key file for a server started with --key-file]:KEY_FILE:_files' \
'--timeout=[Timeout for connecting and for each control answer as a whole]:TIMEOUT:_default' \
'--connect-timeout=[Timeout for each TCP connect alone, control and data; a bare number is milliseconds, as in iperf3]:CONNECT_TIMEOUT:_default' \
'(--path --paths)-B+[Client address to send from (control and data; iperf3'\''s -B)]:BIND:_default' \
'(--path --paths)--bind=[Client address to send from (control and data; iperf3'\''s -B)]:BIND:_default' \
'--cport=[Client data port\: flow N binds PORT + N (iperf3'\''s --cport)]:CPORT:_default' \
'--loaders=[Run this request/response test beside K loaders on the same server (report 3'\''s interference)\: one stream of K flows on K threads, started first. In an experiment, sweep it (\`arg = "--loaders"\`)]:K:_default' \
'--loaders-from=[Lab hosts the --loaders run from, K spread over them in turn (experiments only; default\: the cell'\''s own client host)]:HOST,HOST,...:_default' \
'--logfile=[Write the output to this file (appended) instead of stdout]:LOGFILE:_files' \
'--timestamps=[Begin each line of text output with the time\: UTC (\`2026-11-26 01\:02\:03 UTC \`) without a FORMAT, else the local time in strftime FORMAT as iperf3 does (\`--timestamps='\''%c '\''\`)]::FORMAT:_default' \
'--profile=[Cloud profile\: gce, ibm-vpc, tpu-multinic, aws, azure, lab, custom, or a TOML file'\''s path]:PROFILE:_default' \
'--vcpus=[vCPUs of the VM]:VCPUS:_default' \
'--nics=[NICs in use (explain\: default the result'\''s path count)]:NICS:_default' \
'--instance=[An instance size listed in the profile, e.g. e2-standard-8]:INSTANCE:_default' \
'--nic-cap=[Per-NIC cap, e.g. 25gbit (overrides the profile'\''s)]:NIC_CAP:_default' \
'--flow-cap=[Per-flow cap, e.g. 5gbit (overrides the profile'\''s)]:FLOW_CAP:_default' \
'--vm-cap=[Per-VM cap, e.g. 100gbit (overrides the profile'\''s rule)]:VM_CAP:_default' \
'--encap=[Encapsulation on the path\: vxlan, ipip, wireguard, ...]:ENCAP:_default' \
'--path-cap=[Cap of each path when known apart from the profile, e.g. a lab link'\''s 1gbit]:PATH_CAP:_default' \
'*--interference=[Interference\: measure the -w rr/crr/udp-rr test (the victim) alone and beside K loaders on the same server, for each K listed (e.g. 0,1,2,4,8), at each --size (default 4k,64k,1m); prints the victim'\''s trans/s and p50/p99/p99.9 per K and names the K where p99 doubles. The loaders are one test of K flows on K threads (the server needs --max-tests 2 or more)]:K,K,...:_default' \
'--loader=[What each --interference loader runs\: stream (bulk, the defaults) or the victim'\''s own workload at its size]:LOADER:((stream\:"Bulk TCP at bench'\''s defaults"
same\:"The victim'\''s own workload and block size"))' \
'(-w --workload)-u[Short for --workload udp-stream (iperf3'\''s -u)]' \
'(-w --workload)--udp[Short for --workload udp-stream (iperf3'\''s -u)]' \
'(--bidir)-R[Short for --direction reverse]' \
'(--bidir)--reverse[Short for --direction reverse]' \
'--bidir[Short for --direction bidir]' \
'--no-gso[udp-stream\: send without UDP GSO (one datagram per send)]' \
'--no-gro[udp-stream\: receive without UDP GRO]' \
'(--no-nodelay)--nodelay[Force TCP_NODELAY on (default\: on for rr/crr, off for stream)]' \
'(--no-nodelay)--no-delay[Force TCP_NODELAY on (default\: on for rr/crr, off for stream)]' \
'--no-nodelay[Force TCP_NODELAY off]' \
'--zerocopy[Send with MSG_ZEROCOPY (the kernel copies anyway over loopback and veth)]' \
'--skip-rx-copy[Receive with MSG_TRUNC\: the kernel discards data instead of copying it. Saves receiver CPU (about 20% per Gbit/s here); raises the rate only where the receiver'\''s CPU is what limits it, not a sender-bound flow (docs/benchmarks.md, "skip-rx")]' \
'--rx-zerocopy[stream\: the receiver maps received pages (TCP_ZEROCOPY_RECEIVE) instead of copying them and reports, per flow, the fraction of bytes mapped. The kernel maps only whole pages\: it needs an MSS that is a multiple of 4096 (on a NIC, header split) and, over veth and loopback, a --zerocopy sender (docs/benchmarks.md)]' \
'--breakdown[rr, crr, udp-rr\: timestamp a sample of transactions on both sides (kernel software timestamps) and report where the round trip is spent (docs/latency.md)]' \
'-m[MPTCP sockets (IPPROTO_MPTCP) on both sides; needs net.mptcp.enabled=1]' \
'--mptcp[MPTCP sockets (IPPROTO_MPTCP) on both sides; needs net.mptcp.enabled=1]' \
'-Z[stream\: send with sendfile(2) from an in-memory file (iperf3'\''s -Z)]' \
'--sendfile[stream\: send with sendfile(2) from an in-memory file (iperf3'\''s -Z)]' \
'--dont-fragment[UDP\: set the IPv4 Don'\''t Fragment bit (and IPv6'\''s no-fragment option)]' \
'--probe-rr[Measure 1-byte request/response latency beside a stream test]' \
'--json[Short for --format json]' \
'--per-flow[Show every flow in the table]' \
'(-6 --ipv6)-4[IPv4 only]' \
'(-6 --ipv6)--ipv4[IPv4 only]' \
'(-6 --ipv6)--version4[IPv4 only]' \
'-6[IPv6 only]' \
'--ipv6[IPv6 only]' \
'--version6[IPv6 only]' \
'--json-stream[One JSON line per interval and one at the end (NDJSON, iperf3'\''s --json-stream); with --format iperf3-json, iperf3'\''s own events]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
':host -- Server to test against\: HOST, HOST\:PORT or \[IPV6\]\:PORT:_default' \
&& ret=0
;;
(serve)
_arguments "${_arguments_options[@]}" : \
'--bind=[Address to listen on (\`\:\:\` takes IPv4 and IPv6)]:BIND:_default' \
'-p+[Control port]:PORT:_default' \
'--port=[Control port]:PORT:_default' \
'--max-tests=[Tests that may run at once; more get a "busy" answer]:MAX_TESTS:_default' \
'--key-file=[Only clients proving this key (HMAC challenge) may run tests]:KEY_FILE:_files' \
'--max-duration=[Longest warm-up plus duration a client may ask for]:MAX_DURATION:_default' \
'--max-flows=[Most connections in one test \[default\: from the open-file limit, leaving headroom; at most 20000\]]:MAX_FLOWS:_default' \
'--max-threads=[Most worker threads in one test]:MAX_THREADS:_default' \
'--max-msg-size=[Largest message, request or response size]:MAX_MSG_SIZE:_default' \
'--max-connections=[Authenticated control connections at once]:MAX_CONNECTIONS:_default' \
'--max-unauthenticated=[Connections still in the handshake at once (the oldest makes room)]:MAX_UNAUTHENTICATED:_default' \
'--max-per-source=[Control connections from one address (IPv6\: one /64) at once]:MAX_PER_SOURCE:_default' \
'--handshake-timeout=[Time from a client'\''s connect to the end of its handshake]:HANDSHAKE_TIMEOUT:_default' \
'--idle-timeout=[Time a client has for each whole message after the handshake]:IDLE_TIMEOUT:_default' \
'--preamble-timeout=[Time a data connection has to send its preamble]:PREAMBLE_TIMEOUT:_default' \
'--stop-grace=[Time after a test'\''s end the server waits for the client'\''s stop]:STOP_GRACE:_default' \
'--data-ports=[Ports for the tests'\'' data connections (LO-HI), so a firewall, NetworkPolicy or Service can admit them \[default\: any free port\]]:LO-HI:_default' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(lab)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
":: :_wirespeed__subcmd__lab_commands" \
"*::: :->lab" \
&& ret=0

    case $state in
    (lab)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-lab-command-$line[1]:"
        case $line[1] in
            (up)
_arguments "${_arguments_options[@]}" : \
'--state-dir=[Where lab state is kept]:STATE_DIR:_files' \
'-h[Print help]' \
'--help[Print help]' \
':file -- The lab file:_files' \
&& ret=0
;;
(down)
_arguments "${_arguments_options[@]}" : \
'--state-dir=[Where lab state is kept]:STATE_DIR:_files' \
'-h[Print help]' \
'--help[Print help]' \
':name -- The lab'\''s name:_default' \
&& ret=0
;;
(demo)
_arguments "${_arguments_options[@]}" : \
'--duration=[Seconds each test measures]:DURATION:_default' \
'--out=[Where the HTML report goes]:OUT:_files' \
'--loopback[Use loopback even as root]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(fault)
_arguments "${_arguments_options[@]}" : \
'--delay=[Hold each packet this long (e.g. 2ms, 500us; at most 10s)]:TIME:_default' \
'--loss=[Drop this share of the packets at random (e.g. 1%)]:PCT:_default' \
'--rate=[Cap the packets at this rate (e.g. 50mbit)]:RATE:_default' \
'*--to=[Packets the host sends or forwards to these addresses (one direction)]:ADDR[,ADDR]:_default' \
'--nic=[Everything leaving or entering this device of the host (both directions; a rate caps both ends of its link)]:DEV:_default' \
'--forwarded=[What the host forwards into or out of this device (a router'\''s uplink, both directions)]:DEV:_default' \
'--state-dir=[Where lab state is kept]:STATE_DIR:_files' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
':name -- The lab'\''s name:_default' \
':host -- The host whose namespace holds the fault:_default' \
&& ret=0
;;
(delayer)
_arguments "${_arguments_options[@]}" : \
'--queue=[The NFQUEUE number to read]:QUEUE:_default' \
'--delay-ms=[How long each packet is held, in milliseconds]:DELAY_MS:_default' \
'--exit-on-eof[Exit when standard input closes (the planting process died)]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(exec)
_arguments "${_arguments_options[@]}" : \
'--state-dir=[Where lab state is kept]:STATE_DIR:_files' \
'-h[Print help]' \
'--help[Print help]' \
':name -- The lab'\''s name:_default' \
':host -- The host:_default' \
'*::cmd -- The command and its arguments (after --):_default' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_wirespeed__subcmd__lab__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-lab-help-command-$line[1]:"
        case $line[1] in
            (up)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(down)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(demo)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(fault)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(delayer)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(exec)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(demo)
_arguments "${_arguments_options[@]}" : \
'--duration=[Seconds each test measures]:DURATION:_default' \
'--out=[Where the HTML report goes]:OUT:_files' \
'--loopback[Use loopback even as root]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(inspect)
_arguments "${_arguments_options[@]}" : \
'--netns=[Run in this named network namespace (/run/netns/NAME)]:NETNS:_default' \
'--root=[Read /proc and /sys under this directory instead of / (recorded trees)]:ROOT:_files' \
'--json[Print the snapshot as JSON]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(doctor)
_arguments "${_arguments_options[@]}" : \
'--netns=[Run in this named network namespace (/run/netns/NAME)]:NETNS:_default' \
'--root=[Read /proc and /sys under this directory instead of / (recorded trees)]:ROOT:_files' \
'--goal=[Wanted throughput (e.g. 40gbit); default\: the sum of the NICs'\'' speeds]:GOAL:_default' \
'--rtt=[Round-trip time to size socket buffers for]:RTT:_default' \
'--peer=[A \`wirespeed serve\` to measure against\: one address per peer NIC, comma-separated; a short test per path names the bottleneck]:PEER:_default' \
'--port=[Control port of the peer]:PORT:_default' \
'--key-file=[Key file when the peer requires one]:KEY_FILE:_files' \
'--test-duration=[Length of each peer test]:TEST_DURATION:_default' \
'--rr[The work is request/response (latency), not bulk]' \
'--no-probe[Do not probe the path MTU toward the gateway and peers (MTU advice then comes out unverified)]' \
'--json[Print findings as JSON]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(tune)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
":: :_wirespeed__subcmd__tune_commands" \
"*::: :->tune" \
&& ret=0

    case $state in
    (tune)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-tune-command-$line[1]:"
        case $line[1] in
            (plan)
_arguments "${_arguments_options[@]}" : \
'--netns=[Run in this named network namespace (/run/netns/NAME)]:NETNS:_default' \
'--root=[Read /proc and /sys under this directory instead of / (recorded trees)]:ROOT:_files' \
'--state-dir=[Journal directory (default /var/lib/wirespeed/NETNS or .../host)]:STATE_DIR:_files' \
'--lock-wait=[How long to wait for another tune command holding the journal'\''s lock]:LOCK_WAIT:_default' \
'--goal=[Wanted throughput (e.g. 40gbit); default\: the sum of the NICs'\'' speeds]:GOAL:_default' \
'--rtt=[Round-trip time to size socket buffers for]:RTT:_default' \
'--profile=[A profile (throughput, latency, tpu-multinic, bulk-multinic) or a profile file; default\: the fixes of doctor'\''s findings]:PROFILE:_default' \
'*--dev=[NICs a profile'\''s link settings apply to (repeat; default\: all in use)]:DEVS:_default' \
'*--peer=[Addresses beyond this host that must stay reachable (repeat or comma-separate)\: their path MTU is measured before an MTU change, and they are checked after an apply, like the default gateway]:PEERS:_default' \
'--rr[The work is request/response (latency), not bulk]' \
'--json[Print the plan as JSON]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(apply)
_arguments "${_arguments_options[@]}" : \
'--netns=[Run in this named network namespace (/run/netns/NAME)]:NETNS:_default' \
'--root=[Read /proc and /sys under this directory instead of / (recorded trees)]:ROOT:_files' \
'--state-dir=[Journal directory (default /var/lib/wirespeed/NETNS or .../host)]:STATE_DIR:_files' \
'--lock-wait=[How long to wait for another tune command holding the journal'\''s lock]:LOCK_WAIT:_default' \
'--goal=[Wanted throughput (e.g. 40gbit); default\: the sum of the NICs'\'' speeds]:GOAL:_default' \
'--rtt=[Round-trip time to size socket buffers for]:RTT:_default' \
'--profile=[A profile (throughput, latency, tpu-multinic, bulk-multinic) or a profile file; default\: the fixes of doctor'\''s findings]:PROFILE:_default' \
'*--dev=[NICs a profile'\''s link settings apply to (repeat; default\: all in use)]:DEVS:_default' \
'*--peer=[Addresses beyond this host that must stay reachable (repeat or comma-separate)\: their path MTU is measured before an MTU change, and they are checked after an apply, like the default gateway]:PEERS:_default' \
'(--no-confirm)--confirm-within=[Roll back automatically unless \`wirespeed tune confirm\` comes within this time. A plan that touches the device carrying the default route, your session or a control connection gets 120s unless told otherwise]:CONFIRM_WITHIN:_default' \
'--rr[The work is request/response (latency), not bulk]' \
'--json[Print the plan as JSON]' \
'--no-confirm[Apply a plan that touches what carries this host without a confirm deadline (and without the checks after it)]' \
'--force[Apply steps marked unverified (an MTU the path was not shown to carry); the checks after the apply still roll them back if a full-size packet is lost]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(confirm)
_arguments "${_arguments_options[@]}" : \
'--netns=[Run in this named network namespace (/run/netns/NAME)]:NETNS:_default' \
'--root=[Read /proc and /sys under this directory instead of / (recorded trees)]:ROOT:_files' \
'--state-dir=[Journal directory (default /var/lib/wirespeed/NETNS or .../host)]:STATE_DIR:_files' \
'--lock-wait=[How long to wait for another tune command holding the journal'\''s lock]:LOCK_WAIT:_default' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(rollback)
_arguments "${_arguments_options[@]}" : \
'--netns=[Run in this named network namespace (/run/netns/NAME)]:NETNS:_default' \
'--root=[Read /proc and /sys under this directory instead of / (recorded trees)]:ROOT:_files' \
'--state-dir=[Journal directory (default /var/lib/wirespeed/NETNS or .../host)]:STATE_DIR:_files' \
'--lock-wait=[How long to wait for another tune command holding the journal'\''s lock]:LOCK_WAIT:_default' \
'--if-overdue[(internal, the backup timer) roll back only when the journal is still unconfirmed past its deadline]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
'--netns=[Run in this named network namespace (/run/netns/NAME)]:NETNS:_default' \
'--root=[Read /proc and /sys under this directory instead of / (recorded trees)]:ROOT:_files' \
'--state-dir=[Journal directory (default /var/lib/wirespeed/NETNS or .../host)]:STATE_DIR:_files' \
'--lock-wait=[How long to wait for another tune command holding the journal'\''s lock]:LOCK_WAIT:_default' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(watchdog)
_arguments "${_arguments_options[@]}" : \
'--netns=[Run in this named network namespace (/run/netns/NAME)]:NETNS:_default' \
'--root=[Read /proc and /sys under this directory instead of / (recorded trees)]:ROOT:_files' \
'--state-dir=[Journal directory (default /var/lib/wirespeed/NETNS or .../host)]:STATE_DIR:_files' \
'--lock-wait=[How long to wait for another tune command holding the journal'\''s lock]:LOCK_WAIT:_default' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_wirespeed__subcmd__tune__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-tune-help-command-$line[1]:"
        case $line[1] in
            (plan)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(apply)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(confirm)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(rollback)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(watchdog)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(model)
_arguments "${_arguments_options[@]}" : \
'--profile=[Cloud profile\: gce, ibm-vpc, tpu-multinic, aws, azure, lab, custom, or a TOML file'\''s path]:PROFILE:_default' \
'--vcpus=[vCPUs of the VM]:VCPUS:_default' \
'--nics=[NICs in use (explain\: default the result'\''s path count)]:NICS:_default' \
'--instance=[An instance size listed in the profile, e.g. e2-standard-8]:INSTANCE:_default' \
'--nic-cap=[Per-NIC cap, e.g. 25gbit (overrides the profile'\''s)]:NIC_CAP:_default' \
'--flow-cap=[Per-flow cap, e.g. 5gbit (overrides the profile'\''s)]:FLOW_CAP:_default' \
'--vm-cap=[Per-VM cap, e.g. 100gbit (overrides the profile'\''s rule)]:VM_CAP:_default' \
'*--price=[A price per hour\: NAME=PRICE, VCPUS=PRICE, or PRICE for the size asked about; repeat or comma-separate]:PRICE:_default' \
'--target=[Bandwidth needed, e.g. 10gbit\: flows it takes, and the cheapest size that delivers it]:TARGET:_default' \
'--format=[Output\: table or json]:FORMAT:((table\:"Tables for people"
json\:"The result as JSON"))' \
'--list[List the built-in profiles]' \
'--json[Short for --format json]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
&& ret=0
;;
(explain)
_arguments "${_arguments_options[@]}" : \
'--profile=[Cloud profile\: gce, ibm-vpc, tpu-multinic, aws, azure, lab, custom, or a TOML file'\''s path]:PROFILE:_default' \
'--vcpus=[vCPUs of the VM]:VCPUS:_default' \
'--nics=[NICs in use (explain\: default the result'\''s path count)]:NICS:_default' \
'--instance=[An instance size listed in the profile, e.g. e2-standard-8]:INSTANCE:_default' \
'--nic-cap=[Per-NIC cap, e.g. 25gbit (overrides the profile'\''s)]:NIC_CAP:_default' \
'--flow-cap=[Per-flow cap, e.g. 5gbit (overrides the profile'\''s)]:FLOW_CAP:_default' \
'--vm-cap=[Per-VM cap, e.g. 100gbit (overrides the profile'\''s rule)]:VM_CAP:_default' \
'--encap=[Encapsulation on the path\: vxlan, ipip, wireguard, ...]:ENCAP:_default' \
'--path-cap=[Cap of each path when known apart from the profile, e.g. a lab link'\''s 1gbit]:PATH_CAP:_default' \
'--format=[Output\: table or json]:FORMAT:((table\:"Tables for people"
json\:"The result as JSON"))' \
'--json[Short for --format json]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
':results -- A results file written by `wirespeed bench --json`:_files' \
&& ret=0
;;
(experiment)
_arguments "${_arguments_options[@]}" : \
'-o+[Where results are saved (default\: FILE'\''s name with .results.json, in the current directory)]:OUT:_files' \
'--out=[Where results are saved (default\: FILE'\''s name with .results.json, in the current directory)]:OUT:_files' \
'--repeats=[Repeats per cell (overrides the file)]:REPEATS:_default' \
'-d+[Measured time per run, e.g. 2s (overrides the file)]:DURATION:_default' \
'--duration=[Measured time per run, e.g. 2s (overrides the file)]:DURATION:_default' \
'--warmup=[Warm-up per run (overrides the file)]:WARMUP:_default' \
'(--fresh)--resume[Resume from OUT when it holds results of this experiment (the default)]' \
'--fresh[Ignore earlier results in OUT and run every cell]' \
'--json[Print the results JSON on stdout at the end instead of the table]' \
'--dry-run[Check the file and print what each cell would run; build nothing]' \
'-h[Print help]' \
'--help[Print help]' \
':file -- The experiment file (TOML):_files' \
&& ret=0
;;
(optimize)
_arguments "${_arguments_options[@]}" : \
'-p+[Control port when HOST names none]:PORT:_default' \
'--port=[Control port when HOST names none]:PORT:_default' \
'--key-file=[Key file for a server started with --key-file]:KEY_FILE:_files' \
'--goal=[What to raise\: throughput (one way), bidir (both ways) or rr (lower p50 latency)]:GOAL:(throughput bidir rr)' \
'--size=[Request and response size of the rr goal]:SIZE:_default' \
'--paths=[Candidate paths LOCAL=REMOTE, comma separated, in the order they are added]:PATHS:_default' \
'--budget=[Time for the whole search, e.g. 2m; steps that no longer fit are skipped]:BUDGET:_default' \
'--step-duration=[Measured time of each repeat]:STEP_DURATION:_default' \
'--warmup=[Traffic before each repeat'\''s measurement]:WARMUP:_default' \
'--repeats=[Repeats of each step at least]:REPEATS:_default' \
'--max-repeats=[Repeats of each step at most (while its median is not stable)]:MAX_REPEATS:_default' \
'--noise=[Noise band a step must beat, e.g. 3%]:NOISE:_default' \
'--state-dir=[Journal directory for host settings \[default\: /var/lib/wirespeed/optimize/NETNS\]]:STATE_DIR:_files' \
'-o+[Write the ladder as experiment results JSON here (\`wirespeed report\` renders it)]:OUT:_files' \
'--out=[Write the ladder as experiment results JSON here (\`wirespeed report\` renders it)]:OUT:_files' \
'--timeout=[Timeout for connecting and for each control answer]:TIMEOUT:_default' \
'--netns=[Run in this named network namespace (/run/netns/NAME)]:NETNS:_default' \
'--root=[Read /proc and /sys under this directory instead of / (recorded trees)]:ROOT:_files' \
'--keep[Leave the host settings found in place (undo later with \`wirespeed tune rollback\`)]' \
'--no-host[Do not try host settings (MTU, BIG TCP, TCP buffer sysctls)]' \
'--json[Print the results JSON instead of the table]' \
'-h[Print help]' \
'--help[Print help]' \
':host -- Server to optimize against (a `wirespeed serve`)\: HOST or HOST\:PORT:_default' \
&& ret=0
;;
(agent)
_arguments "${_arguments_options[@]}" : \
'--name=[The agent'\''s name in the fleet \[default\: the host name\]]:NAME:_default' \
'--http=[Address and port of the HTTP API]:HTTP:_default' \
'--fleet=[Pin the fleet\: test only the agents of this file (else the controller sends the fleet with its key)]:FLEET:_files' \
'--max-client-tests=[Tests this agent runs as a client at once]:MAX_CLIENT_TESTS:_default' \
'--bind=[Address to listen on (\`\:\:\` takes IPv4 and IPv6)]:BIND:_default' \
'-p+[Control port]:PORT:_default' \
'--port=[Control port]:PORT:_default' \
'--max-tests=[Tests that may run at once; more get a "busy" answer]:MAX_TESTS:_default' \
'--key-file=[Only clients proving this key (HMAC challenge) may run tests]:KEY_FILE:_files' \
'--max-duration=[Longest warm-up plus duration a client may ask for]:MAX_DURATION:_default' \
'--max-flows=[Most connections in one test \[default\: from the open-file limit, leaving headroom; at most 20000\]]:MAX_FLOWS:_default' \
'--max-threads=[Most worker threads in one test]:MAX_THREADS:_default' \
'--max-msg-size=[Largest message, request or response size]:MAX_MSG_SIZE:_default' \
'--max-connections=[Authenticated control connections at once]:MAX_CONNECTIONS:_default' \
'--max-unauthenticated=[Connections still in the handshake at once (the oldest makes room)]:MAX_UNAUTHENTICATED:_default' \
'--max-per-source=[Control connections from one address (IPv6\: one /64) at once]:MAX_PER_SOURCE:_default' \
'--handshake-timeout=[Time from a client'\''s connect to the end of its handshake]:HANDSHAKE_TIMEOUT:_default' \
'--idle-timeout=[Time a client has for each whole message after the handshake]:IDLE_TIMEOUT:_default' \
'--preamble-timeout=[Time a data connection has to send its preamble]:PREAMBLE_TIMEOUT:_default' \
'--stop-grace=[Time after a test'\''s end the server waits for the client'\''s stop]:STOP_GRACE:_default' \
'--data-ports=[Ports for the tests'\'' data connections (LO-HI), so a firewall, NetworkPolicy or Service can admit them \[default\: any free port\]]:LO-HI:_default' \
'--metrics-open[Serve /metrics without the key (it tells the host'\''s kernel, NICs and link speeds)\: for a Prometheus that cannot hold the bearer token of \`wirespeed fleet token\`]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(fleet)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
":: :_wirespeed__subcmd__fleet_commands" \
"*::: :->fleet" \
&& ret=0

    case $state in
    (fleet)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-fleet-command-$line[1]:"
        case $line[1] in
            (run)
_arguments "${_arguments_options[@]}" : \
'--agents=[The fleet file (TOML; docs/fleet.md)]:AGENTS:_files' \
'--pattern=[pairs, ring, all-to-all, one-to-many or many-to-one]:PATTERN:(pairs ring all-to-all one-to-many many-to-one)' \
'--concurrent=[Tests each host takes part in at once (1\: never two at once)]:CONCURRENT:_default' \
'--repeats=[Runs of each test; two or more measure the noise band]:REPEATS:_default' \
'--retries=[Times a contended test (an end'\''s CPUs taken by other work\: a worker waited for a CPU, or a host had none idle) is measured again before it is reported as contended (exit 3)]:RETRIES:_default' \
'--min=[Fail (exit 2) when a link'\''s median is below this rate, e.g. 5gbit]:MIN:_default' \
'--baseline=[Fail (exit 2) when a link falls below the same link of this earlier \`fleet run --out\` by more than --tolerance]:BASELINE:_files' \
'--tolerance=[Allowed drop against --baseline, percent]:TOLERANCE:_default' \
'--out=[Also write the JSON results here; rewritten as each test lands (\`"partial"\: true\` until the run ends), so a stopped or killed run leaves every finished test in it]:OUT:_files' \
'--resume=[Take the tests an interrupted run wrote to FILE (its --out) and measure only the rest (failed and skipped tests are measured again); the whole run goes to --out (default\: FILE itself)]:FILE:_files' \
'--html=[Also write the HTML report (matrix heatmap, outliers) here]:HTML:_files' \
'--history=[Also store every test and each agent'\''s facts in this history file (SQLite; created, or migrated, as needed)]:HISTORY:_files' \
'(--resume --baseline --min --history)*--interference=[Interference instead of the matrix\: the -w rr/crr/udp-rr test (the victim) from the fleet'\''s second agent to the first'\''s server, alone and beside K loaders on the other agents (K spread over them), for each K listed, at each --size (default 4k,64k,1m); --out then holds the curves, which \`wirespeed report\` draws]:K,..:_default' \
'--loader=[What each --interference loader runs]:LOADER:((stream\:"Bulk TCP at bench'\''s defaults"
same\:"The victim'\''s own workload and block size"))' \
'--interference-server=[The agent whose server --interference loads \[default\: the fleet'\''s first; the victim is the next one\]]:NAME:_default' \
'-p+[Control port when HOST names none]:PORT:_default' \
'--port=[Control port when HOST names none]:PORT:_default' \
'-w+[Workload (each is one row of the engine'\''s registry)]:WORKLOAD:((stream\:"bulk TCP"
rr\:"TCP request/response"
crr\:"TCP connect/request/response/close"
udp-stream\:"bulk UDP (loss, reordering, jitter)"
udp-rr\:"UDP request/response with a per-request timeout"))' \
'--workload=[Workload (each is one row of the engine'\''s registry)]:WORKLOAD:((stream\:"bulk TCP"
rr\:"TCP request/response"
crr\:"TCP connect/request/response/close"
udp-stream\:"bulk UDP (loss, reordering, jitter)"
udp-rr\:"UDP request/response with a per-request timeout"))' \
'--direction=[Stream direction\: forward (client sends), reverse, bidir]:DIRECTION:(forward reverse bidir)' \
'-d+[Measured time, e.g. 10s (-t as in iperf3; a bare number is seconds)]:DURATION:_default' \
'--duration=[Measured time, e.g. 10s (-t as in iperf3; a bare number is seconds)]:DURATION:_default' \
'--time=[Measured time, e.g. 10s (-t as in iperf3; a bare number is seconds)]:DURATION:_default' \
'(-d --duration -k --blocks)-n+[End after this many bytes moved in the window instead of after a time (iperf3'\''s -n), e.g. 1G; with rr/crr requests and responses both count]:BYTES:_default' \
'(-d --duration -k --blocks)--bytes=[End after this many bytes moved in the window instead of after a time (iperf3'\''s -n), e.g. 1G; with rr/crr requests and responses both count]:BYTES:_default' \
'(-d --duration)-k+[End after this many messages (-l each) instead of after a time (iperf3'\''s -k)]:BLOCKS:_default' \
'(-d --duration)--blocks=[End after this many messages (-l each) instead of after a time (iperf3'\''s -k)]:BLOCKS:_default' \
'(-d --duration)--blockcount=[End after this many messages (-l each) instead of after a time (iperf3'\''s -k)]:BLOCKS:_default' \
'-O+[Traffic before measuring, excluded from figures (iperf3'\''s -O/--omit)]:WARMUP:_default' \
'--warmup=[Traffic before measuring, excluded from figures (iperf3'\''s -O/--omit)]:WARMUP:_default' \
'--omit=[Traffic before measuring, excluded from figures (iperf3'\''s -O/--omit)]:WARMUP:_default' \
'-T+[Worker threads per side (each one event loop)]:THREADS:_default' \
'--threads=[Worker threads per side (each one event loop)]:THREADS:_default' \
'-F+[Flows per direction (stream) or concurrent transactions (rr, crr)]:FLOWS:_default' \
'--flows=[Flows per direction (stream) or concurrent transactions (rr, crr)]:FLOWS:_default' \
'--parallel=[Flows per direction (stream) or concurrent transactions (rr, crr)]:FLOWS:_default' \
'*--path=[A path LOCAL=REMOTE (LOCAL an address or device); repeat for several NICs]:PATH:_default' \
'--paths=[Comma list of paths, e.g. 10.0.0.1=10.0.0.2,10.0.1.1=10.0.1.2]:PATHS:_default' \
'-l+[Bytes per send/recv call in stream tests (default 512k); the datagram size in udp-stream (default 1400)]:MSG_SIZE:_default' \
'--msg-size=[Bytes per send/recv call in stream tests (default 512k); the datagram size in udp-stream (default 1400)]:MSG_SIZE:_default' \
'--length=[Bytes per send/recv call in stream tests (default 512k); the datagram size in udp-stream (default 1400)]:MSG_SIZE:_default' \
'-b+[udp-stream\: target rate per flow, evenly paced, e.g. 1gbit; 0 (the default) sends as fast as the socket takes datagrams]:BITRATE:_default' \
'--bitrate=[udp-stream\: target rate per flow, evenly paced, e.g. 1gbit; 0 (the default) sends as fast as the socket takes datagrams]:BITRATE:_default' \
'--rate=[udp-stream\: target rate per flow, evenly paced, e.g. 1gbit; 0 (the default) sends as fast as the socket takes datagrams]:BITRATE:_default' \
'--rr-timeout=[udp-rr\: how long a request waits for its answer before it counts as lost and the next one goes (default 200ms)]:RR_TIMEOUT:_default' \
'-s+[rr/crr request and response size; a comma list runs a sweep]:SIZE:_default' \
'--size=[rr/crr request and response size; a comma list runs a sweep]:SIZE:_default' \
'--request=[rr/crr request size]:REQUEST:_default' \
'--response=[rr/crr response size]:RESPONSE:_default' \
'--socket-buffer=[SO_SNDBUF and SO_RCVBUF both (iperf3'\''s --window)]:SOCKET_BUFFER:_default' \
'--window=[SO_SNDBUF and SO_RCVBUF both (iperf3'\''s --window)]:SOCKET_BUFFER:_default' \
'--sndbuf=[SO_SNDBUF]:SNDBUF:_default' \
'--rcvbuf=[SO_RCVBUF]:RCVBUF:_default' \
'--congestion=[Congestion control, e.g. cubic or bbr]:CONGESTION:_default' \
'--cc=[Congestion control, e.g. cubic or bbr]:CONGESTION:_default' \
'--busy-poll=[Busy polling for USECS microseconds on every data socket (SO_BUSY_POLL; SO_PREFER_BUSY_POLL stays off) and on each worker'\''s epoll instance (EPIOCSPARAMS), both sides; 1-1000. Raising it needs CAP_NET_ADMIN; it acts only on NICs with NAPI (veth\: with GRO on)]:USECS:_default' \
'--io=[I/O engine of both sides'\'' workers\: epoll (the default) or uring (io_uring\: several sends in flight per flow, multishot receive into provided buffers, batched submissions; stream, rr and unpaced udp-stream only). A side whose kernel refuses io_uring (the io_uring_disabled sysctl, a container'\''s seccomp profile) runs epoll and says why in the notes]:ENGINE:(epoll uring)' \
'(--dscp)-S+[IP TOS byte on every flow, both sides, e.g. 0x10 (IPV6_TCLASS on IPv6)]:TOS:_default' \
'(--dscp)--tos=[IP TOS byte on every flow, both sides, e.g. 0x10 (IPV6_TCLASS on IPv6)]:TOS:_default' \
'--dscp=[DSCP on every flow\: a number 0-63 or a name (ef, af11..af43, cs0..cs7)]:DSCP:_default' \
'--pacing=[Pace each flow at this rate (SO_MAX_PACING_RATE), e.g. 2gbit]:PACING:_default' \
'--pin=[Pin client worker threads to these CPUs, e.g. 0,1 or 0-3]:PIN:_default' \
'--remote-pin=[Pin server worker threads to these CPUs]:REMOTE_PIN:_default' \
'-i+[Interval reports, e.g. 1s]:INTERVAL:_default' \
'--interval=[Interval reports, e.g. 1s]:INTERVAL:_default' \
'--format=[Output\: table, json, kv (neper-style key=value) or iperf3-json (iperf3 -J'\''s document)]:FORMAT:(table json kv iperf3-json)' \
'--key-file=[Key file for a server started with --key-file]:KEY_FILE:_files' \
'--timeout=[Timeout for connecting and for each control answer as a whole]:TIMEOUT:_default' \
'--connect-timeout=[Timeout for each TCP connect alone, control and data; a bare number is milliseconds, as in iperf3]:CONNECT_TIMEOUT:_default' \
'(--path --paths)-B+[Client address to send from (control and data; iperf3'\''s -B)]:BIND:_default' \
'(--path --paths)--bind=[Client address to send from (control and data; iperf3'\''s -B)]:BIND:_default' \
'--cport=[Client data port\: flow N binds PORT + N (iperf3'\''s --cport)]:CPORT:_default' \
'--loaders=[Run this request/response test beside K loaders on the same server (report 3'\''s interference)\: one stream of K flows on K threads, started first. In an experiment, sweep it (\`arg = "--loaders"\`)]:K:_default' \
'--loaders-from=[Lab hosts the --loaders run from, K spread over them in turn (experiments only; default\: the cell'\''s own client host)]:HOST,HOST,...:_default' \
'(-w --workload)-u[Short for --workload udp-stream (iperf3'\''s -u)]' \
'(-w --workload)--udp[Short for --workload udp-stream (iperf3'\''s -u)]' \
'(--bidir)-R[Short for --direction reverse]' \
'(--bidir)--reverse[Short for --direction reverse]' \
'--bidir[Short for --direction bidir]' \
'--no-gso[udp-stream\: send without UDP GSO (one datagram per send)]' \
'--no-gro[udp-stream\: receive without UDP GRO]' \
'(--no-nodelay)--nodelay[Force TCP_NODELAY on (default\: on for rr/crr, off for stream)]' \
'(--no-nodelay)--no-delay[Force TCP_NODELAY on (default\: on for rr/crr, off for stream)]' \
'--no-nodelay[Force TCP_NODELAY off]' \
'--zerocopy[Send with MSG_ZEROCOPY (the kernel copies anyway over loopback and veth)]' \
'--skip-rx-copy[Receive with MSG_TRUNC\: the kernel discards data instead of copying it. Saves receiver CPU (about 20% per Gbit/s here); raises the rate only where the receiver'\''s CPU is what limits it, not a sender-bound flow (docs/benchmarks.md, "skip-rx")]' \
'--rx-zerocopy[stream\: the receiver maps received pages (TCP_ZEROCOPY_RECEIVE) instead of copying them and reports, per flow, the fraction of bytes mapped. The kernel maps only whole pages\: it needs an MSS that is a multiple of 4096 (on a NIC, header split) and, over veth and loopback, a --zerocopy sender (docs/benchmarks.md)]' \
'--breakdown[rr, crr, udp-rr\: timestamp a sample of transactions on both sides (kernel software timestamps) and report where the round trip is spent (docs/latency.md)]' \
'-m[MPTCP sockets (IPPROTO_MPTCP) on both sides; needs net.mptcp.enabled=1]' \
'--mptcp[MPTCP sockets (IPPROTO_MPTCP) on both sides; needs net.mptcp.enabled=1]' \
'-Z[stream\: send with sendfile(2) from an in-memory file (iperf3'\''s -Z)]' \
'--sendfile[stream\: send with sendfile(2) from an in-memory file (iperf3'\''s -Z)]' \
'--dont-fragment[UDP\: set the IPv4 Don'\''t Fragment bit (and IPv6'\''s no-fragment option)]' \
'--probe-rr[Measure 1-byte request/response latency beside a stream test]' \
'--json[Short for --format json]' \
'--per-flow[Show every flow in the table]' \
'(-6 --ipv6)-4[IPv4 only]' \
'(-6 --ipv6)--ipv4[IPv4 only]' \
'(-6 --ipv6)--version4[IPv4 only]' \
'-6[IPv6 only]' \
'--ipv6[IPv6 only]' \
'--version6[IPv6 only]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
&& ret=0
;;
(plan)
_arguments "${_arguments_options[@]}" : \
'(--synthetic)--agents=[The fleet file]:AGENTS:_files' \
'--synthetic=[Plan for N made-up agents instead (planning figures only)]:SYNTHETIC:_default' \
'--pattern=[The pattern]:PATTERN:(pairs ring all-to-all one-to-many many-to-one)' \
'--concurrent=[Tests each host takes part in at once]:CONCURRENT:_default' \
'--rounds[Print each round'\''s tests too]' \
'--json[Print the plan as JSON]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(token)
_arguments "${_arguments_options[@]}" : \
'--key-file=[The fleet key file (the agents'\'' --key-file)]:KEY_FILE:_files' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(history)
_arguments "${_arguments_options[@]}" : \
'--db=[The history file (SQLite)]:DB:_files' \
'--pair=[Only tests between these two agents, either way\: A,B]:PAIR:_default' \
'--since=[Only tests of the last DURATION, e.g. 7d, 12h, 30m]:SINCE:_default' \
'--workload=[Only this workload label]:WORKLOAD:_default' \
'--limit=[At most N rows, the newest (0\: all)]:LIMIT:_default' \
'(--workload --prune)--incidents[Show the watcher'\''s incidents of the last --since instead (open first, then closed, newest first; --pair keeps those naming one of its hosts)]' \
'--prune[Remove the runs older than --since instead of showing anything]' \
'--json[Print JSON]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(watch)
_arguments "${_arguments_options[@]}" : \
'--agents=[The fleet file (TOML; docs/fleet.md)]:AGENTS:_files' \
'(--agents)--synthetic=[Plan for N made-up agents instead (with --dry-run only)]:SYNTHETIC:_default' \
'--key-file=[The fleet key file (the agents'\'' --key-file)]:KEY_FILE:_files' \
'--history=[The history file (SQLite; created, or migrated, as needed)]:HISTORY:_files' \
'--budget=[Share of each link'\''s capacity the watcher may use on average, percent\: probes take at most half of it, bandwidth tests the rest]:BUDGET:_default' \
'--link-rate=[Each link'\''s capacity, e.g. 10gbit, 100mbit (the budget'\''s base)]:LINK_RATE:_default' \
'--probe-period=[How often each pair is probed (stretched to fit the budget)]:PROBE_PERIOD:_default' \
'*--probes=[The probes, run together on each pair\: rr (200 transactions of 1 byte), crr (20 connections), rr-64k (8 transactions of 64 KiB)]:PROBES:((rr\:"200 transactions of 1 byte"
crr\:"20 connections"
rr-64k\:"8 transactions of 64 KiB"))' \
'--bandwidth-duration=[Length of each bandwidth test of the rotation (per NIC pair)]:BANDWIDTH_DURATION:_default' \
'--peers=[Agents each agent probes at most (all of them up to N + 1 agents)]:PEERS:_default' \
'--drift-ratio=[A probe'\''s latency floor is past its threshold at this many times its link'\''s baseline median (and 1.5 times the baseline'\''s high, and --min-change above it); two tests past it in a row make the link degraded, two back under half the excess make it healthy]:DRIFT_RATIO:_default' \
'--min-change=[Latency changes under this are never judged, e.g. 500us, 2ms (the floors of a healthy path move by hundreds of microseconds on a busy host)]:MIN_CHANGE:_default' \
'--for=[Stop after this long (default\: run until killed)]:RUN_FOR:_default' \
'--retain=[Prune history older than this, at start and hourly]:RETAIN:_default' \
'--listen=[Serve the live page (/), /metrics and /v1/watch here, e.g. 127.0.0.1\:5390]:LISTEN:_default' \
'--dry-run[Print the schedule (pairs, probe period, bandwidth rotation) and how long planning took, then exit]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_wirespeed__subcmd__fleet__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-fleet-help-command-$line[1]:"
        case $line[1] in
            (run)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(plan)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(token)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(history)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(watch)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(report)
_arguments "${_arguments_options[@]}" : \
'*-l+[A name for each file, in order (repeat the flag\: \`--label cubic --label bbr\`); unnamed files are labelled by their test'\''s own description]:NAME:_default' \
'*--label=[A name for each file, in order (repeat the flag\: \`--label cubic --label bbr\`); unnamed files are labelled by their test'\''s own description]:NAME:_default' \
'-o+[Write here instead of stdout]:OUTPUT:_files' \
'--output=[Write here instead of stdout]:OUTPUT:_files' \
'-f+[html, md or csv (default\: from the output'\''s extension, else html)]:FORMAT:((html\:"A page with SVG charts"
md\:"Markdown tables"
csv\:"One CSV row per result"))' \
'--format=[html, md or csv (default\: from the output'\''s extension, else html)]:FORMAT:((html\:"A page with SVG charts"
md\:"Markdown tables"
csv\:"One CSV row per result"))' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'*::results -- Results of `wirespeed experiment`, or outputs of `wirespeed bench --json`; several are compared on shared axes, one series per file. Or one `fleet run --out` or `k8s run --out` file (partial or whole):_files' \
&& ret=0
;;
(k8s)
_arguments "${_arguments_options[@]}" : \
'--context=[The kubeconfig context to talk to, as kubectl'\''s --context \[default\: the kubeconfig'\''s current context\]]:NAME:_default' \
'-h[Print help]' \
'--help[Print help]' \
":: :_wirespeed__subcmd__k8s_commands" \
"*::: :->k8s" \
&& ret=0

    case $state in
    (k8s)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-k8s-command-$line[1]:"
        case $line[1] in
            (manifests)
_arguments "${_arguments_options[@]}" : \
'*--network=[Network modes, comma-separated\: host (hostNetwork), pod (the pod network), dra (NICs claimed from DraNet); one DaemonSet each]:NETWORK:(host pod dra)' \
'--image=[Agent image, as printed by \`wirespeed k8s image build --push REGISTRY/wirespeed\:TAG\` (REF@sha256\:...). Required by \`run\`]:IMAGE:_default' \
'--http-port=[The agents'\'' HTTP API port]:HTTP_PORT:_default' \
'--profile=[Tune profile (built-in name or file)\: its sysctls go into the pod-network agents'\'' securityContext.sysctls (those every node'\''s kernel and kubelet accept; never the node'\''s own), its NIC settings into DraNet'\''s config (MTU, GSO/GRO sizes, ethtool features and private flags), e.g. tpu-multinic. For dra a field DraNet cannot carry (rx_ring, source_routing) or a private flag the claimed NICs lack is refused before anything is applied]:PROFILE:_default' \
'(--ifname-prefix --nic-cel)--network-prefix=[dra\: claim NICs whose GCE network name starts with this (report 1) \[default\: NICs DraNet does not call virtual\]]:NETWORK_PREFIX:_default' \
'(--nic-cel)--ifname-prefix=[dra\: claim NICs whose interface name (dra.net/ifName) starts with this]:IFNAME_PREFIX:_default' \
'--nic-cel=[dra\: claim NICs matching this CEL expression over \`device\`, e.g. '\''device.attributes\["dra.net"\].rdma'\'']:CEL:_default' \
'--dra-selector=[dra\: claim NICs matching this CEL expression over \`device\`, e.g. '\''device.attributes\["dra.net"\].rdma'\'']:CEL:_default' \
'--device-class=[dra\: the claims'\'' DeviceClass, yours (it must exist; none is made) \[default\: wirespeed-dranet, shared by every run, created when missing and never deleted\]]:NAME:_default' \
'--nics=[dra\: NICs per agent]:NICS:_default' \
'*--node-selector=[Run agents only on nodes with this label (KEY=VALUE, repeatable)]:KEY=VALUE:_default' \
'*--toleration=[Let agents run on nodes with this taint (KEY\[=VALUE\]\[\:EFFECT\], repeatable), e.g. google.com/tpu=present\:NoSchedule]:KEY[=VALUE][:EFFECT]:_default' \
'--requests=[The agent container'\''s resource requests (KEY=QUANTITY, comma-separated), e.g. cpu=1,memory=256Mi]:KEY=QTY,..:_default' \
'--limits=[The agent container'\''s resource limits (KEY=QUANTITY, comma-separated)]:KEY=QTY,..:_default' \
'--priority-class=[The agents'\'' PriorityClass]:NAME:_default' \
'--data-ports=[The agents'\'' data ports (LO-HI)\: a firewall or NetworkPolicy can admit them, and each agent'\''s Service (service paths) forwards them]:LO-HI:_default' \
'*--api-source=[Where the API server'\''s pod-proxy connections come from (CIDR, repeatable), admitted to the agents'\'' HTTP port; \`k8s run\` adds the API server'\''s own addresses when none is given]:CIDR:_default' \
'--namespace=[Namespace of the objects]:NAMESPACE:_default' \
'--port=[The agents'\'' engine port]:PORT:_default' \
'--key-file=[The fleet key file (as \`wirespeed serve --key-file\`); a fresh key is made when absent]:KEY_FILE:_files' \
'--output=[yaml (multi-document) or json (a v1 List)]:OUTPUT:(yaml json)' \
'--context=[The kubeconfig context to talk to, as kubectl'\''s --context \[default\: the kubeconfig'\''s current context\]]:NAME:_default' \
'--keep-ebpf[dra\: leave the NICs'\'' eBPF programs attached (DraNet detaches them by default here, as report 1 did)]' \
'--tolerate-all[Let agents run on nodes whatever their taints (a GPU or TPU pool); without it a tainted node is left out, by name]' \
'--privileged-namespace[Allow host-network agents (--network host)\: their namespace is labelled Pod Security \`privileged\` (one wirespeed makes; an existing namespace must already be). Without it host mode is refused]' \
'--no-network-policy[Make no NetworkPolicy (by default one admits the agents'\'' ports only from the run'\''s own pods and the API server)]' \
'--runner[Print instead what runs \`k8s run\` inside the cluster\: a ServiceAccount, the ClusterRole and binding a run needs, and a Job running \`wirespeed k8s run\` with these objects'\'' flags and the arguments after \`--\` (docs/k8s.md)]' \
'-h[Print help]' \
'--help[Print help]' \
'*::run_args -- With --runner\: more `k8s run` arguments for the Job (after `--`):_default' \
&& ret=0
;;
(run)
_arguments "${_arguments_options[@]}" : \
'*--network=[Network modes, comma-separated\: host (hostNetwork), pod (the pod network), dra (NICs claimed from DraNet); one DaemonSet each]:NETWORK:(host pod dra)' \
'--image=[Agent image, as printed by \`wirespeed k8s image build --push REGISTRY/wirespeed\:TAG\` (REF@sha256\:...). Required by \`run\`]:IMAGE:_default' \
'--http-port=[The agents'\'' HTTP API port]:HTTP_PORT:_default' \
'--profile=[Tune profile (built-in name or file)\: its sysctls go into the pod-network agents'\'' securityContext.sysctls (those every node'\''s kernel and kubelet accept; never the node'\''s own), its NIC settings into DraNet'\''s config (MTU, GSO/GRO sizes, ethtool features and private flags), e.g. tpu-multinic. For dra a field DraNet cannot carry (rx_ring, source_routing) or a private flag the claimed NICs lack is refused before anything is applied]:PROFILE:_default' \
'(--ifname-prefix --nic-cel)--network-prefix=[dra\: claim NICs whose GCE network name starts with this (report 1) \[default\: NICs DraNet does not call virtual\]]:NETWORK_PREFIX:_default' \
'(--nic-cel)--ifname-prefix=[dra\: claim NICs whose interface name (dra.net/ifName) starts with this]:IFNAME_PREFIX:_default' \
'--nic-cel=[dra\: claim NICs matching this CEL expression over \`device\`, e.g. '\''device.attributes\["dra.net"\].rdma'\'']:CEL:_default' \
'--dra-selector=[dra\: claim NICs matching this CEL expression over \`device\`, e.g. '\''device.attributes\["dra.net"\].rdma'\'']:CEL:_default' \
'--device-class=[dra\: the claims'\'' DeviceClass, yours (it must exist; none is made) \[default\: wirespeed-dranet, shared by every run, created when missing and never deleted\]]:NAME:_default' \
'--nics=[dra\: NICs per agent]:NICS:_default' \
'*--node-selector=[Run agents only on nodes with this label (KEY=VALUE, repeatable)]:KEY=VALUE:_default' \
'*--toleration=[Let agents run on nodes with this taint (KEY\[=VALUE\]\[\:EFFECT\], repeatable), e.g. google.com/tpu=present\:NoSchedule]:KEY[=VALUE][:EFFECT]:_default' \
'--requests=[The agent container'\''s resource requests (KEY=QUANTITY, comma-separated), e.g. cpu=1,memory=256Mi]:KEY=QTY,..:_default' \
'--limits=[The agent container'\''s resource limits (KEY=QUANTITY, comma-separated)]:KEY=QTY,..:_default' \
'--priority-class=[The agents'\'' PriorityClass]:NAME:_default' \
'--data-ports=[The agents'\'' data ports (LO-HI)\: a firewall or NetworkPolicy can admit them, and each agent'\''s Service (service paths) forwards them]:LO-HI:_default' \
'*--api-source=[Where the API server'\''s pod-proxy connections come from (CIDR, repeatable), admitted to the agents'\'' HTTP port; \`k8s run\` adds the API server'\''s own addresses when none is given]:CIDR:_default' \
'--paths=[Paths to measure, comma-separated\: host, same-node, cross-node, cross-zone, service (= service-same-node,service-cross-node), hairpin, dra \[default\: one per --network\: host, cross-node, dra\]]:LIST:_default' \
'*--nodes=[Only these nodes (comma-separated names)]:NODE,..:_default' \
'--sample=[A seeded sample of N of the eligible nodes]:N:_default' \
'--seed=[The sample'\''s seed\: the same seed over the same nodes picks the same sample]:SEED:_default' \
'--pairs=[Node pairs to test across nodes, one \`CLIENT SERVER\` per line (instead of --pattern)]:FILE:_files' \
'*--min=[Fail (exit 1) when a bulk case is below RATE, on every path or on one (PATH=RATE); repeatable]:[PATH=]RATE:_default' \
'*--min-tps=[Fail when a request/response case is below N transactions/s (PATH=N for one path); repeatable]:[PATH=]N:_default' \
'--baseline=[Fail when a case falls more than --tolerance below the same case of this earlier --out (or its p99 rises more)]:FILE:_files' \
'--tolerance=[Tolerance of --baseline, %]:PCT:_default' \
'--max-gap=[Fail when a pod path is more than PCT % below the host network on the same node pair (add host to --paths)]:PCT:_default' \
'--csv=[Also write the cases as CSV here]:FILE:_files' \
'--junit=[Also write the cases as JUnit XML here (one testcase per path, workload and pair)]:FILE:_files' \
'--html=[Also write an HTML page here\: the path x pair heatmap and table]:FILE:_files' \
'*--sweep-sizes=[Message sizes to sweep on every path (comma-separated, e.g. 1k,16k,64k)\: one workload per size]:SIZES:_default' \
'*--sweep-flows=[Flows per pair to sweep on every path (e.g. 1,4,8)\: one workload per count]:COUNTS:_default' \
'--kubeconfig=[The kubeconfig \[default\: \$KUBECONFIG, ~/.kube/config, in-cluster\]]:KUBECONFIG:_files' \
'-n+[Namespace to run in \[default\: wirespeed-RUNID\]\: made by the run (and deleted after it) when it does not exist; an existing one is used as it is, never relabelled, and only what the run put there is deleted]:NAMESPACE:_default' \
'--namespace=[Namespace to run in \[default\: wirespeed-RUNID\]\: made by the run (and deleted after it) when it does not exist; an existing one is used as it is, never relabelled, and only what the run put there is deleted]:NAMESPACE:_default' \
'--pattern=[pairs, ring, all-to-all, one-to-many or many-to-one]:PATTERN:(pairs ring all-to-all one-to-many many-to-one)' \
'--concurrent=[Tests each agent takes part in at once]:CONCURRENT:_default' \
'--repeats=[Runs of each test; two or more give each case a 95% confidence interval, which the gates judge by]:REPEATS:_default' \
'--repeat=[Runs of each test; two or more give each case a 95% confidence interval, which the gates judge by]:REPEATS:_default' \
'--retries=[Times a contended test (an end'\''s CPUs taken by other work\: a worker waited for a CPU, or a host had none idle) is measured again before it is reported as contended (exit 3)]:RETRIES:_default' \
'--ready-timeout=[Longest wait for each mode'\''s agents to be Ready]:READY_TIMEOUT:_default' \
'--api-retry=[How long a request to the API server is retried after its first failure (a restarting API server refuses connections or answers 503 for a while); past it the run stops testing, says so and leaves its objects for \`k8s cleanup\`]:DURATION:_default' \
'--reach=[How to reach the agents'\'' HTTP APIs\: api (through the API server'\''s pod proxy\: works from anywhere that reaches the API server) or direct (to the pod/node addresses\: from inside the cluster network)]:REACH:(api direct)' \
'--out=[Also write every mode'\''s agents and fleet results, and the comparison, as JSON here. Rewritten as each test lands (with \`"partial"\: true\` until the run ends), so an interrupted or killed run leaves every finished test in it]:OUT:_files' \
'--resume=[Take the tests an interrupted run wrote to FILE (its --out) and measure only the rest; the whole run goes to --out (default\: FILE itself)]:FILE:_files' \
'(--resume)*--policy-load=[Measure the pod paths again under each number of NetworkPolicies that select the agents without blocking them (ascending, comma-separated, e.g. 0,100)\: what an enforcer'\''s policies cost each path. Each level is awaited until the enforcer has it in force]:N,..:_default' \
'(--policy-load --resume)*--interference=[Interference instead of the pair matrix\: the -w rr/crr/udp-rr test (the victim) from the second chosen node to the first'\''s agent, alone and beside K loaders on the other nodes (K spread over them), for each K listed, at each --size (default 4k,64k,1m), over the first --paths entry'\''s network; names the K where p99 doubles]:K,..:_default' \
'--loader=[What each --interference loader runs\: stream or the victim'\''s own workload at its size]:LOADER:((stream\:"Bulk TCP at bench'\''s defaults"
same\:"The victim'\''s own workload and block size"))' \
'--interference-server=[The node whose agent is the --interference server \[default\: the first chosen node\]]:NODE:_default' \
'(-w --workload)*--workloads=[Several workloads in one run, comma-separated (e.g. stream,rr\: the host vs pod table then has throughput, latency percentiles and CPU per Gbit/s and per transaction); replaces -w]:LIST:((stream\:"bulk TCP"
rr\:"TCP request/response"
crr\:"TCP connect/request/response/close"
udp-stream\:"bulk UDP (loss, reordering, jitter)"
udp-rr\:"UDP request/response with a per-request timeout"))' \
'-p+[Control port when HOST names none]:PORT:_default' \
'--port=[Control port when HOST names none]:PORT:_default' \
'-w+[Workload (each is one row of the engine'\''s registry)]:WORKLOAD:((stream\:"bulk TCP"
rr\:"TCP request/response"
crr\:"TCP connect/request/response/close"
udp-stream\:"bulk UDP (loss, reordering, jitter)"
udp-rr\:"UDP request/response with a per-request timeout"))' \
'--workload=[Workload (each is one row of the engine'\''s registry)]:WORKLOAD:((stream\:"bulk TCP"
rr\:"TCP request/response"
crr\:"TCP connect/request/response/close"
udp-stream\:"bulk UDP (loss, reordering, jitter)"
udp-rr\:"UDP request/response with a per-request timeout"))' \
'--direction=[Stream direction\: forward (client sends), reverse, bidir]:DIRECTION:(forward reverse bidir)' \
'-d+[Measured time, e.g. 10s (-t as in iperf3; a bare number is seconds)]:DURATION:_default' \
'--duration=[Measured time, e.g. 10s (-t as in iperf3; a bare number is seconds)]:DURATION:_default' \
'--time=[Measured time, e.g. 10s (-t as in iperf3; a bare number is seconds)]:DURATION:_default' \
'(-d --duration)-k+[End after this many messages (-l each) instead of after a time (iperf3'\''s -k)]:BLOCKS:_default' \
'(-d --duration)--blocks=[End after this many messages (-l each) instead of after a time (iperf3'\''s -k)]:BLOCKS:_default' \
'(-d --duration)--blockcount=[End after this many messages (-l each) instead of after a time (iperf3'\''s -k)]:BLOCKS:_default' \
'-O+[Traffic before measuring, excluded from figures (iperf3'\''s -O/--omit)]:WARMUP:_default' \
'--warmup=[Traffic before measuring, excluded from figures (iperf3'\''s -O/--omit)]:WARMUP:_default' \
'--omit=[Traffic before measuring, excluded from figures (iperf3'\''s -O/--omit)]:WARMUP:_default' \
'-T+[Worker threads per side (each one event loop)]:THREADS:_default' \
'--threads=[Worker threads per side (each one event loop)]:THREADS:_default' \
'-F+[Flows per direction (stream) or concurrent transactions (rr, crr)]:FLOWS:_default' \
'--flows=[Flows per direction (stream) or concurrent transactions (rr, crr)]:FLOWS:_default' \
'--parallel=[Flows per direction (stream) or concurrent transactions (rr, crr)]:FLOWS:_default' \
'*--path=[A path LOCAL=REMOTE (LOCAL an address or device); repeat for several NICs]:PATH:_default' \
'-l+[Bytes per send/recv call in stream tests (default 512k); the datagram size in udp-stream (default 1400)]:MSG_SIZE:_default' \
'--msg-size=[Bytes per send/recv call in stream tests (default 512k); the datagram size in udp-stream (default 1400)]:MSG_SIZE:_default' \
'--length=[Bytes per send/recv call in stream tests (default 512k); the datagram size in udp-stream (default 1400)]:MSG_SIZE:_default' \
'-b+[udp-stream\: target rate per flow, evenly paced, e.g. 1gbit; 0 (the default) sends as fast as the socket takes datagrams]:BITRATE:_default' \
'--bitrate=[udp-stream\: target rate per flow, evenly paced, e.g. 1gbit; 0 (the default) sends as fast as the socket takes datagrams]:BITRATE:_default' \
'--rate=[udp-stream\: target rate per flow, evenly paced, e.g. 1gbit; 0 (the default) sends as fast as the socket takes datagrams]:BITRATE:_default' \
'--rr-timeout=[udp-rr\: how long a request waits for its answer before it counts as lost and the next one goes (default 200ms)]:RR_TIMEOUT:_default' \
'-s+[rr/crr request and response size; a comma list runs a sweep]:SIZE:_default' \
'--size=[rr/crr request and response size; a comma list runs a sweep]:SIZE:_default' \
'--request=[rr/crr request size]:REQUEST:_default' \
'--response=[rr/crr response size]:RESPONSE:_default' \
'--socket-buffer=[SO_SNDBUF and SO_RCVBUF both (iperf3'\''s --window)]:SOCKET_BUFFER:_default' \
'--window=[SO_SNDBUF and SO_RCVBUF both (iperf3'\''s --window)]:SOCKET_BUFFER:_default' \
'--sndbuf=[SO_SNDBUF]:SNDBUF:_default' \
'--rcvbuf=[SO_RCVBUF]:RCVBUF:_default' \
'--congestion=[Congestion control, e.g. cubic or bbr]:CONGESTION:_default' \
'--cc=[Congestion control, e.g. cubic or bbr]:CONGESTION:_default' \
'--busy-poll=[Busy polling for USECS microseconds on every data socket (SO_BUSY_POLL; SO_PREFER_BUSY_POLL stays off) and on each worker'\''s epoll instance (EPIOCSPARAMS), both sides; 1-1000. Raising it needs CAP_NET_ADMIN; it acts only on NICs with NAPI (veth\: with GRO on)]:USECS:_default' \
'--io=[I/O engine of both sides'\'' workers\: epoll (the default) or uring (io_uring\: several sends in flight per flow, multishot receive into provided buffers, batched submissions; stream, rr and unpaced udp-stream only). A side whose kernel refuses io_uring (the io_uring_disabled sysctl, a container'\''s seccomp profile) runs epoll and says why in the notes]:ENGINE:(epoll uring)' \
'(--dscp)-S+[IP TOS byte on every flow, both sides, e.g. 0x10 (IPV6_TCLASS on IPv6)]:TOS:_default' \
'(--dscp)--tos=[IP TOS byte on every flow, both sides, e.g. 0x10 (IPV6_TCLASS on IPv6)]:TOS:_default' \
'--dscp=[DSCP on every flow\: a number 0-63 or a name (ef, af11..af43, cs0..cs7)]:DSCP:_default' \
'--pacing=[Pace each flow at this rate (SO_MAX_PACING_RATE), e.g. 2gbit]:PACING:_default' \
'--pin=[Pin client worker threads to these CPUs, e.g. 0,1 or 0-3]:PIN:_default' \
'--remote-pin=[Pin server worker threads to these CPUs]:REMOTE_PIN:_default' \
'-i+[Interval reports, e.g. 1s]:INTERVAL:_default' \
'--interval=[Interval reports, e.g. 1s]:INTERVAL:_default' \
'--format=[Output\: table, json, kv (neper-style key=value) or iperf3-json (iperf3 -J'\''s document)]:FORMAT:(table json kv iperf3-json)' \
'--key-file=[Key file for a server started with --key-file]:KEY_FILE:_files' \
'--timeout=[Timeout for connecting and for each control answer as a whole]:TIMEOUT:_default' \
'--connect-timeout=[Timeout for each TCP connect alone, control and data; a bare number is milliseconds, as in iperf3]:CONNECT_TIMEOUT:_default' \
'(--path --engine-paths)-B+[Client address to send from (control and data; iperf3'\''s -B)]:BIND:_default' \
'(--path --engine-paths)--bind=[Client address to send from (control and data; iperf3'\''s -B)]:BIND:_default' \
'--cport=[Client data port\: flow N binds PORT + N (iperf3'\''s --cport)]:CPORT:_default' \
'--loaders=[Run this request/response test beside K loaders on the same server (report 3'\''s interference)\: one stream of K flows on K threads, started first. In an experiment, sweep it (\`arg = "--loaders"\`)]:K:_default' \
'--loaders-from=[Lab hosts the --loaders run from, K spread over them in turn (experiments only; default\: the cell'\''s own client host)]:HOST,HOST,...:_default' \
'--engine-paths=[Comma list of paths, e.g. 10.0.0.1=10.0.0.2,10.0.1.1=10.0.1.2]:PATHS:_default' \
'(-d --duration -k --blocks)--bytes=[End after this many bytes moved in the window instead of after a time (iperf3'\''s -n), e.g. 1G; with rr/crr requests and responses both count]:BYTES:_default' \
'--context=[The kubeconfig context to talk to, as kubectl'\''s --context \[default\: the kubeconfig'\''s current context\]]:NAME:_default' \
'--keep-ebpf[dra\: leave the NICs'\'' eBPF programs attached (DraNet detaches them by default here, as report 1 did)]' \
'--tolerate-all[Let agents run on nodes whatever their taints (a GPU or TPU pool); without it a tainted node is left out, by name]' \
'--privileged-namespace[Allow host-network agents (--network host)\: their namespace is labelled Pod Security \`privileged\` (one wirespeed makes; an existing namespace must already be). Without it host mode is refused]' \
'--no-network-policy[Make no NetworkPolicy (by default one admits the agents'\'' ports only from the run'\''s own pods and the API server)]' \
'--allow-contended[Keep contended cases marked in every output but do not exit 3 for them (a run whose subject is not the figures, on a busy cluster)]' \
'--keep[Leave the objects in the cluster afterwards]' \
'(-w --workload)-u[Short for --workload udp-stream (iperf3'\''s -u)]' \
'(-w --workload)--udp[Short for --workload udp-stream (iperf3'\''s -u)]' \
'(--bidir)-R[Short for --direction reverse]' \
'(--bidir)--reverse[Short for --direction reverse]' \
'--bidir[Short for --direction bidir]' \
'--no-gso[udp-stream\: send without UDP GSO (one datagram per send)]' \
'--no-gro[udp-stream\: receive without UDP GRO]' \
'(--no-nodelay)--nodelay[Force TCP_NODELAY on (default\: on for rr/crr, off for stream)]' \
'(--no-nodelay)--no-delay[Force TCP_NODELAY on (default\: on for rr/crr, off for stream)]' \
'--no-nodelay[Force TCP_NODELAY off]' \
'--zerocopy[Send with MSG_ZEROCOPY (the kernel copies anyway over loopback and veth)]' \
'--skip-rx-copy[Receive with MSG_TRUNC\: the kernel discards data instead of copying it. Saves receiver CPU (about 20% per Gbit/s here); raises the rate only where the receiver'\''s CPU is what limits it, not a sender-bound flow (docs/benchmarks.md, "skip-rx")]' \
'--rx-zerocopy[stream\: the receiver maps received pages (TCP_ZEROCOPY_RECEIVE) instead of copying them and reports, per flow, the fraction of bytes mapped. The kernel maps only whole pages\: it needs an MSS that is a multiple of 4096 (on a NIC, header split) and, over veth and loopback, a --zerocopy sender (docs/benchmarks.md)]' \
'--breakdown[rr, crr, udp-rr\: timestamp a sample of transactions on both sides (kernel software timestamps) and report where the round trip is spent (docs/latency.md)]' \
'-m[MPTCP sockets (IPPROTO_MPTCP) on both sides; needs net.mptcp.enabled=1]' \
'--mptcp[MPTCP sockets (IPPROTO_MPTCP) on both sides; needs net.mptcp.enabled=1]' \
'-Z[stream\: send with sendfile(2) from an in-memory file (iperf3'\''s -Z)]' \
'--sendfile[stream\: send with sendfile(2) from an in-memory file (iperf3'\''s -Z)]' \
'--dont-fragment[UDP\: set the IPv4 Don'\''t Fragment bit (and IPv6'\''s no-fragment option)]' \
'--probe-rr[Measure 1-byte request/response latency beside a stream test]' \
'--json[Short for --format json]' \
'--per-flow[Show every flow in the table]' \
'(-6 --ipv6)-4[IPv4 only]' \
'(-6 --ipv6)--ipv4[IPv4 only]' \
'(-6 --ipv6)--version4[IPv4 only]' \
'-6[IPv6 only]' \
'--ipv6[IPv6 only]' \
'--version6[IPv6 only]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
&& ret=0
;;
(image)
_arguments "${_arguments_options[@]}" : \
'--context=[The kubeconfig context to talk to, as kubectl'\''s --context \[default\: the kubeconfig'\''s current context\]]:NAME:_default' \
'-h[Print help]' \
'--help[Print help]' \
":: :_wirespeed__subcmd__k8s__subcmd__image_commands" \
"*::: :->image" \
&& ret=0

    case $state in
    (image)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-k8s-image-command-$line[1]:"
        case $line[1] in
            (build)
_arguments "${_arguments_options[@]}" : \
'--binary=[The wirespeed binary to put in the image \[default\: this executable\]]:BINARY:_files' \
'--output=[Write the image as an OCI image layout tar here, for \`ctr -n k8s.io images import FILE\` on a node]:OUTPUT:_files' \
'--name=[The image'\''s name in that layout (index.json'\''s ref.name) \[default\: the --push reference, else localhost/wirespeed\:VERSION\]]:NAME:_default' \
'--push=[Push to this reference (REGISTRY/NAME\:TAG) and print it with the image'\''s digest (REF@sha256\:...)\: what to pass as --image]:REF:_default' \
'--registry-user=[Registry user, with --registry-password-file \[default\: anonymous\]]:REGISTRY_USER:_default' \
'--registry-password-file=[File holding the registry password or token]:REGISTRY_PASSWORD_FILE:_files' \
'--context=[The kubeconfig context to talk to, as kubectl'\''s --context \[default\: the kubeconfig'\''s current context\]]:NAME:_default' \
'--plain-http[Talk plain HTTP to the registry (a local registry without TLS)]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_wirespeed__subcmd__k8s__subcmd__image__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-k8s-image-help-command-$line[1]:"
        case $line[1] in
            (build)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(watch)
_arguments "${_arguments_options[@]}" : \
'--context=[The kubeconfig context to talk to, as kubectl'\''s --context \[default\: the kubeconfig'\''s current context\]]:NAME:_default' \
'-h[Print help]' \
'--help[Print help]' \
":: :_wirespeed__subcmd__k8s__subcmd__watch_commands" \
"*::: :->watch" \
&& ret=0

    case $state in
    (watch)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-k8s-watch-command-$line[1]:"
        case $line[1] in
            (apply)
_arguments "${_arguments_options[@]}" : \
'*--network=[Network modes, comma-separated\: host (hostNetwork), pod (the pod network), dra (NICs claimed from DraNet); one DaemonSet each]:NETWORK:(host pod dra)' \
'--image=[Agent image, as printed by \`wirespeed k8s image build --push REGISTRY/wirespeed\:TAG\` (REF@sha256\:...). Required by \`run\`]:IMAGE:_default' \
'--http-port=[The agents'\'' HTTP API port]:HTTP_PORT:_default' \
'--profile=[Tune profile (built-in name or file)\: its sysctls go into the pod-network agents'\'' securityContext.sysctls (those every node'\''s kernel and kubelet accept; never the node'\''s own), its NIC settings into DraNet'\''s config (MTU, GSO/GRO sizes, ethtool features and private flags), e.g. tpu-multinic. For dra a field DraNet cannot carry (rx_ring, source_routing) or a private flag the claimed NICs lack is refused before anything is applied]:PROFILE:_default' \
'(--ifname-prefix --nic-cel)--network-prefix=[dra\: claim NICs whose GCE network name starts with this (report 1) \[default\: NICs DraNet does not call virtual\]]:NETWORK_PREFIX:_default' \
'(--nic-cel)--ifname-prefix=[dra\: claim NICs whose interface name (dra.net/ifName) starts with this]:IFNAME_PREFIX:_default' \
'--nic-cel=[dra\: claim NICs matching this CEL expression over \`device\`, e.g. '\''device.attributes\["dra.net"\].rdma'\'']:CEL:_default' \
'--dra-selector=[dra\: claim NICs matching this CEL expression over \`device\`, e.g. '\''device.attributes\["dra.net"\].rdma'\'']:CEL:_default' \
'--device-class=[dra\: the claims'\'' DeviceClass, yours (it must exist; none is made) \[default\: wirespeed-dranet, shared by every run, created when missing and never deleted\]]:NAME:_default' \
'--nics=[dra\: NICs per agent]:NICS:_default' \
'*--node-selector=[Run agents only on nodes with this label (KEY=VALUE, repeatable)]:KEY=VALUE:_default' \
'*--toleration=[Let agents run on nodes with this taint (KEY\[=VALUE\]\[\:EFFECT\], repeatable), e.g. google.com/tpu=present\:NoSchedule]:KEY[=VALUE][:EFFECT]:_default' \
'--requests=[The agent container'\''s resource requests (KEY=QUANTITY, comma-separated), e.g. cpu=1,memory=256Mi]:KEY=QTY,..:_default' \
'--limits=[The agent container'\''s resource limits (KEY=QUANTITY, comma-separated)]:KEY=QTY,..:_default' \
'--priority-class=[The agents'\'' PriorityClass]:NAME:_default' \
'--data-ports=[The agents'\'' data ports (LO-HI)\: a firewall or NetworkPolicy can admit them, and each agent'\''s Service (service paths) forwards them]:LO-HI:_default' \
'*--api-source=[Where the API server'\''s pod-proxy connections come from (CIDR, repeatable), admitted to the agents'\'' HTTP port; \`k8s run\` adds the API server'\''s own addresses when none is given]:CIDR:_default' \
'-n+[The namespace (made by apply, deleted by delete)]:NAMESPACE:_default' \
'--namespace=[The namespace (made by apply, deleted by delete)]:NAMESPACE:_default' \
'--port=[The agents'\'' engine port]:PORT:_default' \
'--key-file=[The fleet key file \[default\: the namespace'\''s key when it has one, else a fresh one\]]:KEY_FILE:_files' \
'--history-claim=[Keep the history on this PersistentVolumeClaim (yours, in the namespace) \[default\: an emptyDir, lost when the pod goes\]]:CLAIM:_default' \
'--rediscover=[How often the watcher lists its agents again]:REDISCOVER:_default' \
'--ready-timeout=[Longest wait for the agents and then the watcher]:READY_TIMEOUT:_default' \
'--kubeconfig=[The kubeconfig \[default\: \$KUBECONFIG, ~/.kube/config, in-cluster\]]:KUBECONFIG:_files' \
'--output=[manifests\: yaml (multi-document) or json (a v1 List)]:OUTPUT:(yaml json)' \
'--context=[The kubeconfig context to talk to, as kubectl'\''s --context \[default\: the kubeconfig'\''s current context\]]:NAME:_default' \
'--keep-ebpf[dra\: leave the NICs'\'' eBPF programs attached (DraNet detaches them by default here, as report 1 did)]' \
'--tolerate-all[Let agents run on nodes whatever their taints (a GPU or TPU pool); without it a tainted node is left out, by name]' \
'--privileged-namespace[Allow host-network agents (--network host)\: their namespace is labelled Pod Security \`privileged\` (one wirespeed makes; an existing namespace must already be). Without it host mode is refused]' \
'--no-network-policy[Make no NetworkPolicy (by default one admits the agents'\'' ports only from the run'\''s own pods and the API server)]' \
'-h[Print help]' \
'--help[Print help]' \
'*::watch_args -- `fleet watch` flags for the watcher (after `--`):_default' \
&& ret=0
;;
(manifests)
_arguments "${_arguments_options[@]}" : \
'*--network=[Network modes, comma-separated\: host (hostNetwork), pod (the pod network), dra (NICs claimed from DraNet); one DaemonSet each]:NETWORK:(host pod dra)' \
'--image=[Agent image, as printed by \`wirespeed k8s image build --push REGISTRY/wirespeed\:TAG\` (REF@sha256\:...). Required by \`run\`]:IMAGE:_default' \
'--http-port=[The agents'\'' HTTP API port]:HTTP_PORT:_default' \
'--profile=[Tune profile (built-in name or file)\: its sysctls go into the pod-network agents'\'' securityContext.sysctls (those every node'\''s kernel and kubelet accept; never the node'\''s own), its NIC settings into DraNet'\''s config (MTU, GSO/GRO sizes, ethtool features and private flags), e.g. tpu-multinic. For dra a field DraNet cannot carry (rx_ring, source_routing) or a private flag the claimed NICs lack is refused before anything is applied]:PROFILE:_default' \
'(--ifname-prefix --nic-cel)--network-prefix=[dra\: claim NICs whose GCE network name starts with this (report 1) \[default\: NICs DraNet does not call virtual\]]:NETWORK_PREFIX:_default' \
'(--nic-cel)--ifname-prefix=[dra\: claim NICs whose interface name (dra.net/ifName) starts with this]:IFNAME_PREFIX:_default' \
'--nic-cel=[dra\: claim NICs matching this CEL expression over \`device\`, e.g. '\''device.attributes\["dra.net"\].rdma'\'']:CEL:_default' \
'--dra-selector=[dra\: claim NICs matching this CEL expression over \`device\`, e.g. '\''device.attributes\["dra.net"\].rdma'\'']:CEL:_default' \
'--device-class=[dra\: the claims'\'' DeviceClass, yours (it must exist; none is made) \[default\: wirespeed-dranet, shared by every run, created when missing and never deleted\]]:NAME:_default' \
'--nics=[dra\: NICs per agent]:NICS:_default' \
'*--node-selector=[Run agents only on nodes with this label (KEY=VALUE, repeatable)]:KEY=VALUE:_default' \
'*--toleration=[Let agents run on nodes with this taint (KEY\[=VALUE\]\[\:EFFECT\], repeatable), e.g. google.com/tpu=present\:NoSchedule]:KEY[=VALUE][:EFFECT]:_default' \
'--requests=[The agent container'\''s resource requests (KEY=QUANTITY, comma-separated), e.g. cpu=1,memory=256Mi]:KEY=QTY,..:_default' \
'--limits=[The agent container'\''s resource limits (KEY=QUANTITY, comma-separated)]:KEY=QTY,..:_default' \
'--priority-class=[The agents'\'' PriorityClass]:NAME:_default' \
'--data-ports=[The agents'\'' data ports (LO-HI)\: a firewall or NetworkPolicy can admit them, and each agent'\''s Service (service paths) forwards them]:LO-HI:_default' \
'*--api-source=[Where the API server'\''s pod-proxy connections come from (CIDR, repeatable), admitted to the agents'\'' HTTP port; \`k8s run\` adds the API server'\''s own addresses when none is given]:CIDR:_default' \
'-n+[The namespace (made by apply, deleted by delete)]:NAMESPACE:_default' \
'--namespace=[The namespace (made by apply, deleted by delete)]:NAMESPACE:_default' \
'--port=[The agents'\'' engine port]:PORT:_default' \
'--key-file=[The fleet key file \[default\: the namespace'\''s key when it has one, else a fresh one\]]:KEY_FILE:_files' \
'--history-claim=[Keep the history on this PersistentVolumeClaim (yours, in the namespace) \[default\: an emptyDir, lost when the pod goes\]]:CLAIM:_default' \
'--rediscover=[How often the watcher lists its agents again]:REDISCOVER:_default' \
'--ready-timeout=[Longest wait for the agents and then the watcher]:READY_TIMEOUT:_default' \
'--kubeconfig=[The kubeconfig \[default\: \$KUBECONFIG, ~/.kube/config, in-cluster\]]:KUBECONFIG:_files' \
'--output=[manifests\: yaml (multi-document) or json (a v1 List)]:OUTPUT:(yaml json)' \
'--context=[The kubeconfig context to talk to, as kubectl'\''s --context \[default\: the kubeconfig'\''s current context\]]:NAME:_default' \
'--keep-ebpf[dra\: leave the NICs'\'' eBPF programs attached (DraNet detaches them by default here, as report 1 did)]' \
'--tolerate-all[Let agents run on nodes whatever their taints (a GPU or TPU pool); without it a tainted node is left out, by name]' \
'--privileged-namespace[Allow host-network agents (--network host)\: their namespace is labelled Pod Security \`privileged\` (one wirespeed makes; an existing namespace must already be). Without it host mode is refused]' \
'--no-network-policy[Make no NetworkPolicy (by default one admits the agents'\'' ports only from the run'\''s own pods and the API server)]' \
'-h[Print help]' \
'--help[Print help]' \
'*::watch_args -- `fleet watch` flags for the watcher (after `--`):_default' \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
'-n+[The namespace]:NAMESPACE:_default' \
'--namespace=[The namespace]:NAMESPACE:_default' \
'--kubeconfig=[The kubeconfig \[default\: \$KUBECONFIG, ~/.kube/config, in-cluster\]]:KUBECONFIG:_files' \
'--json=[status\: also print the state as JSON here]:JSON:_files' \
'--context=[The kubeconfig context to talk to, as kubectl'\''s --context \[default\: the kubeconfig'\''s current context\]]:NAME:_default' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(delete)
_arguments "${_arguments_options[@]}" : \
'-n+[The namespace]:NAMESPACE:_default' \
'--namespace=[The namespace]:NAMESPACE:_default' \
'--kubeconfig=[The kubeconfig \[default\: \$KUBECONFIG, ~/.kube/config, in-cluster\]]:KUBECONFIG:_files' \
'--json=[status\: also print the state as JSON here]:JSON:_files' \
'--context=[The kubeconfig context to talk to, as kubectl'\''s --context \[default\: the kubeconfig'\''s current context\]]:NAME:_default' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(in-cluster)
_arguments "${_arguments_options[@]}" : \
'--namespace=[The agents'\'' namespace (the pod'\''s own)]:NAMESPACE:_default' \
'--network=[The agents'\'' network mode\: host or pod]:NETWORK:(host pod)' \
'--port=[The agents'\'' engine port]:PORT:_default' \
'--http-port=[The agents'\'' HTTP port]:HTTP_PORT:_default' \
'--rediscover=[How often the agents are listed again]:REDISCOVER:_default' \
'--ready-timeout=[Longest wait for the agents to be Ready]:READY_TIMEOUT:_default' \
'--agents=[The fleet file (TOML; docs/fleet.md)]:AGENTS:_files' \
'(--agents)--synthetic=[Plan for N made-up agents instead (with --dry-run only)]:SYNTHETIC:_default' \
'--key-file=[The fleet key file (the agents'\'' --key-file)]:KEY_FILE:_files' \
'--history=[The history file (SQLite; created, or migrated, as needed)]:HISTORY:_files' \
'--budget=[Share of each link'\''s capacity the watcher may use on average, percent\: probes take at most half of it, bandwidth tests the rest]:BUDGET:_default' \
'--link-rate=[Each link'\''s capacity, e.g. 10gbit, 100mbit (the budget'\''s base)]:LINK_RATE:_default' \
'--probe-period=[How often each pair is probed (stretched to fit the budget)]:PROBE_PERIOD:_default' \
'*--probes=[The probes, run together on each pair\: rr (200 transactions of 1 byte), crr (20 connections), rr-64k (8 transactions of 64 KiB)]:PROBES:((rr\:"200 transactions of 1 byte"
crr\:"20 connections"
rr-64k\:"8 transactions of 64 KiB"))' \
'--bandwidth-duration=[Length of each bandwidth test of the rotation (per NIC pair)]:BANDWIDTH_DURATION:_default' \
'--peers=[Agents each agent probes at most (all of them up to N + 1 agents)]:PEERS:_default' \
'--drift-ratio=[A probe'\''s latency floor is past its threshold at this many times its link'\''s baseline median (and 1.5 times the baseline'\''s high, and --min-change above it); two tests past it in a row make the link degraded, two back under half the excess make it healthy]:DRIFT_RATIO:_default' \
'--min-change=[Latency changes under this are never judged, e.g. 500us, 2ms (the floors of a healthy path move by hundreds of microseconds on a busy host)]:MIN_CHANGE:_default' \
'--for=[Stop after this long (default\: run until killed)]:RUN_FOR:_default' \
'--retain=[Prune history older than this, at start and hourly]:RETAIN:_default' \
'--listen=[Serve the live page (/), /metrics and /v1/watch here, e.g. 127.0.0.1\:5390]:LISTEN:_default' \
'--context=[The kubeconfig context to talk to, as kubectl'\''s --context \[default\: the kubeconfig'\''s current context\]]:NAME:_default' \
'--dry-run[Print the schedule (pairs, probe period, bandwidth rotation) and how long planning took, then exit]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_wirespeed__subcmd__k8s__subcmd__watch__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-k8s-watch-help-command-$line[1]:"
        case $line[1] in
            (apply)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(manifests)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(delete)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(in-cluster)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(cleanup)
_arguments "${_arguments_options[@]}" : \
'--run=[Only this run'\''s objects (the RUNID of \`wirespeed.dev/run=RUNID\`, printed by the run when it applied them)]:RUNID:_default' \
'-n+[Only in this namespace]:NAMESPACE:_default' \
'--namespace=[Only in this namespace]:NAMESPACE:_default' \
'--kubeconfig=[The kubeconfig \[default\: \$KUBECONFIG, ~/.kube/config, in-cluster\]]:KUBECONFIG:_files' \
'--context=[The kubeconfig context to talk to, as kubectl'\''s --context \[default\: the kubeconfig'\''s current context\]]:NAME:_default' \
'--force[Also delete runs whose Lease is still renewed (runs that may be alive\: their tests fail)]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_wirespeed__subcmd__k8s__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-k8s-help-command-$line[1]:"
        case $line[1] in
            (manifests)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(run)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(image)
_arguments "${_arguments_options[@]}" : \
":: :_wirespeed__subcmd__k8s__subcmd__help__subcmd__image_commands" \
"*::: :->image" \
&& ret=0

    case $state in
    (image)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-k8s-help-image-command-$line[1]:"
        case $line[1] in
            (build)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(watch)
_arguments "${_arguments_options[@]}" : \
":: :_wirespeed__subcmd__k8s__subcmd__help__subcmd__watch_commands" \
"*::: :->watch" \
&& ret=0

    case $state in
    (watch)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-k8s-help-watch-command-$line[1]:"
        case $line[1] in
            (apply)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(manifests)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(delete)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(in-cluster)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(cleanup)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(completions)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
':shell -- The shell\: bash, zsh, fish, elvish or powershell:(bash elvish fish powershell zsh)' \
&& ret=0
;;
(man)
_arguments "${_arguments_options[@]}" : \
'--out=[Directory to write wirespeed.1, wirespeed-bench.1, ... into]:OUT:_files' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_wirespeed__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-help-command-$line[1]:"
        case $line[1] in
            (bench)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(serve)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(lab)
_arguments "${_arguments_options[@]}" : \
":: :_wirespeed__subcmd__help__subcmd__lab_commands" \
"*::: :->lab" \
&& ret=0

    case $state in
    (lab)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-help-lab-command-$line[1]:"
        case $line[1] in
            (up)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(down)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(demo)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(fault)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(delayer)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(exec)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(demo)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(inspect)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(doctor)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(tune)
_arguments "${_arguments_options[@]}" : \
":: :_wirespeed__subcmd__help__subcmd__tune_commands" \
"*::: :->tune" \
&& ret=0

    case $state in
    (tune)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-help-tune-command-$line[1]:"
        case $line[1] in
            (plan)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(apply)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(confirm)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(rollback)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(watchdog)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(model)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(explain)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(experiment)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(optimize)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(agent)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(fleet)
_arguments "${_arguments_options[@]}" : \
":: :_wirespeed__subcmd__help__subcmd__fleet_commands" \
"*::: :->fleet" \
&& ret=0

    case $state in
    (fleet)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-help-fleet-command-$line[1]:"
        case $line[1] in
            (run)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(plan)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(token)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(history)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(watch)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(report)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(k8s)
_arguments "${_arguments_options[@]}" : \
":: :_wirespeed__subcmd__help__subcmd__k8s_commands" \
"*::: :->k8s" \
&& ret=0

    case $state in
    (k8s)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-help-k8s-command-$line[1]:"
        case $line[1] in
            (manifests)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(run)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(image)
_arguments "${_arguments_options[@]}" : \
":: :_wirespeed__subcmd__help__subcmd__k8s__subcmd__image_commands" \
"*::: :->image" \
&& ret=0

    case $state in
    (image)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-help-k8s-image-command-$line[1]:"
        case $line[1] in
            (build)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(watch)
_arguments "${_arguments_options[@]}" : \
":: :_wirespeed__subcmd__help__subcmd__k8s__subcmd__watch_commands" \
"*::: :->watch" \
&& ret=0

    case $state in
    (watch)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:wirespeed-help-k8s-watch-command-$line[1]:"
        case $line[1] in
            (apply)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(manifests)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(delete)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(in-cluster)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(cleanup)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(completions)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(man)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
}

(( $+functions[_wirespeed_commands] )) ||
_wirespeed_commands() {
    local commands; commands=(
'bench:Run a test against a \`wirespeed serve\` on HOST' \
'serve:Serve tests to wirespeed clients' \
'lab:Emulated hosts in network namespaces (root)' \
'demo:The demo (same as \`lab demo\`)\: report 2'\''s lab, doctor, tune, the ladder, report.html; loopback without root' \
'inspect:Read every knob that limits bandwidth on this host' \
'doctor:Find what limits bandwidth or latency here, with evidence and fixes' \
'tune:Change the host reversibly\: plan, apply, confirm, rollback' \
'model:A cloud profile'\''s ceilings per flow, NIC and VM, and price per Gbit/s' \
'explain:Set bench results (JSON) against a profile and name the bottleneck' \
'experiment:Run an experiment file\: cells against a baseline, repeated, in a lab (root)' \
'optimize:Search the bench and host settings that raise throughput or cut latency' \
'agent:The fleet agent\: the server plus a keyed HTTP API and Prometheus metrics' \
'fleet:Test every link of a fleet of agents; plan the rounds' \
'report:Render experiment or bench results as HTML (SVG charts), Markdown or CSV; several files are compared. Also one \`fleet run\` or \`k8s run\` --out file, saying when it is partial' \
'k8s:Agents on Kubernetes\: host network, pod network or DRA-claimed NICs' \
'completions:Print a shell completion script (bash, zsh, fish, elvish, powershell)' \
'man:Write a man page per command (wirespeed.1, wirespeed-bench.1, ...)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'wirespeed commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__agent_commands] )) ||
_wirespeed__subcmd__agent_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed agent commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__bench_commands] )) ||
_wirespeed__subcmd__bench_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed bench commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__completions_commands] )) ||
_wirespeed__subcmd__completions_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed completions commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__demo_commands] )) ||
_wirespeed__subcmd__demo_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed demo commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__doctor_commands] )) ||
_wirespeed__subcmd__doctor_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed doctor commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__experiment_commands] )) ||
_wirespeed__subcmd__experiment_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed experiment commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__explain_commands] )) ||
_wirespeed__subcmd__explain_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed explain commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__fleet_commands] )) ||
_wirespeed__subcmd__fleet_commands() {
    local commands; commands=(
'run:Run a test matrix over the agents of a fleet file' \
'plan:Plan the rounds only\: how many, and how long planning takes' \
'token:Print the bearer token that reads the agents'\'' API (metrics, facts, results) without the key\: for a Prometheus scrape config' \
'history:Show stored tests from a history file (\`fleet run --history\`, \`fleet watch\`), or the watcher'\''s incidents (--incidents)' \
'watch:Measure the fleet on a schedule under a budget\: light probes between pairs, bandwidth tests in a rotation, every result stored and judged against its link'\''s own baseline; incidents opened and closed, naming the link, pair, NIC, host or zone at fault and the facts that changed; a live page and Prometheus series on --listen' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'wirespeed fleet commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__fleet__subcmd__help_commands] )) ||
_wirespeed__subcmd__fleet__subcmd__help_commands() {
    local commands; commands=(
'run:Run a test matrix over the agents of a fleet file' \
'plan:Plan the rounds only\: how many, and how long planning takes' \
'token:Print the bearer token that reads the agents'\'' API (metrics, facts, results) without the key\: for a Prometheus scrape config' \
'history:Show stored tests from a history file (\`fleet run --history\`, \`fleet watch\`), or the watcher'\''s incidents (--incidents)' \
'watch:Measure the fleet on a schedule under a budget\: light probes between pairs, bandwidth tests in a rotation, every result stored and judged against its link'\''s own baseline; incidents opened and closed, naming the link, pair, NIC, host or zone at fault and the facts that changed; a live page and Prometheus series on --listen' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'wirespeed fleet help commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__fleet__subcmd__help__subcmd__help_commands] )) ||
_wirespeed__subcmd__fleet__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed fleet help help commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__fleet__subcmd__help__subcmd__history_commands] )) ||
_wirespeed__subcmd__fleet__subcmd__help__subcmd__history_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed fleet help history commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__fleet__subcmd__help__subcmd__plan_commands] )) ||
_wirespeed__subcmd__fleet__subcmd__help__subcmd__plan_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed fleet help plan commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__fleet__subcmd__help__subcmd__run_commands] )) ||
_wirespeed__subcmd__fleet__subcmd__help__subcmd__run_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed fleet help run commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__fleet__subcmd__help__subcmd__token_commands] )) ||
_wirespeed__subcmd__fleet__subcmd__help__subcmd__token_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed fleet help token commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__fleet__subcmd__help__subcmd__watch_commands] )) ||
_wirespeed__subcmd__fleet__subcmd__help__subcmd__watch_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed fleet help watch commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__fleet__subcmd__history_commands] )) ||
_wirespeed__subcmd__fleet__subcmd__history_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed fleet history commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__fleet__subcmd__plan_commands] )) ||
_wirespeed__subcmd__fleet__subcmd__plan_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed fleet plan commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__fleet__subcmd__run_commands] )) ||
_wirespeed__subcmd__fleet__subcmd__run_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed fleet run commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__fleet__subcmd__token_commands] )) ||
_wirespeed__subcmd__fleet__subcmd__token_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed fleet token commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__fleet__subcmd__watch_commands] )) ||
_wirespeed__subcmd__fleet__subcmd__watch_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed fleet watch commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help_commands] )) ||
_wirespeed__subcmd__help_commands() {
    local commands; commands=(
'bench:Run a test against a \`wirespeed serve\` on HOST' \
'serve:Serve tests to wirespeed clients' \
'lab:Emulated hosts in network namespaces (root)' \
'demo:The demo (same as \`lab demo\`)\: report 2'\''s lab, doctor, tune, the ladder, report.html; loopback without root' \
'inspect:Read every knob that limits bandwidth on this host' \
'doctor:Find what limits bandwidth or latency here, with evidence and fixes' \
'tune:Change the host reversibly\: plan, apply, confirm, rollback' \
'model:A cloud profile'\''s ceilings per flow, NIC and VM, and price per Gbit/s' \
'explain:Set bench results (JSON) against a profile and name the bottleneck' \
'experiment:Run an experiment file\: cells against a baseline, repeated, in a lab (root)' \
'optimize:Search the bench and host settings that raise throughput or cut latency' \
'agent:The fleet agent\: the server plus a keyed HTTP API and Prometheus metrics' \
'fleet:Test every link of a fleet of agents; plan the rounds' \
'report:Render experiment or bench results as HTML (SVG charts), Markdown or CSV; several files are compared. Also one \`fleet run\` or \`k8s run\` --out file, saying when it is partial' \
'k8s:Agents on Kubernetes\: host network, pod network or DRA-claimed NICs' \
'completions:Print a shell completion script (bash, zsh, fish, elvish, powershell)' \
'man:Write a man page per command (wirespeed.1, wirespeed-bench.1, ...)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'wirespeed help commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__agent_commands] )) ||
_wirespeed__subcmd__help__subcmd__agent_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help agent commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__bench_commands] )) ||
_wirespeed__subcmd__help__subcmd__bench_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help bench commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__completions_commands] )) ||
_wirespeed__subcmd__help__subcmd__completions_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help completions commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__demo_commands] )) ||
_wirespeed__subcmd__help__subcmd__demo_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help demo commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__doctor_commands] )) ||
_wirespeed__subcmd__help__subcmd__doctor_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help doctor commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__experiment_commands] )) ||
_wirespeed__subcmd__help__subcmd__experiment_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help experiment commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__explain_commands] )) ||
_wirespeed__subcmd__help__subcmd__explain_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help explain commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__fleet_commands] )) ||
_wirespeed__subcmd__help__subcmd__fleet_commands() {
    local commands; commands=(
'run:Run a test matrix over the agents of a fleet file' \
'plan:Plan the rounds only\: how many, and how long planning takes' \
'token:Print the bearer token that reads the agents'\'' API (metrics, facts, results) without the key\: for a Prometheus scrape config' \
'history:Show stored tests from a history file (\`fleet run --history\`, \`fleet watch\`), or the watcher'\''s incidents (--incidents)' \
'watch:Measure the fleet on a schedule under a budget\: light probes between pairs, bandwidth tests in a rotation, every result stored and judged against its link'\''s own baseline; incidents opened and closed, naming the link, pair, NIC, host or zone at fault and the facts that changed; a live page and Prometheus series on --listen' \
    )
    _describe -t commands 'wirespeed help fleet commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__fleet__subcmd__history_commands] )) ||
_wirespeed__subcmd__help__subcmd__fleet__subcmd__history_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help fleet history commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__fleet__subcmd__plan_commands] )) ||
_wirespeed__subcmd__help__subcmd__fleet__subcmd__plan_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help fleet plan commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__fleet__subcmd__run_commands] )) ||
_wirespeed__subcmd__help__subcmd__fleet__subcmd__run_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help fleet run commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__fleet__subcmd__token_commands] )) ||
_wirespeed__subcmd__help__subcmd__fleet__subcmd__token_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help fleet token commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__fleet__subcmd__watch_commands] )) ||
_wirespeed__subcmd__help__subcmd__fleet__subcmd__watch_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help fleet watch commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__help_commands] )) ||
_wirespeed__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help help commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__inspect_commands] )) ||
_wirespeed__subcmd__help__subcmd__inspect_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help inspect commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__k8s_commands] )) ||
_wirespeed__subcmd__help__subcmd__k8s_commands() {
    local commands; commands=(
'manifests:Print the objects that run agents (YAML, or JSON with --output json)' \
'run:Apply the agents, wait for them, run the fleet matrix per network mode, compare the modes, delete what was applied (also on Ctrl-C). Exits 3 when a requested test was not measured' \
'image:The agent image\: built from a wirespeed binary, without Docker or a base image' \
'watch:\`fleet watch\` on the cluster\: agents and a watcher Deployment that probes every pair on a schedule, keeps history and raises drift events (docs/k8s.md)' \
'cleanup:Delete what runs that did not end left behind (a run killed with SIGKILL, or whose machine went away)\: the namespaces runs made and the objects they put in a namespace they were given, found by the label \`wirespeed.dev/run\`. A run still alive is left alone' \
    )
    _describe -t commands 'wirespeed help k8s commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__k8s__subcmd__cleanup_commands] )) ||
_wirespeed__subcmd__help__subcmd__k8s__subcmd__cleanup_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help k8s cleanup commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__k8s__subcmd__image_commands] )) ||
_wirespeed__subcmd__help__subcmd__k8s__subcmd__image_commands() {
    local commands; commands=(
'build:Build the agent image from a wirespeed binary (one layer\: the binary, its loader and libraries, a non-root user), then write it as an OCI image layout tar and/or push it to a registry' \
    )
    _describe -t commands 'wirespeed help k8s image commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__k8s__subcmd__image__subcmd__build_commands] )) ||
_wirespeed__subcmd__help__subcmd__k8s__subcmd__image__subcmd__build_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help k8s image build commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__k8s__subcmd__manifests_commands] )) ||
_wirespeed__subcmd__help__subcmd__k8s__subcmd__manifests_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help k8s manifests commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__k8s__subcmd__run_commands] )) ||
_wirespeed__subcmd__help__subcmd__k8s__subcmd__run_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help k8s run commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__k8s__subcmd__watch_commands] )) ||
_wirespeed__subcmd__help__subcmd__k8s__subcmd__watch_commands() {
    local commands; commands=(
'apply:Apply the agents (a DaemonSet) and the watcher (a Deployment and its Service) in a namespace of their own, or change them when applied again; wait until the watcher watches every agent. Flags after \`--\` go to \`fleet watch\` (e.g. -- --probe-period 10s)' \
'manifests:Print what \`apply\` would apply (YAML, or JSON with --output json)' \
'status:The watcher'\''s state through the API server\: its agents, the newest test of each link, its drift events' \
'delete:Delete the namespace \`apply\` made\: agents, watcher and history (unless it is on --history-claim'\''s volume)' \
'in-cluster:What the watcher'\''s pod runs\: find the agents through the API server and watch them, again whenever they change' \
    )
    _describe -t commands 'wirespeed help k8s watch commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__apply_commands] )) ||
_wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__apply_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help k8s watch apply commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__delete_commands] )) ||
_wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__delete_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help k8s watch delete commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__in-cluster_commands] )) ||
_wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__in-cluster_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help k8s watch in-cluster commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__manifests_commands] )) ||
_wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__manifests_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help k8s watch manifests commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__status_commands] )) ||
_wirespeed__subcmd__help__subcmd__k8s__subcmd__watch__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help k8s watch status commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__lab_commands] )) ||
_wirespeed__subcmd__help__subcmd__lab_commands() {
    local commands; commands=(
'up:Build the lab a TOML file describes and keep it until \`lab down\`' \
'down:Remove a lab built by \`lab up\`' \
'demo:The demo\: report 2'\''s lab, doctor, tuning, the ladder, report.html' \
'fault:Plant a fault (delay, loss or a rate cap) on one host of a lab made by \`lab up\`, until Ctrl-C or SIGTERM, which remove it' \
'delayer:The delay fault'\''s packet holder, started by \`lab fault\` and tests inside a host'\''s namespace (not for people)' \
'exec:Run a command on one host of a lab' \
    )
    _describe -t commands 'wirespeed help lab commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__lab__subcmd__delayer_commands] )) ||
_wirespeed__subcmd__help__subcmd__lab__subcmd__delayer_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help lab delayer commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__lab__subcmd__demo_commands] )) ||
_wirespeed__subcmd__help__subcmd__lab__subcmd__demo_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help lab demo commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__lab__subcmd__down_commands] )) ||
_wirespeed__subcmd__help__subcmd__lab__subcmd__down_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help lab down commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__lab__subcmd__exec_commands] )) ||
_wirespeed__subcmd__help__subcmd__lab__subcmd__exec_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help lab exec commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__lab__subcmd__fault_commands] )) ||
_wirespeed__subcmd__help__subcmd__lab__subcmd__fault_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help lab fault commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__lab__subcmd__up_commands] )) ||
_wirespeed__subcmd__help__subcmd__lab__subcmd__up_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help lab up commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__man_commands] )) ||
_wirespeed__subcmd__help__subcmd__man_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help man commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__model_commands] )) ||
_wirespeed__subcmd__help__subcmd__model_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help model commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__optimize_commands] )) ||
_wirespeed__subcmd__help__subcmd__optimize_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help optimize commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__report_commands] )) ||
_wirespeed__subcmd__help__subcmd__report_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help report commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__serve_commands] )) ||
_wirespeed__subcmd__help__subcmd__serve_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help serve commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__tune_commands] )) ||
_wirespeed__subcmd__help__subcmd__tune_commands() {
    local commands; commands=(
'plan:Print the actions as the commands a person would type' \
'apply:Apply the plan, journaling old values first' \
'confirm:Keep the last apply (cancel its automatic rollback)' \
'rollback:Restore every value the journal holds' \
'status:Show the journal; exits non-zero when it needs attention (deadline passed unconfirmed, watchdog gone, journal from an earlier boot)' \
'watchdog:(internal) wait for the deadline and roll back unless confirmed' \
    )
    _describe -t commands 'wirespeed help tune commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__tune__subcmd__apply_commands] )) ||
_wirespeed__subcmd__help__subcmd__tune__subcmd__apply_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help tune apply commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__tune__subcmd__confirm_commands] )) ||
_wirespeed__subcmd__help__subcmd__tune__subcmd__confirm_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help tune confirm commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__tune__subcmd__plan_commands] )) ||
_wirespeed__subcmd__help__subcmd__tune__subcmd__plan_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help tune plan commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__tune__subcmd__rollback_commands] )) ||
_wirespeed__subcmd__help__subcmd__tune__subcmd__rollback_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help tune rollback commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__tune__subcmd__status_commands] )) ||
_wirespeed__subcmd__help__subcmd__tune__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help tune status commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__help__subcmd__tune__subcmd__watchdog_commands] )) ||
_wirespeed__subcmd__help__subcmd__tune__subcmd__watchdog_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed help tune watchdog commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__inspect_commands] )) ||
_wirespeed__subcmd__inspect_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed inspect commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s_commands] )) ||
_wirespeed__subcmd__k8s_commands() {
    local commands; commands=(
'manifests:Print the objects that run agents (YAML, or JSON with --output json)' \
'run:Apply the agents, wait for them, run the fleet matrix per network mode, compare the modes, delete what was applied (also on Ctrl-C). Exits 3 when a requested test was not measured' \
'image:The agent image\: built from a wirespeed binary, without Docker or a base image' \
'watch:\`fleet watch\` on the cluster\: agents and a watcher Deployment that probes every pair on a schedule, keeps history and raises drift events (docs/k8s.md)' \
'cleanup:Delete what runs that did not end left behind (a run killed with SIGKILL, or whose machine went away)\: the namespaces runs made and the objects they put in a namespace they were given, found by the label \`wirespeed.dev/run\`. A run still alive is left alone' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'wirespeed k8s commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__cleanup_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__cleanup_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s cleanup commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__help_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__help_commands() {
    local commands; commands=(
'manifests:Print the objects that run agents (YAML, or JSON with --output json)' \
'run:Apply the agents, wait for them, run the fleet matrix per network mode, compare the modes, delete what was applied (also on Ctrl-C). Exits 3 when a requested test was not measured' \
'image:The agent image\: built from a wirespeed binary, without Docker or a base image' \
'watch:\`fleet watch\` on the cluster\: agents and a watcher Deployment that probes every pair on a schedule, keeps history and raises drift events (docs/k8s.md)' \
'cleanup:Delete what runs that did not end left behind (a run killed with SIGKILL, or whose machine went away)\: the namespaces runs made and the objects they put in a namespace they were given, found by the label \`wirespeed.dev/run\`. A run still alive is left alone' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'wirespeed k8s help commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__help__subcmd__cleanup_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__help__subcmd__cleanup_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s help cleanup commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__help__subcmd__help_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s help help commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__help__subcmd__image_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__help__subcmd__image_commands() {
    local commands; commands=(
'build:Build the agent image from a wirespeed binary (one layer\: the binary, its loader and libraries, a non-root user), then write it as an OCI image layout tar and/or push it to a registry' \
    )
    _describe -t commands 'wirespeed k8s help image commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__help__subcmd__image__subcmd__build_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__help__subcmd__image__subcmd__build_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s help image build commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__help__subcmd__manifests_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__help__subcmd__manifests_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s help manifests commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__help__subcmd__run_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__help__subcmd__run_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s help run commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__help__subcmd__watch_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__help__subcmd__watch_commands() {
    local commands; commands=(
'apply:Apply the agents (a DaemonSet) and the watcher (a Deployment and its Service) in a namespace of their own, or change them when applied again; wait until the watcher watches every agent. Flags after \`--\` go to \`fleet watch\` (e.g. -- --probe-period 10s)' \
'manifests:Print what \`apply\` would apply (YAML, or JSON with --output json)' \
'status:The watcher'\''s state through the API server\: its agents, the newest test of each link, its drift events' \
'delete:Delete the namespace \`apply\` made\: agents, watcher and history (unless it is on --history-claim'\''s volume)' \
'in-cluster:What the watcher'\''s pod runs\: find the agents through the API server and watch them, again whenever they change' \
    )
    _describe -t commands 'wirespeed k8s help watch commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__apply_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__apply_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s help watch apply commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__delete_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__delete_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s help watch delete commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__in-cluster_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__in-cluster_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s help watch in-cluster commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__manifests_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__manifests_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s help watch manifests commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__status_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__help__subcmd__watch__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s help watch status commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__image_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__image_commands() {
    local commands; commands=(
'build:Build the agent image from a wirespeed binary (one layer\: the binary, its loader and libraries, a non-root user), then write it as an OCI image layout tar and/or push it to a registry' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'wirespeed k8s image commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__image__subcmd__build_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__image__subcmd__build_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s image build commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__image__subcmd__help_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__image__subcmd__help_commands() {
    local commands; commands=(
'build:Build the agent image from a wirespeed binary (one layer\: the binary, its loader and libraries, a non-root user), then write it as an OCI image layout tar and/or push it to a registry' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'wirespeed k8s image help commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__image__subcmd__help__subcmd__build_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__image__subcmd__help__subcmd__build_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s image help build commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__image__subcmd__help__subcmd__help_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__image__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s image help help commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__manifests_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__manifests_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s manifests commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__run_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__run_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s run commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__watch_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__watch_commands() {
    local commands; commands=(
'apply:Apply the agents (a DaemonSet) and the watcher (a Deployment and its Service) in a namespace of their own, or change them when applied again; wait until the watcher watches every agent. Flags after \`--\` go to \`fleet watch\` (e.g. -- --probe-period 10s)' \
'manifests:Print what \`apply\` would apply (YAML, or JSON with --output json)' \
'status:The watcher'\''s state through the API server\: its agents, the newest test of each link, its drift events' \
'delete:Delete the namespace \`apply\` made\: agents, watcher and history (unless it is on --history-claim'\''s volume)' \
'in-cluster:What the watcher'\''s pod runs\: find the agents through the API server and watch them, again whenever they change' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'wirespeed k8s watch commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__watch__subcmd__apply_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__watch__subcmd__apply_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s watch apply commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__watch__subcmd__delete_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__watch__subcmd__delete_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s watch delete commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__watch__subcmd__help_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__watch__subcmd__help_commands() {
    local commands; commands=(
'apply:Apply the agents (a DaemonSet) and the watcher (a Deployment and its Service) in a namespace of their own, or change them when applied again; wait until the watcher watches every agent. Flags after \`--\` go to \`fleet watch\` (e.g. -- --probe-period 10s)' \
'manifests:Print what \`apply\` would apply (YAML, or JSON with --output json)' \
'status:The watcher'\''s state through the API server\: its agents, the newest test of each link, its drift events' \
'delete:Delete the namespace \`apply\` made\: agents, watcher and history (unless it is on --history-claim'\''s volume)' \
'in-cluster:What the watcher'\''s pod runs\: find the agents through the API server and watch them, again whenever they change' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'wirespeed k8s watch help commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__apply_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__apply_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s watch help apply commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__delete_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__delete_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s watch help delete commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__help_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s watch help help commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__in-cluster_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__in-cluster_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s watch help in-cluster commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__manifests_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__manifests_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s watch help manifests commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__status_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__watch__subcmd__help__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s watch help status commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__watch__subcmd__in-cluster_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__watch__subcmd__in-cluster_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s watch in-cluster commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__watch__subcmd__manifests_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__watch__subcmd__manifests_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s watch manifests commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__k8s__subcmd__watch__subcmd__status_commands] )) ||
_wirespeed__subcmd__k8s__subcmd__watch__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed k8s watch status commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__lab_commands] )) ||
_wirespeed__subcmd__lab_commands() {
    local commands; commands=(
'up:Build the lab a TOML file describes and keep it until \`lab down\`' \
'down:Remove a lab built by \`lab up\`' \
'demo:The demo\: report 2'\''s lab, doctor, tuning, the ladder, report.html' \
'fault:Plant a fault (delay, loss or a rate cap) on one host of a lab made by \`lab up\`, until Ctrl-C or SIGTERM, which remove it' \
'delayer:The delay fault'\''s packet holder, started by \`lab fault\` and tests inside a host'\''s namespace (not for people)' \
'exec:Run a command on one host of a lab' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'wirespeed lab commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__lab__subcmd__delayer_commands] )) ||
_wirespeed__subcmd__lab__subcmd__delayer_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed lab delayer commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__lab__subcmd__demo_commands] )) ||
_wirespeed__subcmd__lab__subcmd__demo_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed lab demo commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__lab__subcmd__down_commands] )) ||
_wirespeed__subcmd__lab__subcmd__down_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed lab down commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__lab__subcmd__exec_commands] )) ||
_wirespeed__subcmd__lab__subcmd__exec_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed lab exec commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__lab__subcmd__fault_commands] )) ||
_wirespeed__subcmd__lab__subcmd__fault_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed lab fault commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__lab__subcmd__help_commands] )) ||
_wirespeed__subcmd__lab__subcmd__help_commands() {
    local commands; commands=(
'up:Build the lab a TOML file describes and keep it until \`lab down\`' \
'down:Remove a lab built by \`lab up\`' \
'demo:The demo\: report 2'\''s lab, doctor, tuning, the ladder, report.html' \
'fault:Plant a fault (delay, loss or a rate cap) on one host of a lab made by \`lab up\`, until Ctrl-C or SIGTERM, which remove it' \
'delayer:The delay fault'\''s packet holder, started by \`lab fault\` and tests inside a host'\''s namespace (not for people)' \
'exec:Run a command on one host of a lab' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'wirespeed lab help commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__lab__subcmd__help__subcmd__delayer_commands] )) ||
_wirespeed__subcmd__lab__subcmd__help__subcmd__delayer_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed lab help delayer commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__lab__subcmd__help__subcmd__demo_commands] )) ||
_wirespeed__subcmd__lab__subcmd__help__subcmd__demo_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed lab help demo commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__lab__subcmd__help__subcmd__down_commands] )) ||
_wirespeed__subcmd__lab__subcmd__help__subcmd__down_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed lab help down commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__lab__subcmd__help__subcmd__exec_commands] )) ||
_wirespeed__subcmd__lab__subcmd__help__subcmd__exec_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed lab help exec commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__lab__subcmd__help__subcmd__fault_commands] )) ||
_wirespeed__subcmd__lab__subcmd__help__subcmd__fault_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed lab help fault commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__lab__subcmd__help__subcmd__help_commands] )) ||
_wirespeed__subcmd__lab__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed lab help help commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__lab__subcmd__help__subcmd__up_commands] )) ||
_wirespeed__subcmd__lab__subcmd__help__subcmd__up_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed lab help up commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__lab__subcmd__up_commands] )) ||
_wirespeed__subcmd__lab__subcmd__up_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed lab up commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__man_commands] )) ||
_wirespeed__subcmd__man_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed man commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__model_commands] )) ||
_wirespeed__subcmd__model_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed model commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__optimize_commands] )) ||
_wirespeed__subcmd__optimize_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed optimize commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__report_commands] )) ||
_wirespeed__subcmd__report_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed report commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__serve_commands] )) ||
_wirespeed__subcmd__serve_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed serve commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__tune_commands] )) ||
_wirespeed__subcmd__tune_commands() {
    local commands; commands=(
'plan:Print the actions as the commands a person would type' \
'apply:Apply the plan, journaling old values first' \
'confirm:Keep the last apply (cancel its automatic rollback)' \
'rollback:Restore every value the journal holds' \
'status:Show the journal; exits non-zero when it needs attention (deadline passed unconfirmed, watchdog gone, journal from an earlier boot)' \
'watchdog:(internal) wait for the deadline and roll back unless confirmed' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'wirespeed tune commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__tune__subcmd__apply_commands] )) ||
_wirespeed__subcmd__tune__subcmd__apply_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed tune apply commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__tune__subcmd__confirm_commands] )) ||
_wirespeed__subcmd__tune__subcmd__confirm_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed tune confirm commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__tune__subcmd__help_commands] )) ||
_wirespeed__subcmd__tune__subcmd__help_commands() {
    local commands; commands=(
'plan:Print the actions as the commands a person would type' \
'apply:Apply the plan, journaling old values first' \
'confirm:Keep the last apply (cancel its automatic rollback)' \
'rollback:Restore every value the journal holds' \
'status:Show the journal; exits non-zero when it needs attention (deadline passed unconfirmed, watchdog gone, journal from an earlier boot)' \
'watchdog:(internal) wait for the deadline and roll back unless confirmed' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'wirespeed tune help commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__tune__subcmd__help__subcmd__apply_commands] )) ||
_wirespeed__subcmd__tune__subcmd__help__subcmd__apply_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed tune help apply commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__tune__subcmd__help__subcmd__confirm_commands] )) ||
_wirespeed__subcmd__tune__subcmd__help__subcmd__confirm_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed tune help confirm commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__tune__subcmd__help__subcmd__help_commands] )) ||
_wirespeed__subcmd__tune__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed tune help help commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__tune__subcmd__help__subcmd__plan_commands] )) ||
_wirespeed__subcmd__tune__subcmd__help__subcmd__plan_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed tune help plan commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__tune__subcmd__help__subcmd__rollback_commands] )) ||
_wirespeed__subcmd__tune__subcmd__help__subcmd__rollback_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed tune help rollback commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__tune__subcmd__help__subcmd__status_commands] )) ||
_wirespeed__subcmd__tune__subcmd__help__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed tune help status commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__tune__subcmd__help__subcmd__watchdog_commands] )) ||
_wirespeed__subcmd__tune__subcmd__help__subcmd__watchdog_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed tune help watchdog commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__tune__subcmd__plan_commands] )) ||
_wirespeed__subcmd__tune__subcmd__plan_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed tune plan commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__tune__subcmd__rollback_commands] )) ||
_wirespeed__subcmd__tune__subcmd__rollback_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed tune rollback commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__tune__subcmd__status_commands] )) ||
_wirespeed__subcmd__tune__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed tune status commands' commands "$@"
}
(( $+functions[_wirespeed__subcmd__tune__subcmd__watchdog_commands] )) ||
_wirespeed__subcmd__tune__subcmd__watchdog_commands() {
    local commands; commands=()
    _describe -t commands 'wirespeed tune watchdog commands' commands "$@"
}

if [ "$funcstack[1]" = "_wirespeed" ]; then
    _wirespeed "$@"
else
    compdef _wirespeed wirespeed
fi
