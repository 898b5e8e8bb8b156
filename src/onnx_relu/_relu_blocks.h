/*
 * _relu_blocks.h - a bounded cache of freed memory blocks for relu's large outputs (no Python).
 *
 * Why: an allocating call, y = relu(x), on a large array gets fresh pages from the operating
 * system every time (the allocator maps large blocks and unmaps them when freed), and the page
 * faults and the zeroing of those pages cost more than relu itself: 64 MiB outputs ran at
 * 0.28-0.62 of relu(x, out=y). Keeping freed blocks and handing them out again makes the
 * steady state as fast as out=.
 *
 * The NumPy module (_relu_memory.c) serves these functions to NumPy as a memory handler
 * (NEP 49), set only around the allocation of relu's output: every array remembers its handler
 * and is freed through it, so only those outputs come from and go back to the cache.
 *
 * Blocks: anonymous mappings whose data starts on a page boundary, from 2 MiB on a 2 MiB one and
 * advised for transparent huge pages (fewer faults and TLB misses); each block's header is the
 * page before its data (so the data is 64-byte aligned, and page aligned like a fresh mapping:
 * 64 bytes past a page boundary ran 1.4 x slower, see _relu_blocks.c). A freed block is kept if it fits the cap (max_bytes of idle blocks; the
 * oldest idle blocks are unmapped to make room), else unmapped at once. An allocation takes the
 * smallest idle block that fits and wastes at most half of the request, else maps a new one;
 * if that fails, the idle blocks are released and the mapping is tried once more before NULL
 * (NumPy then raises MemoryError).
 *
 * Thread-safe without the GIL (one mutex guards the idle list and the statistics; the cap and
 * the minimum are atomics, written under it and read without it by every allocating call;
 * unmapping happens outside it); fork-safe (pthread_atfork: the child
 * keeps the idle blocks, which are its own copy-on-write mappings, with a fresh mutex).
 */
#ifndef RELU_BLOCKS_H
#define RELU_BLOCKS_H

#include <stddef.h>

/* The default cap on idle blocks (ONNX_RELU_CACHE_BYTES overrides it): 1 GiB. */
#define RELU_BLOCKS_DEFAULT_MAX_BYTES ((size_t)1 << 30)
/* The default size from which relu's outputs come from the cache: 1 MiB. Below it the C
 * library's allocator reuses memory itself (glibc raises its mmap threshold up to 32 MiB after
 * a free), and the per-call cost of setting the handler would show on small arrays. */
#define RELU_BLOCKS_DEFAULT_MIN_BYTES ((size_t)1 << 20)

typedef struct {
    size_t max_bytes;      /* cap on the bytes of idle blocks; 0: the cache is off */
    size_t min_bytes;      /* outputs of at least this many bytes use the cache */
    size_t cached_bytes;   /* idle blocks kept, in mapped bytes */
    size_t cached_blocks;
    size_t live_blocks;    /* blocks handed out and not yet freed */
    size_t live_bytes;     /* their mapped bytes */
    size_t hits;           /* allocations served by an idle block */
    size_t misses;         /* allocations that mapped a new block */
    size_t failures;       /* allocations that returned NULL */
} relu_blocks_stats;

/* Installs the fork handlers; 0, or -1 if pthread_atfork failed. Call once. */
int relu_blocks_init(void);

/* A block of at least `size` bytes (zeroed if `zero`), 64-byte aligned; NULL if out of memory. */
void *relu_blocks_alloc(size_t size, int zero);
/* Resizes a block as realloc does (keeps the first min(old, new) bytes). */
void *relu_blocks_realloc(void *data, size_t size);
/* Gives a block back: kept while it fits the cap, else unmapped. NULL is ignored. */
void relu_blocks_free(void *data);

/* Unmaps every idle block; returns the bytes released. */
size_t relu_blocks_release(void);
/* Sets the cap and the minimum size (a negative value leaves one as it is); a lower cap unmaps
 * the oldest idle blocks at once. Returns the statistics from before. */
relu_blocks_stats relu_blocks_configure(ptrdiff_t max_bytes, ptrdiff_t min_bytes);
relu_blocks_stats relu_blocks_get_stats(void);
/* The minimum size alone, read without the lock (every allocating relu call reads it). */
size_t relu_blocks_min_bytes(void);
/* Whether the cache is on (cap > 0), read without the lock. */
int relu_blocks_enabled(void);

#endif /* RELU_BLOCKS_H */
