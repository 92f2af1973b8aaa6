/*
 * imgstat_mpi.h over MPI (Open MPI from Debian; any MPI-3 library).
 *
 * The reduction's element ("wire") is one block of `capacity` bytes, a
 * contiguous MPI_BYTE type: a 16-byte header (status, then the bytes used,
 * both uint64 in native order: the ranks of one run share one build) and
 * the payload, the accumulator's serialized form or, once a step failed, the
 * error's message. The capacity is the sum of the ranks' serialized sizes
 * (the largest for a fixed-size codec; never less than a message), which
 * the codec promises every merge fits in. The user operation (MPI_User_function
 * has no context argument) finds the codec of the reduction in progress in
 * `active`, set around the one MPI_Reduce call: collectives are called from one
 * thread, one at a time.
 */
#include "imgstat/mpi.h"
#include "dlib.h"

#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The MPI library, loaded by imgstat_mpi_init (dlib.h), so that a program
 * linking libimgstat maps it only when it runs ranks: the functions called
 * below and, with Open MPI, the objects its handles (MPI_COMM_WORLD, MPI_INT,
 * MPI_SUM...) are the addresses of. */
/* clang-format off */
#ifdef OPEN_MPI
#define MPI_OBJECTS(X) \
  X(ompi_mpi_byte) \
  X(ompi_mpi_comm_null) \
  X(ompi_mpi_comm_self) \
  X(ompi_mpi_comm_world) \
  X(ompi_mpi_datatype_null) \
  X(ompi_mpi_errors_return) \
  X(ompi_mpi_info_null) \
  X(ompi_mpi_int) \
  X(ompi_mpi_op_max) \
  X(ompi_mpi_op_min) \
  X(ompi_mpi_op_null) \
  X(ompi_mpi_op_sum) \
  X(ompi_mpi_uint64_t)
#else
#define MPI_OBJECTS(X)
#endif
#define MPI_SYMBOLS(X) \
  X(MPI_Allreduce) \
  X(MPI_Bcast) \
  X(MPI_Comm_dup) \
  X(MPI_Comm_free) \
  X(MPI_Comm_rank) \
  X(MPI_Comm_set_errhandler) \
  X(MPI_Comm_size) \
  X(MPI_Comm_split_type) \
  X(MPI_Error_class) \
  X(MPI_Error_string) \
  X(MPI_Finalize) \
  X(MPI_Finalized) \
  X(MPI_Gather) \
  X(MPI_Gatherv) \
  X(MPI_Init_thread) \
  X(MPI_Initialized) \
  X(MPI_Iprobe) \
  X(MPI_Irecv) \
  X(MPI_Op_create) \
  X(MPI_Op_free) \
  X(MPI_Recv) \
  X(MPI_Reduce) \
  X(MPI_Send) \
  X(MPI_Test) \
  X(MPI_Type_commit) \
  X(MPI_Type_contiguous) \
  X(MPI_Type_free) \
  MPI_OBJECTS(X)
