/* check.h: the minimal test harness every dcz test program uses.
 *
 * A test program defines test functions, runs them with RUN(fn) from main and
 * ends with `return check_summary();`, which prints the closing line
 * "N passed, N failed" that tests/run.sh adds up. A CHECK that fails prints
 * where and why and marks the running test failed; the test goes on so that
 * several mismatches show at once.
 */
#ifndef DCZ_TESTS_CHECK_H
#define DCZ_TESTS_CHECK_H

#include <stdio.h>

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

#define RUN(fn) do { \
    check_cur_name = #fn; check_cur_failed = 0; \
    fn(); \
    if (check_cur_failed) { check_failed++; printf("FAIL %s\n", #fn); } \
    else { check_passed++; printf("ok   %s\n", #fn); } \
    fflush(stdout); \
} while (0)

static inline int check_summary(void)
{
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
