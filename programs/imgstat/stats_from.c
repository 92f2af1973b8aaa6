/* --stats-from (stats_from.h). */
#include "stats_from.h"

#include "cli_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a tiny JSON reader for one `imgstat --json` record --------------------
 * Enough JSON to walk that shape: objects, arrays, strings (escapes skipped,
 * not decoded), numbers, true/false/null. Reads "stats": [{"mean": M, "std":
 * S}, ...] in order. */

typedef struct json_in {
  const char *p;
  int depth;
} json_in;

static void json_ws(json_in *j) {
  while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
    j->p++;
}

/* Copies a string's raw contents (up to size-1 bytes) into buf. */
static int json_string(json_in *j, char *buf, size_t size) {
  if (*j->p != '"')
    return 0;
  j->p++;
  size_t n = 0;
  while (*j->p && *j->p != '"') {
    if (*j->p == '\\' && j->p[1])
      j->p++;
    if (buf && n + 1 < size)
      buf[n++] = *j->p;
    j->p++;
  }
  if (*j->p != '"')
    return 0;
  j->p++;
  if (buf)
    buf[n] = '\0';
  return 1;
}

static int json_skip(json_in *j);

static int json_number(json_in *j, double *v, int *is_null) {
  json_ws(j);
  *is_null = 0;
  if (strncmp(j->p, "null", 4) == 0) {
    j->p += 4;
    *is_null = 1;
    return 1;
  }
  /* the program's one number grammar (JSON's, but for a leading '+' or
   * zero, or a bare point, which are accepted) */
  size_t len = imgstat_number_read(j->p, v);
  if (len == 0 || !isfinite(*v))
    return 0;
  j->p += len;
  return 1;
}

static int json_skip(json_in *j) {
  json_ws(j);
  if (++j->depth > 64)
    return 0;
  int ok = 1;
  if (*j->p == '"') {
    ok = json_string(j, NULL, 0);
  } else if (*j->p == '{' || *j->p == '[') {
    char close = *j->p == '{' ? '}' : ']';
    int object = *j->p == '{';
    j->p++;
    json_ws(j);
    if (*j->p == close) {
      j->p++;
    } else {
      for (;;) {
        if (object) {
          json_ws(j);
          if (!json_string(j, NULL, 0))
            return 0;
          json_ws(j);
          if (*j->p++ != ':')
            return 0;
        }
        if (!json_skip(j))
          return 0;
        json_ws(j);
        if (*j->p == ',') {
          j->p++;
          continue;
        }
        if (*j->p++ != close)
          return 0;
        break;
      }
    }
  } else if (strncmp(j->p, "true", 4) == 0 || strncmp(j->p, "null", 4) == 0) {
    j->p += 4;
  } else if (strncmp(j->p, "false", 5) == 0) {
    j->p += 5;
  } else {
    double v;
    int is_null;
    ok = json_number(j, &v, &is_null);
  }
  j->depth--;
  return ok;
}

/* Reads the means and stds of the record in text. Returns the number of
 * channels, or -1 with a reason in why. */
static int json_read_stats(const char *text, double *mean, double *sd,
                           char *why, size_t why_size) {
  json_in j = {text, 0};
  json_ws(&j);
  if (*j.p++ != '{') {
    snprintf(why, why_size, "not a JSON object");
    return -1;
  }
  int n = -1;
  for (;;) {
    char key[64];
    json_ws(&j);
    if (!json_string(&j, key, sizeof key))
      break;
    json_ws(&j);
    if (*j.p++ != ':')
      break;
    json_ws(&j);
    if (strcmp(key, "stats") == 0 && *j.p == '[') {
      j.p++;
      n = 0;
      json_ws(&j);
      while (*j.p == '{') {
        if (n == IMGSTAT_MAX_CHANNELS) {
          snprintf(why, why_size, "more than %d channels",
                   IMGSTAT_MAX_CHANNELS);
          return -1;
        }
        int have_mean = 0, have_std = 0;
        j.p++;
        for (;;) {
          char k2[64];
          json_ws(&j);
          if (*j.p == '}') {
            j.p++;
            break;
          }
          if (!json_string(&j, k2, sizeof k2))
            goto bad;
          json_ws(&j);
          if (*j.p++ != ':')
            goto bad;
          if (strcmp(k2, "mean") == 0 || strcmp(k2, "std") == 0) {
            double v;
            int is_null;
            if (!json_number(&j, &v, &is_null))
              goto bad;
            if (is_null) {
              snprintf(why, why_size, "channel %d has no %s (null)", n + 1, k2);
              return -1;
            }
            if (k2[0] == 'm') {
              mean[n] = v;
              have_mean = 1;
            } else {
              sd[n] = v;
              have_std = 1;
            }
          } else if (!json_skip(&j)) {
            goto bad;
          }
          json_ws(&j);
          if (*j.p == ',')
            j.p++;
        }
        if (!have_mean || !have_std) {
          snprintf(why, why_size, "channel %d lacks mean or std", n + 1);
          return -1;
        }
        n++;
        json_ws(&j);
        if (*j.p == ',') {
          j.p++;
          json_ws(&j);
        }
      }
      if (*j.p++ != ']')
        goto bad;
    } else if (!json_skip(&j)) {
      goto bad;
    }
    json_ws(&j);
    if (*j.p == ',') {
      j.p++;
      continue;
    }
    break;
  }
  if (n <= 0) {
    snprintf(why, why_size, "no \"stats\" array in the record");
    return -1;
  }
  return n;
bad:
  snprintf(why, why_size, "not a record of 'imgstat --json'");
  return -1;
}

