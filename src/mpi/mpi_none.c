/* imgstat_mpi.h in a library built without MPI: every collective fails with
 * IMGSTAT_ERR_UNSUPPORTED (the shares and imgstat_mpi_blobs_free are in
 * common.c). */
#include "imgstat/mpi.h"

static imgstat_status unsupported(imgstat_error *err) {
  return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                           "imgstat was built without MPI (configure with "
                           "-DIMGSTAT_WITH_MPI=ON and libopenmpi-dev)");
}

int imgstat_mpi_built(void) { return 0; }

imgstat_status imgstat_mpi_init(int *argc, char ***argv, imgstat_mpi **out,
                                imgstat_error *err) {
  (void)argc;
  (void)argv;
  if (out)
    *out = NULL;
  return unsupported(err);
}

imgstat_status imgstat_mpi_finalize(imgstat_mpi *m, imgstat_error *err) {
  (void)m;
  (void)err;
  return IMGSTAT_OK;
}

imgstat_mpi_place imgstat_mpi_where(const imgstat_mpi *m) {
  (void)m;
  imgstat_mpi_place one = {0, 1, 0, 1};
  return one;
}

imgstat_status imgstat_mpi_reduce(imgstat_mpi *m,
                                  const imgstat_mpi_codec *codec, void *acc,
                                  imgstat_error *err) {
  (void)m;
  (void)codec;
  (void)acc;
  return unsupported(err);
}

imgstat_status imgstat_mpi_reduce_pool(imgstat_mpi *m, imgstat_pool *pool,
                                       imgstat_error *err) {
  (void)m;
  (void)pool;
  return unsupported(err);
}

imgstat_status imgstat_mpi_gather(imgstat_mpi *m, const void *data, size_t size,
                                  imgstat_mpi_blobs *out, imgstat_error *err) {
  (void)m;
  (void)data;
  (void)size;
  if (out) {
    out->data = NULL;
    out->offsets = NULL;
    out->count = 0;
  }
  return unsupported(err);
}

imgstat_status imgstat_mpi_allreduce_u64(imgstat_mpi *m, uint64_t *values,
                                         int n, imgstat_mpi_op op,
                                         imgstat_error *err) {
  (void)m;
  (void)values;
  (void)n;
  (void)op;
  return unsupported(err);
}

imgstat_status imgstat_mpi_bcast(imgstat_mpi *m, void **data, size_t *size,
                                 imgstat_error *err) {
  (void)m;
  (void)data;
  (void)size;
  return unsupported(err);
}

imgstat_status imgstat_mpi_deal_ask(imgstat_mpi *m, int quit, uint64_t *first,
                                    uint64_t *count, void **bytes, size_t *size,
                                    imgstat_error *err) {
  (void)m;
  (void)quit;
  if (bytes)
    *bytes = NULL;
  if (size)
    *size = 0;
  if (first)
    *first = 0;
  if (count)
    *count = 0;
  return unsupported(err);
}

imgstat_status imgstat_mpi_deal_serve(imgstat_mpi *m, int wait,
                                      imgstat_mpi_dealer next, void *ctx,
                                      int *open, imgstat_error *err) {
  (void)m;
  (void)wait;
  (void)next;
  (void)ctx;
  (void)open;
  return unsupported(err);
}

const char *imgstat_mpi_library_description(void) { return ""; }