/* clang-format on */
IST_DLIB_TABLE(mpi, MPI_SYMBOLS);
#define MPI_Allreduce IST_DLIB_FN(mpi, MPI_Allreduce)
#define MPI_Bcast IST_DLIB_FN(mpi, MPI_Bcast)
#define MPI_Comm_dup IST_DLIB_FN(mpi, MPI_Comm_dup)
#define MPI_Comm_free IST_DLIB_FN(mpi, MPI_Comm_free)
#define MPI_Comm_rank IST_DLIB_FN(mpi, MPI_Comm_rank)
#define MPI_Comm_set_errhandler IST_DLIB_FN(mpi, MPI_Comm_set_errhandler)
#define MPI_Comm_size IST_DLIB_FN(mpi, MPI_Comm_size)
#define MPI_Comm_split_type IST_DLIB_FN(mpi, MPI_Comm_split_type)
#define MPI_Error_class IST_DLIB_FN(mpi, MPI_Error_class)
#define MPI_Error_string IST_DLIB_FN(mpi, MPI_Error_string)
#define MPI_Finalize IST_DLIB_FN(mpi, MPI_Finalize)
#define MPI_Finalized IST_DLIB_FN(mpi, MPI_Finalized)
#define MPI_Gather IST_DLIB_FN(mpi, MPI_Gather)
#define MPI_Gatherv IST_DLIB_FN(mpi, MPI_Gatherv)
#define MPI_Init_thread IST_DLIB_FN(mpi, MPI_Init_thread)
#define MPI_Initialized IST_DLIB_FN(mpi, MPI_Initialized)
#define MPI_Iprobe IST_DLIB_FN(mpi, MPI_Iprobe)
#define MPI_Irecv IST_DLIB_FN(mpi, MPI_Irecv)
#define MPI_Op_create IST_DLIB_FN(mpi, MPI_Op_create)
#define MPI_Op_free IST_DLIB_FN(mpi, MPI_Op_free)
#define MPI_Recv IST_DLIB_FN(mpi, MPI_Recv)
#define MPI_Reduce IST_DLIB_FN(mpi, MPI_Reduce)
#define MPI_Send IST_DLIB_FN(mpi, MPI_Send)
#define MPI_Test IST_DLIB_FN(mpi, MPI_Test)
#define MPI_Type_commit IST_DLIB_FN(mpi, MPI_Type_commit)
#define MPI_Type_contiguous IST_DLIB_FN(mpi, MPI_Type_contiguous)
#define MPI_Type_free IST_DLIB_FN(mpi, MPI_Type_free)
#ifdef OPEN_MPI
#define ompi_mpi_byte (*IST_DLIB_FN(mpi, ompi_mpi_byte))
#define ompi_mpi_comm_null (*IST_DLIB_FN(mpi, ompi_mpi_comm_null))
#define ompi_mpi_comm_self (*IST_DLIB_FN(mpi, ompi_mpi_comm_self))
#define ompi_mpi_comm_world (*IST_DLIB_FN(mpi, ompi_mpi_comm_world))
#define ompi_mpi_datatype_null (*IST_DLIB_FN(mpi, ompi_mpi_datatype_null))
#define ompi_mpi_errors_return (*IST_DLIB_FN(mpi, ompi_mpi_errors_return))
#define ompi_mpi_info_null (*IST_DLIB_FN(mpi, ompi_mpi_info_null))
#define ompi_mpi_int (*IST_DLIB_FN(mpi, ompi_mpi_int))
#define ompi_mpi_op_max (*IST_DLIB_FN(mpi, ompi_mpi_op_max))
#define ompi_mpi_op_min (*IST_DLIB_FN(mpi, ompi_mpi_op_min))
#define ompi_mpi_op_null (*IST_DLIB_FN(mpi, ompi_mpi_op_null))
#define ompi_mpi_op_sum (*IST_DLIB_FN(mpi, ompi_mpi_op_sum))
#define ompi_mpi_uint64_t (*IST_DLIB_FN(mpi, ompi_mpi_uint64_t))
#endif
static const char *const mpi_files[] = {IMGSTAT_SONAME_MPI, IMGSTAT_PATH_MPI,
                                        NULL};
/* RTLD_GLOBAL: Open MPI's plugins, which it loads itself, resolve against
 * it */
static ist_dlib mpi_dlib = IST_DLIB_ROW(mpi, "MPI", "MPI", mpi_files, 1);

struct imgstat_mpi {
  MPI_Comm comm;
  imgstat_mpi_place place;
  int rank;     /* place.rank */
  int size;     /* place.size */
  int finalize; /* imgstat_mpi_init initialized MPI */
};

int imgstat_mpi_built(void) { return 1; }

/* Fills err from an MPI error code returned by `call`. */
static imgstat_status mpi_fail(imgstat_error *err, int code, const char *call) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0, cls = MPI_ERR_OTHER;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS || len <= 0)
    len = 0;
  text[len < MPI_MAX_ERROR_STRING ? len : MPI_MAX_ERROR_STRING - 1] = '\0';
  if (MPI_Error_class(code, &cls) != MPI_SUCCESS)
    cls = MPI_ERR_OTHER;
  return imgstat_error_set(
      err, cls == MPI_ERR_NO_MEM ? IMGSTAT_ERR_NOMEM : IMGSTAT_ERR_IO,
      "%s failed: %s (MPI error %d)", call, len ? text : "no text", code);
}

