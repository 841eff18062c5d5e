/* replay.c: runs a libFuzzer target over files as an ordinary test.
 *
 * Linked with one fuzz_*.c (which defines LLVMFuzzerTestOneInput), it feeds
 * every file named on the command line, or every file of each directory named,
 * to the target. A crash or sanitizer report fails the run; reaching the end
 * prints "N passed, 0 failed" (N = inputs replayed). `make test` replays the
 * seed corpus of each target in tests/fuzz/corpus/<target>/ this way
 * (build/tests/replay_*, with the test build's flags: SANITIZE=... builds it
 * with -fno-sanitize-recover=all, so any report fails it); `make fuzz`
 * builds it with the fuzz targets' sanitizers as build/fuzz/replay_*, to
 * replay a finding (tests/fuzz/run.sh).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "replay: cannot open %s\n", path); return -1; }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) { fclose(f); return -1; }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        uint8_t *nb = realloc(buf, cap * 2);
        if (!nb) { free(buf); fclose(f); return -1; }
        buf = nb; cap *= 2;
    }
    fclose(f);
    /* an exact-size copy so that reads past the end trip the sanitizers */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) { free(buf); return -1; }
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

int main(int argc, char **argv)
{
    int count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) { fprintf(stderr, "replay: no %s\n", argv[i]); return 1; }
        if (!S_ISDIR(st.st_mode)) {
            if (replay_file(argv[i]) != 0) return 1;
            count++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) { fprintf(stderr, "replay: cannot list %s\n", argv[i]); return 1; }
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            if (replay_file(path) != 0) { closedir(d); return 1; }
            count++;
        }
        closedir(d);
    }
    if (count == 0) { fprintf(stderr, "replay: no input replayed\n"); return 1; }
    printf("%d passed, 0 failed\n", count);
    return 0;
}
