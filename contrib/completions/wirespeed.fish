# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_wirespeed_global_optspecs
    string join \n h/help V/version
end

function __fish_wirespeed_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_wirespeed_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_wirespeed_using_subcommand
    set -l cmd (__fish_wirespeed_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c wirespeed -n "__fish_wirespeed_needs_command" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -s V -l version -d 'Print version'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "bench" -d 'Run a test against a `wirespeed serve` on HOST'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "serve" -d 'Serve tests to wirespeed clients'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "lab" -d 'Emulated hosts in network namespaces (root)'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "demo" -d 'The demo (same as `lab demo`): report 2\'s lab, doctor, tune, the ladder, report.html; loopback without root'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "inspect" -d 'Read every knob that limits bandwidth on this host'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "doctor" -d 'Find what limits bandwidth or latency here, with evidence and fixes'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "tune" -d 'Change the host reversibly: plan, apply, confirm, rollback'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "model" -d 'A cloud profile\'s ceilings per flow, NIC and VM, and price per Gbit/s'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "explain" -d 'Set bench results (JSON) against a profile and name the bottleneck'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "experiment" -d 'Run an experiment file: cells against a baseline, repeated, in a lab (root)'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "optimize" -d 'Search the bench and host settings that raise throughput or cut latency'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "agent" -d 'The fleet agent: the server plus a keyed HTTP API and Prometheus metrics'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "fleet" -d 'Test every link of a fleet of agents; plan the rounds'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "report" -d 'Render experiment or bench results as HTML (SVG charts), Markdown or CSV; several files are compared. Also one `fleet run` or `k8s run` --out file, saying when it is partial'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "k8s" -d 'Agents on Kubernetes: host network, pod network or DRA-claimed NICs'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "completions" -d 'Print a shell completion script (bash, zsh, fish, elvish, powershell)'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "man" -d 'Write a man page per command (wirespeed.1, wirespeed-bench.1, ...)'
complete -c wirespeed -n "__fish_wirespeed_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s p -l port -d 'Control port when HOST names none' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s w -l workload -d 'Workload (each is one row of the engine\'s registry)' -r -f -a "stream\t'bulk TCP'
rr\t'TCP request/response'
crr\t'TCP connect/request/response/close'
udp-stream\t'bulk UDP (loss, reordering, jitter)'
udp-rr\t'UDP request/response with a per-request timeout'"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l direction -d 'Stream direction: forward (client sends), reverse, bidir' -r -f -a "forward\t''
reverse\t''
bidir\t''"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s d -l duration -l time -d 'Measured time, e.g. 10s (-t as in iperf3; a bare number is seconds)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s n -l bytes -d 'End after this many bytes moved in the window instead of after a time (iperf3\'s -n), e.g. 1G; with rr/crr requests and responses both count' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s k -l blocks -l blockcount -d 'End after this many messages (-l each) instead of after a time (iperf3\'s -k)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s O -l warmup -l omit -d 'Traffic before measuring, excluded from figures (iperf3\'s -O/--omit)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s T -l threads -d 'Worker threads per side (each one event loop)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s F -l flows -l parallel -d 'Flows per direction (stream) or concurrent transactions (rr, crr)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l path -d 'A path LOCAL=REMOTE (LOCAL an address or device); repeat for several NICs' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l paths -d 'Comma list of paths, e.g. 10.0.0.1=10.0.0.2,10.0.1.1=10.0.1.2' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s l -l msg-size -l length -d 'Bytes per send/recv call in stream tests (default 512k); the datagram size in udp-stream (default 1400)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s b -l bitrate -l rate -d 'udp-stream: target rate per flow, evenly paced, e.g. 1gbit; 0 (the default) sends as fast as the socket takes datagrams' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l rr-timeout -d 'udp-rr: how long a request waits for its answer before it counts as lost and the next one goes (default 200ms)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s s -l size -d 'rr/crr request and response size; a comma list runs a sweep' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l request -d 'rr/crr request size' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l response -d 'rr/crr response size' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l socket-buffer -l window -d 'SO_SNDBUF and SO_RCVBUF both (iperf3\'s --window)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l sndbuf -d 'SO_SNDBUF' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l rcvbuf -d 'SO_RCVBUF' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l congestion -l cc -d 'Congestion control, e.g. cubic or bbr' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l busy-poll -d 'Busy polling for USECS microseconds on every data socket (SO_BUSY_POLL; SO_PREFER_BUSY_POLL stays off) and on each worker\'s epoll instance (EPIOCSPARAMS), both sides; 1-1000. Raising it needs CAP_NET_ADMIN; it acts only on NICs with NAPI (veth: with GRO on)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l io -d 'I/O engine of both sides\' workers: epoll (the default) or uring (io_uring: several sends in flight per flow, multishot receive into provided buffers, batched submissions; stream, rr and unpaced udp-stream only). A side whose kernel refuses io_uring (the io_uring_disabled sysctl, a container\'s seccomp profile) runs epoll and says why in the notes' -r -f -a "epoll\t''
uring\t''"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s S -l tos -d 'IP TOS byte on every flow, both sides, e.g. 0x10 (IPV6_TCLASS on IPv6)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l dscp -d 'DSCP on every flow: a number 0-63 or a name (ef, af11..af43, cs0..cs7)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l pacing -d 'Pace each flow at this rate (SO_MAX_PACING_RATE), e.g. 2gbit' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l pin -d 'Pin client worker threads to these CPUs, e.g. 0,1 or 0-3' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l remote-pin -d 'Pin server worker threads to these CPUs' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s i -l interval -d 'Interval reports, e.g. 1s' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l format -d 'Output: table, json, kv (neper-style key=value) or iperf3-json (iperf3 -J\'s document)' -r -f -a "table\t''
json\t''
kv\t''
iperf3-json\t''"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l key-file -d 'Key file for a server started with --key-file' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l timeout -d 'Timeout for connecting and for each control answer as a whole' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l connect-timeout -d 'Timeout for each TCP connect alone, control and data; a bare number is milliseconds, as in iperf3' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s B -l bind -d 'Client address to send from (control and data; iperf3\'s -B)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l cport -d 'Client data port: flow N binds PORT + N (iperf3\'s --cport)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l loaders -d 'Run this request/response test beside K loaders on the same server (report 3\'s interference): one stream of K flows on K threads, started first. In an experiment, sweep it (`arg = "--loaders"`)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l loaders-from -d 'Lab hosts the --loaders run from, K spread over them in turn (experiments only; default: the cell\'s own client host)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l logfile -d 'Write the output to this file (appended) instead of stdout' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l timestamps -d 'Begin each line of text output with the time: UTC (`2026-11-26 01:02:03 UTC `) without a FORMAT, else the local time in strftime FORMAT as iperf3 does (`--timestamps=\'%c \'`)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l profile -d 'Cloud profile: gce, ibm-vpc, tpu-multinic, aws, azure, lab, custom, or a TOML file\'s path' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l vcpus -d 'vCPUs of the VM' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l nics -d 'NICs in use (explain: default the result\'s path count)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l instance -d 'An instance size listed in the profile, e.g. e2-standard-8' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l nic-cap -d 'Per-NIC cap, e.g. 25gbit (overrides the profile\'s)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l flow-cap -d 'Per-flow cap, e.g. 5gbit (overrides the profile\'s)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l vm-cap -d 'Per-VM cap, e.g. 100gbit (overrides the profile\'s rule)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l encap -d 'Encapsulation on the path: vxlan, ipip, wireguard, ...' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l path-cap -d 'Cap of each path when known apart from the profile, e.g. a lab link\'s 1gbit' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l interference -d 'Interference: measure the -w rr/crr/udp-rr test (the victim) alone and beside K loaders on the same server, for each K listed (e.g. 0,1,2,4,8), at each --size (default 4k,64k,1m); prints the victim\'s trans/s and p50/p99/p99.9 per K and names the K where p99 doubles. The loaders are one test of K flows on K threads (the server needs --max-tests 2 or more)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l loader -d 'What each --interference loader runs: stream (bulk, the defaults) or the victim\'s own workload at its size' -r -f -a "stream\t'Bulk TCP at bench\'s defaults'
same\t'The victim\'s own workload and block size'"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s u -l udp -d 'Short for --workload udp-stream (iperf3\'s -u)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s R -l reverse -d 'Short for --direction reverse'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l bidir -d 'Short for --direction bidir'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l no-gso -d 'udp-stream: send without UDP GSO (one datagram per send)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l no-gro -d 'udp-stream: receive without UDP GRO'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l nodelay -l no-delay -d 'Force TCP_NODELAY on (default: on for rr/crr, off for stream)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l no-nodelay -d 'Force TCP_NODELAY off'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l zerocopy -d 'Send with MSG_ZEROCOPY (the kernel copies anyway over loopback and veth)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l skip-rx-copy -d 'Receive with MSG_TRUNC: the kernel discards data instead of copying it. Saves receiver CPU (about 20% per Gbit/s here); raises the rate only where the receiver\'s CPU is what limits it, not a sender-bound flow (docs/benchmarks.md, "skip-rx")'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l rx-zerocopy -d 'stream: the receiver maps received pages (TCP_ZEROCOPY_RECEIVE) instead of copying them and reports, per flow, the fraction of bytes mapped. The kernel maps only whole pages: it needs an MSS that is a multiple of 4096 (on a NIC, header split) and, over veth and loopback, a --zerocopy sender (docs/benchmarks.md)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l breakdown -d 'rr, crr, udp-rr: timestamp a sample of transactions on both sides (kernel software timestamps) and report where the round trip is spent (docs/latency.md)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s m -l mptcp -d 'MPTCP sockets (IPPROTO_MPTCP) on both sides; needs net.mptcp.enabled=1'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s Z -l sendfile -d 'stream: send with sendfile(2) from an in-memory file (iperf3\'s -Z)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l dont-fragment -d 'UDP: set the IPv4 Don\'t Fragment bit (and IPv6\'s no-fragment option)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l probe-rr -d 'Measure 1-byte request/response latency beside a stream test'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l json -d 'Short for --format json'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l per-flow -d 'Show every flow in the table'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s 4 -l ipv4 -l version4 -d 'IPv4 only'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s 6 -l ipv6 -l version6 -d 'IPv6 only'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -l json-stream -d 'One JSON line per interval and one at the end (NDJSON, iperf3\'s --json-stream); with --format iperf3-json, iperf3\'s own events'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand bench" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand serve" -l bind -d 'Address to listen on (`::` takes IPv4 and IPv6)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand serve" -s p -l port -d 'Control port' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand serve" -l max-tests -d 'Tests that may run at once; more get a "busy" answer' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand serve" -l key-file -d 'Only clients proving this key (HMAC challenge) may run tests' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand serve" -l max-duration -d 'Longest warm-up plus duration a client may ask for' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand serve" -l max-flows -d 'Most connections in one test [default: from the open-file limit, leaving headroom; at most 20000]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand serve" -l max-threads -d 'Most worker threads in one test' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand serve" -l max-msg-size -d 'Largest message, request or response size' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand serve" -l max-connections -d 'Authenticated control connections at once' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand serve" -l max-unauthenticated -d 'Connections still in the handshake at once (the oldest makes room)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand serve" -l max-per-source -d 'Control connections from one address (IPv6: one /64) at once' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand serve" -l handshake-timeout -d 'Time from a client\'s connect to the end of its handshake' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand serve" -l idle-timeout -d 'Time a client has for each whole message after the handshake' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand serve" -l preamble-timeout -d 'Time a data connection has to send its preamble' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand serve" -l stop-grace -d 'Time after a test\'s end the server waits for the client\'s stop' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand serve" -l data-ports -d 'Ports for the tests\' data connections (LO-HI), so a firewall, NetworkPolicy or Service can admit them [default: any free port]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand serve" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and not __fish_seen_subcommand_from up down demo fault delayer exec help" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and not __fish_seen_subcommand_from up down demo fault delayer exec help" -f -a "up" -d 'Build the lab a TOML file describes and keep it until `lab down`'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and not __fish_seen_subcommand_from up down demo fault delayer exec help" -f -a "down" -d 'Remove a lab built by `lab up`'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and not __fish_seen_subcommand_from up down demo fault delayer exec help" -f -a "demo" -d 'The demo: report 2\'s lab, doctor, tuning, the ladder, report.html'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and not __fish_seen_subcommand_from up down demo fault delayer exec help" -f -a "fault" -d 'Plant a fault (delay, loss or a rate cap) on one host of a lab made by `lab up`, until Ctrl-C or SIGTERM, which remove it'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and not __fish_seen_subcommand_from up down demo fault delayer exec help" -f -a "delayer" -d 'The delay fault\'s packet holder, started by `lab fault` and tests inside a host\'s namespace (not for people)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and not __fish_seen_subcommand_from up down demo fault delayer exec help" -f -a "exec" -d 'Run a command on one host of a lab'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and not __fish_seen_subcommand_from up down demo fault delayer exec help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from up" -l state-dir -d 'Where lab state is kept' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from up" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from down" -l state-dir -d 'Where lab state is kept' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from down" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from demo" -l duration -d 'Seconds each test measures' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from demo" -l out -d 'Where the HTML report goes' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from demo" -l loopback -d 'Use loopback even as root'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from demo" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from fault" -l delay -d 'Hold each packet this long (e.g. 2ms, 500us; at most 10s)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from fault" -l loss -d 'Drop this share of the packets at random (e.g. 1%)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from fault" -l rate -d 'Cap the packets at this rate (e.g. 50mbit)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from fault" -l to -d 'Packets the host sends or forwards to these addresses (one direction)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from fault" -l nic -d 'Everything leaving or entering this device of the host (both directions; a rate caps both ends of its link)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from fault" -l forwarded -d 'What the host forwards into or out of this device (a router\'s uplink, both directions)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from fault" -l state-dir -d 'Where lab state is kept' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from fault" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from delayer" -l queue -d 'The NFQUEUE number to read' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from delayer" -l delay-ms -d 'How long each packet is held, in milliseconds' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from delayer" -l exit-on-eof -d 'Exit when standard input closes (the planting process died)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from delayer" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from exec" -l state-dir -d 'Where lab state is kept' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from exec" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "up" -d 'Build the lab a TOML file describes and keep it until `lab down`'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "down" -d 'Remove a lab built by `lab up`'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "demo" -d 'The demo: report 2\'s lab, doctor, tuning, the ladder, report.html'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "fault" -d 'Plant a fault (delay, loss or a rate cap) on one host of a lab made by `lab up`, until Ctrl-C or SIGTERM, which remove it'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "delayer" -d 'The delay fault\'s packet holder, started by `lab fault` and tests inside a host\'s namespace (not for people)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "exec" -d 'Run a command on one host of a lab'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand demo" -l duration -d 'Seconds each test measures' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand demo" -l out -d 'Where the HTML report goes' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand demo" -l loopback -d 'Use loopback even as root'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand demo" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand inspect" -l netns -d 'Run in this named network namespace (/run/netns/NAME)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand inspect" -l root -d 'Read /proc and /sys under this directory instead of / (recorded trees)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand inspect" -l json -d 'Print the snapshot as JSON'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand inspect" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand doctor" -l netns -d 'Run in this named network namespace (/run/netns/NAME)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand doctor" -l root -d 'Read /proc and /sys under this directory instead of / (recorded trees)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand doctor" -l goal -d 'Wanted throughput (e.g. 40gbit); default: the sum of the NICs\' speeds' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand doctor" -l rtt -d 'Round-trip time to size socket buffers for' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand doctor" -l peer -d 'A `wirespeed serve` to measure against: one address per peer NIC, comma-separated; a short test per path names the bottleneck' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand doctor" -l port -d 'Control port of the peer' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand doctor" -l key-file -d 'Key file when the peer requires one' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand doctor" -l test-duration -d 'Length of each peer test' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand doctor" -l rr -d 'The work is request/response (latency), not bulk'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand doctor" -l no-probe -d 'Do not probe the path MTU toward the gateway and peers (MTU advice then comes out unverified)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand doctor" -l json -d 'Print findings as JSON'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand doctor" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and not __fish_seen_subcommand_from plan apply confirm rollback status watchdog help" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and not __fish_seen_subcommand_from plan apply confirm rollback status watchdog help" -f -a "plan" -d 'Print the actions as the commands a person would type'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and not __fish_seen_subcommand_from plan apply confirm rollback status watchdog help" -f -a "apply" -d 'Apply the plan, journaling old values first'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and not __fish_seen_subcommand_from plan apply confirm rollback status watchdog help" -f -a "confirm" -d 'Keep the last apply (cancel its automatic rollback)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and not __fish_seen_subcommand_from plan apply confirm rollback status watchdog help" -f -a "rollback" -d 'Restore every value the journal holds'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and not __fish_seen_subcommand_from plan apply confirm rollback status watchdog help" -f -a "status" -d 'Show the journal; exits non-zero when it needs attention (deadline passed unconfirmed, watchdog gone, journal from an earlier boot)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and not __fish_seen_subcommand_from plan apply confirm rollback status watchdog help" -f -a "watchdog" -d '(internal) wait for the deadline and roll back unless confirmed'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and not __fish_seen_subcommand_from plan apply confirm rollback status watchdog help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from plan" -l netns -d 'Run in this named network namespace (/run/netns/NAME)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from plan" -l root -d 'Read /proc and /sys under this directory instead of / (recorded trees)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from plan" -l state-dir -d 'Journal directory (default /var/lib/wirespeed/NETNS or .../host)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from plan" -l lock-wait -d 'How long to wait for another tune command holding the journal\'s lock' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from plan" -l goal -d 'Wanted throughput (e.g. 40gbit); default: the sum of the NICs\' speeds' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from plan" -l rtt -d 'Round-trip time to size socket buffers for' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from plan" -l profile -d 'A profile (throughput, latency, tpu-multinic, bulk-multinic) or a profile file; default: the fixes of doctor\'s findings' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from plan" -l dev -d 'NICs a profile\'s link settings apply to (repeat; default: all in use)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from plan" -l peer -d 'Addresses beyond this host that must stay reachable (repeat or comma-separate): their path MTU is measured before an MTU change, and they are checked after an apply, like the default gateway' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from plan" -l rr -d 'The work is request/response (latency), not bulk'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from plan" -l json -d 'Print the plan as JSON'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from plan" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from apply" -l netns -d 'Run in this named network namespace (/run/netns/NAME)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from apply" -l root -d 'Read /proc and /sys under this directory instead of / (recorded trees)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from apply" -l state-dir -d 'Journal directory (default /var/lib/wirespeed/NETNS or .../host)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from apply" -l lock-wait -d 'How long to wait for another tune command holding the journal\'s lock' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from apply" -l goal -d 'Wanted throughput (e.g. 40gbit); default: the sum of the NICs\' speeds' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from apply" -l rtt -d 'Round-trip time to size socket buffers for' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from apply" -l profile -d 'A profile (throughput, latency, tpu-multinic, bulk-multinic) or a profile file; default: the fixes of doctor\'s findings' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from apply" -l dev -d 'NICs a profile\'s link settings apply to (repeat; default: all in use)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from apply" -l peer -d 'Addresses beyond this host that must stay reachable (repeat or comma-separate): their path MTU is measured before an MTU change, and they are checked after an apply, like the default gateway' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from apply" -l confirm-within -d 'Roll back automatically unless `wirespeed tune confirm` comes within this time. A plan that touches the device carrying the default route, your session or a control connection gets 120s unless told otherwise' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from apply" -l rr -d 'The work is request/response (latency), not bulk'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from apply" -l json -d 'Print the plan as JSON'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from apply" -l no-confirm -d 'Apply a plan that touches what carries this host without a confirm deadline (and without the checks after it)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from apply" -l force -d 'Apply steps marked unverified (an MTU the path was not shown to carry); the checks after the apply still roll them back if a full-size packet is lost'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from apply" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from confirm" -l netns -d 'Run in this named network namespace (/run/netns/NAME)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from confirm" -l root -d 'Read /proc and /sys under this directory instead of / (recorded trees)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from confirm" -l state-dir -d 'Journal directory (default /var/lib/wirespeed/NETNS or .../host)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from confirm" -l lock-wait -d 'How long to wait for another tune command holding the journal\'s lock' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from confirm" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from rollback" -l netns -d 'Run in this named network namespace (/run/netns/NAME)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from rollback" -l root -d 'Read /proc and /sys under this directory instead of / (recorded trees)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from rollback" -l state-dir -d 'Journal directory (default /var/lib/wirespeed/NETNS or .../host)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from rollback" -l lock-wait -d 'How long to wait for another tune command holding the journal\'s lock' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from rollback" -l if-overdue -d '(internal, the backup timer) roll back only when the journal is still unconfirmed past its deadline'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from rollback" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from status" -l netns -d 'Run in this named network namespace (/run/netns/NAME)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from status" -l root -d 'Read /proc and /sys under this directory instead of / (recorded trees)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from status" -l state-dir -d 'Journal directory (default /var/lib/wirespeed/NETNS or .../host)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from status" -l lock-wait -d 'How long to wait for another tune command holding the journal\'s lock' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from status" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from watchdog" -l netns -d 'Run in this named network namespace (/run/netns/NAME)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from watchdog" -l root -d 'Read /proc and /sys under this directory instead of / (recorded trees)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from watchdog" -l state-dir -d 'Journal directory (default /var/lib/wirespeed/NETNS or .../host)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from watchdog" -l lock-wait -d 'How long to wait for another tune command holding the journal\'s lock' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from watchdog" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from help" -f -a "plan" -d 'Print the actions as the commands a person would type'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from help" -f -a "apply" -d 'Apply the plan, journaling old values first'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from help" -f -a "confirm" -d 'Keep the last apply (cancel its automatic rollback)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from help" -f -a "rollback" -d 'Restore every value the journal holds'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from help" -f -a "status" -d 'Show the journal; exits non-zero when it needs attention (deadline passed unconfirmed, watchdog gone, journal from an earlier boot)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from help" -f -a "watchdog" -d '(internal) wait for the deadline and roll back unless confirmed'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand tune; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand model" -l profile -d 'Cloud profile: gce, ibm-vpc, tpu-multinic, aws, azure, lab, custom, or a TOML file\'s path' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand model" -l vcpus -d 'vCPUs of the VM' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand model" -l nics -d 'NICs in use (explain: default the result\'s path count)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand model" -l instance -d 'An instance size listed in the profile, e.g. e2-standard-8' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand model" -l nic-cap -d 'Per-NIC cap, e.g. 25gbit (overrides the profile\'s)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand model" -l flow-cap -d 'Per-flow cap, e.g. 5gbit (overrides the profile\'s)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand model" -l vm-cap -d 'Per-VM cap, e.g. 100gbit (overrides the profile\'s rule)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand model" -l price -d 'A price per hour: NAME=PRICE, VCPUS=PRICE, or PRICE for the size asked about; repeat or comma-separate' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand model" -l target -d 'Bandwidth needed, e.g. 10gbit: flows it takes, and the cheapest size that delivers it' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand model" -l format -d 'Output: table or json' -r -f -a "table\t'Tables for people'
json\t'The result as JSON'"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand model" -l list -d 'List the built-in profiles'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand model" -l json -d 'Short for --format json'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand model" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand explain" -l profile -d 'Cloud profile: gce, ibm-vpc, tpu-multinic, aws, azure, lab, custom, or a TOML file\'s path' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand explain" -l vcpus -d 'vCPUs of the VM' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand explain" -l nics -d 'NICs in use (explain: default the result\'s path count)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand explain" -l instance -d 'An instance size listed in the profile, e.g. e2-standard-8' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand explain" -l nic-cap -d 'Per-NIC cap, e.g. 25gbit (overrides the profile\'s)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand explain" -l flow-cap -d 'Per-flow cap, e.g. 5gbit (overrides the profile\'s)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand explain" -l vm-cap -d 'Per-VM cap, e.g. 100gbit (overrides the profile\'s rule)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand explain" -l encap -d 'Encapsulation on the path: vxlan, ipip, wireguard, ...' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand explain" -l path-cap -d 'Cap of each path when known apart from the profile, e.g. a lab link\'s 1gbit' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand explain" -l format -d 'Output: table or json' -r -f -a "table\t'Tables for people'
json\t'The result as JSON'"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand explain" -l json -d 'Short for --format json'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand explain" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand experiment" -s o -l out -d 'Where results are saved (default: FILE\'s name with .results.json, in the current directory)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand experiment" -l repeats -d 'Repeats per cell (overrides the file)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand experiment" -s d -l duration -d 'Measured time per run, e.g. 2s (overrides the file)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand experiment" -l warmup -d 'Warm-up per run (overrides the file)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand experiment" -l resume -d 'Resume from OUT when it holds results of this experiment (the default)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand experiment" -l fresh -d 'Ignore earlier results in OUT and run every cell'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand experiment" -l json -d 'Print the results JSON on stdout at the end instead of the table'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand experiment" -l dry-run -d 'Check the file and print what each cell would run; build nothing'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand experiment" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -s p -l port -d 'Control port when HOST names none' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -l key-file -d 'Key file for a server started with --key-file' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -l goal -d 'What to raise: throughput (one way), bidir (both ways) or rr (lower p50 latency)' -r -f -a "throughput\t''
bidir\t''
rr\t''"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -l size -d 'Request and response size of the rr goal' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -l paths -d 'Candidate paths LOCAL=REMOTE, comma separated, in the order they are added' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -l budget -d 'Time for the whole search, e.g. 2m; steps that no longer fit are skipped' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -l step-duration -d 'Measured time of each repeat' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -l warmup -d 'Traffic before each repeat\'s measurement' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -l repeats -d 'Repeats of each step at least' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -l max-repeats -d 'Repeats of each step at most (while its median is not stable)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -l noise -d 'Noise band a step must beat, e.g. 3%' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -l state-dir -d 'Journal directory for host settings [default: /var/lib/wirespeed/optimize/NETNS]' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -s o -l out -d 'Write the ladder as experiment results JSON here (`wirespeed report` renders it)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -l timeout -d 'Timeout for connecting and for each control answer' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -l netns -d 'Run in this named network namespace (/run/netns/NAME)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -l root -d 'Read /proc and /sys under this directory instead of / (recorded trees)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -l keep -d 'Leave the host settings found in place (undo later with `wirespeed tune rollback`)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -l no-host -d 'Do not try host settings (MTU, BIG TCP, TCP buffer sysctls)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -l json -d 'Print the results JSON instead of the table'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand optimize" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l name -d 'The agent\'s name in the fleet [default: the host name]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l http -d 'Address and port of the HTTP API' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l fleet -d 'Pin the fleet: test only the agents of this file (else the controller sends the fleet with its key)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l max-client-tests -d 'Tests this agent runs as a client at once' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l bind -d 'Address to listen on (`::` takes IPv4 and IPv6)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -s p -l port -d 'Control port' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l max-tests -d 'Tests that may run at once; more get a "busy" answer' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l key-file -d 'Only clients proving this key (HMAC challenge) may run tests' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l max-duration -d 'Longest warm-up plus duration a client may ask for' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l max-flows -d 'Most connections in one test [default: from the open-file limit, leaving headroom; at most 20000]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l max-threads -d 'Most worker threads in one test' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l max-msg-size -d 'Largest message, request or response size' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l max-connections -d 'Authenticated control connections at once' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l max-unauthenticated -d 'Connections still in the handshake at once (the oldest makes room)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l max-per-source -d 'Control connections from one address (IPv6: one /64) at once' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l handshake-timeout -d 'Time from a client\'s connect to the end of its handshake' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l idle-timeout -d 'Time a client has for each whole message after the handshake' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l preamble-timeout -d 'Time a data connection has to send its preamble' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l stop-grace -d 'Time after a test\'s end the server waits for the client\'s stop' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l data-ports -d 'Ports for the tests\' data connections (LO-HI), so a firewall, NetworkPolicy or Service can admit them [default: any free port]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -l metrics-open -d 'Serve /metrics without the key (it tells the host\'s kernel, NICs and link speeds): for a Prometheus that cannot hold the bearer token of `wirespeed fleet token`'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand agent" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and not __fish_seen_subcommand_from run plan token history watch help" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and not __fish_seen_subcommand_from run plan token history watch help" -f -a "run" -d 'Run a test matrix over the agents of a fleet file'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and not __fish_seen_subcommand_from run plan token history watch help" -f -a "plan" -d 'Plan the rounds only: how many, and how long planning takes'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and not __fish_seen_subcommand_from run plan token history watch help" -f -a "token" -d 'Print the bearer token that reads the agents\' API (metrics, facts, results) without the key: for a Prometheus scrape config'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and not __fish_seen_subcommand_from run plan token history watch help" -f -a "history" -d 'Show stored tests from a history file (`fleet run --history`, `fleet watch`), or the watcher\'s incidents (--incidents)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and not __fish_seen_subcommand_from run plan token history watch help" -f -a "watch" -d 'Measure the fleet on a schedule under a budget: light probes between pairs, bandwidth tests in a rotation, every result stored and judged against its link\'s own baseline; incidents opened and closed, naming the link, pair, NIC, host or zone at fault and the facts that changed; a live page and Prometheus series on --listen'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and not __fish_seen_subcommand_from run plan token history watch help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l agents -d 'The fleet file (TOML; docs/fleet.md)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l pattern -d 'pairs, ring, all-to-all, one-to-many or many-to-one' -r -f -a "pairs\t''
ring\t''
all-to-all\t''
one-to-many\t''
many-to-one\t''"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l concurrent -d 'Tests each host takes part in at once (1: never two at once)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l repeats -d 'Runs of each test; two or more measure the noise band' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l retries -d 'Times a contended test (an end\'s CPUs taken by other work: a worker waited for a CPU, or a host had none idle) is measured again before it is reported as contended (exit 3)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l min -d 'Fail (exit 2) when a link\'s median is below this rate, e.g. 5gbit' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l baseline -d 'Fail (exit 2) when a link falls below the same link of this earlier `fleet run --out` by more than --tolerance' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l tolerance -d 'Allowed drop against --baseline, percent' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l out -d 'Also write the JSON results here; rewritten as each test lands (`"partial": true` until the run ends), so a stopped or killed run leaves every finished test in it' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l resume -d 'Take the tests an interrupted run wrote to FILE (its --out) and measure only the rest (failed and skipped tests are measured again); the whole run goes to --out (default: FILE itself)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l html -d 'Also write the HTML report (matrix heatmap, outliers) here' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l history -d 'Also store every test and each agent\'s facts in this history file (SQLite; created, or migrated, as needed)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l interference -d 'Interference instead of the matrix: the -w rr/crr/udp-rr test (the victim) from the fleet\'s second agent to the first\'s server, alone and beside K loaders on the other agents (K spread over them), for each K listed, at each --size (default 4k,64k,1m); --out then holds the curves, which `wirespeed report` draws' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l loader -d 'What each --interference loader runs' -r -f -a "stream\t'Bulk TCP at bench\'s defaults'
same\t'The victim\'s own workload and block size'"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l interference-server -d 'The agent whose server --interference loads [default: the fleet\'s first; the victim is the next one]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s p -l port -d 'Control port when HOST names none' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s w -l workload -d 'Workload (each is one row of the engine\'s registry)' -r -f -a "stream\t'bulk TCP'
rr\t'TCP request/response'
crr\t'TCP connect/request/response/close'
udp-stream\t'bulk UDP (loss, reordering, jitter)'
udp-rr\t'UDP request/response with a per-request timeout'"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l direction -d 'Stream direction: forward (client sends), reverse, bidir' -r -f -a "forward\t''
reverse\t''
bidir\t''"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s d -l duration -l time -d 'Measured time, e.g. 10s (-t as in iperf3; a bare number is seconds)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s n -l bytes -d 'End after this many bytes moved in the window instead of after a time (iperf3\'s -n), e.g. 1G; with rr/crr requests and responses both count' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s k -l blocks -l blockcount -d 'End after this many messages (-l each) instead of after a time (iperf3\'s -k)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s O -l warmup -l omit -d 'Traffic before measuring, excluded from figures (iperf3\'s -O/--omit)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s T -l threads -d 'Worker threads per side (each one event loop)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s F -l flows -l parallel -d 'Flows per direction (stream) or concurrent transactions (rr, crr)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l path -d 'A path LOCAL=REMOTE (LOCAL an address or device); repeat for several NICs' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l paths -d 'Comma list of paths, e.g. 10.0.0.1=10.0.0.2,10.0.1.1=10.0.1.2' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s l -l msg-size -l length -d 'Bytes per send/recv call in stream tests (default 512k); the datagram size in udp-stream (default 1400)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s b -l bitrate -l rate -d 'udp-stream: target rate per flow, evenly paced, e.g. 1gbit; 0 (the default) sends as fast as the socket takes datagrams' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l rr-timeout -d 'udp-rr: how long a request waits for its answer before it counts as lost and the next one goes (default 200ms)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s s -l size -d 'rr/crr request and response size; a comma list runs a sweep' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l request -d 'rr/crr request size' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l response -d 'rr/crr response size' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l socket-buffer -l window -d 'SO_SNDBUF and SO_RCVBUF both (iperf3\'s --window)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l sndbuf -d 'SO_SNDBUF' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l rcvbuf -d 'SO_RCVBUF' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l congestion -l cc -d 'Congestion control, e.g. cubic or bbr' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l busy-poll -d 'Busy polling for USECS microseconds on every data socket (SO_BUSY_POLL; SO_PREFER_BUSY_POLL stays off) and on each worker\'s epoll instance (EPIOCSPARAMS), both sides; 1-1000. Raising it needs CAP_NET_ADMIN; it acts only on NICs with NAPI (veth: with GRO on)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l io -d 'I/O engine of both sides\' workers: epoll (the default) or uring (io_uring: several sends in flight per flow, multishot receive into provided buffers, batched submissions; stream, rr and unpaced udp-stream only). A side whose kernel refuses io_uring (the io_uring_disabled sysctl, a container\'s seccomp profile) runs epoll and says why in the notes' -r -f -a "epoll\t''
uring\t''"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s S -l tos -d 'IP TOS byte on every flow, both sides, e.g. 0x10 (IPV6_TCLASS on IPv6)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l dscp -d 'DSCP on every flow: a number 0-63 or a name (ef, af11..af43, cs0..cs7)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l pacing -d 'Pace each flow at this rate (SO_MAX_PACING_RATE), e.g. 2gbit' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l pin -d 'Pin client worker threads to these CPUs, e.g. 0,1 or 0-3' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l remote-pin -d 'Pin server worker threads to these CPUs' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s i -l interval -d 'Interval reports, e.g. 1s' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l format -d 'Output: table, json, kv (neper-style key=value) or iperf3-json (iperf3 -J\'s document)' -r -f -a "table\t''
json\t''
kv\t''
iperf3-json\t''"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l key-file -d 'Key file for a server started with --key-file' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l timeout -d 'Timeout for connecting and for each control answer as a whole' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l connect-timeout -d 'Timeout for each TCP connect alone, control and data; a bare number is milliseconds, as in iperf3' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s B -l bind -d 'Client address to send from (control and data; iperf3\'s -B)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l cport -d 'Client data port: flow N binds PORT + N (iperf3\'s --cport)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l loaders -d 'Run this request/response test beside K loaders on the same server (report 3\'s interference): one stream of K flows on K threads, started first. In an experiment, sweep it (`arg = "--loaders"`)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l loaders-from -d 'Lab hosts the --loaders run from, K spread over them in turn (experiments only; default: the cell\'s own client host)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s u -l udp -d 'Short for --workload udp-stream (iperf3\'s -u)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s R -l reverse -d 'Short for --direction reverse'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l bidir -d 'Short for --direction bidir'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l no-gso -d 'udp-stream: send without UDP GSO (one datagram per send)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l no-gro -d 'udp-stream: receive without UDP GRO'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l nodelay -l no-delay -d 'Force TCP_NODELAY on (default: on for rr/crr, off for stream)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l no-nodelay -d 'Force TCP_NODELAY off'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l zerocopy -d 'Send with MSG_ZEROCOPY (the kernel copies anyway over loopback and veth)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l skip-rx-copy -d 'Receive with MSG_TRUNC: the kernel discards data instead of copying it. Saves receiver CPU (about 20% per Gbit/s here); raises the rate only where the receiver\'s CPU is what limits it, not a sender-bound flow (docs/benchmarks.md, "skip-rx")'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l rx-zerocopy -d 'stream: the receiver maps received pages (TCP_ZEROCOPY_RECEIVE) instead of copying them and reports, per flow, the fraction of bytes mapped. The kernel maps only whole pages: it needs an MSS that is a multiple of 4096 (on a NIC, header split) and, over veth and loopback, a --zerocopy sender (docs/benchmarks.md)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l breakdown -d 'rr, crr, udp-rr: timestamp a sample of transactions on both sides (kernel software timestamps) and report where the round trip is spent (docs/latency.md)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s m -l mptcp -d 'MPTCP sockets (IPPROTO_MPTCP) on both sides; needs net.mptcp.enabled=1'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s Z -l sendfile -d 'stream: send with sendfile(2) from an in-memory file (iperf3\'s -Z)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l dont-fragment -d 'UDP: set the IPv4 Don\'t Fragment bit (and IPv6\'s no-fragment option)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l probe-rr -d 'Measure 1-byte request/response latency beside a stream test'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l json -d 'Short for --format json'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -l per-flow -d 'Show every flow in the table'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s 4 -l ipv4 -l version4 -d 'IPv4 only'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s 6 -l ipv6 -l version6 -d 'IPv6 only'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from plan" -l agents -d 'The fleet file' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from plan" -l synthetic -d 'Plan for N made-up agents instead (planning figures only)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from plan" -l pattern -d 'The pattern' -r -f -a "pairs\t''
ring\t''
all-to-all\t''
one-to-many\t''
many-to-one\t''"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from plan" -l concurrent -d 'Tests each host takes part in at once' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from plan" -l rounds -d 'Print each round\'s tests too'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from plan" -l json -d 'Print the plan as JSON'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from plan" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from token" -l key-file -d 'The fleet key file (the agents\' --key-file)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from token" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from history" -l db -d 'The history file (SQLite)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from history" -l pair -d 'Only tests between these two agents, either way: A,B' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from history" -l since -d 'Only tests of the last DURATION, e.g. 7d, 12h, 30m' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from history" -l workload -d 'Only this workload label' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from history" -l limit -d 'At most N rows, the newest (0: all)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from history" -l incidents -d 'Show the watcher\'s incidents of the last --since instead (open first, then closed, newest first; --pair keeps those naming one of its hosts)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from history" -l prune -d 'Remove the runs older than --since instead of showing anything'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from history" -l json -d 'Print JSON'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from history" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from watch" -l agents -d 'The fleet file (TOML; docs/fleet.md)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from watch" -l synthetic -d 'Plan for N made-up agents instead (with --dry-run only)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from watch" -l key-file -d 'The fleet key file (the agents\' --key-file)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from watch" -l history -d 'The history file (SQLite; created, or migrated, as needed)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from watch" -l budget -d 'Share of each link\'s capacity the watcher may use on average, percent: probes take at most half of it, bandwidth tests the rest' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from watch" -l link-rate -d 'Each link\'s capacity, e.g. 10gbit, 100mbit (the budget\'s base)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from watch" -l probe-period -d 'How often each pair is probed (stretched to fit the budget)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from watch" -l probes -d 'The probes, run together on each pair: rr (200 transactions of 1 byte), crr (20 connections), rr-64k (8 transactions of 64 KiB)' -r -f -a "rr\t'200 transactions of 1 byte'
crr\t'20 connections'
rr-64k\t'8 transactions of 64 KiB'"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from watch" -l bandwidth-duration -d 'Length of each bandwidth test of the rotation (per NIC pair)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from watch" -l peers -d 'Agents each agent probes at most (all of them up to N + 1 agents)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from watch" -l drift-ratio -d 'A probe\'s latency floor is past its threshold at this many times its link\'s baseline median (and 1.5 times the baseline\'s high, and --min-change above it); two tests past it in a row make the link degraded, two back under half the excess make it healthy' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from watch" -l min-change -d 'Latency changes under this are never judged, e.g. 500us, 2ms (the floors of a healthy path move by hundreds of microseconds on a busy host)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from watch" -l for -d 'Stop after this long (default: run until killed)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from watch" -l retain -d 'Prune history older than this, at start and hourly' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from watch" -l listen -d 'Serve the live page (/), /metrics and /v1/watch here, e.g. 127.0.0.1:5390' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from watch" -l dry-run -d 'Print the schedule (pairs, probe period, bandwidth rotation) and how long planning took, then exit'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from watch" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from help" -f -a "run" -d 'Run a test matrix over the agents of a fleet file'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from help" -f -a "plan" -d 'Plan the rounds only: how many, and how long planning takes'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from help" -f -a "token" -d 'Print the bearer token that reads the agents\' API (metrics, facts, results) without the key: for a Prometheus scrape config'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from help" -f -a "history" -d 'Show stored tests from a history file (`fleet run --history`, `fleet watch`), or the watcher\'s incidents (--incidents)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from help" -f -a "watch" -d 'Measure the fleet on a schedule under a budget: light probes between pairs, bandwidth tests in a rotation, every result stored and judged against its link\'s own baseline; incidents opened and closed, naming the link, pair, NIC, host or zone at fault and the facts that changed; a live page and Prometheus series on --listen'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand fleet; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand report" -s l -l label -d 'A name for each file, in order (repeat the flag: `--label cubic --label bbr`); unnamed files are labelled by their test\'s own description' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand report" -s o -l output -d 'Write here instead of stdout' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand report" -s f -l format -d 'html, md or csv (default: from the output\'s extension, else html)' -r -f -a "html\t'A page with SVG charts'
md\t'Markdown tables'
csv\t'One CSV row per result'"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand report" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and not __fish_seen_subcommand_from manifests run image watch cleanup help" -l context -d 'The kubeconfig context to talk to, as kubectl\'s --context [default: the kubeconfig\'s current context]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and not __fish_seen_subcommand_from manifests run image watch cleanup help" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and not __fish_seen_subcommand_from manifests run image watch cleanup help" -f -a "manifests" -d 'Print the objects that run agents (YAML, or JSON with --output json)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and not __fish_seen_subcommand_from manifests run image watch cleanup help" -f -a "run" -d 'Apply the agents, wait for them, run the fleet matrix per network mode, compare the modes, delete what was applied (also on Ctrl-C). Exits 3 when a requested test was not measured'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and not __fish_seen_subcommand_from manifests run image watch cleanup help" -f -a "image" -d 'The agent image: built from a wirespeed binary, without Docker or a base image'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and not __fish_seen_subcommand_from manifests run image watch cleanup help" -f -a "watch" -d '`fleet watch` on the cluster: agents and a watcher Deployment that probes every pair on a schedule, keeps history and raises drift events (docs/k8s.md)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and not __fish_seen_subcommand_from manifests run image watch cleanup help" -f -a "cleanup" -d 'Delete what runs that did not end left behind (a run killed with SIGKILL, or whose machine went away): the namespaces runs made and the objects they put in a namespace they were given, found by the label `wirespeed.dev/run`. A run still alive is left alone'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and not __fish_seen_subcommand_from manifests run image watch cleanup help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l network -d 'Network modes, comma-separated: host (hostNetwork), pod (the pod network), dra (NICs claimed from DraNet); one DaemonSet each' -r -f -a "host\t''
pod\t''
dra\t''"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l image -d 'Agent image, as printed by `wirespeed k8s image build --push REGISTRY/wirespeed:TAG` (REF@sha256:...). Required by `run`' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l http-port -d 'The agents\' HTTP API port' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l profile -d 'Tune profile (built-in name or file): its sysctls go into the pod-network agents\' securityContext.sysctls (those every node\'s kernel and kubelet accept; never the node\'s own), its NIC settings into DraNet\'s config (MTU, GSO/GRO sizes, ethtool features and private flags), e.g. tpu-multinic. For dra a field DraNet cannot carry (rx_ring, source_routing) or a private flag the claimed NICs lack is refused before anything is applied' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l network-prefix -d 'dra: claim NICs whose GCE network name starts with this (report 1) [default: NICs DraNet does not call virtual]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l ifname-prefix -d 'dra: claim NICs whose interface name (dra.net/ifName) starts with this' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l nic-cel -l dra-selector -d 'dra: claim NICs matching this CEL expression over `device`, e.g. \'device.attributes["dra.net"].rdma\'' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l device-class -d 'dra: the claims\' DeviceClass, yours (it must exist; none is made) [default: wirespeed-dranet, shared by every run, created when missing and never deleted]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l nics -d 'dra: NICs per agent' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l node-selector -d 'Run agents only on nodes with this label (KEY=VALUE, repeatable)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l toleration -d 'Let agents run on nodes with this taint (KEY[=VALUE][:EFFECT], repeatable), e.g. google.com/tpu=present:NoSchedule' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l requests -d 'The agent container\'s resource requests (KEY=QUANTITY, comma-separated), e.g. cpu=1,memory=256Mi' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l limits -d 'The agent container\'s resource limits (KEY=QUANTITY, comma-separated)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l priority-class -d 'The agents\' PriorityClass' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l data-ports -d 'The agents\' data ports (LO-HI): a firewall or NetworkPolicy can admit them, and each agent\'s Service (service paths) forwards them' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l api-source -d 'Where the API server\'s pod-proxy connections come from (CIDR, repeatable), admitted to the agents\' HTTP port; `k8s run` adds the API server\'s own addresses when none is given' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l namespace -d 'Namespace of the objects' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l port -d 'The agents\' engine port' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l key-file -d 'The fleet key file (as `wirespeed serve --key-file`); a fresh key is made when absent' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l output -d 'yaml (multi-document) or json (a v1 List)' -r -f -a "yaml\t''
json\t''"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l context -d 'The kubeconfig context to talk to, as kubectl\'s --context [default: the kubeconfig\'s current context]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l keep-ebpf -d 'dra: leave the NICs\' eBPF programs attached (DraNet detaches them by default here, as report 1 did)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l tolerate-all -d 'Let agents run on nodes whatever their taints (a GPU or TPU pool); without it a tainted node is left out, by name'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l privileged-namespace -d 'Allow host-network agents (--network host): their namespace is labelled Pod Security `privileged` (one wirespeed makes; an existing namespace must already be). Without it host mode is refused'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l no-network-policy -d 'Make no NetworkPolicy (by default one admits the agents\' ports only from the run\'s own pods and the API server)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -l runner -d 'Print instead what runs `k8s run` inside the cluster: a ServiceAccount, the ClusterRole and binding a run needs, and a Job running `wirespeed k8s run` with these objects\' flags and the arguments after `--` (docs/k8s.md)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from manifests" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l network -d 'Network modes, comma-separated: host (hostNetwork), pod (the pod network), dra (NICs claimed from DraNet); one DaemonSet each' -r -f -a "host\t''
pod\t''
dra\t''"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l image -d 'Agent image, as printed by `wirespeed k8s image build --push REGISTRY/wirespeed:TAG` (REF@sha256:...). Required by `run`' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l http-port -d 'The agents\' HTTP API port' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l profile -d 'Tune profile (built-in name or file): its sysctls go into the pod-network agents\' securityContext.sysctls (those every node\'s kernel and kubelet accept; never the node\'s own), its NIC settings into DraNet\'s config (MTU, GSO/GRO sizes, ethtool features and private flags), e.g. tpu-multinic. For dra a field DraNet cannot carry (rx_ring, source_routing) or a private flag the claimed NICs lack is refused before anything is applied' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l network-prefix -d 'dra: claim NICs whose GCE network name starts with this (report 1) [default: NICs DraNet does not call virtual]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l ifname-prefix -d 'dra: claim NICs whose interface name (dra.net/ifName) starts with this' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l nic-cel -l dra-selector -d 'dra: claim NICs matching this CEL expression over `device`, e.g. \'device.attributes["dra.net"].rdma\'' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l device-class -d 'dra: the claims\' DeviceClass, yours (it must exist; none is made) [default: wirespeed-dranet, shared by every run, created when missing and never deleted]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l nics -d 'dra: NICs per agent' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l node-selector -d 'Run agents only on nodes with this label (KEY=VALUE, repeatable)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l toleration -d 'Let agents run on nodes with this taint (KEY[=VALUE][:EFFECT], repeatable), e.g. google.com/tpu=present:NoSchedule' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l requests -d 'The agent container\'s resource requests (KEY=QUANTITY, comma-separated), e.g. cpu=1,memory=256Mi' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l limits -d 'The agent container\'s resource limits (KEY=QUANTITY, comma-separated)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l priority-class -d 'The agents\' PriorityClass' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l data-ports -d 'The agents\' data ports (LO-HI): a firewall or NetworkPolicy can admit them, and each agent\'s Service (service paths) forwards them' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l api-source -d 'Where the API server\'s pod-proxy connections come from (CIDR, repeatable), admitted to the agents\' HTTP port; `k8s run` adds the API server\'s own addresses when none is given' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l paths -d 'Paths to measure, comma-separated: host, same-node, cross-node, cross-zone, service (= service-same-node,service-cross-node), hairpin, dra [default: one per --network: host, cross-node, dra]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l nodes -d 'Only these nodes (comma-separated names)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l sample -d 'A seeded sample of N of the eligible nodes' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l seed -d 'The sample\'s seed: the same seed over the same nodes picks the same sample' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l pairs -d 'Node pairs to test across nodes, one `CLIENT SERVER` per line (instead of --pattern)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l min -d 'Fail (exit 1) when a bulk case is below RATE, on every path or on one (PATH=RATE); repeatable' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l min-tps -d 'Fail when a request/response case is below N transactions/s (PATH=N for one path); repeatable' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l baseline -d 'Fail when a case falls more than --tolerance below the same case of this earlier --out (or its p99 rises more)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l tolerance -d 'Tolerance of --baseline, %' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l max-gap -d 'Fail when a pod path is more than PCT % below the host network on the same node pair (add host to --paths)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l csv -d 'Also write the cases as CSV here' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l junit -d 'Also write the cases as JUnit XML here (one testcase per path, workload and pair)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l html -d 'Also write an HTML page here: the path x pair heatmap and table' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l sweep-sizes -d 'Message sizes to sweep on every path (comma-separated, e.g. 1k,16k,64k): one workload per size' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l sweep-flows -d 'Flows per pair to sweep on every path (e.g. 1,4,8): one workload per count' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l kubeconfig -d 'The kubeconfig [default: $KUBECONFIG, ~/.kube/config, in-cluster]' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s n -l namespace -d 'Namespace to run in [default: wirespeed-RUNID]: made by the run (and deleted after it) when it does not exist; an existing one is used as it is, never relabelled, and only what the run put there is deleted' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l pattern -d 'pairs, ring, all-to-all, one-to-many or many-to-one' -r -f -a "pairs\t''
ring\t''
all-to-all\t''
one-to-many\t''
many-to-one\t''"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l concurrent -d 'Tests each agent takes part in at once' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l repeats -l repeat -d 'Runs of each test; two or more give each case a 95% confidence interval, which the gates judge by' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l retries -d 'Times a contended test (an end\'s CPUs taken by other work: a worker waited for a CPU, or a host had none idle) is measured again before it is reported as contended (exit 3)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l ready-timeout -d 'Longest wait for each mode\'s agents to be Ready' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l api-retry -d 'How long a request to the API server is retried after its first failure (a restarting API server refuses connections or answers 503 for a while); past it the run stops testing, says so and leaves its objects for `k8s cleanup`' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l reach -d 'How to reach the agents\' HTTP APIs: api (through the API server\'s pod proxy: works from anywhere that reaches the API server) or direct (to the pod/node addresses: from inside the cluster network)' -r -f -a "api\t''
direct\t''"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l out -d 'Also write every mode\'s agents and fleet results, and the comparison, as JSON here. Rewritten as each test lands (with `"partial": true` until the run ends), so an interrupted or killed run leaves every finished test in it' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l resume -d 'Take the tests an interrupted run wrote to FILE (its --out) and measure only the rest; the whole run goes to --out (default: FILE itself)' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l policy-load -d 'Measure the pod paths again under each number of NetworkPolicies that select the agents without blocking them (ascending, comma-separated, e.g. 0,100): what an enforcer\'s policies cost each path. Each level is awaited until the enforcer has it in force' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l interference -d 'Interference instead of the pair matrix: the -w rr/crr/udp-rr test (the victim) from the second chosen node to the first\'s agent, alone and beside K loaders on the other nodes (K spread over them), for each K listed, at each --size (default 4k,64k,1m), over the first --paths entry\'s network; names the K where p99 doubles' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l loader -d 'What each --interference loader runs: stream or the victim\'s own workload at its size' -r -f -a "stream\t'Bulk TCP at bench\'s defaults'
same\t'The victim\'s own workload and block size'"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l interference-server -d 'The node whose agent is the --interference server [default: the first chosen node]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l workloads -d 'Several workloads in one run, comma-separated (e.g. stream,rr: the host vs pod table then has throughput, latency percentiles and CPU per Gbit/s and per transaction); replaces -w' -r -f -a "stream\t'bulk TCP'
rr\t'TCP request/response'
crr\t'TCP connect/request/response/close'
udp-stream\t'bulk UDP (loss, reordering, jitter)'
udp-rr\t'UDP request/response with a per-request timeout'"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s p -l port -d 'Control port when HOST names none' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s w -l workload -d 'Workload (each is one row of the engine\'s registry)' -r -f -a "stream\t'bulk TCP'
rr\t'TCP request/response'
crr\t'TCP connect/request/response/close'
udp-stream\t'bulk UDP (loss, reordering, jitter)'
udp-rr\t'UDP request/response with a per-request timeout'"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l direction -d 'Stream direction: forward (client sends), reverse, bidir' -r -f -a "forward\t''
reverse\t''
bidir\t''"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s d -l duration -l time -d 'Measured time, e.g. 10s (-t as in iperf3; a bare number is seconds)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s k -l blocks -l blockcount -d 'End after this many messages (-l each) instead of after a time (iperf3\'s -k)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s O -l warmup -l omit -d 'Traffic before measuring, excluded from figures (iperf3\'s -O/--omit)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s T -l threads -d 'Worker threads per side (each one event loop)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s F -l flows -l parallel -d 'Flows per direction (stream) or concurrent transactions (rr, crr)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l path -d 'A path LOCAL=REMOTE (LOCAL an address or device); repeat for several NICs' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s l -l msg-size -l length -d 'Bytes per send/recv call in stream tests (default 512k); the datagram size in udp-stream (default 1400)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s b -l bitrate -l rate -d 'udp-stream: target rate per flow, evenly paced, e.g. 1gbit; 0 (the default) sends as fast as the socket takes datagrams' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l rr-timeout -d 'udp-rr: how long a request waits for its answer before it counts as lost and the next one goes (default 200ms)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s s -l size -d 'rr/crr request and response size; a comma list runs a sweep' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l request -d 'rr/crr request size' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l response -d 'rr/crr response size' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l socket-buffer -l window -d 'SO_SNDBUF and SO_RCVBUF both (iperf3\'s --window)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l sndbuf -d 'SO_SNDBUF' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l rcvbuf -d 'SO_RCVBUF' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l congestion -l cc -d 'Congestion control, e.g. cubic or bbr' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l busy-poll -d 'Busy polling for USECS microseconds on every data socket (SO_BUSY_POLL; SO_PREFER_BUSY_POLL stays off) and on each worker\'s epoll instance (EPIOCSPARAMS), both sides; 1-1000. Raising it needs CAP_NET_ADMIN; it acts only on NICs with NAPI (veth: with GRO on)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l io -d 'I/O engine of both sides\' workers: epoll (the default) or uring (io_uring: several sends in flight per flow, multishot receive into provided buffers, batched submissions; stream, rr and unpaced udp-stream only). A side whose kernel refuses io_uring (the io_uring_disabled sysctl, a container\'s seccomp profile) runs epoll and says why in the notes' -r -f -a "epoll\t''
uring\t''"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s S -l tos -d 'IP TOS byte on every flow, both sides, e.g. 0x10 (IPV6_TCLASS on IPv6)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l dscp -d 'DSCP on every flow: a number 0-63 or a name (ef, af11..af43, cs0..cs7)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l pacing -d 'Pace each flow at this rate (SO_MAX_PACING_RATE), e.g. 2gbit' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l pin -d 'Pin client worker threads to these CPUs, e.g. 0,1 or 0-3' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l remote-pin -d 'Pin server worker threads to these CPUs' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s i -l interval -d 'Interval reports, e.g. 1s' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l format -d 'Output: table, json, kv (neper-style key=value) or iperf3-json (iperf3 -J\'s document)' -r -f -a "table\t''
json\t''
kv\t''
iperf3-json\t''"
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l key-file -d 'Key file for a server started with --key-file' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l timeout -d 'Timeout for connecting and for each control answer as a whole' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l connect-timeout -d 'Timeout for each TCP connect alone, control and data; a bare number is milliseconds, as in iperf3' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s B -l bind -d 'Client address to send from (control and data; iperf3\'s -B)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l cport -d 'Client data port: flow N binds PORT + N (iperf3\'s --cport)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l loaders -d 'Run this request/response test beside K loaders on the same server (report 3\'s interference): one stream of K flows on K threads, started first. In an experiment, sweep it (`arg = "--loaders"`)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l loaders-from -d 'Lab hosts the --loaders run from, K spread over them in turn (experiments only; default: the cell\'s own client host)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l engine-paths -d 'Comma list of paths, e.g. 10.0.0.1=10.0.0.2,10.0.1.1=10.0.1.2' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l bytes -d 'End after this many bytes moved in the window instead of after a time (iperf3\'s -n), e.g. 1G; with rr/crr requests and responses both count' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l context -d 'The kubeconfig context to talk to, as kubectl\'s --context [default: the kubeconfig\'s current context]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l keep-ebpf -d 'dra: leave the NICs\' eBPF programs attached (DraNet detaches them by default here, as report 1 did)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l tolerate-all -d 'Let agents run on nodes whatever their taints (a GPU or TPU pool); without it a tainted node is left out, by name'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l privileged-namespace -d 'Allow host-network agents (--network host): their namespace is labelled Pod Security `privileged` (one wirespeed makes; an existing namespace must already be). Without it host mode is refused'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l no-network-policy -d 'Make no NetworkPolicy (by default one admits the agents\' ports only from the run\'s own pods and the API server)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l allow-contended -d 'Keep contended cases marked in every output but do not exit 3 for them (a run whose subject is not the figures, on a busy cluster)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l keep -d 'Leave the objects in the cluster afterwards'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s u -l udp -d 'Short for --workload udp-stream (iperf3\'s -u)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s R -l reverse -d 'Short for --direction reverse'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l bidir -d 'Short for --direction bidir'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l no-gso -d 'udp-stream: send without UDP GSO (one datagram per send)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l no-gro -d 'udp-stream: receive without UDP GRO'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l nodelay -l no-delay -d 'Force TCP_NODELAY on (default: on for rr/crr, off for stream)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l no-nodelay -d 'Force TCP_NODELAY off'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l zerocopy -d 'Send with MSG_ZEROCOPY (the kernel copies anyway over loopback and veth)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l skip-rx-copy -d 'Receive with MSG_TRUNC: the kernel discards data instead of copying it. Saves receiver CPU (about 20% per Gbit/s here); raises the rate only where the receiver\'s CPU is what limits it, not a sender-bound flow (docs/benchmarks.md, "skip-rx")'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l rx-zerocopy -d 'stream: the receiver maps received pages (TCP_ZEROCOPY_RECEIVE) instead of copying them and reports, per flow, the fraction of bytes mapped. The kernel maps only whole pages: it needs an MSS that is a multiple of 4096 (on a NIC, header split) and, over veth and loopback, a --zerocopy sender (docs/benchmarks.md)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l breakdown -d 'rr, crr, udp-rr: timestamp a sample of transactions on both sides (kernel software timestamps) and report where the round trip is spent (docs/latency.md)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s m -l mptcp -d 'MPTCP sockets (IPPROTO_MPTCP) on both sides; needs net.mptcp.enabled=1'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s Z -l sendfile -d 'stream: send with sendfile(2) from an in-memory file (iperf3\'s -Z)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l dont-fragment -d 'UDP: set the IPv4 Don\'t Fragment bit (and IPv6\'s no-fragment option)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l probe-rr -d 'Measure 1-byte request/response latency beside a stream test'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l json -d 'Short for --format json'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -l per-flow -d 'Show every flow in the table'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s 4 -l ipv4 -l version4 -d 'IPv4 only'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s 6 -l ipv6 -l version6 -d 'IPv6 only'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from image" -l context -d 'The kubeconfig context to talk to, as kubectl\'s --context [default: the kubeconfig\'s current context]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from image" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from image" -f -a "build" -d 'Build the agent image from a wirespeed binary (one layer: the binary, its loader and libraries, a non-root user), then write it as an OCI image layout tar and/or push it to a registry'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from image" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from watch" -l context -d 'The kubeconfig context to talk to, as kubectl\'s --context [default: the kubeconfig\'s current context]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from watch" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from watch" -f -a "apply" -d 'Apply the agents (a DaemonSet) and the watcher (a Deployment and its Service) in a namespace of their own, or change them when applied again; wait until the watcher watches every agent. Flags after `--` go to `fleet watch` (e.g. -- --probe-period 10s)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from watch" -f -a "manifests" -d 'Print what `apply` would apply (YAML, or JSON with --output json)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from watch" -f -a "status" -d 'The watcher\'s state through the API server: its agents, the newest test of each link, its drift events'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from watch" -f -a "delete" -d 'Delete the namespace `apply` made: agents, watcher and history (unless it is on --history-claim\'s volume)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from watch" -f -a "in-cluster" -d 'What the watcher\'s pod runs: find the agents through the API server and watch them, again whenever they change'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from watch" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from cleanup" -l run -d 'Only this run\'s objects (the RUNID of `wirespeed.dev/run=RUNID`, printed by the run when it applied them)' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from cleanup" -s n -l namespace -d 'Only in this namespace' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from cleanup" -l kubeconfig -d 'The kubeconfig [default: $KUBECONFIG, ~/.kube/config, in-cluster]' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from cleanup" -l context -d 'The kubeconfig context to talk to, as kubectl\'s --context [default: the kubeconfig\'s current context]' -r
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from cleanup" -l force -d 'Also delete runs whose Lease is still renewed (runs that may be alive: their tests fail)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from cleanup" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from help" -f -a "manifests" -d 'Print the objects that run agents (YAML, or JSON with --output json)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from help" -f -a "run" -d 'Apply the agents, wait for them, run the fleet matrix per network mode, compare the modes, delete what was applied (also on Ctrl-C). Exits 3 when a requested test was not measured'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from help" -f -a "image" -d 'The agent image: built from a wirespeed binary, without Docker or a base image'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from help" -f -a "watch" -d '`fleet watch` on the cluster: agents and a watcher Deployment that probes every pair on a schedule, keeps history and raises drift events (docs/k8s.md)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from help" -f -a "cleanup" -d 'Delete what runs that did not end left behind (a run killed with SIGKILL, or whose machine went away): the namespaces runs made and the objects they put in a namespace they were given, found by the label `wirespeed.dev/run`. A run still alive is left alone'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand k8s; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand completions" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand man" -l out -d 'Directory to write wirespeed.1, wirespeed-bench.1, ... into' -r -F
complete -c wirespeed -n "__fish_wirespeed_using_subcommand man" -s h -l help -d 'Print help'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "bench" -d 'Run a test against a `wirespeed serve` on HOST'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "serve" -d 'Serve tests to wirespeed clients'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "lab" -d 'Emulated hosts in network namespaces (root)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "demo" -d 'The demo (same as `lab demo`): report 2\'s lab, doctor, tune, the ladder, report.html; loopback without root'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "inspect" -d 'Read every knob that limits bandwidth on this host'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "doctor" -d 'Find what limits bandwidth or latency here, with evidence and fixes'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "tune" -d 'Change the host reversibly: plan, apply, confirm, rollback'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "model" -d 'A cloud profile\'s ceilings per flow, NIC and VM, and price per Gbit/s'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "explain" -d 'Set bench results (JSON) against a profile and name the bottleneck'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "experiment" -d 'Run an experiment file: cells against a baseline, repeated, in a lab (root)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "optimize" -d 'Search the bench and host settings that raise throughput or cut latency'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "agent" -d 'The fleet agent: the server plus a keyed HTTP API and Prometheus metrics'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "fleet" -d 'Test every link of a fleet of agents; plan the rounds'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "report" -d 'Render experiment or bench results as HTML (SVG charts), Markdown or CSV; several files are compared. Also one `fleet run` or `k8s run` --out file, saying when it is partial'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "k8s" -d 'Agents on Kubernetes: host network, pod network or DRA-claimed NICs'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "completions" -d 'Print a shell completion script (bash, zsh, fish, elvish, powershell)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "man" -d 'Write a man page per command (wirespeed.1, wirespeed-bench.1, ...)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and not __fish_seen_subcommand_from bench serve lab demo inspect doctor tune model explain experiment optimize agent fleet report k8s completions man help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "up" -d 'Build the lab a TOML file describes and keep it until `lab down`'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "down" -d 'Remove a lab built by `lab up`'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "demo" -d 'The demo: report 2\'s lab, doctor, tuning, the ladder, report.html'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "fault" -d 'Plant a fault (delay, loss or a rate cap) on one host of a lab made by `lab up`, until Ctrl-C or SIGTERM, which remove it'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "delayer" -d 'The delay fault\'s packet holder, started by `lab fault` and tests inside a host\'s namespace (not for people)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "exec" -d 'Run a command on one host of a lab'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from tune" -f -a "plan" -d 'Print the actions as the commands a person would type'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from tune" -f -a "apply" -d 'Apply the plan, journaling old values first'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from tune" -f -a "confirm" -d 'Keep the last apply (cancel its automatic rollback)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from tune" -f -a "rollback" -d 'Restore every value the journal holds'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from tune" -f -a "status" -d 'Show the journal; exits non-zero when it needs attention (deadline passed unconfirmed, watchdog gone, journal from an earlier boot)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from tune" -f -a "watchdog" -d '(internal) wait for the deadline and roll back unless confirmed'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from fleet" -f -a "run" -d 'Run a test matrix over the agents of a fleet file'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from fleet" -f -a "plan" -d 'Plan the rounds only: how many, and how long planning takes'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from fleet" -f -a "token" -d 'Print the bearer token that reads the agents\' API (metrics, facts, results) without the key: for a Prometheus scrape config'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from fleet" -f -a "history" -d 'Show stored tests from a history file (`fleet run --history`, `fleet watch`), or the watcher\'s incidents (--incidents)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from fleet" -f -a "watch" -d 'Measure the fleet on a schedule under a budget: light probes between pairs, bandwidth tests in a rotation, every result stored and judged against its link\'s own baseline; incidents opened and closed, naming the link, pair, NIC, host or zone at fault and the facts that changed; a live page and Prometheus series on --listen'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from k8s" -f -a "manifests" -d 'Print the objects that run agents (YAML, or JSON with --output json)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from k8s" -f -a "run" -d 'Apply the agents, wait for them, run the fleet matrix per network mode, compare the modes, delete what was applied (also on Ctrl-C). Exits 3 when a requested test was not measured'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from k8s" -f -a "image" -d 'The agent image: built from a wirespeed binary, without Docker or a base image'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from k8s" -f -a "watch" -d '`fleet watch` on the cluster: agents and a watcher Deployment that probes every pair on a schedule, keeps history and raises drift events (docs/k8s.md)'
complete -c wirespeed -n "__fish_wirespeed_using_subcommand help; and __fish_seen_subcommand_from k8s" -f -a "cleanup" -d 'Delete what runs that did not end left behind (a run killed with SIGKILL, or whose machine went away): the namespaces runs made and the objects they put in a namespace they were given, found by the label `wirespeed.dev/run`. A run still alive is left alone'
