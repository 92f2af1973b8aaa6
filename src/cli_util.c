/* The command-line files' shared helpers (cli_util.h). */
#include "cli_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- sizes (--max-memory) ------------------------------------------------ */

int imgstat_cli_parse_size(const char *s, uint64_t lo, uint64_t hi,
                           uint64_t *out) {
  if (!s)
    return 0;
  /* The digits go through imgstat_cli_parse_uint; at most 20 make a
   * uint64_t. */
  char digits[24];
  size_t n = 0;
  while (s[n] >= '0' && s[n] <= '9')
    n++;
  if (n == 0 || n >= sizeof digits)
    return 0;
  memcpy(digits, s, n);
  digits[n] = '\0';
  uint64_t v;
  if (!imgstat_cli_parse_uint(digits, 0, UINT64_MAX, &v))
    return 0;
  const char *suffix = s + n;
  unsigned shift = 0;
  if (*suffix) {
    const char *units = "KMGT";
    char c = suffix[0];
    if (c >= 'a' && c <= 'z')
      c = (char)(c - 'a' + 'A'); /* either case */
    const char *u = c ? strchr(units, c) : NULL;
    if (!u)
      return 0;
    shift = 10u * (unsigned)(u - units + 1);
    suffix++;
    if (strcmp(suffix, "") != 0 && strcmp(suffix, "iB") != 0)
      return 0;
  }
  if (shift && v > (UINT64_MAX >> shift))
    return 0;
  v <<= shift;
  if (v < lo || v > hi)
    return 0;
  *out = v;
  return 1;
}
