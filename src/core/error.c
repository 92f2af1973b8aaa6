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
  }
  return status;
}
