/*
 * The batch's output names (imgstat_pipeline.h): the one naming rule, the
 * folders leading to an output, and the search for two inputs that would
 * write the same output.
 */
#include "imgstat_pipeline.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

imgstat_status imgstat_output_name(const char *dir, const imgstat_input *in,
                                   const char *ext, char **path,
                                   imgstat_error *err) {
  *path = NULL;
  if (in->kind == IMGSTAT_INPUT_STDIN)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "standard input has no name to write it under "
                             "in a folder: give -o FILE");
  const char *rel = in->path + in->root_len;
  if (in->root_len == 0) {
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
  if (!p)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  memcpy(p, dir, dlen);
  if (slash)
    p[dlen] = '/';
  memcpy(p + dlen + slash, rel, keep);
  memcpy(p + dlen + slash + keep, ext, elen + 1);
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
