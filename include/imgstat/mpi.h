/*
 * imgstat: many processes (MPI ranks) on one dataset.
 *
 * Each rank takes a contiguous share of one ordered input list
 * (imgstat_mpi_share), pools its images, and the ranks' accumulators are
 * merged on rank 0 in rank order (imgstat_mpi_reduce, a non-commutative MPI
 * operation), so that rank 0 holds exactly what one process would have
 * pooled over the whole list. imgstat_mpi_gather brings every rank's bytes
 * (e.g. its per-image records) to rank 0 in rank order, which is the input
 * order.
 *
 * The functions other than imgstat_mpi_share need a library built with MPI
 * (IMGSTAT_WITH_MPI, Open MPI from Debian); without it they fail with
 * IMGSTAT_ERR_UNSUPPORTED and imgstat_mpi_built() is 0. This header needs no
 * mpi.h: the handle is opaque.
 *
 * Errors are values: every collective returns an imgstat_status and fills
 * err. The handle's communicator (a duplicate of MPI_COMM_WORLD) returns MPI
 * errors (MPI_ERRORS_RETURN) instead of aborting; they come back as
 * IMGSTAT_ERR_IO (IMGSTAT_ERR_NOMEM for MPI_ERR_NO_MEM) with the MPI call
 * and MPI's own text. A collective that fails on one rank may fail
 * differently, or hang, on others, as MPI collectives do: the caller then
 * stops, it does not retry. Collectives are called from one thread (MPI is
 * initialized with MPI_THREAD_FUNNELED), one at a time, by every rank.
 */
#ifndef IMGSTAT_MPI_H
#define IMGSTAT_MPI_H

#include <stddef.h>
#include <stdint.h>

#include "imgstat/imgstat.h"
#include "imgstat/pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the library was built with MPI, else 0. */
int imgstat_mpi_built(void);

/* MPI's library, loaded by imgstat_mpi_init (not linked), loaded now to say
 * whether it can be: "libmpi.so.40 (MPI)", with ": NOT LOADABLE: <why>"
 * when it cannot; "" without MPI. Static storage. */
const char *imgstat_mpi_library_description(void);

/*
 * The share of rank `rank` of `size` in an ordered list of n items: items
 * [*first, *end) with *first = floor(rank * n / size) and
 * *end = floor((rank + 1) * n / size). The shares of ranks 0, 1, ...,
 * size - 1 are contiguous and, one after the other, the whole list in its
 * order; their sizes differ by at most one. No MPI needed. A rank outside
 * [0, size) or size < 1 gives the empty share [0, 0).
 */
void imgstat_mpi_share(uint64_t n, int rank, int size, uint64_t *first,
                       uint64_t *end);

/* One process's part in a run: the communicator and this rank. */
typedef struct imgstat_mpi imgstat_mpi;

/*
 * Initializes MPI (MPI_Init_thread with MPI_THREAD_FUNNELED, unless the
 * caller already did) and opens *out on a duplicate of MPI_COMM_WORLD with
 * MPI_ERRORS_RETURN. argc / argv may be NULL. When this call initialized MPI,
 * MPI_COMM_WORLD and MPI_COMM_SELF get MPI_ERRORS_RETURN too, and
 * imgstat_mpi_finalize finalizes MPI.
 */
imgstat_status imgstat_mpi_init(int *argc, char ***argv, imgstat_mpi **out,
                                imgstat_error *err);

/* Frees the handle (collective: every rank calls it) and finalizes MPI when
 * imgstat_mpi_init initialized it. NULL is a no-op. */
imgstat_status imgstat_mpi_finalize(imgstat_mpi *m, imgstat_error *err);

/* Where this process stands: its rank among size ranks, and its rank among
 * the local_size ranks of its host (for picking a GPU: local_rank % the
 * host's device count). */
typedef struct imgstat_mpi_place {
  int rank;
  int size;
  int local_rank;
  int local_size;
} imgstat_mpi_place;

/* m's place; {0, 1, 0, 1} (one process) for NULL. */
imgstat_mpi_place imgstat_mpi_where(const imgstat_mpi *m);

/*
 * How imgstat_mpi_reduce handles an accumulator it knows nothing of. ctx is
 * passed to every callback. The callbacks return a status and fill err;
 * they are called on any rank, inside the MPI reduction.
 *  - create: a new, empty accumulator in *acc; destroy frees one.
 *  - serialized_size: the bytes of acc's serialized form.
 *  - serialize: writes it to buf (size bytes, at least serialized_size);
 *    *used gets its size.
 *  - deserialize: reads acc (fresh from create) from exactly size bytes.
 *  - merge: a becomes "a then b", where b holds what comes after a in rank
 *    (input) order. Need not be commutative; must be associative.
 * The serialized size of a merge must not exceed the sum of the serialized
 * sizes of its two operands (true of lists and of fixed-size forms).
 *  - fixed_size: 1 when it never exceeds the larger operand's either (forms
 *    whose size depends only on a layout, such as pools): the reduction's
 *    element is then as large as the largest rank's form, not their sum.
 */
typedef struct imgstat_mpi_codec {
  void *ctx;
  imgstat_status (*create)(void *ctx, void **acc, imgstat_error *err);
  void (*destroy)(void *ctx, void *acc);
  size_t (*serialized_size)(void *ctx, const void *acc);
  imgstat_status (*serialize)(void *ctx, const void *acc, void *buf,
                              size_t size, size_t *used, imgstat_error *err);
  imgstat_status (*deserialize)(void *ctx, void *acc, const void *buf,
                                size_t size, imgstat_error *err);
  imgstat_status (*merge)(void *ctx, void *a, const void *b,
                          imgstat_error *err);
  int fixed_size;
} imgstat_mpi_codec;

