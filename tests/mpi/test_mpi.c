/*
 * imgstat_mpi.h under mpirun (ctest runs it with -np 1, 2 and 3; run by
 * hand: IMGSTAT_TEST_MPI=1 mpirun --oversubscribe -np 3 tests/test_mpi).
 *
 *  - the shares of an ordered list: contiguous, in order, covering it, sizes
 *    within one of each other, no overflow near 2^64 (against 128-bit
 *    arithmetic);
 *  - pools of synthetic per-image partials (u8; u16 with sums of squares
 *    past 2^64; f32 over many magnitudes, where any other grouping of Chan's
 *    merges would round differently) split over the ranks by their shares
 *    and reduced on rank 0: the serialized bytes equal those of one
 *    process's pool of all the images, added one by one in input order;
 *  - the generic reduction keeps rank order: an accumulator whose merge is
 *    concatenation (not commutative) must come out in input order;
 *  - a failing merge (pools of different layouts) fails on every rank with
 *    rank 0's message;
 *  - the ordered gather: rank r's bytes (of different lengths, none for
 *    rank 0) on rank 0, in rank order;
 *  - the agreement: sums and maxima of every rank's values on every rank;
 *  - the dynamic deal: rank 0 hands out chunks of 3 of 200 items (each
 *    with bytes that name its first) while it takes chunks itself, the last
 * rank quits after its first chunk: every item is taken by exactly one rank,
 * and rank 0's final serve ends.
 *
 * Without IMGSTAT_TEST_MPI in the environment (set by ctest) it skips (77),
 * so that tests/tools/valgrind.sh, which runs every tests/test_* directly, does
 * not start MPI under valgrind (Open MPI's own start-up is noise there).
 * Every rank runs every test; assertions never skip a collective.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgstat/imgstat.h"
#include "imgstat/mpi.h"
#include "imgstat/pool.h"
#include "test_util.h"

__extension__ typedef unsigned __int128 u128;

static imgstat_mpi *mpi;
static int rank, size;

/* ---- shares ---------------------------------------------------------------
 */

static void check_shares(uint64_t n, int ranks) {
  uint64_t prev_end = 0, smallest = UINT64_MAX, largest = 0;
  for (int r = 0; r < ranks; r++) {
    uint64_t first, end;
    imgstat_mpi_share(n, r, ranks, &first, &end);
    CU_ASSERT(first == prev_end);
    CU_ASSERT(first <= end);
    CU_ASSERT(first == (uint64_t)((u128)n * (u128)r / (u128)ranks));
    uint64_t k = end - first;
    smallest = k < smallest ? k : smallest;
    largest = k > largest ? k : largest;
    prev_end = end;
  }
  CU_ASSERT(prev_end == n);
  CU_ASSERT(largest - smallest <= 1);
}

static void test_shares(void) {
  for (uint64_t n = 0; n < 40; n++)
    for (int ranks = 1; ranks <= 9; ranks++)
      check_shares(n, ranks);
  check_shares(UINT64_MAX, 3);
  check_shares(UINT64_MAX - 1, 1000);
  check_shares(UINT64_C(1) << 63, 7);
  uint64_t first = 1, end = 1;
  imgstat_mpi_share(10, 3, 3, &first, &end); /* no such rank */
  CU_ASSERT(first == 0 && end == 0);
  imgstat_mpi_share(10, 0, 0, &first, &end);
  CU_ASSERT(first == 0 && end == 0);
}

/* One host: the local place is the global one. */
static void test_place(void) {
  imgstat_mpi_place at = imgstat_mpi_where(mpi);
  CU_ASSERT(at.size >= 1 && at.rank >= 0 && at.rank < at.size);
  CU_ASSERT(at.local_rank == at.rank && at.local_size == at.size);
  imgstat_mpi_place one = imgstat_mpi_where(NULL);
  CU_ASSERT(one.rank == 0 && one.size == 1 && one.local_size == 1);
}

/* ---- pools ----------------------------------------------------------------
 */

#define N_IMAGES 23

