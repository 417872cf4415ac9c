// The equal-offload UDP floor: a bare C UDP source that sends with UDP GSO
// (UDP_SEGMENT) and a sink that receives with UDP GRO (UDP_GRO), doing
// nothing but the system calls. iperf3 here is 3.12, without --gsro (3.19+),
// so bench/compare measures wirespeed's GSO/GRO udp-stream against this
// program instead (docs/benchmarks.md, "Equal offload"). Not part of the
// product.
// Build: cc -O2 -o udpgso udpgso.c   (bench/compare builds it)
//   udpgso sink PORT [NOGRO]
//       UDP on PORT with UDP_GRO (without it when NOGRO is 1: one
//       datagram per receive, the udp row's floor); a TCP control socket
//       on PORT. Per
//       control connection: 's' starts counting (answered 'k'), 'e' stops
//       and answers "BYTES SECS\n": payload bytes received after 's' and
//       the seconds from 's' to the last of them.
//   udpgso src IP PORT SECS SIZE [WARM] [NOGSO]
//       Sends SIZE-byte datagrams unpaced, in UDP_SEGMENT batches of
//       64 KiB or less (one datagram a call with NOGSO=1), WARM seconds
//       (default 1) before 's', SECS between 's' and 'e'; prints
//       "udpgso bps=B bytes=N secs=S".
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <poll.h>
#include <time.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <arpa/inet.h>
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

static void sink(int port, int nogro) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    int u = socket(AF_INET, SOCK_DGRAM, 0), one = 1, big = 4 << 20;
    if (u < 0 || bind(u, (void *)&a, sizeof a)) die("udp bind");
    if (!nogro && setsockopt(u, IPPROTO_UDP, UDP_GRO, &one, sizeof one)) die("UDP_GRO");
    setsockopt(u, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    int l = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (l < 0 || bind(l, (void *)&a, sizeof a) || listen(l, 4)) die("tcp listen");
    static char buf[65536];
    for (;;) {
        int c = accept(l, 0, 0);
        if (c < 0) continue;
        unsigned long long bytes = 0;
        int counting = 0;
        double t0 = 0, tl = 0;
        for (;;) {
            struct pollfd p[2] = {{u, POLLIN, 0}, {c, POLLIN, 0}};
            if (poll(p, 2, -1) < 0) break;
            if (p[0].revents & POLLIN) {
                // Drain what is queued; a GRO read returns many datagrams.
                for (int i = 0; i < 64; i++) {
                    ssize_t n = recv(u, buf, sizeof buf, MSG_DONTWAIT);
                    if (n <= 0) break;
                    if (counting) bytes += n, tl = now();
                }
            }
            if (p[1].revents) {
                char m;
                if (read(c, &m, 1) != 1) break;
                if (m == 's') {
                    bytes = 0, counting = 1, t0 = tl = now();
                    if (write(c, "k", 1) != 1) break;
                } else if (m == 'e') {
                    char out[64];
                    int k = snprintf(out, sizeof out, "%llu %.6f\n", bytes, tl - t0);
                    counting = 0;
                    if (write(c, out, k) != k) break;
                }
            }
        }
        close(c);
    }
}

static int src(const char *ip, int port, double secs, int size, double warm, int nogso) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) die("address");
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (c < 0 || connect(c, (void *)&a, sizeof a)) die("control connect");
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    if (u < 0 || connect(u, (void *)&a, sizeof a)) die("udp connect");
    int seg = size, per = 1;
    if (!nogso) {
        if (setsockopt(u, IPPROTO_UDP, UDP_SEGMENT, &seg, sizeof seg)) die("UDP_SEGMENT");
        per = 65000 / size;
        if (per > 64) per = 64;
    }
    static char buf[65536];
    memset(buf, 0x5a, sizeof buf);
    size_t len = (size_t)size * per;
    double end = now() + warm, t = 0;
    int phase = 0;  // 0 warm-up, 1 measured
    for (;;) {
        if (send(u, buf, len, 0) < 0 && errno != ENOBUFS && errno != ECONNREFUSED) die("send");
        t = now();
        if (t < end) continue;
        if (phase == 1) break;
        char k;
        if (write(c, "s", 1) != 1 || read(c, &k, 1) != 1) die("control start");
        phase = 1, end = now() + secs;
    }
    usleep(50000);  // what is in flight lands before the count is read
    char out[64] = {0};
    if (write(c, "e", 1) != 1) die("control stop");
    ssize_t n = 0, r;
    while (n < (ssize_t)sizeof out - 1 && (r = read(c, out + n, sizeof out - 1 - n)) > 0) {
        n += r;
        if (memchr(out, '\n', n)) break;
    }
    unsigned long long bytes;
    double s;
    if (sscanf(out, "%llu %lf", &bytes, &s) != 2 || s <= 0) {
        fprintf(stderr, "udpgso: the sink's answer was not understood: %s\n", out);
        return 1;
    }
    printf("udpgso bps=%.0f bytes=%llu secs=%.3f\n", bytes * 8.0 / s, bytes, s);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "sink")) { sink(atoi(argv[2]), argc > 3 && atoi(argv[3])); return 0; }
    if (argc >= 6 && !strcmp(argv[1], "src"))
        return src(argv[2], atoi(argv[3]), atof(argv[4]), atoi(argv[5]),
                   argc > 6 ? atof(argv[6]) : 1.0, argc > 7 && atoi(argv[7]));
    fprintf(stderr, "usage: udpgso sink PORT [NOGRO] | udpgso src IP PORT SECS SIZE [WARM] [NOGSO]\n");
    return 2;
}
