/* lib_alone.c: proves libdcz.a links with libc and libm alone (the Makefile
 * links this with nothing else) and that its API answers sensibly without a
 * model: a program that embeds dcz needs only dcz.h and libdcz.a. */
#include <stdio.h>
#include <string.h>

#include "dcz.h"

int main(void)
{
    dcz_model *m = NULL;
    static const unsigned char junk[64] = { 0x89, 'D', 'C', 'Z' };
    if (dcz_open_memory(junk, sizeof junk, NULL, &m) == DCZ_OK || m != NULL) {
        fprintf(stderr, "junk accepted\n");
        return 1;
    }
    if (strlen(dcz_status_str(DCZ_ERR_CRC)) == 0) return 1;
    dcz_close(NULL);
    return 0;
}
