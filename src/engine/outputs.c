/*
 * The batch's output names (imgstat/outputs.h): the one naming rule, the
 * folders leading to an output, and the search for two inputs that would
 * write the same output.
 */
#include "imgstat/outputs.h"
#include "imgstat/batch.h"
#include "imgstat/inputs.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* The length of an archive's name (len bytes at name) without its
 * suffix: ".tar" and what compresses it (".tar.gz", ".tgz", ...), ".zip",
 * else its last extension; the whole name when nothing would be left. */
static size_t archive_stem(const char *name, size_t len) {
  static const char *const suffixes[] = {
      ".tar.gz",   ".tar.bz2", ".tar.xz", ".tar.zst", ".tar.lz4",
      ".tar.lzma", ".tgz",     ".tbz2",   ".tbz",     ".txz",
      ".tzst",     ".tar",     ".zip"};
  for (size_t k = 0; k < sizeof suffixes / sizeof suffixes[0]; k++) {
    size_t m = strlen(suffixes[k]);
    if (len > m && strncasecmp(name + len - m, suffixes[k], m) == 0)
      return len - m;
  }
  for (size_t k = len; k > 1; k--)
    if (name[k - 1] == '.')
      return k - 1;
  return len;
}

imgstat_status imgstat_output_name(const char *dir, const imgstat_input *in,
                                   const char *ext, char **path,
                                   imgstat_error *err) {
  *path = NULL;
  if (in->kind == IMGSTAT_INPUT_STDIN)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "standard input has no name to write it under "
                             "in a folder: give -o FILE");
  const char *rel = in->path + in->root_len;
  char *own = NULL;
  if (in->kind == IMGSTAT_INPUT_MEMBER) {
    /* a folder per archive, named by its stem: out/shard/key.png */
    const char *base = in->path;
    size_t alen = in->root_len - 1; /* the archive's path */
    for (size_t k = 0; k < alen; k++)
      if (in->path[k] == '/')
        base = in->path + k + 1;
    size_t blen = (size_t)(in->path + alen - base);
    blen = archive_stem(base, blen);
    own = malloc(blen + 1 + strlen(rel) + 1);
    if (!own)
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    memcpy(own, base, blen);
    own[blen] = '/';
    strcpy(own + blen + 1, rel);
    rel = own;
  } else if (in->root_len == 0) {
    const char *slash = strrchr(in->path, '/');
    rel = slash ? slash + 1 : in->path;
  }
  const char *last = strrchr(rel, '/');
  last = last ? last + 1 : rel;
  size_t keep = strlen(rel);
  const char *dot = strrchr(last, '.');
  if (dot && dot != last)
    keep = (size_t)(dot - rel);
  size_t dlen = strlen(dir);
  int slash = dlen > 0 && dir[dlen - 1] != '/';
  size_t elen = strlen(ext);
  char *p = malloc(dlen + (size_t)slash + keep + elen + 1);
  if (!p) {
    free(own);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  memcpy(p, dir, dlen);
  if (slash)
    p[dlen] = '/';
  memcpy(p + dlen + slash, rel, keep);
  memcpy(p + dlen + slash + keep, ext, elen + 1);
  free(own);
  *path = p;
  return IMGSTAT_OK;
}

imgstat_status imgstat_output_make_parents(const char *path,
                                           imgstat_error *err) {
  const char *end = strrchr(path, '/');
  if (!end || end == path)
    return IMGSTAT_OK;
  size_t len = (size_t)(end - path);
  char *p = malloc(len + 1);
  if (!p)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  memcpy(p, path, len);
  p[len] = '\0';
  struct stat st;
  imgstat_status s = IMGSTAT_OK;
  if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
    free(p);
    return IMGSTAT_OK;
  }
  /* each '/' in turn (skipping the leading ones), then the whole */
  for (size_t i = 1; i <= len && s == IMGSTAT_OK; i++) {
    if (i < len && p[i] != '/')
      continue;
    if (i < len && p[i - 1] == '/')
      continue;
    char saved = p[i];
    p[i] = '\0';
    if (mkdir(p, 0777) != 0 && errno != EEXIST)
      s = imgstat_error_set(err, IMGSTAT_ERR_IO,
                            "cannot create the folder %s: %s", p,
                            strerror(errno));
    else if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
      s = imgstat_error_set(err, IMGSTAT_ERR_IO,
                            "cannot create the folder %s: a file is in its "
                            "place",
                            p);
    p[i] = saved;
  }
  free(p);
  return s;
}