/* ---- set-up ---------------------------------------------------------------
 */

imgstat_status imgstat_mpi_init(int *argc, char ***argv, imgstat_mpi **out,
                                imgstat_error *err) {
  if (!out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "imgstat_mpi_init: no out");
  *out = NULL;
  imgstat_status loaded = ist_dlib_need(&mpi_dlib, err);
  if (loaded != IMGSTAT_OK)
    return loaded;
  int inited = 0, finalized = 0, rc;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (finalized)
    return imgstat_error_set(
        err, IMGSTAT_ERR_ARG,
        "MPI was finalized already: it cannot start again");
  int we_init = 0;
  if (!inited) {
    int provided = 0;
    rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS)
      return mpi_fail(err, rc, "MPI_Init_thread");
    we_init = 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  }
  imgstat_mpi *m = calloc(1, sizeof *m);
  if (!m) {
    if (we_init)
      MPI_Finalize();
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory for the MPI handle");
  }
  m->finalize = we_init;
  m->comm = MPI_COMM_NULL;
  MPI_Comm node = MPI_COMM_NULL;
  const char *call = "MPI_Comm_dup";
  rc = MPI_Comm_dup(MPI_COMM_WORLD, &m->comm);
  if (rc == MPI_SUCCESS) {
    call = "MPI_Comm_set_errhandler";
    rc = MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
  }
  if (rc == MPI_SUCCESS) {
    call = "MPI_Comm_rank";
    rc = MPI_Comm_rank(m->comm, &m->rank);
  }
  if (rc == MPI_SUCCESS)
    rc = MPI_Comm_size(m->comm, &m->size);
  if (rc == MPI_SUCCESS) {
    /* The ranks of this host, for one GPU per rank. */
    call = "MPI_Comm_split_type";
    rc = MPI_Comm_split_type(m->comm, MPI_COMM_TYPE_SHARED, m->rank,
                             MPI_INFO_NULL, &node);
  }
  if (rc == MPI_SUCCESS)
    rc = MPI_Comm_rank(node, &m->place.local_rank);
  if (rc == MPI_SUCCESS)
    rc = MPI_Comm_size(node, &m->place.local_size);
  if (node != MPI_COMM_NULL)
    MPI_Comm_free(&node);
  if (rc != MPI_SUCCESS) {
    imgstat_status st = mpi_fail(err, rc, call);
    if (m->comm != MPI_COMM_NULL)
      MPI_Comm_free(&m->comm);
    if (we_init)
      MPI_Finalize();
    free(m);
    return st;
  }
  m->place.rank = m->rank;
  m->place.size = m->size;
  *out = m;
  return IMGSTAT_OK;
}

imgstat_status imgstat_mpi_finalize(imgstat_mpi *m, imgstat_error *err) {
  if (!m)
    return IMGSTAT_OK;
  int rc = MPI_Comm_free(&m->comm);
  const char *call = "MPI_Comm_free";
  if (m->finalize) {
    int rc2 = MPI_Finalize();
    if (rc == MPI_SUCCESS) {
      rc = rc2;
      call = "MPI_Finalize";
    }
  }
  free(m);
  return rc == MPI_SUCCESS ? IMGSTAT_OK : mpi_fail(err, rc, call);
}

imgstat_mpi_place imgstat_mpi_where(const imgstat_mpi *m) {
  imgstat_mpi_place one = {0, 1, 0, 1};
  return m ? m->place : one;
}

