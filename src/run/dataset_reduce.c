/*
 * The MPI codec of the run (dataset_reduce.h): the dataset accumulator
 * serialized, sent and merged through imgstat_mpi_reduce (src/mpi/, the
 * transport), in rank order on rank 0.
 */
#include "dataset_reduce.h"

#include <stdlib.h>
#include <string.h>

/* The dataset accumulator as imgstat_mpi_reduce's codec (ctx: the
 * options). Its accumulator is a holder of an imgstat_dataset, so that
 * deserialize can replace what it holds. */
typedef struct ds_holder {
  imgstat_dataset *d;
} ds_holder;

static imgstat_status ds_create(void *ctx, void **acc, imgstat_error *err) {
  ds_holder *h = calloc(1, sizeof *h);
  *acc = h;
  if (!h)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  return imgstat_dataset_create(ctx, &h->d, err);
}

static void ds_destroy(void *ctx, void *acc) {
  (void)ctx;
  ds_holder *h = acc;
  if (h)
    imgstat_dataset_destroy(h->d);
  free(h);
}

static size_t ds_size(void *ctx, const void *acc) {
  (void)ctx;
  void *buf = NULL;
  size_t n = 0;
  imgstat_error err;
  if (imgstat_dataset_serialize(((const ds_holder *)acc)->d, &buf, &n, &err) !=
      IMGSTAT_OK)
    n = 0;
  free(buf);
  return n;
}

static imgstat_status ds_serialize(void *ctx, const void *acc, void *out,
                                   size_t size, size_t *used,
                                   imgstat_error *err) {
  (void)ctx;
  void *buf = NULL;
  size_t n = 0;
  imgstat_status s =
      imgstat_dataset_serialize(((const ds_holder *)acc)->d, &buf, &n, err);
  if (s == IMGSTAT_OK && n > size)
    s = imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                          "the dataset's serialized form grew");
  if (s == IMGSTAT_OK) {
    memcpy(out, buf, n);
    *used = n;
  }
  free(buf);
  return s;
}

static imgstat_status ds_deserialize(void *ctx, void *acc, const void *buf,
                                     size_t size, imgstat_error *err) {
  (void)ctx;
  ds_holder *h = acc;
  imgstat_dataset *d = NULL;
  imgstat_status s = imgstat_dataset_deserialize(buf, size, &d, err);
  if (s == IMGSTAT_OK) {
    imgstat_dataset_destroy(h->d);
    h->d = d;
  }
  return s;
}

static imgstat_status ds_merge(void *ctx, void *a, const void *b,
                               imgstat_error *err) {
  (void)ctx;
  return imgstat_dataset_merge(((ds_holder *)a)->d, ((const ds_holder *)b)->d,
                               err);
}

/* Every rank's accumulator merged on rank 0 in rank order; a rank whose
 * accumulator could not be made takes part with an empty one (else the
 * others would wait for it). Collective. */
imgstat_status ist_run_reduce_dataset(imgstat_mpi *mpi,
                                      const imgstat_dataset_options *opts,
                                      imgstat_dataset **ds,
                                      imgstat_error *err) {
  if (!*ds && imgstat_dataset_create(opts, ds, err) != IMGSTAT_OK)
    *ds = NULL;
  if (!*ds)
    return IMGSTAT_OK;
  imgstat_mpi_codec codec = {(void *)opts, ds_create,      ds_destroy, ds_size,
                             ds_serialize, ds_deserialize, ds_merge,   0};
  ds_holder h = {*ds};
  imgstat_status s = imgstat_mpi_reduce(mpi, &codec, &h, err);
  *ds = h.d; /* rank 0: the merged accumulator */
  return s;
}
