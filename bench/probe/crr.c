// A minimal blocking TCP connect/request/response (1 B each way, TCP_NODELAY,
// per transaction: socket, connect, send, receive, close on the client;
// accept, receive, send, close on the server), the floor a crr tool can
// reach on this kernel (docs/benchmarks.md, issue 32). Not part of the product.
// Build: gcc -O2 -o crr crr.c
//   crr server PORT
//   crr client IP PORT SECS WARMUP    prints "crr tps N p50 US p99 US"
//                                     over SECS after WARMUP seconds
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

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

static double lat[MAXLAT];

static int serve(int port) {
  int one = 1;
  char b = 0;
  int l = socket(AF_INET, SOCK_STREAM, 0);
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (bind(l, (void *)&a, sizeof a) || listen(l, 128)) return perror("bind"), 1;
  for (;;) {
    int s = accept(l, 0, 0);
    if (s < 0) continue;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (recv(s, &b, 1, 0) == 1) send(s, &b, 1, 0);
    close(s);
  }
}

// One transaction on a fresh connection; 0 on success.
static int once(const struct sockaddr_in *a) {
  int one = 1;
  char b = 1;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return -1;
  int bad = connect(s, (const void *)a, sizeof *a) ||
            setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) ||
            send(s, &b, 1, 0) != 1 || recv(s, &b, 1, 0) != 1;
  close(s);
  return bad ? -1 : 0;
}

int main(int argc, char **argv) {
  if (argc >= 3 && !strcmp(argv[1], "server")) return serve(atoi(argv[2]));
  if (argc < 6 || strcmp(argv[1], "client")) {
    fprintf(stderr, "usage: crr server PORT | crr client IP PORT SECS WARMUP\n");
    return 2;
  }
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[3]))};
  inet_pton(AF_INET, argv[2], &a.sin_addr);
  double secs = atof(argv[4]), start = now() + atof(argv[5]), end = start + secs;
  long k = 0, fails = 0;
  for (;;) {
    double t0 = now();
    int bad = once(&a);
    double t1 = now();
    if (t1 >= end) break;
    if (bad) {
      fails++;
      continue;
    }
    if (t0 >= start && k < MAXLAT) lat[k++] = (t1 - t0) * 1e6;
  }
  if (k == 0) return 4;
  qsort(lat, k, sizeof(double), cmp);
  printf("crr tps %.0f p50 %.1f p99 %.1f fails %ld\n", k / secs, lat[k / 2], lat[k * 99 / 100], fails);
  return 0;
}