/* Every rank gets rank 0's status and message. */
static imgstat_status share_status(imgstat_mpi *m, imgstat_status st,
                                   imgstat_error *err) {
  struct {
    uint32_t status;
    char message[IMGSTAT_ERROR_MAX];
  } msg;
  memset(&msg, 0, sizeof msg);
  msg.status = (uint32_t)st;
  if (st != IMGSTAT_OK && err)
    memcpy(msg.message, err->message, sizeof msg.message);
  int rc = MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, m->comm);
  if (rc != MPI_SUCCESS)
    return mpi_fail(err, rc, "MPI_Bcast");
  if (msg.status == IMGSTAT_OK)
    return IMGSTAT_OK;
  msg.message[IMGSTAT_ERROR_MAX - 1] = '\0';
  return imgstat_error_set(err, (imgstat_status)msg.status, "%s", msg.message);
}

/* Whether every rank has its memory (ok): IMGSTAT_ERR_NOMEM on every rank
 * when one has not ("a rank is out of memory for WHAT N bytes"). */
static imgstat_status every_rank(imgstat_mpi *m, int ok, const char *what,
                                 uint64_t bytes, imgstat_error *err) {
  int all_ok = 0;
  int rc = MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, m->comm);
  if (rc != MPI_SUCCESS)
    return mpi_fail(err, rc, "MPI_Allreduce");
  if (!all_ok)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "a rank is out of memory for %s %llu bytes", what,
                             (unsigned long long)bytes);
  return IMGSTAT_OK;
}

/* ---- the reduction --------------------------------------------------------
 */

#define WIRE_HEADER 16

static struct {
  const imgstat_mpi_codec *codec;
  size_t capacity;
} active;

static uint64_t wire_get(const unsigned char *w, int field) {
  uint64_t v;
  memcpy(&v, w + 8 * field, sizeof v);
  return v;
}

static void wire_set(unsigned char *w, uint64_t status, uint64_t used) {
  memcpy(w, &status, sizeof status);
  memcpy(w + 8, &used, sizeof used);
}

/* The element says: failed with e. */
static void wire_error(unsigned char *w, const imgstat_error *e) {
  size_t n = strnlen(e->message, IMGSTAT_ERROR_MAX - 1);
  memcpy(w + WIRE_HEADER, e->message, n);
  wire_set(w, (uint64_t)(e->status != IMGSTAT_OK ? e->status : IMGSTAT_ERR_ARG),
           n);
}

/* Serializes acc into the element w of the given capacity. */
static void wire_put(unsigned char *w, size_t capacity,
                     const imgstat_mpi_codec *c, const void *acc) {
  imgstat_error e = {0};
  size_t used = 0;
  if (c->serialize(c->ctx, acc, w + WIRE_HEADER, capacity - WIRE_HEADER, &used,
                   &e) != IMGSTAT_OK) {
    wire_error(w, &e);
    return;
  }
  wire_set(w, IMGSTAT_OK, used);
}

/* inout = in then inout: in holds the lower ranks. The first failure in rank
 * order is kept. */
static void combine(const unsigned char *in, unsigned char *inout) {
  const imgstat_mpi_codec *c = active.codec;
  if (wire_get(in, 0) != IMGSTAT_OK) {
    memcpy(inout, in, WIRE_HEADER + (size_t)wire_get(in, 1));
    return;
  }
  if (wire_get(inout, 0) != IMGSTAT_OK)
    return;
  imgstat_error e = {0};
  void *a = NULL, *b = NULL;
  imgstat_status st = c->create(c->ctx, &a, &e);
  if (st == IMGSTAT_OK)
    st = c->create(c->ctx, &b, &e);
  if (st == IMGSTAT_OK)
    st = c->deserialize(c->ctx, a, in + WIRE_HEADER, (size_t)wire_get(in, 1),
                        &e);
  if (st == IMGSTAT_OK)
    st = c->deserialize(c->ctx, b, inout + WIRE_HEADER,
                        (size_t)wire_get(inout, 1), &e);
  if (st == IMGSTAT_OK)
    st = c->merge(c->ctx, a, b, &e);
  if (st == IMGSTAT_OK &&
      c->serialized_size(c->ctx, a) > active.capacity - WIRE_HEADER)
    st = imgstat_error_set(&e, IMGSTAT_ERR_LIMIT,
                           "a merged accumulator is larger than its parts "
                           "together (%zu bytes): the codec breaks its promise",
                           c->serialized_size(c->ctx, a));
  if (st == IMGSTAT_OK)
    wire_put(inout, active.capacity, c, a);
  else
    wire_error(inout, &e);
  if (a)
    c->destroy(c->ctx, a);
  if (b)
    c->destroy(c->ctx, b);
}

