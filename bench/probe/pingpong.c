// A minimal blocking ping-pong, the floor a request/response tool can
// reach: one flow, SIZE bytes each way, TCP (TCP_NODELAY) or UDP, and per
// message per side only the calls that move it (TCP: send and recv until
// SIZE bytes are through; UDP: one send and one recv of a datagram). Used
// for the rr rows of bench/compare (rr14, d-rr, rr64k, rr80k, udp-rr) and judged
// in docs/benchmarks.md. Not part of the product.
// Build: gcc -O2 -o pingpong pingpong.c
//   pingpong server PORT [SIZE [udp]]
//   pingpong client IP PORT SECS WARMUP [SIZE [udp]]
//     prints "pp tps N p50 US p99 US" over SECS after WARMUP seconds
// SIZE: bytes each way (default 14; at most 1 MiB over TCP, 65000 over
// UDP, where a larger one falls back to 14). A UDP client resends
// after 100 ms without an answer (never on an unlossy veth) and counts it
// as a transaction not measured.
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAXMSG (1 << 20)
#define MAXDGRAM 65000
#define MAXLAT 4000000

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

// Sends or receives exactly n bytes; -1 on error or close.
static int full(int fd, char *b, int n, int rd) {
  for (int got = 0; got < n;) {
    int k = rd ? recv(fd, b + got, n - got, 0) : send(fd, b + got, n - got, 0);
    if (k <= 0) return -1;
    got += k;
  }
  return 0;
}

static double lat[MAXLAT];
static char b[MAXMSG];

static int is_udp(int argc, char **argv, int at) {
  return argc > at && !strcmp(argv[at], "udp");
}

static int size_of(int argc, char **argv, int at) {
  int msg = argc > at ? atoi(argv[at]) : 14;
  int most = is_udp(argc, argv, at + 1) ? MAXDGRAM : MAXMSG;
  return msg < 1 || msg > most ? 14 : msg;
}

static int serve_tcp(int port, int msg) {
  int one = 1;
  int l = socket(AF_INET, SOCK_STREAM, 0);
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (bind(l, (void *)&a, sizeof a) || listen(l, 4)) return perror("bind"), 1;
  for (;;) {
    int s = accept(l, 0, 0);
    if (s < 0) continue;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    while (full(s, b, msg, 1) == 0 && full(s, b, msg, 0) == 0) {
    }
    close(s);
  }
}

// Answers every datagram to its sender with one of the same size.
static int serve_udp(int port) {
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (bind(s, (void *)&a, sizeof a)) return perror("bind"), 1;
  for (;;) {
    struct sockaddr_in from;
    socklen_t fl = sizeof from;
    int n = recvfrom(s, b, sizeof b, 0, (void *)&from, &fl);
    if (n > 0) sendto(s, b, n, 0, (void *)&from, fl);
  }
}

// One transaction: 0 answered, 1 timed out (UDP), -1 failed.
static int once(int s, int msg, int udp) {
  if (!udp) return full(s, b, msg, 0) || full(s, b, msg, 1) ? -1 : 0;
  if (send(s, b, msg, 0) != msg) return -1;
  int n = recv(s, b, sizeof b, 0);
  return n == msg ? 0 : n < 0 ? 1 : -1;
}

int main(int argc, char **argv) {
  int one = 1;
  if (argc >= 3 && !strcmp(argv[1], "server")) {
    int port = atoi(argv[2]);
    return is_udp(argc, argv, 4) ? serve_udp(port) : serve_tcp(port, size_of(argc, argv, 3));
  }
  if (argc < 6 || strcmp(argv[1], "client")) {
    fprintf(stderr,
            "usage: pingpong server PORT [SIZE [udp]] | pingpong client IP PORT SECS WARMUP "
            "[SIZE [udp]]\n");
    return 2;
  }
  int msg = size_of(argc, argv, 6), udp = is_udp(argc, argv, 7);
  int s = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[3]))};
  inet_pton(AF_INET, argv[2], &a.sin_addr);
  if (connect(s, (void *)&a, sizeof a)) return perror("connect"), 1;
  if (udp) {
    struct timeval tv = {.tv_usec = 100000};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  } else {
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  double secs = atof(argv[4]), start = now() + atof(argv[5]), end = start + secs;
  long k = 0;
  for (;;) {
    double t0 = now();
    int r = once(s, msg, udp);
    if (r < 0) return 3;
    double t1 = now();
    if (t1 >= end) break;
    if (r == 0 && t0 >= start && k < MAXLAT) lat[k++] = (t1 - t0) * 1e6;
  }
  if (k == 0) return 4;
  qsort(lat, k, sizeof(double), cmp);
  printf("pp tps %.0f p50 %.1f p99 %.1f\n", k / secs, lat[k / 2], lat[(long)(k * 0.99)]);
  return 0;
}
