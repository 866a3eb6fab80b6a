/*
 * A native WebSocket echo load generator for bench/http.ts:
 *
 *   ws-load <port> <path> <connections> <warmup s> <seconds>
 *
 * One thread and one epoll set drive every connection to 127.0.0.1:<port>.
 * Each connection plays ping-pong: it sends one masked 32-byte text frame,
 * waits for the echo, sends the next. The frame is built once (RFC 6455
 * §5.2, §5.3: a client masks every frame it sends); the HTTP upgrade
 * (RFC 6455 §4.1) is written here too, so the program needs only libc.
 *
 * Server frames are parsed as a byte stream, so a frame split across reads,
 * or several frames in one read, count the same: an echo is a data frame
 * with FIN set, whatever its size. A ping gets its pong, a close frame gets
 * a close frame back; a connection the server closes or resets during the
 * run is an error (exit 1, the reason on stderr), since the figure would
 * then count fewer connections than asked.
 *
 * After the warm-up it counts echoes for <seconds> and prints one JSON line,
 * `{ "messages": n, "seconds": s, "cpuMs": ms }`, with its own CPU time
 * (getrusage) over the counted window: the same line as the Node client
 * (bench/_http-ws-client.ts).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PAYLOAD 32
#define FRAME_BYTES (2 + 4 + PAYLOAD)
#define READ_BYTES 65536
/* Longest header a server frame can have: 2 bytes, then 8 of extended length (no mask). */
#define MAX_HEADER 10
/* Control frames carry at most 125 bytes (RFC 6455 §5.5). */
#define MAX_CONTROL 125
/*
 * A wait that finds fewer than `gather` ready connections is followed by a
 * nap of NAP_US, so that echoes gather: waking up costs a context switch,
 * which on a virtual machine costs about as much as handling a message, and
 * a client that wakes for every echo spends most of its core on that. The
 * server stays busy meanwhile: it answers a few messages in 100 µs, and
 * `gather` is a small share of the connections in flight.
 */
#define MAX_GATHER 8
#define NAP_US 100

struct conn {
  int fd;
  int index;
  /* Frame parser: the header bytes read so far, then the payload bytes still to come. */
  unsigned char header[MAX_HEADER];
  int header_have;
  int header_need;
  uint64_t payload_left;
  unsigned char control[MAX_CONTROL];
  int control_have;
  /* Bytes of `frame` still to write, when a write was partial. */
  int out_left;
  int closing; /* we sent a close frame */
  int closed;
};

static unsigned char frame[FRAME_BYTES];
static unsigned char mask_key[4];
static int counting;
static int stopping;
static long long messages;
static int open_conns;
static int epfd;
static int gather;