static void reduce_fn(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  for (int i = 0; i < *len; i++)
    combine((const unsigned char *)in + (size_t)i * active.capacity,
            (unsigned char *)inout + (size_t)i * active.capacity);
}

/* The reduction on every rank; rank 0's result in `result` (capacity
 * bytes). Returns this rank's status (MPI failures, rank 0's result). */
static imgstat_status reduce_wire(imgstat_mpi *m, const imgstat_mpi_codec *c,
                                  const unsigned char *wire,
                                  unsigned char *result, size_t capacity,
                                  imgstat_error *err) {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  const char *call = "MPI_Type_contiguous";
  int rc = MPI_Type_contiguous((int)capacity, MPI_BYTE, &type);
  if (rc == MPI_SUCCESS) {
    call = "MPI_Type_commit";
    rc = MPI_Type_commit(&type);
  }
  if (rc == MPI_SUCCESS) {
    call = "MPI_Op_create";
    rc = MPI_Op_create(reduce_fn, 0 /* not commutative: rank order */, &op);
  }
  if (rc == MPI_SUCCESS) {
    call = "MPI_Reduce";
    active.codec = c;
    active.capacity = capacity;
    rc = MPI_Reduce(wire, result, 1, type, op, 0, m->comm);
    active.codec = NULL;
  }
  if (op != MPI_OP_NULL)
    MPI_Op_free(&op);
  if (type != MPI_DATATYPE_NULL)
    MPI_Type_free(&type);
  return rc == MPI_SUCCESS ? IMGSTAT_OK : mpi_fail(err, rc, call);
}

imgstat_status imgstat_mpi_reduce(imgstat_mpi *m, const imgstat_mpi_codec *c,
                                  void *acc, imgstat_error *err) {
  if (!m || !c || !acc || !c->create || !c->destroy || !c->serialized_size ||
      !c->serialize || !c->deserialize || !c->merge)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_mpi_reduce: no handle, codec, callback "
                             "or accumulator");
  /* The capacity: every rank's bytes together, or the largest rank's. */
  uint64_t mine = (uint64_t)c->serialized_size(c->ctx, acc), total = 0;
  int rc = MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T,
                         c->fixed_size ? MPI_MAX : MPI_SUM, m->comm);
  if (rc != MPI_SUCCESS)
    return mpi_fail(err, rc, "MPI_Allreduce");
  if (total < IMGSTAT_ERROR_MAX)
    total = IMGSTAT_ERROR_MAX;
  if (total > (uint64_t)INT_MAX - WIRE_HEADER)
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                             "the ranks' accumulators take %llu bytes, more "
                             "than one MPI message of %d",
                             (unsigned long long)total, INT_MAX);
  size_t capacity = (size_t)total + WIRE_HEADER;

  unsigned char *wire = malloc(capacity);
  unsigned char *result = m->rank == 0 ? malloc(capacity) : NULL;
  imgstat_status st = every_rank(m, wire && (m->rank != 0 || result),
                                 "the reduction's", (uint64_t)capacity, err);
  if (st == IMGSTAT_OK) {
    /* A failure to serialize travels in the element, like a merge's. */
    memset(wire, 0, capacity);
    wire_put(wire, capacity, c, acc);
    st = reduce_wire(m, c, wire, result, capacity, err);
    if (st == IMGSTAT_OK && m->rank == 0) {
      imgstat_error e = {0};
      if (wire_get(result, 0) != IMGSTAT_OK) {
        size_t n = (size_t)wire_get(result, 1);
        st = imgstat_error_set(err, (imgstat_status)wire_get(result, 0), "%.*s",
                               (int)n, (const char *)result + WIRE_HEADER);
      } else if (c->deserialize(c->ctx, acc, result + WIRE_HEADER,
                                (size_t)wire_get(result, 1),
                                &e) != IMGSTAT_OK) {
        st = imgstat_error_set(err, e.status, "%s", e.message);
      }
    }
    if (st == IMGSTAT_OK || m->rank == 0)
      st = share_status(m, st, err);
  }
  free(wire);
  free(result);
  return st;
}