/* Reads the whole file (at most STATS_FROM_MAX bytes) into a new string. */
#define STATS_FROM_MAX ((size_t)1 << 30)

static char *read_all(FILE *f, size_t *len) {
  size_t cap = 1 << 16, n = 0;
  char *text = malloc(cap);
  while (text) {
    n += fread(text + n, 1, cap - 1 - n, f);
    if (n < cap - 1 || cap >= STATS_FROM_MAX)
      break;
    char *t = realloc(text, cap * 2);
    if (!t) {
      free(text);
      return NULL;
    }
    text = t;
    cap *= 2;
  }
  if (text)
    text[n] = '\0';
  *len = n;
  return text;
}

/* Whether the line is a JSON object whose first key is "name"; *at is set
 * to the value after the colon. */
static int first_key_is(const char *line, const char *name, const char **at) {
  json_in j = {line, 0};
  char key[32];
  json_ws(&j);
  if (*j.p++ != '{')
    return 0;
  json_ws(&j);
  if (!json_string(&j, key, sizeof key) || strcmp(key, name) != 0)
    return 0;
  json_ws(&j);
  if (*j.p++ != ':')
    return 0;
  json_ws(&j);
  *at = j.p;
  return 1;
}

/* The unit of a dataset record of --scale unit: 255 or 65535 for one
 * integer depth, 1 for float; 0 when the depths are mixed (no one unit). */
static double unit_scale(const char *rec) {
  if (!strstr(rec, "\"scale\":\"unit\""))
    return 1.0;
  if (strstr(rec, "\"depths\":[8]"))
    return 255.0;
  if (strstr(rec, "\"depths\":[16]"))
    return 65535.0;
  if (strstr(rec, "\"depths\":[32]"))
    return 1.0;
  return 0.0;
}

int ist_stats_from_read(const char *path, imgstat_norm_options *o) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    ist_cli_path_error(path, "%s", strerror(errno));
    return IMGSTAT_EXIT_USAGE;
  }
  size_t len;
  char *text = read_all(f, &len);
  fclose(f);
  if (!text) {
    fputs("imgstat: out of memory\n", stderr);
    return 1;
  }
  /* JSON Lines: the last dataset record, else the only image record. */
  const char *dataset = NULL, *image = NULL;
  size_t images = 0;
  for (char *line = text; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl)
      *nl = '\0';
    const char *at;
    if (first_key_is(line, "dataset", &at))
      dataset = at;
    else if (first_key_is(line, "file", &at) && strstr(line, "\"stats\":")) {
      image = line;
      images++;
    }
    line = nl ? nl + 1 : NULL;
  }
  char why[160];
  int k = -1;
  double scale = 1.0;
  if (dataset) {
    scale = unit_scale(dataset);
    if (scale == 0)
      snprintf(why, sizeof why,
               "a dataset record of --scale unit over mixed depths: its mean "
               "and std are in 0..1, not in any one input's units");
    else
      k = json_read_stats(dataset, o->mean, o->std, why, sizeof why);
  } else if (images > 1) {
    snprintf(why, sizeof why,
             "%zu image records and no dataset record: give a file of one "
             "record, or the output of 'imgstat --dataset --json'",
             images);
  } else {
    k = json_read_stats(image ? image : text, o->mean, o->std, why, sizeof why);
  }
  free(text);
  if (k < 0) {
    ist_cli_path_error(path, "%s", why);
    return IMGSTAT_EXIT_USAGE;
  }
  for (int c = 0; c < k; c++) {
    o->mean[c] *= scale;
    o->std[c] *= scale;
  }
  o->nstats = k;
  return 0;
}
