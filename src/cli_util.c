/* The command-line files' shared helpers (cli_util.h). */
#include "cli_util.h"

#include "output.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Writes "imgstat: " + prefix + (path escaped + ": ", when path is not
 * NULL) + the message escaped + after, to stderr in one write. prefix and
 * after are the program's own text, written as they are. */
static void message(const char *prefix, const char *path, const char *after,
                    const char *fmt, va_list ap) {
  char small[512];
  char *text = small;
  va_list copy;
  va_copy(copy, ap);
  int n = vsnprintf(small, sizeof small, fmt, copy);
  va_end(copy);
  if (n < 0) {
    snprintf(small, sizeof small, "(unprintable message)");
  } else if ((size_t)n >= sizeof small) {
    char *big = malloc((size_t)n + 1);
    if (big) {
      vsnprintf(big, (size_t)n + 1, fmt, ap);
      text = big;
    } /* else the truncated text */
  }
  char *buf = NULL;
  size_t size = 0;
  FILE *mem = open_memstream(&buf, &size);
  FILE *out = mem ? mem : stderr; /* no memory: piece by piece */
  fputs("imgstat: ", out);
  fputs(prefix, out);
  if (path) {
    imgstat_output_escape(out, path, IMGSTAT_ESCAPE_TEXT);
    fputs(": ", out);
  }
  imgstat_output_escape(out, text, IMGSTAT_ESCAPE_TEXT);
  fputs(after, out);
  if (mem) {
    if (fclose(mem) == 0)
      fwrite(buf, 1, size, stderr);
    free(buf);
  }
  if (text != small)
    free(text);
}

void imgstat_cli_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  message("", NULL, "\n", fmt, ap);
  va_end(ap);
}

void imgstat_cli_path_verror(const char *path, const char *fmt, va_list ap) {
  message("", path, "\n", fmt, ap);
}

void imgstat_cli_path_error(const char *path, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  message("", path, "\n", fmt, ap);
  va_end(ap);
}

int imgstat_cli_usage_error(const char *prefix, const char *command,
                            const char *fmt, ...) {
  char after[160];
  snprintf(after, sizeof after, "\nTry '%s --help' for more information.\n",
           command);
  va_list ap;
  va_start(ap, fmt);
  message(prefix, NULL, after, fmt, ap);
  va_end(ap);
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

static size_t digits(const char *s) {
  size_t n = 0;
  while (s[n] >= '0' && s[n] <= '9')
    n++;
  return n;
}

size_t imgstat_cli_number_length(const char *s) {
  size_t i = 0;
  if (s[i] == '+' || s[i] == '-')
    i++;
  size_t whole = digits(s + i);
  i += whole;
  size_t frac = 0;
  if (s[i] == '.') {
    frac = digits(s + i + 1);
    if (whole == 0 && frac == 0)
      return 0;
    i += 1 + frac;
  }
  if (whole == 0 && frac == 0)
    return 0;
  if (s[i] == 'e' || s[i] == 'E') {
    size_t j = i + 1;
    if (s[j] == '+' || s[j] == '-')
      j++;
    size_t ex = digits(s + j);
    if (ex > 0)
      i = j + ex;
  }
  return i;
}

/* The number of len characters at s (imgstat_cli_number_length(s) == len,
 * and what follows cannot continue a number for strtod: a comma or the
 * end). */
static int parse_number(const char *s, size_t len, double lo, double hi,
                        double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  /* errno is ERANGE on underflow too (a subnormal, or 0): still a number,
   * judged by its value; on overflow the value is infinite */
  if (end != s + len)
    return IMGSTAT_CLI_NUM_SYNTAX;
  if (!isfinite(v) || v < lo || v > hi)
    return IMGSTAT_CLI_NUM_RANGE;
  *out = v;
  return IMGSTAT_CLI_NUM_OK;
}

int imgstat_cli_parse_double(const char *s, double lo, double hi, double *out) {
  size_t len = s ? imgstat_cli_number_length(s) : 0;
  if (len == 0 || s[len] != '\0')
    return IMGSTAT_CLI_NUM_SYNTAX;
  return parse_number(s, len, lo, hi, out);
}

int imgstat_cli_parse_double_list(const char *s, double lo, double hi,
                                  double *out, int max) {
  int n = 0;
  if (!s)
    return IMGSTAT_CLI_NUM_SYNTAX;
  for (;;) {
    size_t len = imgstat_cli_number_length(s);
    if (len == 0 || (s[len] != ',' && s[len] != '\0') || n == max)
      return IMGSTAT_CLI_NUM_SYNTAX;
    int r = parse_number(s, len, lo, hi, &out[n]);
    if (r != IMGSTAT_CLI_NUM_OK)
      return r;
    n++;
    if (s[len] == '\0')
      return n;
    s += len + 1;
  }
}