/* ---- pools ----------------------------------------------------------------
 */

static imgstat_status pool_create(void *ctx, void **acc, imgstat_error *err) {
  (void)ctx;
  imgstat_pool *p = malloc(sizeof *p);
  if (!p)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory for a pool");
  imgstat_pool_init(p);
  *acc = p;
  return IMGSTAT_OK;
}

static void pool_destroy(void *ctx, void *acc) {
  (void)ctx;
  free(acc);
}

static size_t pool_size(void *ctx, const void *acc) {
  (void)ctx;
  return imgstat_pool_serialized_size(acc);
}

static imgstat_status pool_serialize(void *ctx, const void *acc, void *buf,
                                     size_t size, size_t *used,
                                     imgstat_error *err) {
  (void)ctx;
  return imgstat_pool_serialize(acc, buf, size, used, err);
}

static imgstat_status pool_deserialize(void *ctx, void *acc, const void *buf,
                                       size_t size, imgstat_error *err) {
  (void)ctx;
  return imgstat_pool_deserialize(acc, buf, size, err);
}

static imgstat_status pool_merge(void *ctx, void *a, const void *b,
                                 imgstat_error *err) {
  (void)ctx;
  return imgstat_pool_merge(a, b, err);
}

imgstat_status imgstat_mpi_reduce_pool(imgstat_mpi *m, imgstat_pool *pool,
                                       imgstat_error *err) {
  static const imgstat_mpi_codec codec = {
      NULL,           pool_create,      pool_destroy, pool_size,
      pool_serialize, pool_deserialize, pool_merge,   1};
  return imgstat_mpi_reduce(m, &codec, pool, err);
}

/* ---- agreement -------------------------------------------------------------
 */

imgstat_status imgstat_mpi_allreduce_u64(imgstat_mpi *m, uint64_t *values,
                                         int n, imgstat_mpi_op op,
                                         imgstat_error *err) {
  if (!m || n < 0 || (n && !values))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_mpi_allreduce_u64: no handle or values");
  uint64_t *out = malloc(n ? (size_t)n * sizeof *out : 1);
  if (!out)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  int rc = MPI_Allreduce(values, out, n, MPI_UINT64_T,
                         op == IMGSTAT_MPI_MAX ? MPI_MAX : MPI_SUM, m->comm);
  if (rc == MPI_SUCCESS && n)
    memcpy(values, out, (size_t)n * sizeof *out);
  free(out);
  return rc == MPI_SUCCESS ? IMGSTAT_OK : mpi_fail(err, rc, "MPI_Allreduce");
}

/* ---- rank 0's bytes to every rank ------------------------------------------
 */

imgstat_status imgstat_mpi_bcast(imgstat_mpi *m, void **data, size_t *size,
                                 imgstat_error *err) {
  if (!m || !data || !size || (m->rank == 0 && *size && !*data))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_mpi_bcast: no handle or data");
  uint64_t n = m->rank == 0 ? (uint64_t)*size : 0;
  int rc = MPI_Bcast(&n, 1, MPI_UINT64_T, 0, m->comm);
  if (rc != MPI_SUCCESS)
    return mpi_fail(err, rc, "MPI_Bcast");
  unsigned char *buf = m->rank == 0 ? *data : NULL;
  int ok = 1;
  if (m->rank != 0 && n > 0) {
    buf = n <= SIZE_MAX ? malloc((size_t)n) : NULL;
    ok = buf != NULL;
  }
  imgstat_status st = every_rank(m, ok, "rank 0's", n, err);
  for (uint64_t at = 0; st == IMGSTAT_OK && at < n;) {
    uint64_t piece = n - at < (uint64_t)1 << 30 ? n - at : (uint64_t)1 << 30;
    rc = MPI_Bcast(buf + at, (int)piece, MPI_BYTE, 0, m->comm);
    if (rc != MPI_SUCCESS)
      st = mpi_fail(err, rc, "MPI_Bcast");
    at += piece;
  }
  if (m->rank != 0) {
    if (st != IMGSTAT_OK) {
      free(buf);
      buf = NULL;
      n = 0;
    }
    *data = buf;
    *size = (size_t)n;
  }
  return st;
}

