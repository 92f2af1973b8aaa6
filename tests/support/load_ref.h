/*
 * Shared by the loader tests: reads a reference TSV written by
 * tests/tools/make_reference.py (statistics computed in Python, without
 * imgstat) and compares a decoded image with one of its lines, using
 * statistics computed here by naive loops over the planes.
 */
#ifndef IMGSTAT_LOAD_REF_H
#define IMGSTAT_LOAD_REF_H

#include "imgstat/imgstat.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ref_entry {
  char name[256];
  int ok; /* 0: the file must be rejected */
  uint32_t width, height;
  int channels, depth;
  int jpeg; /* compare with the JPEG tolerance */
  uint64_t imin[4], imax[4], isum[4], isumsq[4];
  double fmin[4], fmax[4], fsum[4], fsumsq[4];
} ref_entry;

/* Reads the TSV into a malloc'd array; returns the number of entries, or -1
 * when the file cannot be read. */
static inline long ref_read(const char *path, ref_entry **out) {
  FILE *f = fopen(path, "r");
  *out = NULL;
  if (!f)
    return -1;
  long n = 0, cap = 0;
  ref_entry *v = NULL;
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n')
      continue;
    line[strcspn(line, "\r\n")] = 0;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      v = realloc(v, (size_t)cap * sizeof *v);
    }
    ref_entry *e = &v[n++];
    memset(e, 0, sizeof *e);
    char *save = NULL;
    char *tok = strtok_r(line, "\t", &save);
    snprintf(e->name, sizeof e->name, "%s", tok ? tok : "");
    tok = strtok_r(NULL, "\t", &save);
    e->ok = tok && strcmp(tok, "ok") == 0;
    if (!e->ok)
      continue;
    e->width = (uint32_t)strtoul(strtok_r(NULL, "\t", &save), NULL, 10);
    e->height = (uint32_t)strtoul(strtok_r(NULL, "\t", &save), NULL, 10);
    e->channels = atoi(strtok_r(NULL, "\t", &save));
    e->depth = atoi(strtok_r(NULL, "\t", &save));
    e->jpeg = strcmp(strtok_r(NULL, "\t", &save), "jpeg") == 0;
    for (int c = 0; c < e->channels && c < 4; c++) {
      char *f4[4];
      for (int k = 0; k < 4; k++)
        f4[k] = strtok_r(NULL, "\t", &save);
      if (!f4[3])
        break;
      e->imin[c] = strtoull(f4[0], NULL, 10);
      e->imax[c] = strtoull(f4[1], NULL, 10);
      e->isum[c] = strtoull(f4[2], NULL, 10);
      e->isumsq[c] = strtoull(f4[3], NULL, 10);
      e->fmin[c] = strtod(f4[0], NULL);
      e->fmax[c] = strtod(f4[1], NULL);
      e->fsum[c] = strtod(f4[2], NULL);
      e->fsumsq[c] = strtod(f4[3], NULL);
    }
  }
  fclose(f);
  *out = v;
  return n;
}

typedef struct plane_stat {
  uint64_t imin, imax, isum, isumsq;
  double fmin, fmax, fsum, fsumsq;
} plane_stat;

/* Naive statistics of one plane: the independent side of the comparison. */
static inline void plane_stat_compute(const imgstat_image *img, int c,
                                      plane_stat *s) {
  size_t n = (size_t)img->width * img->height;
  memset(s, 0, sizeof *s);
  s->imin = UINT64_MAX;
  s->fmin = INFINITY;
  s->fmax = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    if (img->sample == IMGSTAT_F32) {
      double v = ((const float *)img->planes[c])[i];
      s->fmin = v < s->fmin ? v : s->fmin;
      s->fmax = v > s->fmax ? v : s->fmax;
      s->fsum += v;
      s->fsumsq += v * v;
    } else {
      uint64_t v = img->sample == IMGSTAT_U8
                       ? ((const uint8_t *)img->planes[c])[i]
                       : ((const uint16_t *)img->planes[c])[i];
      s->imin = v < s->imin ? v : s->imin;
      s->imax = v > s->imax ? v : s->imax;
      s->isum += v;
      s->isumsq += v * v;
    }
  }
}

static inline int rel_close(double a, double b, double tol) {
  return fabs(a - b) <= tol * fmax(fabs(a), fabs(b)) || a == b;
}

