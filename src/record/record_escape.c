/* The records' strings and numbers: round-trip digits, the one escaping
 * of names and messages (JSON, terminal text, CSV fields, HTML text). */
#include "imgstat/record.h"
#include "record_parts.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- numbers ------------------------------------------------------------- */

size_t ist_record_format_uint(char *buf, uint64_t v) {
  char rev[20];
  size_t n = 0;
  do {
    rev[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  for (size_t i = 0; i < n; i++)
    buf[i] = rev[n - 1 - i];
  buf[n] = 0;
  return n;
}

void imgstat_record_format_double(char *buf, size_t size, double v) {
  /* A whole number under 10^15 in magnitude other than zero: its digits,
   * what %.15g writes (no exponent below 10^15; exact below 2^53), read
   * back exactly; without the formatting and reading of the loop below
   * (the extremes, medians and percentiles of every 8/16-bit record). */
  if (size >= 18 && v != 0 && fabs(v) < 1e15 && v == trunc(v)) {
    char *at = buf;
    if (v < 0)
      *at++ = '-';
    ist_record_format_uint(at, (uint64_t)fabs(v));
    return;
  }
  /* 17 significant digits always round-trip; fewer read better when they
   * suffice, so take the first precision that strtod gives back exactly. */
  for (int prec = 15; prec <= 17; prec++) {
    imgstat_number_snprintf(buf, size, "%.*g", prec, v);
    double back;
    if (imgstat_number_read(buf, &back) && back == v)
      return;
  }
}

/* ---- strings ------------------------------------------------------------- */

/* Length of the well-formed UTF-8 sequence at s (at most n bytes), or 0 when
 * it is not one: no overlong forms, no surrogates, nothing past U+10FFFF. */
static size_t utf8_sequence_length(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t len;
  uint32_t cp, lowest;
  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
    lowest = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
    cp = c & 0x0F;
    lowest = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
    lowest = 0x10000;
  } else {
    return 0;
  }
  if (n < len)
    return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if (cp < lowest || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

/* The one escaping of names and messages (output.h). */
void imgstat_record_escape(FILE *out, const char *s, imgstat_escape style) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s;
  size_t n = strlen(s);
  int json = style == IMGSTAT_ESCAPE_JSON;
  int html = style == IMGSTAT_ESCAPE_HTML;
  while (n > 0) {
    unsigned c = *p;
    size_t len = utf8_sequence_length(p, n);
    if (len == 0) {
      /* File names are bytes; JSON text is Unicode: what cannot be decoded
       * becomes U+FFFD there. Elsewhere the byte is shown as it is. */
      if (json) {
        fputs("\\ufffd", out);
      } else {
        fputs("\\x", out);
        putc(hex[c >> 4], out);
        putc(hex[c & 15], out);
      }
      len = 1;
    } else if (len == 2 && c == 0xC2 && p[1] < 0xA0) {
      /* U+0080..U+009F, the C1 controls (CSI among them) */
      if (json)
        fprintf(out, "\\u%04x", (unsigned)p[1]);
      else
        fprintf(out, "\\xc2\\x%02x", (unsigned)p[1]);
    } else if (len > 1) {
      fwrite(p, 1, len, out);
    } else if (html &&
               (c == '&' || c == '<' || c == '>' || c == '"' || c == '\'')) {
      fputs(c == '&'   ? "&amp;"
            : c == '<' ? "&lt;"
            : c == '>' ? "&gt;"
            : c == '"' ? "&quot;"
                       : "&#39;",
            out);
    } else if (c == '\\') {
      fputs("\\\\", out);
    } else if (c == '"' && style != IMGSTAT_ESCAPE_TEXT && !html) {
      fputs(json ? "\\\"" : "\"\"", out);
    } else if (c == '\n') {
      fputs("\\n", out);
    } else if (c == '\r') {
      fputs("\\r", out);
    } else if (c == '\t') {
      fputs("\\t", out);
    } else if (json && c == '\b') {
      fputs("\\b", out);
    } else if (json && c == '\f') {
      fputs("\\f", out);
    } else if (c < 0x20 || c == 0x7F) {
      if (json)
        fprintf(out, "\\u%04x", c);
      else
        fprintf(out, "\\x%02x", c);
    } else {
      putc((int)c, out);
    }
    p += len;
    n -= len;
  }
}

void imgstat_record_json_string(FILE *out, const char *s) {
  putc('"', out);
  imgstat_record_escape(out, s, IMGSTAT_ESCAPE_JSON);
  putc('"', out);
}

/* RFC 4180: a field holding a comma or a quote is quoted, with its quotes
 * doubled; control characters are escaped as in the text output, so no
 * line break is left to quote. */
void ist_record_csv_string(FILE *out, const char *s) {
  int quote = strpbrk(s, ",\"") != NULL;
  if (quote)
    putc('"', out);
  imgstat_record_escape(out, s, IMGSTAT_ESCAPE_CSV);
  if (quote)
    putc('"', out);
}