/* ---- the ordered gather ---------------------------------------------------
 */

imgstat_status imgstat_mpi_gather(imgstat_mpi *m, const void *data, size_t size,
                                  imgstat_mpi_blobs *out, imgstat_error *err) {
  if (!m || !out || (size && !data))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_mpi_gather: no handle, data or result");
  out->data = NULL;
  out->offsets = NULL;
  out->count = 0;
  uint64_t mine = (uint64_t)size, total = 0;
  int rc = MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, m->comm);
  if (rc != MPI_SUCCESS)
    return mpi_fail(err, rc, "MPI_Allreduce");
  if (total > (uint64_t)INT_MAX)
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                             "the ranks' bytes to gather, %llu, are more than "
                             "one MPI message of %d: gather them in rounds",
                             (unsigned long long)total, INT_MAX);
  int *counts = NULL, *displs = NULL, ok = 1;
  if (m->rank == 0) {
    counts = malloc((size_t)m->size * sizeof *counts);
    displs = malloc((size_t)m->size * sizeof *displs);
    out->offsets = malloc(((size_t)m->size + 1) * sizeof *out->offsets);
    out->data = malloc(total ? (size_t)total : 1);
    ok = counts && displs && out->offsets && out->data;
  }
  imgstat_status st = IMGSTAT_OK;
  rc = MPI_Bcast(&ok, 1, MPI_INT, 0, m->comm);
  const char *call = "MPI_Bcast";
  if (rc == MPI_SUCCESS && !ok)
    st = imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                           "rank 0 is out of memory for the gathered %llu "
                           "bytes",
                           (unsigned long long)total);
  int n = (int)size;
  if (rc == MPI_SUCCESS && st == IMGSTAT_OK) {
    call = "MPI_Gather";
    rc = MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, m->comm);
  }
  if (rc == MPI_SUCCESS && st == IMGSTAT_OK) {
    if (m->rank == 0) {
      size_t at = 0;
      for (int r = 0; r < m->size; r++) {
        displs[r] = (int)at;
        out->offsets[r] = at;
        at += (size_t)counts[r];
      }
      out->offsets[m->size] = at;
      out->count = m->size;
    }
    call = "MPI_Gatherv";
    rc = MPI_Gatherv(data, n, MPI_BYTE, out->data, counts, displs, MPI_BYTE, 0,
                     m->comm);
  }
  if (rc != MPI_SUCCESS)
    st = mpi_fail(err, rc, call);
  free(counts);
  free(displs);
  if (st != IMGSTAT_OK)
    imgstat_mpi_blobs_free(out);
  return st;
}

/* ---- the dynamic deal -----------------------------------------------------
 * A request is one uint64 (0: give me a chunk; 1: I take no more), a reply
 * three (first, count, the bytes that follow: the chunk's items, when rank
 * 0 deals them), then those bytes, on the handle's communicator under their own
 * tags (point-to-point messages never match a collective's). A rank waits for
 * its reply, and rank 0 for requests, by testing and sleeping (20 us,
 * doubling to 1 ms) rather than in a blocking call, which Open MPI spins
 * in: the waiting thread leaves its core to the workers. */

#define DEAL_ASK 0x1d5
#define DEAL_GIVE 0x1d6
#define DEAL_BYTES 0x1d7

static void deal_nap(long *ns) {
  struct timespec t = {0, *ns};
  nanosleep(&t, NULL);
  *ns = *ns < 1000000 ? 2 * *ns : 1000000;
}

