/*
 * _relu_blocks.c - the bounded cache of freed output blocks (see _relu_blocks.h).
 */
#define _GNU_SOURCE /* MAP_ANONYMOUS, MADV_HUGEPAGE */
#include "_relu_blocks.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#define RELU_BLOCKS_MMAP 1
#include <pthread.h>
#include <sys/mman.h>
#else
#define RELU_BLOCKS_MMAP 0
#endif

#if defined(__STDC_NO_ATOMICS__)
#define RELU_BLOCKS_LOAD(var) (var)
#define RELU_BLOCKS_STORE(var, value) ((var) = (value))
#define RELU_BLOCKS_ATOMIC(type) type
#else
#include <stdatomic.h>
#define RELU_BLOCKS_LOAD(var) atomic_load_explicit(&(var), memory_order_relaxed)
#define RELU_BLOCKS_STORE(var, value) atomic_store_explicit(&(var), (value), memory_order_relaxed)
#define RELU_BLOCKS_ATOMIC(type) _Atomic(type)
#endif

/*
 * Each block's header sits in the page before its data, so the data starts on a page (from
 * 2 MiB: a huge page) boundary, as the pages of a fresh mapping do. Measured (2026-12-01, AMD
 * Zen 3, 64 MiB float32 out of place, best of 40 interleaved): an output 64 bytes past a page
 * boundary ran 1.4-1.5 x slower than one on the boundary or at numpy's usual offset (16), as
 * the input sits 16 bytes past one: loads and stores then alias every 4 KiB.
 */
enum { RELU_BLOCK_HEADER = 4096 };
#define RELU_BLOCK_MAGIC UINT64_C(0x72656c75626c6b31) /* "relublk1" */
/* Blocks of at least this size have their data 2 MiB aligned and are advised for huge pages. */
#define RELU_HUGE_PAGE ((size_t)2 << 20)
#define RELU_SMALL_PAGE ((size_t)4096)

typedef struct relu_block {
    uint64_t magic;
    size_t mapped;            /* bytes of the mapping: the header's page and the data's */
    struct relu_block *newer; /* idle list links (most recently freed first) */
    struct relu_block *older;
    void *base;               /* what to unmap or free (the mapping, or malloc's block) */
} relu_block;
_Static_assert(sizeof(relu_block) <= RELU_BLOCK_HEADER, "the block header outgrew its page");

static struct {
    relu_block *newest, *oldest; /* the idle blocks */
    relu_blocks_stats stats;     /* max_bytes and min_bytes live in the atomics below */
} relu_cache;
static RELU_BLOCKS_ATOMIC(size_t) relu_cache_max_bytes = RELU_BLOCKS_DEFAULT_MAX_BYTES;
static RELU_BLOCKS_ATOMIC(size_t) relu_cache_min_bytes = RELU_BLOCKS_DEFAULT_MIN_BYTES;

#if RELU_BLOCKS_MMAP
static pthread_mutex_t relu_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static void relu_lock(void) { pthread_mutex_lock(&relu_cache_lock); }
static void relu_unlock(void) { pthread_mutex_unlock(&relu_cache_lock); }
/* fork: hold the lock across it, so the child never inherits it held by a thread it lacks. */
static void relu_child_after_fork(void)
{
    pthread_mutex_init(&relu_cache_lock, NULL);
}
#else
static void relu_lock(void) {}
static void relu_unlock(void) {}
#endif

int
relu_blocks_init(void)
{
#if RELU_BLOCKS_MMAP
    return pthread_atfork(relu_lock, relu_unlock, relu_child_after_fork) == 0 ? 0 : -1;
#else
    return 0;
#endif
}

static size_t
relu_round_up(size_t size, size_t unit)
{
    return (size + unit - 1) / unit * unit;
}

/* The mapped size of a block for `size` bytes of data (its header's page included); 0 if it
 * would overflow. */
static size_t
relu_mapped_size(size_t size)
{
    if (size > SIZE_MAX - RELU_BLOCK_HEADER - RELU_HUGE_PAGE) {
        return 0;
    }
    const size_t data = relu_round_up(size, size >= RELU_HUGE_PAGE ? RELU_HUGE_PAGE : RELU_SMALL_PAGE);
    return RELU_BLOCK_HEADER + (data > 0 ? data : RELU_SMALL_PAGE);
}