/* Sorting indices by their names; equal names by index. */
static char *const *sort_names;

static int by_name(const void *a, const void *b) {
  size_t i = *(const size_t *)a, j = *(const size_t *)b;
  int c = strcmp(sort_names[i], sort_names[j]);
  return c ? c : (i > j) - (i < j);
}

int imgstat_output_find_collision(char *const *names, size_t n, size_t *first,
                                  size_t *second) {
  size_t *ix = malloc((n ? n : 1) * sizeof *ix);
  if (!ix)
    return -1;
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (names[i])
      ix[m++] = i;
  /* qsort has no context argument: the names travel in a static, which
   * makes this function one caller at a time, like the walk */
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&lock);
  sort_names = names;
  qsort(ix, m, sizeof *ix, by_name);
  sort_names = NULL;
  pthread_mutex_unlock(&lock);
  /* in each run of equal names (sorted by index), its first two */
  int found = 0;
  for (size_t k = 1; k < m; k++) {
    if (strcmp(names[ix[k - 1]], names[ix[k]]) != 0 ||
        (k >= 2 && strcmp(names[ix[k - 2]], names[ix[k]]) == 0))
      continue;
    if (!found || ix[k] < *second) {
      *first = ix[k - 1];
      *second = ix[k];
      found = 1;
    }
  }
  free(ix);
  return found;
}

/* ---- an output never replaces an input ------------------------------------
 */

typedef struct guard_id {
  uint64_t dev, ino;
  size_t at; /* the input's place in the list */
} guard_id;

typedef struct guard_name {
  char *name; /* a copy of the input's path */
  size_t at;
} guard_name;

struct imgstat_output_guard {
  guard_id *ids;
  size_t nids;
  guard_name *names;
  size_t nnames;
};

static int id_order(const void *a, const void *b) {
  const guard_id *x = a, *y = b;
  if (x->dev != y->dev)
    return x->dev < y->dev ? -1 : 1;
  if (x->ino != y->ino)
    return x->ino < y->ino ? -1 : 1;
  return (x->at > y->at) - (x->at < y->at);
}

static int name_order(const void *a, const void *b) {
  const guard_name *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->at > y->at) - (x->at < y->at);
}

void imgstat_output_guard_destroy(imgstat_output_guard *g) {
  if (!g)
    return;
  for (size_t k = 0; g->names && k < g->nnames; k++)
    free(g->names[k].name);
  free(g->ids);
  free(g->names);
  free(g);
}

imgstat_status imgstat_output_guard_create(const imgstat_input_list *inputs,
                                           imgstat_output_guard **out,
                                           imgstat_error *err) {
  size_t n = inputs ? inputs->count : 0;
  imgstat_output_guard *g = calloc(1, sizeof *g);
  *out = NULL;
  if (g) {
    g->ids = malloc((n ? n : 1) * sizeof *g->ids);
    g->names = malloc((n ? n : 1) * sizeof *g->names);
  }
  if (!g || !g->ids || !g->names) {
    imgstat_output_guard_destroy(g);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  for (size_t k = 0; k < n; k++) {
    const imgstat_input *in = inputs->items[k];
    if (in->kind == IMGSTAT_INPUT_STDIN)
      continue; /* nothing on disk to replace */
    char *copy = strdup(in->path);
    if (!copy) {
      imgstat_output_guard_destroy(g);
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    }
    g->names[g->nnames++] = (guard_name){copy, k};
    struct stat st;
    if (stat(in->path, &st) == 0)
      g->ids[g->nids++] =
          (guard_id){(uint64_t)st.st_dev, (uint64_t)st.st_ino, k};
  }
  qsort(g->ids, g->nids, sizeof *g->ids, id_order);
  qsort(g->names, g->nnames, sizeof *g->names, name_order);
  *out = g;
  return IMGSTAT_OK;
}

/* The first entry of a sorted array equal to key by cmp, ignoring at: a
 * lower bound (key's at is 0, the smallest). */
static const void *lower_bound(const void *base, size_t n, size_t size,
                               const void *key,
                               int (*cmp)(const void *, const void *)) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp((const char *)base + mid * size, key) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n ? (const char *)base + lo * size : NULL;
}

