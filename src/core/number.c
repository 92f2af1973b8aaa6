/*
 * The one grammar of numbers read as text (imgstat.h): the program's options
 * and --stats-from's JSON (src/cli/), FITS header values (src/io/fits.c).
 */
#include "imgstat.h"

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