/*
 * Merges every rank's accumulator on rank 0, in rank order: rank 0's acc
 * becomes acc(0) then acc(1) ... then acc(size - 1), through MPI_Reduce with
 * a non-commutative user operation (MPI_Op_create(fn, 0, ...)) on one
 * element of a contiguous MPI_BYTE type as large as the sum of the ranks'
 * serialized sizes, or the largest with fixed_size (MPI_Allreduce). Other
 * ranks' acc are left unchanged. Collective; every rank returns the same status
 * and message (rank 0's, broadcast), so that all stop together on a failure
 * (e.g. a merge of pools of different layouts, IMGSTAT_ERR_ARG). On failure
 * rank 0's acc is unchanged. All of it must fit in INT_MAX bytes
 * (IMGSTAT_ERR_LIMIT).
 */
imgstat_status imgstat_mpi_reduce(imgstat_mpi *m,
                                  const imgstat_mpi_codec *codec, void *acc,
                                  imgstat_error *err);

/* imgstat_mpi_reduce of pools (imgstat_pool_serialize, _deserialize,
 * _merge): rank 0's pool becomes the pool of every rank's images, the same
 * bits as one process's pool of them all. */
imgstat_status imgstat_mpi_reduce_pool(imgstat_mpi *m, imgstat_pool *pool,
                                       imgstat_error *err);

/* What imgstat_mpi_allreduce_u64 makes of the ranks' values. */
typedef enum imgstat_mpi_op {
  IMGSTAT_MPI_SUM = 0,
  IMGSTAT_MPI_MAX
} imgstat_mpi_op;

/*
 * values[0..n) becomes, on every rank, the element-wise sum (modulo 2^64)
 * or largest of the ranks' values (MPI_Allreduce of MPI_UINT64_T): what the
 * ranks must agree on, e.g. an exit status, whether any rank has more
 * bytes to gather, or counts. Collective; on failure values are unchanged.
 */
imgstat_status imgstat_mpi_allreduce_u64(imgstat_mpi *m, uint64_t *values,
                                         int n, imgstat_mpi_op op,
                                         imgstat_error *err);

/*
 * Rank 0's *size bytes at *data, on every rank: on the others *data becomes
 * a new buffer (malloc'ed; free it) of *size bytes (NULL when 0); rank 0's
 * is left as it is. E.g. the input list, which rank 0 alone builds (it reads
 * the lists and walks the folders once) so that every rank shares out the
 * same list. Any size (sent in pieces under INT_MAX bytes). Collective; a
 * rank out of memory fails every rank (IMGSTAT_ERR_NOMEM).
 */
imgstat_status imgstat_mpi_bcast(imgstat_mpi *m, void **data, size_t *size,
                                 imgstat_error *err);

/* Every rank's bytes, on rank 0, in rank order. */
typedef struct imgstat_mpi_blobs {
  unsigned char *data; /* all of them, one after the other (malloc'ed) */
  size_t *offsets;     /* count + 1: rank r's bytes are [offsets[r],
                          offsets[r + 1]) */
  int count;           /* the number of ranks */
} imgstat_mpi_blobs;

/*
 * Gathers size bytes of data from every rank to rank 0 (MPI_Gather of the
 * sizes, then MPI_Gatherv), in rank order. On rank 0 *out is filled (free it
 * with imgstat_mpi_blobs_free); on the others it is emptied. Collective.
 * The total must fit in INT_MAX bytes (IMGSTAT_ERR_LIMIT on every rank):
 * gather a long output in rounds.
 */
imgstat_status imgstat_mpi_gather(imgstat_mpi *m, const void *data, size_t size,
                                  imgstat_mpi_blobs *out, imgstat_error *err);

/*
 * The dynamic deal: rank 0 hands out chunks [first, first + count) of an
 * ordered list as the ranks ask for them, so that ranks whose items cost
 * more take fewer (docs/scaling.md). Point-to-point, not collective; every
 * call from the thread that initialized MPI.
 *
 * imgstat_mpi_deal_ask (ranks > 0): asks rank 0 for the next chunk and
 * waits for it; *count 0: none is left, and the rank asks no more. *bytes
 * (malloc'ed, free it; NULL when none) and *size: what rank 0 sent with the
 * chunk (e.g. its items' names, so that this rank needs no list of its
 * own); bytes and size may be NULL. quit 1 instead tells rank 0 that this
 * rank takes no more (a rank that stops before it was told "none left":
 * its run failed or was cancelled) and returns at once. A rank asks until
 * it gets a count of 0, or quits, once.
 *
 * imgstat_mpi_deal_serve (rank 0): answers the ranks' requests waiting now
 * (wait 0), or until no rank is left (wait 1), each with next's chunk
 * (next gives *count 0 once the list is dealt) and the bytes next may give
 * with it (*bytes malloc'ed, freed once sent; at most INT_MAX). *open
 * counts the ranks that may still ask (the caller starts it at size - 1);
 * it falls as they get their count of 0 or quit.
 */
typedef void (*imgstat_mpi_dealer)(void *ctx, uint64_t *first, uint64_t *count,
                                   void **bytes, size_t *size);
imgstat_status imgstat_mpi_deal_ask(imgstat_mpi *m, int quit, uint64_t *first,
                                    uint64_t *count, void **bytes, size_t *size,
                                    imgstat_error *err);
imgstat_status imgstat_mpi_deal_serve(imgstat_mpi *m, int wait,
                                      imgstat_mpi_dealer next, void *ctx,
                                      int *open, imgstat_error *err);

/* Frees a gather's result and empties it; NULL is a no-op. */
void imgstat_mpi_blobs_free(imgstat_mpi_blobs *blobs);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_MPI_H */
