/* The dataset's per-label pools (dataset_state.h): one accumulator per
 * label, with the dataset's options, fed each image's label figures at the
 * image's ordinal, so that every rule of the dataset's own pool (exact
 * integer sums and histograms, float sums in the canonical order of
 * ordinals, merging, the serialized form) is the labels' too. */
#include "dataset_state.h"

#include <stdlib.h>
#include <string.h>

/* The first place in d->labels whose label is not below label. */
static size_t label_at(const imgstat_dataset *d, uint32_t label) {
  size_t lo = 0, hi = d->nlabels;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (d->labels[mid].label < label)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

imgstat_status ist_dataset_label_pool(imgstat_dataset *d, uint32_t label,
                                      int create, imgstat_dataset **out,
                                      imgstat_error *err) {
  *out = NULL;
  size_t k = label_at(d, label);
  if (k < d->nlabels && d->labels[k].label == label) {
    *out = d->labels[k].d;
    return IMGSTAT_OK;
  }
  if (!create)
    return IMGSTAT_OK;
  if (d->nlabels == d->labels_cap) {
    size_t cap = d->labels_cap ? 2 * d->labels_cap : 16;
    label_pool *grown = realloc(d->labels, cap * sizeof *grown);
    if (!grown)
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    d->labels = grown;
    d->labels_cap = cap;
  }
  imgstat_dataset *l = NULL;
  imgstat_status st = imgstat_dataset_create(&d->o, &l, err);
  if (st != IMGSTAT_OK)
    return st;
  memmove(&d->labels[k + 1], &d->labels[k],
          (d->nlabels - k) * sizeof *d->labels);
  d->labels[k].label = label;
  d->labels[k].d = l;
  d->nlabels++;
  *out = l;
  return IMGSTAT_OK;
}

imgstat_status ist_dataset_labels_add(imgstat_dataset *d, uint64_t ordinal,
                                      const imgstat_dataset_image *im,
                                      imgstat_error *err) {
  for (uint32_t k = 0; k < im->nlabels; k++) {
    imgstat_dataset *l = NULL;
    imgstat_status st =
        ist_dataset_label_pool(d, im->labels[k].label, 1, &l, err);
    if (st != IMGSTAT_OK)
      return st;
    imgstat_dataset_image one = *im;
    one.partial = im->labels[k].partial;
    one.hist = im->labels[k].hist;
    one.nlabels = 0;
    one.labels = NULL;
    st = imgstat_dataset_add(l, ordinal, &one, err);
    if (st != IMGSTAT_OK)
      return st;
  }
  return IMGSTAT_OK;
}

imgstat_status ist_dataset_labels_merge(imgstat_dataset *a,
                                        const imgstat_dataset *b,
                                        imgstat_error *err) {
  for (size_t k = 0; k < b->nlabels; k++) {
    imgstat_dataset *l = NULL;
    imgstat_status st =
        ist_dataset_label_pool(a, b->labels[k].label, 1, &l, err);
    if (st == IMGSTAT_OK)
      st = imgstat_dataset_merge(l, b->labels[k].d, err);
    if (st != IMGSTAT_OK)
      return st;
  }
  return IMGSTAT_OK;
}

void ist_dataset_labels_free(imgstat_dataset *d) {
  for (size_t k = 0; k < d->nlabels; k++)
    imgstat_dataset_destroy(d->labels[k].d);
  free(d->labels);
  d->labels = NULL;
  d->nlabels = d->labels_cap = 0;
}

imgstat_status ist_dataset_labels_finish(const imgstat_dataset *d, int ddof,
                                         imgstat_dataset_result *res,
                                         imgstat_error *err) {
  if (d->nlabels == 0)
    return IMGSTAT_OK;
  res->labels = calloc(d->nlabels, sizeof *res->labels);
  if (!res->labels)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  for (size_t k = 0; k < d->nlabels; k++) {
    imgstat_dataset_label *l = &res->labels[k];
    l->label = d->labels[k].label;
    l->pool = calloc(1, sizeof *l->pool);
    if (!l->pool)
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    res->nlabels++;
    imgstat_status st =
        imgstat_dataset_finish(d->labels[k].d, ddof, l->pool, err);
    if (st != IMGSTAT_OK)
      return st;
  }
  return IMGSTAT_OK;
}

void ist_dataset_labels_result_free(imgstat_dataset_result *res) {
  for (size_t k = 0; k < res->nlabels; k++) {
    imgstat_dataset_result_free(res->labels[k].pool);
    free(res->labels[k].pool);
  }
  free(res->labels);
  res->labels = NULL;
  res->nlabels = 0;
}
