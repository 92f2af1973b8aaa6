/*
 * The one grammar of numbers read as text (imgstat.h): the program's options
 * and --stats-from's JSON (programs/imgstat/), FITS header values
 * (src/io/fits.c), the PFM scale (src/io/pfm.c); and its twin, the numbers
 * imgstat prints. Both in the C locale, whatever locale the process has set: a
 * point before the fraction, never a comma.
 */
#include "imgstat/imgstat.h"

#include <locale.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t digits(const char *s) {
  size_t n = 0;
  while (s[n] >= '0' && s[n] <= '9')
    n++;
  return n;
}

size_t imgstat_number_length(const char *s) {
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

/* ---- the C locale, made the calling thread's for one call ----------------
 * A locale set with setlocale (Python's locale.setlocale, a program's
 * setlocale(LC_ALL, "")) is every thread's that has not chosen its own with
 * uselocale; strtod and printf read their decimal point from it. The C
 * locale object is made once, for every thread: newlocale of "C" for every
 * category is a static object on glibc and musl (it allocates nothing and
 * cannot fail); should it fail elsewhere, numbers are those of the thread's
 * locale, as before. */

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void c_locale_make(void) {
  c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

/* Makes the C locale the calling thread's; returns the locale to give back
 * to it (0: nothing to give back). */
static locale_t c_locale_enter(void) {
  pthread_once(&c_locale_once, c_locale_make);
  return c_locale ? uselocale(c_locale) : (locale_t)0;
}

static void c_locale_leave(locale_t before) {
  if (before)
    uselocale(before);
}

size_t imgstat_number_read(const char *s, double *out) {
  size_t len = imgstat_number_length(s);
  if (len == 0)
    return 0;
  locale_t before = c_locale_enter();
  char *end;
  double v = strtod(s, &end);
  if (end != s + len) {
    /* strtod reads past the grammar only where it takes hexadecimal
     * ("0x1p3" is "0" here): the grammar's characters on their own */
    char small[64];
    char *copy = len < sizeof small ? small : malloc(len + 1);
    if (copy) {
      memcpy(copy, s, len);
      copy[len] = '\0';
      v = strtod(copy, NULL);
      if (copy != small)
        free(copy);
    } else {
      len = 0; /* no memory: no number */
    }
  }
  c_locale_leave(before);
  *out = v;
  return len;
}

int imgstat_number_vsnprintf(char *buf, size_t size, const char *fmt,
                             va_list ap) {
  locale_t before = c_locale_enter();
  int n = vsnprintf(buf, size, fmt, ap);
  c_locale_leave(before);
  return n;
}

int imgstat_number_snprintf(char *buf, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = imgstat_number_vsnprintf(buf, size, fmt, ap);
  va_end(ap);
  return n;
}

int imgstat_number_vfprintf(FILE *out, const char *fmt, va_list ap) {
  locale_t before = c_locale_enter();
  int n = vfprintf(out, fmt, ap);
  c_locale_leave(before);
  return n;
}

int imgstat_number_fprintf(FILE *out, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = imgstat_number_vfprintf(out, fmt, ap);
  va_end(ap);
  return n;
}
