/* The mask or label image of each input (masks.h). */
#include "masks.h"

#include "engine.h" /* ist_reason */

#include <dirent.h>
#include <inttypes.h>
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

imgstat_status ist_pairs_open(const char *where, const char *what,
                              const char *suffix, ist_pairs **out,
                              imgstat_error *err) {
  *out = NULL;
  if (!where)
    return IMGSTAT_OK;
  ist_pairs *p = calloc(1, sizeof *p);
  if (!p)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  p->what = what;
  p->where = strdup(where);
  p->suffix = strdup(suffix ? suffix : "");
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

/* ---- loading ---------------------------------------------------------------
 */

/* Whether the image beside img (what: "mask", "labels", read from path)
 * is of img's size (m_width x m_height); when not, the failure, its
 * message naming both. */
static imgstat_status beside_size(const char *what, const char *path,
                                  uint32_t m_width, uint32_t m_height,
                                  const imgstat_image *img,
                                  imgstat_error *err) {
  if (m_width == img->width && m_height == img->height)
    return IMGSTAT_OK;
  return imgstat_error_set(
      err, IMGSTAT_ERR_ARG,
      "%s %s is %" PRIu32 "x%" PRIu32 ", the image is %" PRIu32 "x%" PRIu32,
      what, path, m_width, m_height, img->width, img->height);
}

/* The image beside img that says where (what: "mask", "labels"), read
 * from path with lo into *m, of img's size when img is not NULL; a
 * failure's message names both. */
static imgstat_status load_beside(const imgstat_load_options *lo,
                                  const char *what, const char *path,
                                  const imgstat_image *img, imgstat_image *m,
                                  imgstat_error *err) {
  imgstat_error why;
  memset(&why, 0, sizeof why);
  imgstat_status st = imgstat_image_load(path, lo, m, &why);
  if (st != IMGSTAT_OK)
    return imgstat_error_set(err, st, "%s %s: %s", what, path,
                             ist_reason(&why));
  st =
      img ? beside_size(what, path, m->width, m->height, img, err) : IMGSTAT_OK;
  if (st != IMGSTAT_OK)
    imgstat_image_free(m);
  return st;
}

imgstat_status ist_mask_size(const char *path, uint32_t width, uint32_t height,
                             const imgstat_image *img, imgstat_error *err) {
  return beside_size("mask", path, width, height, img, err);
}

imgstat_status ist_mask_load(const imgstat_load_options *lo, const char *path,
                             const imgstat_image *img, uint8_t **out,
                             uint32_t *width, uint32_t *height,
                             uint64_t *inside, imgstat_error *err) {
  imgstat_image m;
  imgstat_status st = load_beside(lo, "mask", path, img, &m, err);
  if (st != IMGSTAT_OK)
    return st;
  uint64_t n = (uint64_t)m.width * m.height;
  uint8_t *mask = calloc(n ? (size_t)n : 1, 1);
  if (!mask) {
    imgstat_image_free(&m);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  size_t stride = imgstat_image_stride(&m);
  /* an int16 mask: the stored 32768 is the value 0 */
  const uint16_t zero16 = m.int16 ? IMGSTAT_INT16_OFFSET : 0;
  for (int c = 0; c < m.channels; c++)
    for (uint32_t y = 0; y < m.height; y++) {
      const unsigned char *row =
          (const unsigned char *)m.planes[c] + y * stride;
      uint8_t *mr = mask + (uint64_t)y * m.width;
      for (uint32_t x = 0; x < m.width; x++) {
        int on;
        if (m.sample == IMGSTAT_U8)
          on = row[x] != 0;
        else if (m.sample == IMGSTAT_U16)
          on = ((const uint16_t *)(const void *)row)[x] != zero16;
        else
          on = ((const float *)(const void *)row)[x] != 0.0f;
        mr[x] |= (uint8_t)on;
      }
    }
  *width = m.width;
  *height = m.height;
  imgstat_image_free(&m);
  uint64_t k = 0;
  for (uint64_t i = 0; i < n; i++)
    k += mask[i];
  *inside = k;
  *out = mask;
  return IMGSTAT_OK;
}

void ist_label_pixels_free(ist_label_pixels *l) {
  free(l->label);
  free(l->start);
  free(l->pixels);
  memset(l, 0, sizeof *l);
}

imgstat_status ist_labels_load(const imgstat_load_options *lo, const char *path,
                               const imgstat_image *img, const uint8_t *mask,
                               ist_label_pixels *out, imgstat_error *err) {
  memset(out, 0, sizeof *out);
  imgstat_image m;
  imgstat_status st = load_beside(lo, "labels", path, img, &m, err);
  if (st != IMGSTAT_OK)
    return st;
  if (m.sample == IMGSTAT_F32 || m.int16 || m.channels != 1) {
    imgstat_error_set(err, IMGSTAT_ERR_ARG,
                      "labels %s: %s, not one channel of 8- or 16-bit integers",
                      path,
                      m.sample == IMGSTAT_F32 ? "float samples"
                      : m.int16               ? "signed (int16) samples"
                                              : "several channels");
    imgstat_image_free(&m);
    return IMGSTAT_ERR_ARG;
  }
  /* a counting sort of the pixels by label: raster order within each */
  uint64_t *count = calloc(65537, sizeof *count);
  uint64_t n = (uint64_t)img->width * img->height;
  uint32_t *list = malloc((n ? n : 1) * sizeof *list);
  if (!count || !list) {
    free(count);
    free(list);
    imgstat_image_free(&m);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  size_t stride = imgstat_image_stride(&m);
#define LABEL_AT(y, x)                                                         \
  (m.sample == IMGSTAT_U8                                                      \
       ? ((const uint8_t *)m.planes[0] + (size_t)(y)*stride)[x]                \
       : ((const uint16_t *)(const void *)((const char *)m.planes[0] +         \
                                           (size_t)(y)*stride))[x])
  for (uint32_t y = 0; y < m.height; y++)
    for (uint32_t x = 0; x < m.width; x++)
      if (!mask || mask[(uint64_t)y * m.width + x])
        count[LABEL_AT(y, x) + 1]++;
  uint32_t nlabels = 0;
  for (uint32_t l = 1; l < 65536; l++)
    nlabels += count[l + 1] > 0;
  for (uint32_t l = 1; l <= 65536; l++)
    count[l] += count[l - 1];
  /* count[l]: the first slot of label l */
  out->label = calloc(nlabels ? nlabels : 1, sizeof *out->label);
  out->start = calloc((size_t)nlabels + 1, sizeof *out->start);
  if (!out->label || !out->start) {
    free(count);
    free(list);
    imgstat_image_free(&m);
    ist_label_pixels_free(out);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  uint32_t k = 0;
  for (uint32_t l = 1; l < 65536; l++)
    if (count[l + 1] > count[l]) {
      out->label[k] = l;
      out->start[k++] = count[l];
    }
  out->start[nlabels] = count[65536]; /* the end of the last label's */
  out->count = nlabels;
  for (uint32_t y = 0; y < m.height; y++)
    for (uint32_t x = 0; x < m.width; x++)
      if (!mask || mask[(uint64_t)y * m.width + x])
        list[count[LABEL_AT(y, x)]++] = (uint32_t)((uint64_t)y * m.width + x);
#undef LABEL_AT
  free(count);
  imgstat_image_free(&m);
  out->pixels = list;
  return IMGSTAT_OK;
}
