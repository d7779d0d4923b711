/* The system CPU that writing N MB into the page cache in 256 KiB blocks
 * costs: what a writer thread spooling raw records would pay per block
 * (benchmarks/ompt.md, "What that redesign would cost").
 *
 *   gcc -O2 -o /tmp/page_cache_write benchmarks/page_cache_write.c
 *   /tmp/page_cache_write 60 /tmp/page_cache_write.out
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static double ms(struct timeval a, struct timeval b) {
    return (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_usec - a.tv_usec) / 1e3;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MB FILE\n", argv[0]);
        return 2;
    }
    const size_t mb = strtoul(argv[1], NULL, 10);
    const size_t block = 256 * 1024;
    char *buf = malloc(block);
    memset(buf, 7, block);
    int fd = open(argv[2], O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0) {
        perror(argv[2]);
        return 1;
    }
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    for (size_t i = 0; i < mb * 4; i++) {
        buf[0] = (char)i;
        if (write(fd, buf, block) != (ssize_t)block) {
            perror("write");
            return 1;
        }
    }
    close(fd);
    getrusage(RUSAGE_SELF, &after);
    double user = ms(before.ru_utime, after.ru_utime);
    double sys = ms(before.ru_stime, after.ru_stime);
    printf("%zu MB: user %.1f ms, system %.1f ms (%.1f us per 256 KiB block)\n", mb, user,
           sys, (user + sys) * 1e3 / (double)(mb * 4));
    unlink(argv[2]);
    free(buf);
    return 0;
}