static uint64_t next(uint64_t *s) {
  *s = *s * 6364136223846793005u + 1442695040888963407u;
  return *s >> 33;
}

/* The partials of image k (3 channels) of the sample type, and its width:
 * always the same for the same k, on every rank. */
static uint32_t make_image(int k, imgstat_sample sample,
                           imgstat_partial parts[3]) {
  uint64_t s = 0x9e3779b97f4a7c15u ^ (uint64_t)k * 7919u ^ (uint64_t)sample;
  for (int i = 0; i < 4; i++)
    next(&s);
  uint32_t width = 64 + (uint32_t)(next(&s) % 4000);
  for (int c = 0; c < 3; c++) {
    imgstat_partial *p = &parts[c];
    imgstat_partial_init(p);
    if (sample == IMGSTAT_F32) {
      /* means over many magnitudes and both signs, m2 not integral */
      p->count = 1 + next(&s) % 100000;
      double scale = ldexp(1.0, (int)(next(&s) % 60) - 30);
      p->mean = scale * ((double)(next(&s) % 2000001) - 1e6) / 3.0;
      p->m2 =
          scale * scale * (double)p->count * (double)(next(&s) % 1000) / 7.0;
      p->min = p->mean - scale * 1e6;
      p->max = p->mean + scale * 1e6;
    } else {
      double top = sample == IMGSTAT_U8 ? 255.0 : 65535.0;
      /* u16: every image's sum of squares near 2^62, so that the pool's
       * passes 2^64 after a few images */
      p->count = sample == IMGSTAT_U8 ? 1 + next(&s) % 1000000
                                      : (UINT64_C(1) << 30) + next(&s) % 1000;
      uint64_t lo = next(&s) % 64, hi = (uint64_t)top - next(&s) % 64;
      /* sum and sumsq of count samples: one of lo, one of hi, the rest v */
      uint64_t v = lo + next(&s) % (hi - lo + 1);
      p->sum = lo + hi + (p->count - 2) * v;
      p->sumsq = lo * lo + hi * hi + (p->count - 2) * v * v;
      p->min = (double)lo;
      p->max = (double)hi;
    }
    p->min_index = next(&s) % p->count;
    p->max_index = next(&s) % p->count;
    if (c == 2) /* ties across images, decided by the ordinal */
      p->min_index = 0;
  }
  return width;
}

static void add_image(imgstat_pool *pool, int k, imgstat_sample sample) {
  imgstat_partial parts[3];
  uint32_t width = make_image(k, sample, parts);
  imgstat_error err;
  CU_ASSERT(imgstat_pool_add(pool, (uint64_t)k, parts, 3, sample, width,
                             &err) == IMGSTAT_OK);
}

static size_t bytes_of(const imgstat_pool *p, unsigned char *buf) {
  size_t used = 0;
  imgstat_error err;
  CU_ASSERT(imgstat_pool_serialize(p, buf, IMGSTAT_POOL_SERIALIZED_MAX, &used,
                                   &err) == IMGSTAT_OK);
  return used;
}

/* This rank pools its share of the images, the pools meet on rank 0, and
 * rank 0 compares with one process's pool of all of them. */
static void check_pool(imgstat_sample sample) {
  static imgstat_pool mine, all;
  uint64_t first, end;
  imgstat_mpi_share(N_IMAGES, rank, size, &first, &end);
  imgstat_pool_init(&mine);
  for (uint64_t k = first; k < end; k++)
    add_image(&mine, (int)k, sample);
  imgstat_error err;
  CU_ASSERT(imgstat_mpi_reduce_pool(mpi, &mine, &err) == IMGSTAT_OK);
  if (rank != 0)
    return;
  imgstat_pool_init(&all);
  for (int k = 0; k < N_IMAGES; k++)
    add_image(&all, k, sample);
  static unsigned char a[IMGSTAT_POOL_SERIALIZED_MAX],
      b[IMGSTAT_POOL_SERIALIZED_MAX];
  size_t na = bytes_of(&mine, a), nb = bytes_of(&all, b);
  CU_ASSERT(na == nb && memcmp(a, b, na) == 0);
  CU_ASSERT(mine.images == N_IMAGES);
  if (sample == IMGSTAT_U16) /* the sums of squares passed 64 bits */
    CU_ASSERT(all.ch[0].sumsq.hi > 0 &&
              mine.ch[0].sumsq.hi == all.ch[0].sumsq.hi);
}