/* Compares img with the entry; on a mismatch writes why and returns 0. */
static inline int ref_match(const ref_entry *e, const imgstat_image *img,
                            char *why, size_t whysize) {
  if (img->width != e->width || img->height != e->height ||
      img->channels != e->channels ||
      imgstat_sample_depth(img->sample) != e->depth) {
    snprintf(why, whysize,
             "%s: got %ux%u %d channels depth %d, want %ux%u %d %d", e->name,
             img->width, img->height, img->channels,
             imgstat_sample_depth(img->sample), e->width, e->height,
             e->channels, e->depth);
    return 0;
  }
  double count = (double)img->width * img->height;
  for (int c = 0; c < img->channels; c++) {
    plane_stat s;
    plane_stat_compute(img, c, &s);
    int ok;
    if (e->jpeg)
      ok = fabs((double)s.imin - (double)e->imin[c]) <= 8 &&
           fabs((double)s.imax - (double)e->imax[c]) <= 8 &&
           fabs((double)s.isum / count - (double)e->isum[c] / count) <= 1.0;
    else if (img->sample == IMGSTAT_F32)
      ok = s.fmin == e->fmin[c] && s.fmax == e->fmax[c] &&
           rel_close(s.fsum, e->fsum[c], 1e-9) &&
           rel_close(s.fsumsq, e->fsumsq[c], 1e-9);
    else
      ok = s.imin == e->imin[c] && s.imax == e->imax[c] &&
           s.isum == e->isum[c] && s.isumsq == e->isumsq[c];
    if (!ok) {
      if (img->sample == IMGSTAT_F32)
        snprintf(why, whysize,
                 "%s channel %d: got min %.9g max %.9g sum %.17g, want %.9g "
                 "%.9g %.17g",
                 e->name, c, s.fmin, s.fmax, s.fsum, e->fmin[c], e->fmax[c],
                 e->fsum[c]);
      else
        snprintf(why, whysize,
                 "%s channel %d: got min %llu max %llu sum %llu sumsq %llu, "
                 "want %llu %llu %llu %llu",
                 e->name, c, (unsigned long long)s.imin,
                 (unsigned long long)s.imax, (unsigned long long)s.isum,
                 (unsigned long long)s.isumsq, (unsigned long long)e->imin[c],
                 (unsigned long long)e->imax[c], (unsigned long long)e->isum[c],
                 (unsigned long long)e->isumsq[c]);
      return 0;
    }
  }
  return 1;
}

/* A CUnit assertion that reports msg (a runtime string) when it fails. */
#define REF_ASSERT_MSG(cond, msg)                                              \
  CU_assertImplementation((cond) ? CU_TRUE : CU_FALSE, __LINE__, (msg),        \
                          __FILE__, "", CU_FALSE)

/* True when the image is the zeroed empty image a failed load leaves. */
static inline int image_is_empty(const imgstat_image *img) {
  imgstat_image zero;
  memset(&zero, 0, sizeof zero);
  return memcmp(img, &zero, sizeof zero) == 0;
}

/* Loads every file the reference file tsv lists (by its name under dir) and
 * checks it against its line: a valid one loads, names its format and
 * matches; a rejected one fails with a message and leaves the image empty.
 * Counts how many were valid and how many rejected. */
static inline void ref_check_files(const char *tsv, const char *dir, int *valid,
                                   int *rejected) {
  char path[4096];
  ref_entry *refs;
  long n = ref_read(tsv, &refs);
  CU_ASSERT_FATAL(n > 0);
  *valid = *rejected = 0;
  for (long i = 0; i < n; i++) {
    if (snprintf(path, sizeof path, "%s/%s", dir, refs[i].name) >=
        (int)sizeof path)
      path[0] = 0; /* too long: the load then fails visibly */
    imgstat_image img;
    imgstat_error err = {0};
    imgstat_status s = imgstat_image_load(path, NULL, &img, &err);
    char why[1024];
    if (s == IMGSTAT_ERR_UNSUPPORTED &&
        strstr(err.message, "this imgstat was built without")) {
      printf("\n    skipped %s: %s", refs[i].name, err.message);
      continue; /* a format whose library the build lacks */
    }
    if (refs[i].ok) {
      snprintf(why, sizeof why, "%s: %s", refs[i].name, err.message);
      REF_ASSERT_MSG(s == IMGSTAT_OK, why);
      if (s == IMGSTAT_OK) {
        why[0] = 0;
        REF_ASSERT_MSG(ref_match(&refs[i], &img, why, sizeof why), why);
        REF_ASSERT_MSG(img.format != NULL, refs[i].name);
        (*valid)++;
      }
    } else {
      snprintf(why, sizeof why, "%s must be rejected", refs[i].name);
      REF_ASSERT_MSG(s != IMGSTAT_OK && err.message[0], why);
      REF_ASSERT_MSG(image_is_empty(&img), why);
      (*rejected)++;
    }
    imgstat_image_free(&img);
  }
  free(refs);
}

#endif
