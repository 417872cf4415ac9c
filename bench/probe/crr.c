// A minimal blocking TCP connect/request/response (1 B each way, TCP_NODELAY,
// per transaction: socket, connect, send, receive, close on the client;
// accept, receive, send, close on the server), the floor a crr tool can
// reach on this kernel (docs/benchmarks.md, issue 32). Not part of the product.
// With "ws" last, each side makes the system calls wirespeed makes, in its
// order: the client sets 10 ms send/receive timeouts and closes with an RST
// (SO_LINGER 0); the server waits in epoll, accepts non-blocking until
// EAGAIN, adds each connection to epoll, answers it there and closes it when
// the client's RST arrives. That is the floor of wirespeed's design.
// Build: gcc -O2 -o crr crr.c
//   crr server PORT [ws]
//   crr client IP PORT SECS WARMUP [ws]  prints "crr tps N p50 US p99 US"
//                                        over SECS after WARMUP seconds
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
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
static int ws;

// The server of wirespeed's design: one epoll loop, non-blocking sockets.
static void serve_epoll(int l) {
  int one = 1, e = epoll_create1(0);
  char b[64];
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = l}, got[64];
  epoll_ctl(e, EPOLL_CTL_ADD, l, &ev);
  for (;;) {
    int n = epoll_wait(e, got, 64, -1);
    for (int i = 0; i < n; i++) {
      int fd = got[i].data.fd;
      if (fd == l) {
        int s;
        while ((s = accept4(l, 0, 0, SOCK_NONBLOCK)) >= 0) {
          setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          struct epoll_event c = {.events = EPOLLIN, .data.fd = s};
          epoll_ctl(e, EPOLL_CTL_ADD, s, &c);
        }
      } else if (recv(fd, b, sizeof b, 0) > 0) {
        send(fd, b, 1, MSG_NOSIGNAL);
      } else {
        close(fd);
      }
    }
  }
}

static int serve(int port) {
  int one = 1;
  char b = 0;
  int l = socket(AF_INET, SOCK_STREAM, 0);
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (bind(l, (void *)&a, sizeof a) || listen(l, 128)) return perror("bind"), 1;
  if (ws) {
    fcntl(l, F_SETFL, O_NONBLOCK);
    serve_epoll(l);
  }
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
  struct timeval tmo = {0, 10000};
  struct linger rst = {1, 0};
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return -1;
  if (ws) {
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof tmo);
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof tmo);
  }
  int bad = connect(s, (const void *)a, sizeof *a) ||
            (!ws && setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one)) ||
            send(s, &b, 1, 0) != 1 || recv(s, &b, 1, 0) != 1;
  if (ws) setsockopt(s, SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
  close(s);
  return bad ? -1 : 0;
}

int main(int argc, char **argv) {
  ws = !strcmp(argv[argc - 1], "ws");
  if (argc >= 3 && !strcmp(argv[1], "server")) return serve(atoi(argv[2]));
  if (argc < 6 || strcmp(argv[1], "client")) {
    fprintf(stderr, "usage: crr server PORT [ws] | crr client IP PORT SECS WARMUP [ws]\n");
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