static void test_pool_u8(void) { check_pool(IMGSTAT_U8); }
static void test_pool_u16(void) { check_pool(IMGSTAT_U16); }
static void test_pool_f32(void) { check_pool(IMGSTAT_F32); }

/* The f32 data really depends on the grouping when merged the usual way
 * (Chan's merge of the partials): otherwise the test above could not tell a
 * pool from a plain merge. Local, on every rank. */
static void test_f32_grouping_matters(void) {
  imgstat_partial fwd[3], rev[3], parts[3];
  for (int c = 0; c < 3; c++) {
    imgstat_partial_init(&fwd[c]);
    imgstat_partial_init(&rev[c]);
  }
  for (int k = 0; k < N_IMAGES; k++) {
    make_image(k, IMGSTAT_F32, parts);
    for (int c = 0; c < 3; c++)
      imgstat_partial_merge(&fwd[c], &parts[c], IMGSTAT_F32);
    make_image(N_IMAGES - 1 - k, IMGSTAT_F32, parts);
    for (int c = 0; c < 3; c++)
      imgstat_partial_merge(&rev[c], &parts[c], IMGSTAT_F32);
  }
  int differ = 0;
  for (int c = 0; c < 3; c++)
    differ |= fwd[c].mean != rev[c].mean || fwd[c].m2 != rev[c].m2;
  CU_ASSERT(differ);
}

/* Rank 1's pool is gray: the merge fails, on every rank, with one text. */
static void test_pool_layouts_differ(void) {
  static imgstat_pool p;
  imgstat_pool_init(&p);
  imgstat_partial parts[3];
  uint32_t width = make_image(rank, IMGSTAT_U8, parts);
  imgstat_error err = {0};
  CU_ASSERT(imgstat_pool_add(&p, (uint64_t)rank, parts, rank == 1 ? 1 : 3,
                             IMGSTAT_U8, width, &err) == IMGSTAT_OK);
  static unsigned char before[IMGSTAT_POOL_SERIALIZED_MAX],
      after[IMGSTAT_POOL_SERIALIZED_MAX];
  size_t nb = bytes_of(&p, before);
  imgstat_status st = imgstat_mpi_reduce_pool(mpi, &p, &err);
  if (size == 1) {
    CU_ASSERT(st == IMGSTAT_OK);
    return;
  }
  CU_ASSERT(st == IMGSTAT_ERR_ARG);
  CU_ASSERT(strstr(err.message, "the pool holds") != NULL);
  size_t na = bytes_of(&p, after); /* unchanged on failure */
  CU_ASSERT(na == nb && memcmp(before, after, na) == 0);
  /* The same text on every rank (gathered on rank 0). */
  imgstat_mpi_blobs blobs;
  imgstat_error gerr;
  CU_ASSERT_FATAL(imgstat_mpi_gather(mpi, err.message, sizeof err.message,
                                     &blobs, &gerr) == IMGSTAT_OK);
  for (int r = 1; rank == 0 && r < blobs.count; r++)
    CU_ASSERT(memcmp(blobs.data, blobs.data + blobs.offsets[r],
                     sizeof err.message) == 0);
  imgstat_mpi_blobs_free(&blobs);
}

/* ---- the generic reduction: order -----------------------------------------
 */

/* A list of uint32 items; merge appends b to a. */
typedef struct list {
  size_t n;
  uint32_t *items;
} list;

static imgstat_status list_create(void *ctx, void **acc, imgstat_error *err) {
  (void)ctx;
  list *l = calloc(1, sizeof *l);
  if (!l)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "no memory");
  *acc = l;
  return IMGSTAT_OK;
}

