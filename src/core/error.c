/* Errors as values: a status and a message in a caller-owned struct. */
#include "imgstat/imgstat.h"

#include <stdarg.h>
#include <stdio.h>

imgstat_status imgstat_error_set(imgstat_error *err, imgstat_status status,
                                 const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    imgstat_number_vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    err->status = status;
    err->cause = IMGSTAT_CAUSE_NONE;
    err->limit = err->value = 0;
    err->what = NULL;
  }
  return status;
}

imgstat_status imgstat_error_cause(imgstat_error *err, imgstat_cause cause,
                                   uint64_t limit, uint64_t value,
                                   const char *what) {
  if (!err)
    return IMGSTAT_OK;
  err->cause = cause;
  err->limit = limit;
  err->value = value;
  err->what = what;
  return err->status;
}

const char *imgstat_cause_name(imgstat_cause cause) {
  switch (cause) {
  case IMGSTAT_CAUSE_MAX_PIXELS:
    return "max_pixels";
  case IMGSTAT_CAUSE_MAX_MEMORY:
    return "max_memory";
  case IMGSTAT_CAUSE_GPU_UNUSABLE:
    return "gpu_unusable";
  case IMGSTAT_CAUSE_GPU_FAILED:
    return "gpu_failed";
  case IMGSTAT_CAUSE_CONFLICT:
    return "conflict";
  case IMGSTAT_CAUSE_RANGE:
    return "range";
  case IMGSTAT_CAUSE_MEAN_STD:
    return "mean_std";
  case IMGSTAT_CAUSE_DEPTH:
    return "depth";
  case IMGSTAT_CAUSE_ALPHA:
    return "alpha";
  case IMGSTAT_CAUSE_PAGE:
    return "page";
  case IMGSTAT_CAUSE_DATASET:
    return "dataset";
  case IMGSTAT_CAUSE_EMIT:
    return "emit";
  case IMGSTAT_CAUSE_SETTING:
    return "setting";
  case IMGSTAT_CAUSE_NONE:
    break;
  }
  return "";
}
