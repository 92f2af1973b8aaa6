/* The mask or label image of each input (mask_pair.h). */
#include "mask_pair.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* One name of a folder: its stem is name[0, stem). */
typedef struct pair_name {
  char *name;
  size_t stem;
} pair_name;

/* One folder read: its names (not the hidden ones) by stem. */
typedef struct pair_dir {
  char *path; /* with its trailing '/' */
  pair_name *names;
  size_t count;
} pair_dir;

struct ist_pairs {
  char *where;
  const char *what; /* static: "mask", "labels" */
  char *suffix;     /* "" for none */
  int is_dir;
  pthread_mutex_t lock;
  /* the folders read so far, by the hash of their path (open addressing,
   * at most half full) */
  pair_dir **dirs;
  size_t slots, used;
  uint64_t reads;
};

/* The length of name's stem: up to its last '.' (not a leading one). */
static size_t stem_len(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot && dot != name ? (size_t)(dot - name) : strlen(name);
}

/* The order of stems: bytes, then length. */
static int stem_cmp(const char *a, size_t al, const char *b, size_t bl) {
  int c = memcmp(a, b, al < bl ? al : bl);
  return c ? c : (al > bl) - (al < bl);
}

static int name_cmp(const void *x, const void *y) {
  const pair_name *a = x, *b = y;
  return stem_cmp(a->name, a->stem, b->name, b->stem);
}