static void list_destroy(void *ctx, void *acc) {
  (void)ctx;
  list *l = acc;
  free(l->items);
  free(l);
}

static size_t list_size(void *ctx, const void *acc) {
  (void)ctx;
  return ((const list *)acc)->n * 4;
}

static imgstat_status list_serialize(void *ctx, const void *acc, void *buf,
                                     size_t size, size_t *used,
                                     imgstat_error *err) {
  (void)ctx;
  const list *l = acc;
  if (size < l->n * 4)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "buffer too small");
  if (l->n)
    memcpy(buf, l->items, l->n * 4);
  *used = l->n * 4;
  return IMGSTAT_OK;
}

static imgstat_status list_deserialize(void *ctx, void *acc, const void *buf,
                                       size_t size, imgstat_error *err) {
  (void)ctx;
  list *l = acc;
  if (size % 4)
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT, "not a list");
  uint32_t *items = malloc(size ? size : 1);
  if (!items)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "no memory");
  if (size)
    memcpy(items, buf, size);
  free(l->items);
  l->items = items;
  l->n = size / 4;
  return IMGSTAT_OK;
}

static imgstat_status list_merge(void *ctx, void *a, const void *b,
                                 imgstat_error *err) {
  (void)ctx;
  list *x = a;
  const list *y = b;
  uint32_t *items = realloc(x->items, (x->n + y->n) * 4 + 4);
  if (!items)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "no memory");
  if (y->n)
    memcpy(items + x->n, y->items, y->n * 4);
  x->items = items;
  x->n += y->n;
  return IMGSTAT_OK;
}

static const imgstat_mpi_codec list_codec = {
    NULL,           list_create,      list_destroy, list_size,
    list_serialize, list_deserialize, list_merge,   0};

/* Each rank holds its share of 0..n-1 (rank 0 none when n is small); rank 0
 * must end with all of them in order. */
static void check_order(uint64_t n) {
  list *l = NULL;
  imgstat_error err;
  CU_ASSERT_FATAL(list_create(NULL, (void **)&l, &err) == IMGSTAT_OK);
  uint64_t first, end;
  imgstat_mpi_share(n, rank, size, &first, &end);
  l->n = end - first;
  l->items = malloc(l->n * 4 + 4);
  CU_ASSERT_FATAL(l->items != NULL);
  for (uint64_t i = first; i < end; i++)
    l->items[i - first] = (uint32_t)i;
  CU_ASSERT(imgstat_mpi_reduce(mpi, &list_codec, l, &err) == IMGSTAT_OK);
  if (rank == 0) {
    CU_ASSERT(l->n == n);
    int in_order = l->n == n;
    for (size_t i = 0; in_order && i < l->n; i++)
      in_order = l->items[i] == (uint32_t)i;
    CU_ASSERT(in_order);
  } else {
    CU_ASSERT(l->n == end - first); /* unchanged */
  }
  list_destroy(NULL, l);
}

static void test_reduce_order(void) {
  check_order(1);
  check_order(5);
  check_order(1000);
}

/* A codec that breaks its promise (a list claiming a fixed size): the merge
 * that outgrows the element fails on every rank instead of overflowing. */
static void test_reduce_broken_promise(void) {
  imgstat_mpi_codec fixed = list_codec;
  fixed.fixed_size = 1;
  list *l = NULL;
  imgstat_error err = {0};
  CU_ASSERT_FATAL(list_create(NULL, (void **)&l, &err) == IMGSTAT_OK);
  l->n = 200; /* 800 bytes a rank: over the 512-byte floor when merged */
  l->items = calloc(l->n, 4);
  CU_ASSERT_FATAL(l->items != NULL);
  imgstat_status st = imgstat_mpi_reduce(mpi, &fixed, l, &err);
  if (size == 1) {
    CU_ASSERT(st == IMGSTAT_OK && l->n == 200);
  } else {
    CU_ASSERT(st == IMGSTAT_ERR_LIMIT);
    CU_ASSERT(strstr(err.message, "breaks its promise") != NULL);
    CU_ASSERT(l->n == 200); /* unchanged */
  }
  list_destroy(NULL, l);
}

