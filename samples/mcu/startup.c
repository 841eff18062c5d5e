/* startup.c: what runs before main on a Cortex-M4 (ARMv7E-M): the vector
 * table the core reads at reset (the initial stack pointer, then the
 * handlers), and the reset handler, which turns on the FPU, copies the
 * initialized data from flash to RAM, zeroes the bss, sets up picolibc's
 * thread-local block (errno), fills the stack below its own frame with a
 * pattern (stack_used tells how deep main went), and calls main, then
 * exits through semihosting with main's status. A fault prints its name
 * and exits 3.
 * The symbols come from the linker script (mps2-an386.ld).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern uint32_t __data_start[], __data_end[], __data_load[], __bss_start[], __bss_end[], __stack_bottom[],
    __stack_top[];
extern char __tls_base[];
void _set_tls(void *tls);
void _init_tls(void *tls);
int main(void);

void reset_handler(void);
size_t stack_used(void);
#define STACK_PATTERN 0x5AC3A55Cu

/* Bytes of the stack ever written since the reset (the deepest word that
 * no longer holds the pattern); all of it when it overflowed. */
size_t stack_used(void)
{
    const uint32_t *p = __stack_bottom;
    while (p < __stack_top && *p == STACK_PATTERN) p++;
    return (size_t)((const char *)__stack_top - (const char *)p);
}

static void fault(const char *what)
{
    printf("fault: %s\n", what);
    exit(3);
}
static void nmi_handler(void) { fault("NMI"); }
static void hard_fault_handler(void) { fault("hard fault"); }
static void mem_fault_handler(void) { fault("memory management fault"); }
static void bus_fault_handler(void) { fault("bus fault"); }
static void usage_fault_handler(void) { fault("usage fault"); }
static void other_handler(void) { fault("unexpected exception"); }

/* the ARMv7-M vector table: the stack's top, then exceptions 1 to 15 */
__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(uintptr_t)__stack_top,
    reset_handler,
    nmi_handler,
    hard_fault_handler,
    mem_fault_handler,
    bus_fault_handler,
    usage_fault_handler,
    other_handler, other_handler, other_handler, other_handler,   /* reserved */
    other_handler,                                                /* SVCall */
    other_handler, other_handler,                                 /* debug monitor, reserved */
    other_handler,                                                /* PendSV */
    other_handler,                                                /* SysTick */
};

void reset_handler(void)
{
    /* CP10 and CP11 (the FPU) full access, before any float instruction */
    volatile uint32_t *const cpacr = (volatile uint32_t *)0xE000ED88u;
    *cpacr |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
    memcpy(__data_start, __data_load, (size_t)((char *)__data_end - (char *)__data_start));
    memset(__bss_start, 0, (size_t)((char *)__bss_end - (char *)__bss_start));
    _init_tls(__tls_base);
    _set_tls(__tls_base);
    /* the pattern, up to 64 bytes below this frame */
    volatile uint32_t here = 0;
    for (uint32_t *p = __stack_bottom; p + 16 < (uint32_t *)(uintptr_t)&here; p++) *p = STACK_PATTERN;
    exit(main());
}