static void die(const char *what) {
  fprintf(stderr, "ws-load: %s: %s\n", what, strerror(errno));
  exit(1);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_ms(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static void random_bytes(void *buf, size_t len) {
  if (getrandom(buf, len, 0) != (ssize_t)len) die("getrandom");
}

static void base64(const unsigned char *in, int len, char *out) {
  static const char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  int o = 0;
  for (int i = 0; i < len; i += 3) {
    uint32_t v = in[i] << 16 | (i + 1 < len ? in[i + 1] << 8 : 0) | (i + 2 < len ? in[i + 2] : 0);
    out[o++] = table[v >> 18 & 63];
    out[o++] = table[v >> 12 & 63];
    out[o++] = i + 1 < len ? table[v >> 6 & 63] : '=';
    out[o++] = i + 2 < len ? table[v & 63] : '=';
  }
  out[o] = 0;
}

static void closed(struct conn *c, const char *why) {
  if (c->closed) return;
  c->closed = 1;
  epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  open_conns--;
  if (!stopping) {
    fprintf(stderr, "ws-load: connection %d: %s before the end of the run\n", c->index, why);
    exit(1);
  }
}

/*
 * Writes a control frame in one send: it is small and the socket's buffer
 * holds at most one echo frame, so it fits. Frames must not interleave, so
 * none is written while an echo frame is half sent (the socket is then full,
 * which ping-pong on loopback never makes happen).
 */
static void send_control(struct conn *c, int opcode, const unsigned char *payload, int len) {
  if (c->out_left > 0) return;
  unsigned char out[2 + 4 + MAX_CONTROL];
  out[0] = 0x80 | opcode;
  out[1] = 0x80 | len;
  memcpy(out + 2, mask_key, 4);
  for (int i = 0; i < len; i++) out[6 + i] = payload[i] ^ mask_key[i % 4];
  if (send(c->fd, out, 6 + len, MSG_NOSIGNAL) < 0 && errno != EAGAIN) closed(c, strerror(errno));
}

/* Sends the echo frame, or the rest of it after a partial write (then waits for EPOLLOUT). */
static void send_frame(struct conn *c) {
  if (c->out_left == 0) c->out_left = FRAME_BYTES;
  while (c->out_left > 0) {
    ssize_t n = send(c->fd, frame + FRAME_BYTES - c->out_left, c->out_left, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
        epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
        return;
      }
      closed(c, strerror(errno));
      return;
    }
    c->out_left -= n;
  }
}

static void start_close(struct conn *c) {
  if (c->closing || c->closed) return;
  c->closing = 1;
  unsigned char code[2] = {1000 >> 8, 1000 & 0xff};
  send_control(c, 8, code, 2);
}

/* A whole frame has arrived. */
static void on_frame(struct conn *c) {
  int fin = c->header[0] & 0x80;
  int opcode = c->header[0] & 0x0f;
  if (opcode == 8) {
    char why[64];
    int code = c->control_have >= 2 ? c->control[0] << 8 | c->control[1] : 1005;
    snprintf(why, sizeof why, "the server closed with %d", code);
    if (!c->closing) send_control(c, 8, c->control, c->control_have >= 2 ? 2 : 0);
    closed(c, why);
  } else if (opcode == 9) {
    send_control(c, 10, c->control, c->control_have);
  } else if (opcode <= 2 && fin) {
    if (counting) messages++;
    if (!stopping) send_frame(c);
  }
}

/* Feeds bytes read from the socket to the frame parser. */
static void on_bytes(struct conn *c, const unsigned char *p, size_t len) {
  while (len > 0 && !c->closed) {
    if (c->header_have < c->header_need) {
      c->header[c->header_have++] = *p++;
      len--;
      if (c->header_have == 2) {
        if (c->header[1] & 0x80) {
          closed(c, "the server sent a masked frame (RFC 6455 §5.1)");
          return;
        }
        int len7 = c->header[1] & 0x7f;
        c->header_need = len7 == 126 ? 4 : len7 == 127 ? 10 : 2;
      }
      if (c->header_have < c->header_need) continue;
      int len7 = c->header[1] & 0x7f;
      uint64_t n = len7;
      if (len7 == 126) n = (uint64_t)c->header[2] << 8 | c->header[3];
      if (len7 == 127) {
        n = 0;
        for (int i = 2; i < 10; i++) n = n << 8 | c->header[i];
      }
      c->payload_left = n;
      c->control_have = 0;
      if ((c->header[0] & 0x08) && n > MAX_CONTROL) {
        closed(c, "the server sent a control frame over 125 bytes");
        return;
      }
    } else {
      size_t take = len < c->payload_left ? len : (size_t)c->payload_left;
      if (c->header[0] & 0x08) memcpy(c->control + c->control_have, p, take), c->control_have += take;
      p += take;
      len -= take;
      c->payload_left -= take;
    }
    if (c->header_have == c->header_need && c->payload_left == 0) {
      on_frame(c);
      c->header_have = 0;
      c->header_need = 2;
    }
  }
}

static void on_event(struct conn *c, uint32_t events) {
  static unsigned char buf[READ_BYTES];
  if (events & EPOLLOUT) {
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
    send_frame(c);
    if (c->closed) return;
  }
  if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP))) return;
  for (;;) {
    ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n > 0) {
      on_bytes(c, buf, n);
      if (c->closed || (size_t)n < sizeof buf) return;
      continue;
    }
    if (n == 0) {
      closed(c, "the server ended the connection");
      return;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) closed(c, strerror(errno));
    return;
  }
}

