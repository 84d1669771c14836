/* Ceiling server 2: one thread, io_uring. Every receive and send of every connection is
 * queued in one ring and submitted with one io_uring_enter per loop turn (batching across
 * connections), with SINGLE_ISSUER|DEFER_TASKRUN when a second argument is given.
 * usage: ur PORT [defer] */
#include "common.h"
#include <liburing.h>
#define BUF 65536
#define QD 4096
typedef struct { int fd; size_t have; char in[BUF]; char out[BUF*2]; } conn;
enum { ACCEPT = 1, RECV = 2, SEND = 3 };
static struct io_uring ring;
static void *tag(void *p, int k) { return (void*)((unsigned long)p | k); }
static void add_recv(conn *c) { struct io_uring_sqe *s = io_uring_get_sqe(&ring); io_uring_prep_recv(s, c->fd, c->in + c->have, BUF - c->have, 0); io_uring_sqe_set_data(s, tag(c, RECV)); }
int main(int argc, char **argv) {
    int ls = listener(atoi(argv[1]));
    struct io_uring_params p = {0};
    if (argc > 2) p.flags |= IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    if (io_uring_queue_init_params(QD, &ring, &p)) { perror("uring"); return 1; }
    struct io_uring_sqe *s = io_uring_get_sqe(&ring); io_uring_prep_multishot_accept(s, ls, 0, 0, 0); io_uring_sqe_set_data(s, tag(0, ACCEPT));
    for (;;) {
        io_uring_submit_and_wait(&ring, 1);
        struct io_uring_cqe *cqe; unsigned head, cnt = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            cnt++;
            unsigned long d = (unsigned long)io_uring_cqe_get_data(cqe); int k = d & 7; conn *c = (conn*)(d & ~7UL);
            if (k == ACCEPT) { int fd = cqe->res; if (fd < 0) continue; int one = 1; setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                c = aligned_alloc(8, sizeof *c); c->fd = fd; c->have = 0; add_recv(c); continue; }
            if (k == RECV) {
                if (cqe->res <= 0) { close(c->fd); free(c); continue; }
                c->have += cqe->res; size_t ol; size_t used = handle(c->in, c->have, c->out, &ol);
                memmove(c->in, c->in + used, c->have - used); c->have -= used;
                if (ol) { struct io_uring_sqe *w = io_uring_get_sqe(&ring); io_uring_prep_send(w, c->fd, c->out, ol, 0); io_uring_sqe_set_data(w, tag(c, SEND)); w->flags |= IOSQE_IO_LINK; }
                add_recv(c);
            }
        }
        io_uring_cq_advance(&ring, cnt);
    }
}
