/* The command-line files' shared helpers (cli_util.h). */
#include "cli_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int imgstat_cli_usage_error(const char *prefix, const char *command,
                            const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "imgstat: %s", prefix);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry '%s --help' for more information.\n", command);
  return IMGSTAT_EXIT_USAGE;
}

int imgstat_cli_parse_uint(const char *s, uint64_t lo, uint64_t hi,
                           uint64_t *out) {
  if (!s || s[0] < '0' || s[0] > '9')
    return 0;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi)
    return 0;
  *out = (uint64_t)v;
  return 1;
}