long imgstat_output_guard_find(const imgstat_output_guard *g,
                               const char *path) {
  long found = -1;
  struct stat st;
  if (stat(path, &st) == 0) {
    guard_id key = {(uint64_t)st.st_dev, (uint64_t)st.st_ino, 0};
    const guard_id *e =
        lower_bound(g->ids, g->nids, sizeof *g->ids, &key, id_order);
    if (e && e->dev == key.dev && e->ino == key.ino)
      found = (long)e->at;
  }
  guard_name key = {(char *)path, 0};
  const guard_name *e =
      lower_bound(g->names, g->nnames, sizeof *g->names, &key, name_order);
  if (e && strcmp(e->name, path) == 0 && (found < 0 || (long)e->at < found))
    found = (long)e->at;
  return found;
}

imgstat_status imgstat_output_guard_check(const imgstat_output_guard *g,
                                          const char *path,
                                          imgstat_error *err) {
  long k = imgstat_output_guard_find(g, path);
  if (k < 0)
    return IMGSTAT_OK;
  /* names[] is sorted by name: the input's path by its place */
  const char *input = path;
  for (size_t i = 0; i < g->nnames; i++)
    if ((long)g->names[i].at == k)
      input = g->names[i].name;
  return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                           "the output '%s' is the input '%s': refusing to "
                           "overwrite an input",
                           path, input);
}

/* ---- the output plan ------------------------------------------------------
 */

int imgstat_output_plan_folder(const char *out, int several,
                               imgstat_file_format format) {
  struct stat sb;
  if (several)
    return 1;
  if (stat(out, &sb) == 0)
    return S_ISDIR(sb.st_mode);
  size_t len = strlen(out);
  if (len > 0 && out[len - 1] == '/')
    return 1;
  const char *slash = strrchr(out, '/');
  const char *last = slash ? slash + 1 : out;
  const char *dot = strrchr(last, '.');
  return !format && (!dot || dot == last);
}

const char *imgstat_file_format_ext(imgstat_file_format f) {
  return f == IMGSTAT_FILE_PNG   ? ".png"
         : f == IMGSTAT_FILE_NPY ? ".npy"
         : f == IMGSTAT_FILE_PFM ? ".pfm"
                                 : "";
}

imgstat_file_format imgstat_output_plan_format(const imgstat_output_plan *p,
                                               imgstat_sample s) {
  if (p->format)
    return p->format;
  return s == IMGSTAT_F32 ? IMGSTAT_FILE_NPY : IMGSTAT_FILE_PNG;
}

imgstat_status imgstat_output_plan_path(const imgstat_output_plan *p,
                                        const imgstat_input *in,
                                        imgstat_file_format f, char **path,
                                        imgstat_error *err) {
  if (!p->folder) {
    *path = strdup(p->out);
    return *path ? IMGSTAT_OK
                 : imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  return imgstat_output_name(p->out, in, imgstat_file_format_ext(f), path, err);
}

int imgstat_output_plan_present(const imgstat_output_plan *p,
                                const imgstat_input *in) {
  static const imgstat_file_format either[2] = {IMGSTAT_FILE_PNG,
                                                IMGSTAT_FILE_NPY};
  int present = 0;
  for (int k = 0; k < 2 && !present; k++) {
    if (p->format && k > 0)
      break;
    imgstat_error err;
    char *path = NULL;
    struct stat sb;
    imgstat_output_plan_path(p, in, p->format ? p->format : either[k], &path,
                             &err);
    present = path && lstat(path, &sb) == 0 && S_ISREG(sb.st_mode);
    free(path);
  }
  return present;
}

imgstat_status imgstat_output_plan_make_folder(const imgstat_output_plan *p,
                                               imgstat_error *err) {
  if (!p->folder)
    return IMGSTAT_OK;
  size_t len = strlen(p->out);
  char *probe = malloc(len + 3);
  if (!probe)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  snprintf(probe, len + 3, "%s/.", p->out);
  imgstat_status s = imgstat_output_make_parents(probe, err);
  free(probe);
  return s;
}

void imgstat_output_problem_clear(imgstat_output_problem *why) {
  free(why->first);
  free(why->second);
  free(why->output);
  memset(why, 0, sizeof *why);
}

/* The output file's name says no format: its extension, upper-cased. */
static imgstat_status unknown_format(const char *out,
                                     imgstat_output_problem *why,
                                     imgstat_error *err) {
  const char *base = strrchr(out, '/');
  const char *dot = strrchr(base ? base + 1 : out, '.');
  char *ext = why->ext;
  for (size_t k = 0; dot && dot[1] && k < sizeof why->ext - 1 && dot[k + 1];
       k++)
    ext[k] = (char)(dot[k + 1] >= 'a' && dot[k + 1] <= 'z' ? dot[k + 1] - 32
                                                           : dot[k + 1]);
  if (strcmp(ext, "JPG") == 0 || strcmp(ext, "JPEG") == 0 ||
      strcmp(ext, "JPE") == 0 || strcmp(ext, "JFIF") == 0)
    snprintf(why->ext, sizeof why->ext, "JPEG");
  why->kind = IMGSTAT_OUTPUT_UNKNOWN_FORMAT;
  if (ext[0])
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "'%s': %s output is not supported: PNG (.png), "
                             ".npy and PFM (.pfm) are",
                             out, ext);
  return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                           "cannot tell the format of '%s': name it .png, "
                           ".npy or .pfm",
                           out);
}