/* ---- the ordered gather ---------------------------------------------------
 */

static void test_gather(void) {
  size_t n = (size_t)rank * 3;
  unsigned char mine[64];
  for (size_t i = 0; i < n; i++)
    mine[i] = (unsigned char)(rank * 16 + (int)i);
  imgstat_mpi_blobs blobs;
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_mpi_gather(mpi, n ? mine : NULL, n, &blobs, &err) ==
                  IMGSTAT_OK);
  if (rank == 0) {
    CU_ASSERT_FATAL(blobs.count == size);
    for (int r = 0; r < size; r++) {
      size_t at = blobs.offsets[r], len = blobs.offsets[r + 1] - at;
      CU_ASSERT(len == (size_t)r * 3);
      for (size_t i = 0; i < len; i++)
        CU_ASSERT(blobs.data[at + i] == (unsigned char)(r * 16 + (int)i));
    }
  } else {
    CU_ASSERT(blobs.count == 0 && blobs.data == NULL);
  }
  imgstat_mpi_blobs_free(&blobs);
}

/* Rank 0's bytes on every rank (a packed input list, as --mpi sends it):
 * a few bytes, none, and 5 MB; the other ranks' own values are ignored. */
static void test_bcast(void) {
  size_t sizes[3] = {37, 0, (size_t)5 << 20};
  for (int t = 0; t < 3; t++) {
    size_t n = rank == 0 ? sizes[t] : 12345;
    unsigned char *mine = rank == 0 ? malloc(n ? n : 1) : NULL;
    if (rank == 0) {
      CU_ASSERT_PTR_NOT_NULL_FATAL(mine);
      for (size_t i = 0; i < n; i++)
        mine[i] = (unsigned char)(i * 7 + (size_t)t);
    }
    void *data = mine;
    imgstat_error err;
    CU_ASSERT_FATAL(imgstat_mpi_bcast(mpi, &data, &n, &err) == IMGSTAT_OK);
    CU_ASSERT(n == sizes[t]);
    CU_ASSERT(rank != 0 || data == mine);
    const unsigned char *got = data;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
      bad += got[i] != (unsigned char)(i * 7 + (size_t)t);
    CU_ASSERT(bad == 0);
    if (rank != 0)
      free(data);
    free(mine);
  }
}

/* Sums and maxima on every rank, against the closed forms. */
/* ---- the dynamic deal ------------------------------------------------------
 */

typedef struct dealer {
  uint64_t next, n, chunk;
} dealer;

static void deal_chunk(void *ctx, uint64_t *first, uint64_t *count,
                       void **bytes, size_t *size) {
  dealer *d = ctx;
  uint64_t left = d->n - d->next;
  *first = d->next;
  *count = left < d->chunk ? left : d->chunk;
  d->next += *count;
  /* the chunk's first item's number sent along, as text */
  char *text = bytes ? malloc(24) : NULL;
  if (text) {
    snprintf(text, 24, "%llu", (unsigned long long)*first);
    *bytes = text;
    *size = strlen(text) + 1;
  }
}

