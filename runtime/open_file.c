/* open_file.c: dcz_open_file, the only part of libdcz that uses stdio, in a
 * file of its own so that a program loading from memory (dcz_open_static on
 * a board) links no stdio from libdcz.
 *
 * Checked by tests/unit/test_format.c (a missing file) and
 * tests/unit/test_static.c (a file runs as its bytes loaded from memory).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "dcz.h"

dcz_status dcz_open_file(const char *path, const dcz_options *opt, dcz_model **out)
{
    if (!out) return DCZ_ERR_ARG;
    *out = NULL;
    if (!path) return DCZ_ERR_ARG;
    FILE *f = fopen(path, "rb");
    if (!f) return DCZ_ERR_IO;
    dcz_status s = DCZ_ERR_IO;
    unsigned char *buf = NULL;
    long size;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) goto done;
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
        goto done;
    buf = malloc(size ? (size_t)size : 1);
    if (!buf) { s = DCZ_ERR_NOMEM; goto done; }
    if (fread(buf, 1, (size_t)size, f) != (size_t)size) goto done;
    s = dcz_open_memory(buf, (size_t)size, opt, out);
done:
    free(buf);
    fclose(f);
    return s;
}