imgstat_status imgstat_mpi_deal_ask(imgstat_mpi *m, int quit, uint64_t *first,
                                    uint64_t *count, void **bytes, size_t *size,
                                    imgstat_error *err) {
  if (!m || !first || !count || m->rank == 0)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_mpi_deal_ask: no handle, or rank 0");
  *first = *count = 0;
  if (bytes)
    *bytes = NULL;
  if (size)
    *size = 0;
  uint64_t ask = quit ? 1 : 0, reply[3] = {0, 0, 0};
  int rc = MPI_Send(&ask, 1, MPI_UINT64_T, 0, DEAL_ASK, m->comm);
  if (rc != MPI_SUCCESS)
    return mpi_fail(err, rc, "MPI_Send");
  if (quit)
    return IMGSTAT_OK;
  MPI_Request req;
  rc = MPI_Irecv(reply, 3, MPI_UINT64_T, 0, DEAL_GIVE, m->comm, &req);
  const char *call = "MPI_Irecv";
  long nap = 20000;
  for (int done = 0; rc == MPI_SUCCESS && !done;) {
    call = "MPI_Test";
    rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && !done)
      deal_nap(&nap);
  }
  if (rc != MPI_SUCCESS)
    return mpi_fail(err, rc, call);
  if (reply[2] > 0) { /* the chunk's bytes follow */
    void *buf = reply[2] <= (uint64_t)INT_MAX ? malloc((size_t)reply[2]) : NULL;
    if (!buf)
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                               "out of memory for a chunk of %llu bytes",
                               (unsigned long long)reply[2]);
    rc = MPI_Recv(buf, (int)reply[2], MPI_BYTE, 0, DEAL_BYTES, m->comm,
                  MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || !bytes || !size) {
      free(buf);
      if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, "MPI_Recv");
    } else {
      *bytes = buf;
      *size = (size_t)reply[2];
    }
  }
  *first = reply[0];
  *count = reply[1];
  return IMGSTAT_OK;
}

imgstat_status imgstat_mpi_deal_serve(imgstat_mpi *m, int wait,
                                      imgstat_mpi_dealer next, void *ctx,
                                      int *open, imgstat_error *err) {
  if (!m || !next || !open || m->rank != 0)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_mpi_deal_serve: no handle, dealer or "
                             "count, or not rank 0");
  long nap = 20000;
  while (*open > 0) {
    int flag = 0;
    MPI_Status status;
    int rc = MPI_Iprobe(MPI_ANY_SOURCE, DEAL_ASK, m->comm, &flag, &status);
    if (rc != MPI_SUCCESS)
      return mpi_fail(err, rc, "MPI_Iprobe");
    if (!flag) {
      if (!wait)
        break;
      deal_nap(&nap);
      continue;
    }
    nap = 20000;
    uint64_t ask = 0, reply[3] = {0, 0, 0};
    int from = status.MPI_SOURCE;
    rc = MPI_Recv(&ask, 1, MPI_UINT64_T, from, DEAL_ASK, m->comm,
                  MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
      return mpi_fail(err, rc, "MPI_Recv");
    if (ask == 1) { /* that rank takes no more */
      (*open)--;
      continue;
    }
    void *bytes = NULL;
    size_t size = 0;
    next(ctx, &reply[0], &reply[1], &bytes, &size);
    if (size > (size_t)INT_MAX) { /* not sent: the rank fails */
      free(bytes);
      bytes = NULL;
      size = 0;
      reply[1] = 0;
    }
    reply[2] = bytes ? (uint64_t)size : 0;
    if (reply[1] == 0) /* its last answer */
      (*open)--;
    rc = MPI_Send(reply, 3, MPI_UINT64_T, from, DEAL_GIVE, m->comm);
    if (rc == MPI_SUCCESS && reply[2] > 0)
      rc = MPI_Send(bytes, (int)size, MPI_BYTE, from, DEAL_BYTES, m->comm);
    free(bytes);
    if (rc != MPI_SUCCESS)
      return mpi_fail(err, rc, "MPI_Send");
  }
  return IMGSTAT_OK;
}

const char *imgstat_mpi_library_description(void) {
  static char text[IMGSTAT_ERROR_MAX + 64];
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&lock);
  size_t at = 0;
  if (!text[0])
    ist_dlib_describe(&mpi_dlib, text, sizeof text, &at);
  pthread_mutex_unlock(&lock);
  return text;
}
