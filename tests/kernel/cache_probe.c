/*
 * cache_probe.c - the kernel's cache detection and streaming-store rule as a shared library for
 * tests/kernel/test_cache_detection.py (loaded with ctypes; never shipped). Built by the test
 * with src/kernel/relu_tuning.c and -DRELU_API= so that these entry points are exported.
 */
#include <string.h>
#include <unistd.h>

#include "relu_tuning.h"

/* What sysconf says about the L2 and L3 here (0 where the C library has no such name). */
long
probe_sysconf_l2(void)
{
#ifdef _SC_LEVEL2_CACHE_SIZE
    return sysconf(_SC_LEVEL2_CACHE_SIZE);
#else
    return 0;
#endif
}

long
probe_sysconf_l3(void)
{
#ifdef _SC_LEVEL3_CACHE_SIZE
    return sysconf(_SC_LEVEL3_CACHE_SIZE);
#else
    return 0;
#endif
}

/* relu_read_caches, its result through pointers (no struct returns across ctypes). */
void
probe_read_caches(const char *sysfs_root, long sysconf_l2, long sysconf_l3, ptrdiff_t *l2_bytes,
                  ptrdiff_t *llc_bytes, int *llc_shared_cpus, const char **source)
{
    const relu_caches caches = relu_read_caches(sysfs_root, sysconf_l2, sysconf_l3);
    *l2_bytes = caches.l2_bytes;
    *llc_bytes = caches.llc_bytes;
    *llc_shared_cpus = caches.llc_shared_cpus;
    *source = caches.source;
}

const char *
probe_vendor_from_cpuid(const char *vendor_id)
{
    return relu_vendor_name(relu_vendor_from_cpuid(vendor_id));
}

/* The streams rule for a vendor named as relu_vendor_name names it; -1 for a name it does not
 * know. */
ptrdiff_t
probe_default_nt_streams(const char *vendor_name)
{
    for (int v = RELU_VENDOR_OTHER; v <= RELU_VENDOR_AMD; v++) {
        if (strcmp(vendor_name, relu_vendor_name((relu_vendor)v)) == 0) {
            return relu_default_nt_streams((relu_vendor)v);
        }
    }
    return -1;
}

/* The rule for a vendor named as relu_vendor_name names it; -1 for a name it does not know. */
ptrdiff_t
probe_default_nt_bytes(const char *vendor_name, ptrdiff_t l2_bytes, ptrdiff_t llc_bytes)
{
    for (int v = RELU_VENDOR_OTHER; v <= RELU_VENDOR_AMD; v++) {
        if (strcmp(vendor_name, relu_vendor_name((relu_vendor)v)) == 0) {
            const relu_caches caches = {l2_bytes, llc_bytes, 0, "given"};
            return relu_default_nt_bytes(&caches, (relu_vendor)v);
        }
    }
    return -1;
}