static void test_deal(void) {
  enum { N = 200 };
  uint64_t seen[N];
  memset(seen, 0, sizeof seen);
  dealer d = {0, N, 3};
  imgstat_error err;
  uint64_t first, count;
  if (rank == 0) {
    int open = size - 1;
    for (;;) { /* its own chunks between the others' requests */
      CU_ASSERT(imgstat_mpi_deal_serve(mpi, 0, deal_chunk, &d, &open, &err) ==
                IMGSTAT_OK);
      deal_chunk(&d, &first, &count, NULL, NULL);
      if (!count)
        break;
      for (uint64_t k = 0; k < count; k++)
        seen[first + k]++;
    }
    CU_ASSERT(imgstat_mpi_deal_serve(mpi, 1, deal_chunk, &d, &open, &err) ==
              IMGSTAT_OK);
    CU_ASSERT(open == 0);
  } else {
    for (int took = 0;; took++) {
      if (rank == size - 1 && took == 1) { /* stops early */
        CU_ASSERT(imgstat_mpi_deal_ask(mpi, 1, &first, &count, NULL, NULL,
                                       &err) == IMGSTAT_OK);
        break;
      }
      void *bytes = NULL;
      size_t n = 0;
      CU_ASSERT_FATAL(imgstat_mpi_deal_ask(mpi, 0, &first, &count, &bytes, &n,
                                           &err) == IMGSTAT_OK);
      if (count) { /* the bytes rank 0 sent with the chunk */
        char want[24];
        snprintf(want, sizeof want, "%llu", (unsigned long long)first);
        CU_ASSERT(bytes && n == strlen(want) + 1 &&
                  memcmp(bytes, want, n) == 0);
      }
      free(bytes);
      if (!count)
        break;
      CU_ASSERT(first + count <= N);
      for (uint64_t k = 0; k < count && first + k < N; k++)
        seen[first + k]++;
    }
  }
  CU_ASSERT_FATAL(imgstat_mpi_allreduce_u64(mpi, seen, N, IMGSTAT_MPI_SUM,
                                            &err) == IMGSTAT_OK);
  for (int k = 0; k < N; k++)
    CU_ASSERT(seen[k] == 1);
}

static void test_allreduce(void) {
  uint64_t v[3] = {(uint64_t)rank + 1, UINT64_C(1) << 40, (uint64_t)rank * 7};
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_mpi_allreduce_u64(mpi, v, 3, IMGSTAT_MPI_SUM, &err) ==
                  IMGSTAT_OK);
  CU_ASSERT(v[0] == (uint64_t)size * (uint64_t)(size + 1) / 2);
  CU_ASSERT(v[1] == (uint64_t)size << 40);
  CU_ASSERT(v[2] == 7 * (uint64_t)size * (uint64_t)(size - 1) / 2);
  uint64_t w[2] = {(uint64_t)rank, (uint64_t)(size - rank)};
  CU_ASSERT_FATAL(imgstat_mpi_allreduce_u64(mpi, w, 2, IMGSTAT_MPI_MAX, &err) ==
                  IMGSTAT_OK);
  CU_ASSERT(w[0] == (uint64_t)size - 1 && w[1] == (uint64_t)size);
}

static const test_case tests[] = {
    {"mpi", NULL},
    {"shares of an ordered list", test_shares},
    {"rank and local rank on one host", test_place},
    {"u8 pools across ranks = one process", test_pool_u8},
    {"u16 pools past 2^64 across ranks = one process", test_pool_u16},
    {"f32 pools across ranks = one process", test_pool_f32},
    {"f32 data: Chan's merge depends on the order", test_f32_grouping_matters},
    {"pools of different layouts fail on every rank", test_pool_layouts_differ},
    {"the generic reduction keeps rank order", test_reduce_order},
    {"a codec that outgrows its element fails cleanly",
     test_reduce_broken_promise},
    {"ordered gather", test_gather},
    {"sums and maxima on every rank", test_allreduce},
    {"rank 0's bytes to every rank", test_bcast},
    {"the dynamic deal: every item to one rank", test_deal},
    {NULL, NULL}};

int main(int argc, char **argv) {
  if (!getenv("IMGSTAT_TEST_MPI"))
    return test_skip("set IMGSTAT_TEST_MPI=1 and run under mpirun (ctest "
                     "does)");
  imgstat_error err;
  if (imgstat_mpi_init(&argc, &argv, &mpi, &err) != IMGSTAT_OK) {
    fprintf(stderr, "imgstat_mpi_init: %s\n", err.message);
    return 1;
  }
  imgstat_mpi_place at = imgstat_mpi_where(mpi);
  rank = at.rank;
  size = at.size;
  int rc = test_main(tests);
  if (imgstat_mpi_finalize(mpi, &err) != IMGSTAT_OK) {
    fprintf(stderr, "imgstat_mpi_finalize: %s\n", err.message);
    rc = 1;
  }
  return rc;
}
