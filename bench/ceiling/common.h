/* The part both ceiling servers share: a RESP request counter and a listener.
 *
 * Owns: finding complete requests in a buffer and writing one fixed reply per request
 * ("+OK", or an empty array for CONFIG, which redis-benchmark asks at start). Never:
 * look at keys or values, or store anything: these servers measure what answering costs
 * when the work costs nothing (see run_ceiling.py). Not part of Hotset. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
/* Count complete RESP commands in buf[0..len); write replies into out; return bytes consumed. */
static size_t handle(const char *buf, size_t len, char *out, size_t *outlen) {
    size_t pos = 0; *outlen = 0;
    for (;;) {
        size_t p = pos;
        if (p >= len || buf[p] != '*') return pos;
        long n = 0; p++;
        while (p < len && buf[p] != '\r') n = n * 10 + (buf[p++] - '0');
        if (p + 1 >= len) return pos; p += 2;
        int cfg = 0;
        for (long i = 0; i < n; i++) {
            if (p >= len || buf[p] != '$') return pos;
            long l = 0; p++;
            while (p < len && buf[p] != '\r') l = l * 10 + (buf[p++] - '0');
            if (p + 1 >= len) return pos; p += 2;
            if (i == 0 && l == 6 && p < len && (buf[p] == 'C' || buf[p] == 'c')) cfg = 1;
            p += l + 2;
            if (p > len) return pos;
        }
        const char *r = cfg ? "*0\r\n" : "+OK\r\n";
        size_t rl = strlen(r);
        memcpy(out + *outlen, r, rl); *outlen += rl;
        pos = p;
    }
}
static int listener(int port) {
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {0}; a.sin_family = AF_INET; a.sin_port = htons(port); a.sin_addr.s_addr = htonl(0x7f000001);
    if (bind(s, (void*)&a, sizeof a) || listen(s, 1024)) { perror("bind"); exit(1); }
    return s;
}
