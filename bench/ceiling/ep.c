/* Ceiling server 1: one thread, epoll, one read and one write per ready socket, the
 * way Redis' event loop does it, with no command work at all. usage: ep PORT */
#include "common.h"
#include <sys/epoll.h>
#define BUF 65536
typedef struct { int fd; size_t have; char in[BUF]; } conn;
int main(int argc, char **argv) {
    int ls = listener(atoi(argv[1])), ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    static char out[BUF * 2];
    struct epoll_event evs[256];
    for (;;) {
        int n = epoll_wait(ep, evs, 256, -1);
        for (int i = 0; i < n; i++) {
            conn *c = evs[i].data.ptr;
            if (!c) { int fd = accept(ls, 0, 0); int one = 1; setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                c = calloc(1, sizeof *c); c->fd = fd; struct epoll_event e = {.events = EPOLLIN, .data.ptr = c}; epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e); continue; }
            ssize_t r = read(c->fd, c->in + c->have, BUF - c->have);
            if (r <= 0) { epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, 0); close(c->fd); free(c); continue; }
            c->have += r; size_t ol; size_t used = handle(c->in, c->have, out, &ol);
            memmove(c->in, c->in + used, c->have - used); c->have -= used;
            if (ol) write(c->fd, out, ol);
        }
    }
}
