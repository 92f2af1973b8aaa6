/* The mask or label image of each input (mask_pair.h). */
#include "mask_pair.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The length of name's stem: up to its last '.' (not a leading one). */
static size_t stem_len(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot && dot != name ? (size_t)(dot - name) : strlen(name);
}

imgstat_status ist_pair_path(const imgstat_run_options *o, const char *where,
                             const char *what, const imgstat_input *in,
                             char **out, imgstat_error *err) {
  *out = NULL;
  if (!where)
    return IMGSTAT_OK;
  struct stat st;
  if (stat(where, &st) != 0 || !S_ISDIR(st.st_mode)) {
    /* one file for every input (its errors are the load's) */
    if (!(*out = strdup(where)))
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    return IMGSTAT_OK;
  }
  /* the input's path below its folder argument (a file given as it is:
   * its name) */
  const char *rel = in->path + in->root_len;
  if (in->root_len == 0) {
    const char *slash = strrchr(in->path, '/');
    rel = slash ? slash + 1 : in->path;
  }
  const char *base = strrchr(rel, '/');
  base = base ? base + 1 : rel;
  size_t sub = (size_t)(base - rel); /* "sub/" of "sub/x.png" */
  size_t want = stem_len(base);
  const char *suffix = o->mask_suffix ? o->mask_suffix : "";
  size_t sl = strlen(suffix);
  if (sl && want >= sl && memcmp(base + want - sl, suffix, sl) == 0)
    want -= sl;
  size_t dl = strlen(where);
  char *dir = malloc(dl + 1 + sub + 1);
  if (!dir)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  memcpy(dir, where, dl);
  size_t at = dl;
  if (dl && dir[dl - 1] != '/')
    dir[at++] = '/';
  memcpy(dir + at, rel, sub);
  dir[at + sub] = '\0';
  DIR *d = opendir(dir);
  char *found = NULL;
  int several = 0;
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.' || stem_len(e->d_name) != want ||
          memcmp(e->d_name, base, want) != 0)
        continue;
      if (found) {
        several = 1;
        break;
      }
      size_t len = strlen(dir) + strlen(e->d_name) + 1;
      if (!(found = malloc(len))) {
        closedir(d);
        free(dir);
        return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
      }
      snprintf(found, len, "%s%s", dir, e->d_name);
    }
    closedir(d);
  }
  imgstat_status s = IMGSTAT_OK;
  if (!found || several)
    s = imgstat_error_set(err, IMGSTAT_ERR_IO, "%s %s %s%.*s.* in %s",
                          several ? "more than one" : "no", what, dir,
                          (int)want, base, where);
  free(dir);
  if (s != IMGSTAT_OK) {
    free(found);
    return s;
  }
  *out = found;
  return IMGSTAT_OK;
}
