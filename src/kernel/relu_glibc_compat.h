/*
 * relu_glibc_compat.h - bind the kernel's and its programs' pthread symbols to their oldest glibc
 * versions (included after <pthread.h> by relu_pool.c and by every program built on the kernel
 * that calls pthread functions itself, such as src/ort/onnx_relu_ort.c).
 *
 * Why: glibc 2.34 moved libpthread into libc and gave pthread_create a new symbol version
 * (GLIBC_2.34, as did pthread_once; pthread_sigmask got GLIBC_2.32). A kernel linked against a new glibc then requires
 * it, so its wheel qualifies only for manylinux_2_34 and pip refuses it on RHEL 8, Ubuntu 20.04 or
 * Debian 11. The same functions exist under their original versions in every glibc since x86-64's
 * and aarch64's first (2.2.5 and 2.17), with the same behaviour for what the pool uses, and new
 * glibcs keep those versions for old binaries. `.symver` makes the linker reference them, so a
 * build on this machine runs on glibc 2.28 as one built there would, with the same compiler (gcc:
 * target_clones and __builtin_cpu_supports unchanged). `make wheel` checks the result with
 * `auditwheel show`; a new pthread function used here must be added below (its check fails
 * otherwise).
 *
 * On glibc < 2.34 the functions live in libpthread.so.0: meson.build links it explicitly, so the
 * version-bound references resolve there.
 */
#ifndef RELU_GLIBC_COMPAT_H
#define RELU_GLIBC_COMPAT_H

#if defined(__GLIBC__) && !defined(RELU_NO_GLIBC_COMPAT)
#if defined(__x86_64__)
#define RELU_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define RELU_GLIBC_BASE "GLIBC_2.17"
#endif

#ifdef RELU_GLIBC_BASE
__asm__(".symver pthread_create, pthread_create@" RELU_GLIBC_BASE);
__asm__(".symver pthread_sigmask, pthread_sigmask@" RELU_GLIBC_BASE);
__asm__(".symver pthread_once, pthread_once@" RELU_GLIBC_BASE);
#endif
#endif

#endif /* RELU_GLIBC_COMPAT_H */