/* A new block of `mapped` bytes (zeroed by the OS), or NULL. */
static relu_block *
relu_map_block(size_t mapped)
{
#if RELU_BLOCKS_MMAP
    const size_t data_bytes = mapped - RELU_BLOCK_HEADER;
    const size_t align = data_bytes >= RELU_HUGE_PAGE ? RELU_HUGE_PAGE : RELU_SMALL_PAGE;
    const size_t extra = align - RELU_SMALL_PAGE; /* room to move the data to a 2 MiB boundary */
    char *raw = mmap(NULL, mapped + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (raw == MAP_FAILED) {
        return NULL;
    }
    char *data = (char *)relu_round_up((uintptr_t)raw + RELU_BLOCK_HEADER, align);
    char *start = data - RELU_BLOCK_HEADER;
    /* Unmap what the alignment left over on either side. */
    if (start > raw) {
        munmap(raw, (size_t)(start - raw));
    }
    if (raw + extra > start) {
        munmap(start + mapped, (size_t)(raw + extra - start));
    }
#ifdef MADV_HUGEPAGE
    if (align == RELU_HUGE_PAGE) {
        madvise(data, data_bytes, MADV_HUGEPAGE); /* advice only: failure changes nothing */
    }
#endif
    relu_block *block = (relu_block *)start;
    block->base = start;
#else
    char *raw = calloc(1, mapped + RELU_BLOCK_HEADER);
    if (raw == NULL) {
        return NULL;
    }
    relu_block *block = (relu_block *)relu_round_up((uintptr_t)raw, RELU_BLOCK_HEADER);
    block->base = raw;
#endif
    block->magic = RELU_BLOCK_MAGIC;
    block->mapped = mapped;
    block->newer = block->older = NULL;
    return block;
}

static void
relu_unmap_block(relu_block *block)
{
    block->magic = 0;
#if RELU_BLOCKS_MMAP
    munmap(block->base, block->mapped);
#else
    free(block->base);
#endif
}

static void *
relu_block_data(relu_block *block)
{
    return (char *)block + RELU_BLOCK_HEADER;
}

static relu_block *
relu_block_of(void *data)
{
    relu_block *block = (relu_block *)((char *)data - RELU_BLOCK_HEADER);
    if (block->magic != RELU_BLOCK_MAGIC) {
        /* Only blocks of this cache reach it (NumPy frees an array through the handler that
         * allocated it); anything else is memory corruption, which must not spread. */
        fprintf(stderr, "onnx_relu: freeing %p, which is not a relu output block\n", data);
        abort();
    }
    return block;
}

/* Unlinks an idle block (lock held). */
static void
relu_unlink(relu_block *block)
{
    if (block->newer) {
        block->newer->older = block->older;
    }
    else {
        relu_cache.newest = block->older;
    }
    if (block->older) {
        block->older->newer = block->newer;
    }
    else {
        relu_cache.oldest = block->newer;
    }
    block->newer = block->older = NULL;
    relu_cache.stats.cached_bytes -= block->mapped;
    relu_cache.stats.cached_blocks--;
}

/* Takes the oldest idle blocks off until at most `keep` bytes stay (lock held); returns them
 * chained through `older`, to be unmapped once the lock is released. */
static relu_block *
relu_evict_to(size_t keep)
{
    relu_block *evicted = NULL;
    while (relu_cache.stats.cached_bytes > keep && relu_cache.oldest != NULL) {
        relu_block *block = relu_cache.oldest;
        relu_unlink(block);
        block->older = evicted;
        evicted = block;
    }
    return evicted;
}

static size_t
relu_unmap_chain(relu_block *chain)
{
    size_t bytes = 0;
    while (chain != NULL) {
        relu_block *next = chain->older;
        bytes += chain->mapped;
        relu_unmap_block(chain);
        chain = next;
    }
    return bytes;
}

void *
relu_blocks_alloc(size_t size, int zero)
{
    const size_t mapped = relu_mapped_size(size);
    if (mapped == 0) {
        relu_lock();
        relu_cache.stats.failures++;
        relu_unlock();
        return NULL;
    }
    relu_lock();
    /* The smallest idle block that fits and wastes at most half of the request. */
    relu_block *best = NULL;
    for (relu_block *block = relu_cache.newest; block != NULL; block = block->older) {
        if (block->mapped >= mapped && block->mapped - mapped <= mapped / 2 &&
            (best == NULL || block->mapped < best->mapped)) {
            best = block;
        }
    }
    if (best != NULL) {
        relu_unlink(best);
        relu_cache.stats.hits++;
        relu_cache.stats.live_blocks++;
        relu_cache.stats.live_bytes += best->mapped;
        relu_unlock();
        void *data = relu_block_data(best);
        if (zero) {
            memset(data, 0, size);
        }
        return data;
    }
    relu_unlock();

    relu_block *block = relu_map_block(mapped);
    if (block == NULL) {
        /* Out of memory (or address space): give the idle blocks back and try once more. */
        relu_blocks_release();
        block = relu_map_block(mapped);
    }
    relu_lock();
    if (block == NULL) {
        relu_cache.stats.failures++;
    }
    else {
        relu_cache.stats.misses++;
        relu_cache.stats.live_blocks++;
        relu_cache.stats.live_bytes += block->mapped;
    }
    relu_unlock();
    return block == NULL ? NULL : relu_block_data(block);
}

void
relu_blocks_free(void *data)
{
    if (data == NULL) {
        return;
    }
    relu_block *block = relu_block_of(data);
    relu_lock();
    relu_cache.stats.live_blocks--;
    relu_cache.stats.live_bytes -= block->mapped;
    const size_t max_bytes = RELU_BLOCKS_LOAD(relu_cache_max_bytes);
    relu_block *evicted = NULL;
    if (block->mapped <= max_bytes) {
        evicted = relu_evict_to(max_bytes - block->mapped);
        block->newer = NULL;
        block->older = relu_cache.newest;
        if (relu_cache.newest) {
            relu_cache.newest->newer = block;
        }
        else {
            relu_cache.oldest = block;
        }
        relu_cache.newest = block;
        relu_cache.stats.cached_bytes += block->mapped;
        relu_cache.stats.cached_blocks++;
        block = NULL;
    }
    relu_unlock();
    relu_unmap_chain(evicted);
    if (block != NULL) {
        relu_unmap_block(block);
    }
}

void *
relu_blocks_realloc(void *data, size_t size)
{
    if (data == NULL) {
        return relu_blocks_alloc(size, 0);
    }
    relu_block *block = relu_block_of(data);
    const size_t capacity = block->mapped - RELU_BLOCK_HEADER;
    if (size <= capacity && relu_mapped_size(size) * 2 >= block->mapped) {
        return data; /* fits, and keeps at least half of the block in use */
    }
    void *moved = relu_blocks_alloc(size, 0);
    if (moved == NULL) {
        return NULL; /* the old block stays valid, as with realloc */
    }
    memcpy(moved, data, size < capacity ? size : capacity);
    relu_blocks_free(data);
    return moved;
}

size_t
relu_blocks_release(void)
{
    relu_lock();
    relu_block *evicted = relu_evict_to(0);
    relu_unlock();
    return relu_unmap_chain(evicted);
}

/* The statistics with the lock held. */
static relu_blocks_stats
relu_stats_locked(void)
{
    relu_blocks_stats stats = relu_cache.stats;
    stats.max_bytes = RELU_BLOCKS_LOAD(relu_cache_max_bytes);
    stats.min_bytes = RELU_BLOCKS_LOAD(relu_cache_min_bytes);
    return stats;
}

relu_blocks_stats
relu_blocks_get_stats(void)
{
    relu_lock();
    const relu_blocks_stats stats = relu_stats_locked();
    relu_unlock();
    return stats;
}

relu_blocks_stats
relu_blocks_configure(ptrdiff_t max_bytes, ptrdiff_t min_bytes)
{
    /* One step under the lock, so that concurrent callers each get back the limits they
     * replaced; the blocks a lower cap evicts are unmapped after it. */
    relu_block *evicted = NULL;
    relu_lock();
    const relu_blocks_stats before = relu_stats_locked();
    if (min_bytes >= 0) {
        RELU_BLOCKS_STORE(relu_cache_min_bytes, (size_t)min_bytes);
    }
    if (max_bytes >= 0) {
        RELU_BLOCKS_STORE(relu_cache_max_bytes, (size_t)max_bytes);
        evicted = relu_evict_to((size_t)max_bytes);
    }
    relu_unlock();
    relu_unmap_chain(evicted);
    return before;
}

size_t
relu_blocks_min_bytes(void)
{
    return RELU_BLOCKS_LOAD(relu_cache_min_bytes);
}

int
relu_blocks_enabled(void)
{
    return RELU_BLOCKS_LOAD(relu_cache_max_bytes) > 0;
}
