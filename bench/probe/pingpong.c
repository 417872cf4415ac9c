// A minimal blocking TCP ping-pong (14 B each way, TCP_NODELAY, one send and
// one receive per message per side), the floor a request/response tool can
// reach; used to judge wirespeed's unpinned rr p99 against sockperf
// (docs/benchmarks.md, "What bounds the stream rows"). Not part of the product.
// Build: gcc -O2 -o pingpong pingpong.c
//   pingpong server PORT [SIZE]
//   pingpong client IP PORT SECS WARMUP [SIZE]    prints "pp tps N p50 US p99 US"
//                                          over SECS after WARMUP seconds
// SIZE: bytes each way (default 14; at most 14).
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MSG 14
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

int main(int argc, char **argv) {
  char b[MSG] = {0};
  int msg = MSG;
  int one = 1;
  if (argc >= 3 && !strcmp(argv[1], "server")) {
    if (argc >= 4) msg = atoi(argv[3]);
    if (msg < 1 || msg > MSG) msg = MSG;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
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
  if (argc < 6 || strcmp(argv[1], "client")) {
    fprintf(stderr, "usage: pingpong server PORT [SIZE] | pingpong client IP PORT SECS WARMUP [SIZE]\n");
    return 2;
  }
  if (argc >= 7) msg = atoi(argv[6]);
  if (msg < 1 || msg > MSG) msg = MSG;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[3]))};
  inet_pton(AF_INET, argv[2], &a.sin_addr);
  if (connect(s, (void *)&a, sizeof a)) return perror("connect"), 1;
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  double secs = atof(argv[4]), start = now() + atof(argv[5]), end = start + secs;
  long k = 0;
  for (;;) {
    double t0 = now();
    if (full(s, b, msg, 0) || full(s, b, msg, 1)) return 3;
    double t1 = now();
    if (t1 >= end) break;
    if (t0 >= start && k < MAXLAT) lat[k++] = (t1 - t0) * 1e6;
  }
  if (k == 0) return 4;
  qsort(lat, k, sizeof(double), cmp);
  printf("pp tps %.0f p50 %.1f p99 %.1f\n", k / secs, lat[k / 2], lat[(long)(k * 0.99)]);
  return 0;
}