imgstat_status imgstat_output_plan_check(const imgstat_output_plan *p,
                                         const imgstat_input_list *list,
                                         imgstat_output_problem *why,
                                         imgstat_error *err) {
  memset(why, 0, sizeof *why);
  why->format = p->format;
  if (!p->folder && !p->format)
    return unknown_format(p->out, why, err);
  struct stat sb;
  if (p->folder && imgstat_file_format_from_path(p->out) &&
      !(stat(p->out, &sb) == 0 && S_ISDIR(sb.st_mode))) {
    why->kind = IMGSTAT_OUTPUT_FOLDER_LIKE_FILE;
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "several inputs (or a folder) are written into "
                             "a folder, but '%s' is named like a file",
                             p->out);
  }
  size_t n = list->count;
  char **keys = calloc(n ? n : 1, sizeof *keys);
  imgstat_output_guard *guard = NULL;
  imgstat_status s = IMGSTAT_OK;
  if (!keys)
    goto nomem;
  if (imgstat_output_guard_create(list, &guard, err) != IMGSTAT_OK)
    goto nomem;
  /* Two inputs, one output: by the name without its extension (which may
   * depend on the input's depth). Inputs of kind ERROR are not read. */
  for (size_t k = 0; k < n && p->folder && s == IMGSTAT_OK; k++) {
    if (list->items[k]->kind == IMGSTAT_INPUT_ERROR)
      continue;
    s = imgstat_output_plan_path(p, list->items[k], IMGSTAT_FILE_AUTO, &keys[k],
                                 err);
    if (s == IMGSTAT_ERR_NOMEM)
      goto nomem;
    if (s != IMGSTAT_OK)
      why->kind = IMGSTAT_OUTPUT_NO_NAME;
  }
  size_t a, b;
  int found = p->folder && s == IMGSTAT_OK
                  ? imgstat_output_find_collision(keys, n, &a, &b)
                  : 0;
  if (found < 0)
    goto nomem;
  if (found) {
    why->kind = IMGSTAT_OUTPUT_COLLISION;
    why->first = strdup(list->items[a]->path);
    why->second = strdup(list->items[b]->path);
    why->output = strdup(keys[a]);
    if (!why->first || !why->second || !why->output)
      goto nomem;
    s = imgstat_error_set(err, IMGSTAT_ERR_ARG,
                          "inputs '%s' and '%s' would both be written to %s%s",
                          why->first, why->second, why->output,
                          p->format ? imgstat_file_format_ext(p->format)
                                    : ".png (or .npy)");
  }
  /* No output may be an input: every extension the output may take. */
  static const imgstat_file_format formats[3] = {
      IMGSTAT_FILE_PNG, IMGSTAT_FILE_NPY, IMGSTAT_FILE_PFM};
  for (size_t k = 0; k < n && s == IMGSTAT_OK; k++) {
    if (list->items[k]->kind == IMGSTAT_INPUT_ERROR)
      continue;
    for (int e = 0; e < 3 && s == IMGSTAT_OK; e++) {
      if (p->format && formats[e] != p->format)
        continue;
      char *path = NULL;
      if (imgstat_output_plan_path(p, list->items[k], formats[e], &path, err) !=
          IMGSTAT_OK)
        goto nomem;
      s = imgstat_output_guard_check(guard, path, err);
      if (s != IMGSTAT_OK)
        why->kind = IMGSTAT_OUTPUT_IS_INPUT;
      free(path);
    }
    if (!p->folder)
      break;
  }
  goto done;
nomem:
  imgstat_output_problem_clear(why);
  s = imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
done:
  for (size_t k = 0; keys && k < n; k++)
    free(keys[k]);
  free(keys);
  imgstat_output_guard_destroy(guard);
  return s;
}