static uint64_t hash_path(const char *s) {
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

static void dir_free(pair_dir *d) {
  if (!d)
    return;
  for (size_t k = 0; k < d->count; k++)
    free(d->names[k].name);
  free(d->names);
  free(d->path);
  free(d);
}

imgstat_status ist_pairs_create(const imgstat_run_options *o, const char *where,
                                const char *what, ist_pairs **out,
                                imgstat_error *err) {
  *out = NULL;
  if (!where)
    return IMGSTAT_OK;
  ist_pairs *p = calloc(1, sizeof *p);
  if (!p)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  p->what = what;
  p->where = strdup(where);
  p->suffix = strdup(o->mask_suffix ? o->mask_suffix : "");
  p->slots = 16;
  p->dirs = calloc(p->slots, sizeof *p->dirs);
  if (!p->where || !p->suffix || !p->dirs ||
      pthread_mutex_init(&p->lock, NULL) != 0) {
    free(p->where);
    free(p->suffix);
    free(p->dirs);
    free(p);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  struct stat st;
  p->is_dir = stat(where, &st) == 0 && S_ISDIR(st.st_mode);
  *out = p;
  return IMGSTAT_OK;
}

void ist_pairs_destroy(ist_pairs *p) {
  if (!p)
    return;
  for (size_t k = 0; k < p->slots; k++)
    dir_free(p->dirs[k]);
  free(p->dirs);
  pthread_mutex_destroy(&p->lock);
  free(p->where);
  free(p->suffix);
  free(p);
}

int ist_pairs_one_file(const ist_pairs *p) { return p && !p->is_dir; }

uint64_t ist_pairs_reads(ist_pairs *p) {
  if (!p)
    return 0;
  pthread_mutex_lock(&p->lock);
  uint64_t n = p->reads;
  pthread_mutex_unlock(&p->lock);
  return n;
}

/* The folder at path read into *out (a folder that cannot be opened: no
 * names). */
static imgstat_status read_dir(const char *path, pair_dir **out) {
  pair_dir *d = calloc(1, sizeof *d);
  if (!d || !(d->path = strdup(path))) {
    free(d);
    return IMGSTAT_ERR_NOMEM;
  }
  DIR *h = opendir(path);
  size_t cap = 0;
  if (h) {
    struct dirent *e;
    while ((e = readdir(h)) != NULL) {
      if (e->d_name[0] == '.')
        continue;
      if (d->count == cap) {
        size_t n = cap ? 2 * cap : 64;
        pair_name *grown = realloc(d->names, n * sizeof *grown);
        if (!grown)
          break;
        d->names = grown;
        cap = n;
      }
      pair_name *nm = &d->names[d->count];
      if (!(nm->name = strdup(e->d_name)))
        break;
      nm->stem = stem_len(nm->name);
      d->count++;
    }
    int short_read = e != NULL;
    closedir(h);
    if (short_read) {
      dir_free(d);
      return IMGSTAT_ERR_NOMEM;
    }
  }
  if (d->count > 1)
    qsort(d->names, d->count, sizeof *d->names, name_cmp);
  *out = d;
  return IMGSTAT_OK;
}

/* The folder at path, read the first time (p's lock held). */
static imgstat_status find_dir(ist_pairs *p, const char *path,
                               const pair_dir **out) {
  size_t mask = p->slots - 1, k = (size_t)hash_path(path) & mask;
  for (; p->dirs[k]; k = (k + 1) & mask)
    if (strcmp(p->dirs[k]->path, path) == 0) {
      *out = p->dirs[k];
      return IMGSTAT_OK;
    }
  if (2 * (p->used + 1) > p->slots) {
    size_t n = 2 * p->slots;
    pair_dir **grown = calloc(n, sizeof *grown);
    if (!grown)
      return IMGSTAT_ERR_NOMEM;
    for (size_t j = 0; j < p->slots; j++)
      if (p->dirs[j]) {
        size_t i = (size_t)hash_path(p->dirs[j]->path) & (n - 1);
        while (grown[i])
          i = (i + 1) & (n - 1);
        grown[i] = p->dirs[j];
      }
    free(p->dirs);
    p->dirs = grown;
    p->slots = n;
    mask = n - 1;
    for (k = (size_t)hash_path(path) & mask; p->dirs[k]; k = (k + 1) & mask)
      ;
  }
  pair_dir *d;
  imgstat_status s = read_dir(path, &d);
  if (s != IMGSTAT_OK)
    return s;
  p->reads++;
  p->dirs[k] = d;
  p->used++;
  *out = d;
  return IMGSTAT_OK;
}

imgstat_status ist_pair_path(ist_pairs *p, const imgstat_input *in, char **out,
                             imgstat_error *err) {
  *out = NULL;
  if (!p)
    return IMGSTAT_OK;
  if (!p->is_dir) {
    /* one file for every input (its errors are the load's) */
    if (!(*out = strdup(p->where)))
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
  size_t sl = strlen(p->suffix);
  if (sl && want >= sl && memcmp(base + want - sl, p->suffix, sl) == 0)
    want -= sl;
  const char *where = p->where;
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
  char *found = NULL;
  int several = 0;
  pthread_mutex_lock(&p->lock);
  const pair_dir *d = NULL;
  imgstat_status s = find_dir(p, dir, &d);
  if (s == IMGSTAT_OK) {
    /* the first name of stem base[0, want), and whether a second follows */
    size_t lo = 0, hi = d->count;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (stem_cmp(d->names[mid].name, d->names[mid].stem, base, want) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo < d->count &&
        stem_cmp(d->names[lo].name, d->names[lo].stem, base, want) == 0) {
      several =
          lo + 1 < d->count && stem_cmp(d->names[lo + 1].name,
                                        d->names[lo + 1].stem, base, want) == 0;
      if (!several) {
        size_t len = strlen(dir) + strlen(d->names[lo].name) + 1;
        if ((found = malloc(len)) != NULL)
          snprintf(found, len, "%s%s", dir, d->names[lo].name);
        else
          s = IMGSTAT_ERR_NOMEM;
      }
    }
  }
  pthread_mutex_unlock(&p->lock);
  if (s != IMGSTAT_OK) {
    free(dir);
    return imgstat_error_set(err, s, "out of memory");
  }
  if (!found)
    s = imgstat_error_set(err, IMGSTAT_ERR_IO, "%s %s %s%.*s.* in %s",
                          several ? "more than one" : "no", p->what, dir,
                          (int)want, base, where);
  free(dir);
  if (s != IMGSTAT_OK)
    return s;
  *out = found;
  return IMGSTAT_OK;
}