/* Connects and completes the upgrade, blocking; bytes after the 101 head go to the parser. */
static void handshake(struct conn *c, int port, const char *path) {
  c->fd = socket(AF_INET, SOCK_STREAM, 0);
  if (c->fd < 0) die("socket");
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(c->fd, (struct sockaddr *)&addr, sizeof addr) < 0) die("connect");
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  unsigned char nonce[16];
  char key[25];
  random_bytes(nonce, sizeof nonce);
  base64(nonce, sizeof nonce, key);
  char request[1024];
  int len = snprintf(request, sizeof request,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
                     path, port, key);
  if (send(c->fd, request, len, MSG_NOSIGNAL) != len) die("send (handshake)");
  char head[4096];
  int have = 0;
  char *end = NULL;
  while (!end) {
    if (have == sizeof head - 1) {
      fprintf(stderr, "ws-load: handshake answer over %d bytes\n", (int)sizeof head);
      exit(1);
    }
    ssize_t n = recv(c->fd, head + have, sizeof head - 1 - have, 0);
    if (n <= 0) {
      if (n < 0) die("recv (handshake)");
      fprintf(stderr, "ws-load: the server closed the connection during the handshake\n");
      exit(1);
    }
    have += n;
    head[have] = 0;
    end = strstr(head, "\r\n\r\n");
  }
  if (strncmp(head, "HTTP/1.1 101", 12) != 0) {
    *strchr(head, '\r') = 0;
    fprintf(stderr, "ws-load: handshake refused: %s\n", head);
    exit(1);
  }
  c->header_need = 2;
  on_bytes(c, (unsigned char *)end + 4, have - (end + 4 - head));
}

/* Runs the event loop until `until` (monotonic seconds). */
static void loop_until(double until) {
  struct epoll_event events[256];
  for (double t = now(); t < until && open_conns > 0; t = now()) {
    int timeout = (int)((until - t) * 1000) + 1;
    int n = epoll_wait(epfd, events, 256, timeout > 100 ? 100 : timeout);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait");
    }
    for (int i = 0; i < n; i++) on_event(events[i].data.ptr, events[i].events);
    if (n < gather) {
      struct timespec nap = {0, NAP_US * 1000};
      nanosleep(&nap, NULL);
    }
  }
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: ws-load <port> <path> <connections> <warmup s> <seconds>\n");
    return 2;
  }
  int port = atoi(argv[1]);
  const char *path = argv[2];
  int connections = atoi(argv[3]);
  double warmup = atof(argv[4]);
  double seconds = atof(argv[5]);
  if (port <= 0 || port > 65535 || connections <= 0 || warmup < 0 || seconds <= 0) {
    fprintf(stderr, "ws-load: port must be 1-65535, connections and seconds positive, warmup at least 0\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  gather = connections / 6 < MAX_GATHER ? connections / 6 : MAX_GATHER;

  // FIN + text opcode, MASK bit + length, the key, the masked payload ('x' × 32).
  random_bytes(mask_key, 4);
  frame[0] = 0x81;
  frame[1] = 0x80 | PAYLOAD;
  memcpy(frame + 2, mask_key, 4);
  for (int i = 0; i < PAYLOAD; i++) frame[6 + i] = 'x' ^ mask_key[i % 4];

  epfd = epoll_create1(0);
  if (epfd < 0) die("epoll_create1");
  struct conn *conns = calloc(connections, sizeof *conns);
  if (!conns) die("calloc");
  for (int i = 0; i < connections; i++) {
    struct conn *c = &conns[i];
    c->index = i;
    handshake(c, port, path);
    if (fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK) < 0) die("fcntl");
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) die("epoll_ctl");
    open_conns++;
  }
  for (int i = 0; i < connections; i++) send_frame(&conns[i]);

  loop_until(now() + warmup);
  double cpu = cpu_ms();
  double start = now();
  counting = 1;
  loop_until(start + seconds);
  counting = 0;
  double used = cpu_ms() - cpu;
  double elapsed = now() - start;
  printf("{\"messages\":%lld,\"seconds\":%.6f,\"cpuMs\":%.3f}\n", messages, elapsed, used);
  fflush(stdout);

  // Leave cleanly: a close frame on every connection, then wait (at most 2 s) for the servers' close frames.
  stopping = 1;
  for (int i = 0; i < connections; i++) start_close(&conns[i]);
  loop_until(now() + 2);
  return 0;
}
