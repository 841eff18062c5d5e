/* check.h: the minimal test harness every dcz test program uses.
 *
 * A test program defines test functions, runs them with RUN(fn) from main and
 * ends with `return check_summary();`, which prints the closing line
 * "N passed, N failed" that tests/run.sh adds up; each test's line gives its
 * time, so a slow one shows. A CHECK that fails prints
 * where and why and marks the running test failed; the test goes on so that
 * several mismatches show at once.
 */
#ifndef DCZ_TESTS_CHECK_H
#define DCZ_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int check_passed, check_failed, check_cur_failed;
static const char *check_cur_name;

static inline void check_fail_at(const char *file, int line, const char *cond)
{
    check_cur_failed = 1;
    fprintf(stderr, "  FAIL %s:%d (%s): %s: ", file, line,
            check_cur_name ? check_cur_name : "?", cond);
}

#define CHECK(cond, ...) do { \
    if (!(cond)) { \
        check_fail_at(__FILE__, __LINE__, #cond); \
        fprintf(stderr, __VA_ARGS__); \
        fputc('\n', stderr); \
    } \
} while (0)

/* Stops the current test when cond fails (for preconditions of later checks).
 * cond is evaluated once. */
#define REQUIRE(cond, ...) do { \
    if (!(cond)) { \
        check_fail_at(__FILE__, __LINE__, #cond); \
        fprintf(stderr, __VA_ARGS__); \
        fputc('\n', stderr); \
        return; \
    } \
} while (0)

/* Nonzero where the program runs under an emulator (tests/run_runtime.sh
 * sets DCZ_TEST_EMULATED beside its runner, qemu-user): the few grids whose
 * largest cases take minutes there leave those cases to native runs and
 * say so. */
static inline int check_emulated(void)
{
    static int emulated = -1;   /* read once: the grids ask at every case */
    if (emulated < 0) {
        const char *e = getenv("DCZ_TEST_EMULATED");
        emulated = e && *e && *e != '0';
    }
    return emulated;
}

/* seconds on the monotonic clock */
static inline double check_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define RUN(fn) do { \
    check_cur_name = #fn; check_cur_failed = 0; \
    const double check_t0 = check_now(); \
    fn(); \
    const double check_s = check_now() - check_t0; \
    if (check_cur_failed) { check_failed++; printf("FAIL %s (%.2f s)\n", #fn, check_s); } \
    else { check_passed++; printf("ok   %s (%.2f s)\n", #fn, check_s); } \
    fflush(stdout); \
} while (0)

static inline int check_summary(void)
{
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
