/*
 * Inputs: path arguments and lists of paths expanded, lazily, into the
 * ordered list of inputs (the rules are in imgstat/inputs.h).
 *
 * The iterator is a small machine: the sources in the order given; the list
 * being read, one record at a time; and a stack of the directories being
 * walked, each with its entries read, classified and sorted when it is
 * entered (its descriptor is closed at once, so a deep tree holds no
 * descriptors). Items found wait in a queue until they are taken.
 *
 * Order. Sorting each directory's entries by their names, with a '/'
 * appended to the names of the directories to walk, gives the byte order of
 * the whole paths: every path under "d/x/" shares that prefix, and no other
 * entry of "d" can start with "x/".
 *
 * Reading ahead. With walkers (imgstat_inputs_options.walkers), a small pool
 * of threads reads the directories the walk will enter next: when a
 * directory is entered, its first subdirectories (WALK_AHEAD of them, then
 * one more as each is entered) become jobs that the threads open, read,
 * classify and sort, deepest first. Entering a directory takes its job's
 * result (waiting for it, or doing it on the spot when no thread has taken
 * it yet); everything else (the loop check, the directories left out, the
 * errors and their place) is decided there as without the pool, so the
 * items and their order are the same whatever the number of threads.
 */
#define _DEFAULT_SOURCE /* d_type */
#include "imgstat/batch.h"
#include "imgstat/inputs.h"
#include "imgstat/outputs.h"
#include "io_engine.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct source {
  int is_list;
  char separator; /* lists */
  char *name;
} source;

enum { ENTRY_FILE, ENTRY_DIR, ENTRY_ERROR };

struct walk_job;

/* An entry of a directory being walked, classified when it was read. */
typedef struct entry {
  char *key;     /* the name; a directory to walk has a '/' appended */
  int what;      /* ENTRY_* */
  int error;     /* ENTRY_ERROR: an errno, or 0 for "not a regular file" */
  uint64_t size; /* ENTRY_FILE */
  struct walk_job *job; /* ENTRY_DIR: its reading ahead, NULL if none */
} entry;

typedef struct frame {
  char *path; /* as walked */
  dev_t dev;
  ino_t ino;
  entry *entries;
  size_t count, pos;
  size_t scan;  /* entries looked at for reading ahead */
  size_t ahead; /* their jobs not yet entered */
} frame;

/* The subdirectories of a directory read ahead at once, at most. */
#define WALK_AHEAD 8
/* The threads reading ahead, at most (imgstat_inputs_options.walkers). */
#define WALKERS_MAX 64
#define WALKERS_DEFAULT 8

enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE };

/* A directory read ahead: what entering it needs, found by a walker. */
typedef struct walk_job {
  struct walk_job *next; /* in the queue */
  int state;             /* JOB_* (under the pool's lock) */
  size_t depth;          /* the frame it will have: deepest first */
  uint64_t seq;          /* then in the walk's order */
  char *path;
  int follow_link;
  int open_error; /* open or fstat failed: errno */
  struct stat st;
  frame f; /* entries, count */
  int read_error;
  uint64_t skipped;
  imgstat_status status; /* IMGSTAT_ERR_NOMEM: out of memory reading */
} walk_job;

typedef struct walk_pool {
  pthread_mutex_t m;
  pthread_cond_t work_cv; /* walkers: a job is queued, or stop */
  pthread_cond_t done_cv; /* the walk: a job is done */
  pthread_t threads[WALKERS_MAX];
  int nthreads, stop;
  walk_job *queue;
  uint64_t seq;
} walk_pool;

/* A queued item and its strings, in one block. */
typedef struct node {
  struct node *next;
  imgstat_input item;
} node;

struct imgstat_inputs {
  int follow;
  int walkers;     /* threads reading ahead; 0 or 1: none */
  walk_pool *pool; /* started when the first directory is entered */
  int pool_failed; /* could not start: read as the walk enters */
  source *sources;
  size_t nsources, sources_cap, next_source;
  int stdin_taken; /* 1: an image "-", 2: a list "-" */
  int started, done;
  /* the list being read */
  FILE *list;
  int list_is_stdin;
  char separator;
  const char *list_name;
  char *record;
  size_t record_cap;
  /* the directories being walked, outermost first */
  frame *stack;
  size_t depth, stack_cap;
  /* items found and not yet taken */
  node *first, *last;
  size_t queued;
  uint64_t found; /* items found so far: the next index */
  /* the walk of a directory argument (or list line): the items found when
   * it was entered, and the other files its walk skipped by extension */
  uint64_t root_first;
  uint64_t root_skipped;
  /* the archive being read (a path argument or list line), its path */
  ist_archive *archive;
  char *archive_path;
  uint64_t max_member;   /* bytes a member is read into, at most */
  int names_only;        /* members listed, their bytes not read (collect) */
  uint64_t queued_bytes; /* members' bytes in the queue */
  /* an iterator over a list: the archive its members' bytes are read from
   * (kept open while the members come in its order) and the next entry */
  int load_members;
  ist_archive *cursor;
  char *cursor_path;
  uint64_t cursor_next;
  /* directories a walk leaves out (imgstat_inputs_exclude_dir) */
  struct excluded {
    dev_t dev;
    ino_t ino;
  } * excluded;
  size_t nexcluded;
};

static imgstat_status nomem(imgstat_error *err) {
  return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                           "out of memory listing the inputs");
}

void imgstat_input_free(imgstat_input *item) {
  if (item) {
    free((void *)item->data);
    free((char *)item - offsetof(node, item));
  }
}

imgstat_status imgstat_inputs_create(const imgstat_inputs_options *opts,
                                     imgstat_inputs **out, imgstat_error *err) {
  if (!out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no list to create");
  *out = calloc(1, sizeof **out);
  if (!*out)
    return nomem(err);
  (*out)->max_member = IMGSTAT_DEFAULT_MAX_MEMORY;
  int walkers = 0;
  if (opts) {
    (*out)->follow = opts->follow != 0;
    if (opts->max_member)
      (*out)->max_member = opts->max_member;
    walkers = opts->walkers;
  }
  if (walkers <= 0) /* they wait on the filesystem more than they compute */
    walkers = WALKERS_DEFAULT;
  (*out)->walkers = walkers > WALKERS_MAX ? WALKERS_MAX : walkers;
  return IMGSTAT_OK;
}

static void job_free(walk_job *j);

static void frame_free(frame *f) {
  for (size_t i = 0; i < f->count; i++) {
    free(f->entries[i].key);
    job_free(f->entries[i].job);
  }
  free(f->entries);
  free(f->path);
}

static void job_free(walk_job *j) {
  if (j) {
    frame_free(&j->f);
    free(j->path);
    free(j);
  }
}

static void pool_stop(walk_pool *p);

void imgstat_inputs_destroy(imgstat_inputs *in) {
  if (!in)
    return;
  pool_stop(in->pool); /* no job runs now: the frames own them all */
  for (size_t i = 0; i < in->nsources; i++)
    free(in->sources[i].name);
  free(in->sources);
  if (in->list && !in->list_is_stdin)
    fclose(in->list);
  free(in->record);
  for (size_t i = 0; i < in->depth; i++)
    frame_free(&in->stack[i]);
  free(in->stack);
  free(in->excluded);
  ist_archive_close(in->archive);
  free(in->archive_path);
  ist_archive_close(in->cursor);
  free(in->cursor_path);
  while (in->first) {
    node *n = in->first;
    in->first = n->next;
    imgstat_input_free(&n->item);
  }
  free(in);
}

static imgstat_status add_source(imgstat_inputs *in, int is_list,
                                 const char *name, char separator,
                                 imgstat_error *err) {
  if (!in || !name)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no list or no path");
  if (in->started)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "inputs are added before the first is taken");
  if (is_list && separator != '\n' && separator != '\0')
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "a list separates paths by newlines or NULs");
  int is_stdin = strcmp(name, "-") == 0;
  if (is_stdin && (in->stdin_taken == 2 || (is_list && in->stdin_taken)))
    return imgstat_error_set(
        err, IMGSTAT_ERR_ARG,
        "standard input cannot be both a list of paths and an input");
  if (in->nsources == in->sources_cap) {
    size_t cap = in->sources_cap ? 2 * in->sources_cap : 8;
    source *s = realloc(in->sources, cap * sizeof *s);
    if (!s)
      return nomem(err);
    in->sources = s;
    in->sources_cap = cap;
  }
  char *copy = strdup(name);
  if (!copy)
    return nomem(err);
  in->sources[in->nsources++] = (source){is_list, separator, copy};
  if (is_stdin)
    in->stdin_taken = is_list ? 2 : 1;
  return IMGSTAT_OK;
}

imgstat_status imgstat_inputs_add_path(imgstat_inputs *in, const char *path,
                                       imgstat_error *err) {
  return add_source(in, 0, path, 0, err);
}

imgstat_status imgstat_inputs_exclude_dir(imgstat_inputs *in, const char *path,
                                          imgstat_error *err) {
  struct stat st;
  if (!in || !path)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no directory to exclude");
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    return IMGSTAT_OK; /* nothing there to walk into */
  struct excluded *p =
      realloc(in->excluded, (in->nexcluded + 1) * sizeof *in->excluded);
  if (!p)
    return nomem(err);
  in->excluded = p;
  in->excluded[in->nexcluded].dev = st.st_dev;
  in->excluded[in->nexcluded++].ino = st.st_ino;
  return IMGSTAT_OK;
}

imgstat_status imgstat_inputs_add_list(imgstat_inputs *in, const char *list,
                                       char separator, imgstat_error *err) {
  return add_source(in, 1, list, separator, err);
}

/* ---- items ----------------------------------------------------------------
 */

static void enqueue(imgstat_inputs *in, node *n) {
  if (in->last)
    in->last->next = n;
  else
    in->first = n;
  in->last = n;
  in->queued++;
}

/* Queues an item: path is dir + '/' + name when dir is not NULL (no second
 * '/' when dir ends with one), else name; message for an error item. */
static imgstat_status emit(imgstat_inputs *in, imgstat_input_kind kind,
                           const char *dir, const char *name, size_t name_len,
                           uint64_t size, int size_known, int read_once,
                           const char *message, imgstat_error *err) {
  size_t dir_len = dir ? strlen(dir) : 0;
  int slash = dir && (dir_len == 0 || dir[dir_len - 1] != '/');
  size_t msg_len = message ? strlen(message) : 0;
  size_t bytes = sizeof(node) + dir_len + (size_t)slash + name_len + 1 +
                 (message ? msg_len + 1 : 0);
  node *n = malloc(bytes);
  if (!n)
    return nomem(err);
  char *p = (char *)(n + 1);
  n->next = NULL;
  n->item.kind = kind;
  n->item.index = in->found++;
  n->item.path = p;
  if (dir_len)
    memcpy(p, dir, dir_len);
  p += dir_len;
  if (slash)
    *p++ = '/';
  memcpy(p, name, name_len);
  p += name_len;
  *p++ = '\0';
  n->item.root_len = 0;
  if (dir && in->depth > 0) { /* found in a walk: below its argument */
    size_t rlen = strlen(in->stack[0].path);
    n->item.root_len = rlen + (rlen == 0 || in->stack[0].path[rlen - 1] != '/');
  }
  n->item.member = 0;
  n->item.data = NULL;
  n->item.size = size_known ? size : 0;
  n->item.size_known = size_known;
  n->item.read_once = read_once;
  n->item.status = kind == IMGSTAT_INPUT_ERROR ? IMGSTAT_ERR_IO : IMGSTAT_OK;
  n->item.message = NULL;
  if (message) {
    memcpy(p, message, msg_len + 1);
    n->item.message = p;
  }
  enqueue(in, n);
  return IMGSTAT_OK;
}

static imgstat_status emit_error(imgstat_inputs *in, const char *dir,
                                 const char *name, size_t name_len, int error,
                                 imgstat_error *err) {
  return emit(in, IMGSTAT_INPUT_ERROR, dir, name, name_len, 0, 0, 0,
              error ? strerror(error) : "not a regular file", err);
}

/* An error item with its status. */
static imgstat_status emit_failed(imgstat_inputs *in, const char *dir,
                                  const char *name, size_t name_len,
                                  imgstat_status status, const char *message,
                                  imgstat_error *err) {
  imgstat_status s =
      emit(in, IMGSTAT_INPUT_ERROR, dir, name, name_len, 0, 0, 0, message, err);
  if (s == IMGSTAT_OK)
    in->last->item.status = status;
  return s;
}

/* A directory argument (or list line) whose walk found nothing: an error
 * item in its place, so that a run over it does not pass in silence. */
static imgstat_status no_images(imgstat_inputs *in, const char *path,
                                imgstat_error *err) {
  char msg[96];
  uint64_t n = in->root_skipped;
  snprintf(msg, sizeof msg,
           "no image files (%llu other file%s skipped by extension)",
           (unsigned long long)n, n == 1 ? "" : "s");
  return emit(in, IMGSTAT_INPUT_ERROR, NULL, path, strlen(path), 0, 0, 0, msg,
              err);
}

/* ---- archives -------------------------------------------------------------
 * A path argument or list line that is an archive is read like a folder, in
 * place: its members in the archive's order, each an item named by the
 * archive's path, a '/' and the member's name, with its bytes read into
 * memory when the item is found (so the prefetch holds at most
 * ARCHIVE_AHEAD bytes of members beside one), or, in a collected list, when
 * an iterator over the list hands it out. */

#define ARCHIVE_AHEAD ((uint64_t)16 << 20)

static void archive_end(imgstat_inputs *in) {
  ist_archive_close(in->archive);
  free(in->archive_path);
  in->archive = NULL;
  in->archive_path = NULL;
}

static imgstat_status archive_enter(imgstat_inputs *in, const char *path,
                                    size_t len, imgstat_error *err) {
  imgstat_error e;
  memset(&e, 0, sizeof e);
  ist_archive *ar = NULL;
  imgstat_status s = ist_archive_open(path, &ar, &e);
  if (s == IMGSTAT_ERR_NOMEM)
    return nomem(err);
  if (s != IMGSTAT_OK)
    return emit_failed(in, NULL, path, len, s, e.message, err);
  char *copy = strdup(path);
  if (!copy) {
    ist_archive_close(ar);
    return nomem(err);
  }
  in->archive = ar;
  in->archive_path = copy;
  in->root_first = in->found;
  in->root_skipped = 0;
  return IMGSTAT_OK;
}

/* Queues a member of the archive being read (data: its size bytes, taken;
 * NULL when not read). */
static imgstat_status emit_member(imgstat_inputs *in, const ist_member *m,
                                  unsigned char *data, size_t size,
                                  imgstat_error *err) {
  imgstat_status s =
      emit(in, IMGSTAT_INPUT_MEMBER, in->archive_path, m->name, strlen(m->name),
           data ? size : m->size, data || m->size_known, 0, NULL, err);
  if (s != IMGSTAT_OK) {
    free(data);
    return s;
  }
  imgstat_input *it = &in->last->item;
  it->root_len = strlen(in->archive_path) + 1;
  it->member = m->number;
  it->data = data;
  if (data)
    in->queued_bytes += size;
  return IMGSTAT_OK;
}

/* One entry of the archive being read. */
static imgstat_status archive_step(imgstat_inputs *in, imgstat_error *err) {
  const char *ap = in->archive_path;
  imgstat_error e;
  memset(&e, 0, sizeof e);
  ist_member m;
  imgstat_status s = ist_archive_next(in->archive, &m, &e);
  if (s == IMGSTAT_ERR_NOMEM)
    return nomem(err);
  if (s != IMGSTAT_OK) { /* damaged: what came before it is kept */
    s = emit_failed(in, NULL, ap, strlen(ap), s, e.message, err);
    archive_end(in);
    return s;
  }
  switch (m.what) {
  case IST_MEMBER_END:
    s = IMGSTAT_OK;
    if (in->found == in->root_first) {
      char msg[96];
      uint64_t n = in->root_skipped;
      snprintf(msg, sizeof msg,
               "no image members (%llu other member%s skipped by extension)",
               (unsigned long long)n, n == 1 ? "" : "s");
      s = emit(in, IMGSTAT_INPUT_ERROR, NULL, ap, strlen(ap), 0, 0, 0, msg,
               err);
    }
    archive_end(in);
    return s;
  case IST_MEMBER_DIR:
    return IMGSTAT_OK;
  case IST_MEMBER_OTHER:
    in->root_skipped++;
    return IMGSTAT_OK;
  case IST_MEMBER_REFUSED:
    return emit_failed(in, ap, m.name, strlen(m.name), IMGSTAT_ERR_FORMAT,
                       m.message, err);
  default:
    break;
  }
  if (in->names_only)
    return emit_member(in, &m, NULL, 0, err);
  unsigned char *data = NULL;
  size_t size = 0;
  int fatal = 0;
  s = ist_archive_read(in->archive, &m, in->max_member, &data, &size, &fatal,
                       &e);
  if (s == IMGSTAT_OK)
    return emit_member(in, &m, data, size, err);
  s = emit_failed(in, ap, m.name, strlen(m.name), s, e.message, err);
  if (fatal && s == IMGSTAT_OK) {
    /* a zip goes on after a damaged member; a tar (or a compressed stream)
     * ends there */
    imgstat_error r;
    memset(&r, 0, sizeof r);
    if (ist_archive_resume(in->archive, &r) != IMGSTAT_OK)
      archive_end(in);
  }
  return s;
}

static void cursor_close(imgstat_inputs *in) {
  ist_archive_close(in->cursor);
  free(in->cursor_path);
  in->cursor = NULL;
  in->cursor_path = NULL;
  in->cursor_next = 0;
}

static imgstat_input *item_copy(const imgstat_input *src);

/* Reads the bytes of the member *np from its archive (an iterator over a
 * list); what fails makes it an error item in its place. */
static imgstat_status load_member(imgstat_inputs *in, node **np,
                                  imgstat_error *err) {
  imgstat_input *it = &(*np)->item;
  imgstat_error e;
  memset(&e, 0, sizeof e);
  imgstat_status s = IMGSTAT_OK;
  size_t alen = it->root_len - 1; /* the archive's path */
  if (in->cursor && (strlen(in->cursor_path) != alen ||
                     memcmp(in->cursor_path, it->path, alen) != 0 ||
                     in->cursor_next > it->member))
    cursor_close(in);
  if (!in->cursor) {
    char *p = strndup(it->path, alen);
    if (!p)
      return nomem(err);
    s = ist_archive_open(p, &in->cursor, &e);
    if (s == IMGSTAT_OK)
      in->cursor_path = p;
    else
      free(p);
  }
  ist_member m;
  memset(&m, 0, sizeof m);
  while (s == IMGSTAT_OK) {
    s = ist_archive_next(in->cursor, &m, &e);
    if (s != IMGSTAT_OK || m.what == IST_MEMBER_END || m.number >= it->member)
      break;
    in->cursor_next = m.number + 1;
  }
  if (s == IMGSTAT_OK && (m.what != IST_MEMBER_FILE || m.number != it->member))
    s = imgstat_error_set(&e, IMGSTAT_ERR_IO,
                          "the archive changed since it was listed");
  unsigned char *data = NULL;
  size_t size = 0;
  int fatal = 1;
  if (s == IMGSTAT_OK) {
    in->cursor_next = m.number + 1;
    s = ist_archive_read(in->cursor, &m, in->max_member, &data, &size, &fatal,
                         &e);
  }
  if (s == IMGSTAT_OK) {
    it->data = data;
    it->size = size;
    it->size_known = 1;
    return IMGSTAT_OK;
  }
  if (fatal)
    cursor_close(in);
  imgstat_input failed = *it;
  failed.kind = IMGSTAT_INPUT_ERROR;
  failed.status = s;
  failed.message = e.message[0] ? e.message : "cannot be read";
  failed.root_len = 0;
  failed.member = 0;
  failed.size = 0;
  failed.size_known = 0;
  imgstat_input *copy = item_copy(&failed);
  if (!copy)
    return nomem(err);
  imgstat_input_free(it);
  *np = (node *)((char *)copy - offsetof(node, item));
  return IMGSTAT_OK;
}

/* ---- directories ----------------------------------------------------------
 */

/* Whether a directory (dev, ino) is on the stack already (a loop). */
static const frame *ancestor(const imgstat_inputs *in, dev_t dev, ino_t ino) {
  for (size_t i = 0; i < in->depth; i++)
    if (in->stack[i].dev == dev && in->stack[i].ino == ino)
      return &in->stack[i];
  return NULL;
}

static int entry_order(const void *a, const void *b) {
  return strcmp(((const entry *)a)->key, ((const entry *)b)->key);
}

/* Classifies the entry name of the directory open as dirfd (d_type: what
 * readdir said, DT_UNKNOWN if nothing). Returns 0 when the walk skips it,
 * -1 when that is a file skipped for its extension, else 1 with *e filled
 * (its key still to set). */
static int classify(const imgstat_inputs *in, int dirfd, const char *name,
                    int d_type, entry *e) {
  int image = ist_extension_is_image(name);
  memset(e, 0, sizeof *e);
  if (d_type == DT_DIR) {
    e->what = ENTRY_DIR;
    return 1;
  }
  if (d_type == DT_REG && !image)
    return -1;
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    e->what = ENTRY_ERROR;
    e->error = errno;
    return image; /* gone, or unreadable: no telling what it was */
  }
  if (S_ISLNK(st.st_mode)) {
    if (fstatat(dirfd, name, &st, 0) != 0) {
      e->what = ENTRY_ERROR; /* dangling, a loop of links, no access */
      e->error = errno;
      return image;
    }
    if (S_ISDIR(st.st_mode)) {
      if (!in->follow)
        return 0;
      e->what = ENTRY_DIR;
      return 1;
    }
  }
  if (S_ISDIR(st.st_mode)) {
    e->what = ENTRY_DIR;
    return 1;
  }
  if (!image)
    return -1;
  if (!S_ISREG(st.st_mode)) {
    e->what = ENTRY_ERROR; /* a FIFO would block, a device never end */
    e->error = 0;
    return 1;
  }
  e->what = ENTRY_FILE;
  e->size = (uint64_t)st.st_size;
  return 1;
}

/* Reads, classifies and sorts the entries of the directory open as fd
 * (closed here); *skipped counts the files skipped for their extension. On
 * a failure of readdir, *read_error is its errno and the entries read so
 * far are kept. Touches nothing of in but its options (walkers call it):
 * IMGSTAT_ERR_NOMEM without a message when out of memory. */
static imgstat_status read_entries(const imgstat_inputs *in, int fd, frame *f,
                                   int *read_error, uint64_t *skipped) {
  *read_error = 0;
  *skipped = 0;
  DIR *d = fdopendir(fd);
  if (!d) {
    *read_error = errno;
    close(fd);
    return IMGSTAT_OK;
  }
  size_t cap = 0;
  imgstat_status s = IMGSTAT_OK;
  for (;;) {
    errno = 0;
    struct dirent *de = readdir(d);
    if (!de) {
      *read_error = errno;
      break;
    }
    const char *name = de->d_name;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
      continue;
    int d_type = DT_UNKNOWN;
#ifdef _DIRENT_HAVE_D_TYPE
    d_type = de->d_type;
#endif
    entry e;
    int what = classify(in, dirfd(d), name, d_type, &e);
    *skipped += what < 0;
    if (what <= 0)
      continue;
    size_t len = strlen(name);
    int slash = e.what == ENTRY_DIR;
    e.key = malloc(len + (size_t)slash + 1);
    if (!e.key) {
      s = IMGSTAT_ERR_NOMEM;
      break;
    }
    memcpy(e.key, name, len);
    if (slash)
      e.key[len++] = '/';
    e.key[len] = '\0';
    if (f->count == cap) {
      size_t ncap = cap ? 2 * cap : 16;
      entry *p = realloc(f->entries, ncap * sizeof *p);
      if (!p) {
        free(e.key);
        s = IMGSTAT_ERR_NOMEM;
        break;
      }
      f->entries = p;
      cap = ncap;
    }
    f->entries[f->count++] = e;
  }
  closedir(d);
  if (f->count > 1)
    qsort(f->entries, f->count, sizeof *f->entries, entry_order);
  return s;
}

/* dir + '/' + name (no second '/' when dir ends with one; dir NULL: name),
 * allocated; NULL when out of memory. */
static char *join(const char *dir, const char *name, size_t name_len) {
  size_t dir_len = dir ? strlen(dir) : 0;
  int slash = dir && (dir_len == 0 || dir[dir_len - 1] != '/');
  char *path = malloc(dir_len + (size_t)slash + name_len + 1);
  if (!path)
    return NULL;
  if (dir_len)
    memcpy(path, dir, dir_len);
  if (slash)
    path[dir_len] = '/';
  memcpy(path + dir_len + slash, name, name_len);
  path[dir_len + (size_t)slash + name_len] = '\0';
  return path;
}

/* Opens the directory path and fstat()s it: its descriptor, or -1 with
 * errno set. An argument's directory is reached through links
 * (follow_link); one met in a walk only with the option follow. */
static int open_dir(const char *path, int follow_link, struct stat *st) {
  int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  if (!follow_link)
    flags |= O_NOFOLLOW;
  int fd = open(path, flags);
  if (fd >= 0 && fstat(fd, st) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    fd = -1;
  }
  return fd;
}

/* ---- reading ahead --------------------------------------------------------
 */

/* What entering the job's directory needs: opened and read (a walker, or
 * the walk itself when no walker has taken it). */
static void job_run(const imgstat_inputs *in, walk_job *j) {
  int fd = open_dir(j->path, j->follow_link, &j->st);
  if (fd < 0) {
    j->open_error = errno;
    return;
  }
  j->status = read_entries(in, fd, &j->f, &j->read_error, &j->skipped);
}

/* Takes the queued job at *at out of the queue and runs it, p->m held on
 * entry and on return (released while it runs); its waiters are woken. */
static void job_take_run(const imgstat_inputs *in, walk_pool *p,
                         walk_job **at) {
  walk_job *j = *at;
  *at = j->next;
  j->next = NULL;
  j->state = JOB_RUNNING;
  pthread_mutex_unlock(&p->m);
  job_run(in, j);
  pthread_mutex_lock(&p->m);
  j->state = JOB_DONE;
  pthread_cond_broadcast(&p->done_cv);
}

static void *walker(void *arg) {
  imgstat_inputs *in = arg;
  walk_pool *p = in->pool;
  pthread_mutex_lock(&p->m);
  for (;;) {
    while (!p->stop && !p->queue)
      pthread_cond_wait(&p->work_cv, &p->m);
    if (p->stop)
      break;
    /* the deepest first (the walk enters it sooner), then the oldest */
    walk_job **best = &p->queue;
    for (walk_job **q = &p->queue; *q; q = &(*q)->next)
      if ((*q)->depth > (*best)->depth ||
          ((*q)->depth == (*best)->depth && (*q)->seq < (*best)->seq))
        best = q;
    job_take_run(in, p, best);
  }
  pthread_mutex_unlock(&p->m);
  return NULL;
}

/* Starts the walkers; 0 when none could be (the walk then reads each
 * directory as it enters it). */
static int pool_start(imgstat_inputs *in) {
  walk_pool *p = calloc(1, sizeof *p);
  if (!p)
    return 0;
  if (pthread_mutex_init(&p->m, NULL) != 0) {
    free(p);
    return 0;
  }
  if (pthread_cond_init(&p->work_cv, NULL) != 0) {
    pthread_mutex_destroy(&p->m);
    free(p);
    return 0;
  }
  if (pthread_cond_init(&p->done_cv, NULL) != 0) {
    pthread_cond_destroy(&p->work_cv);
    pthread_mutex_destroy(&p->m);
    free(p);
    return 0;
  }
  in->pool = p;
  for (int k = 0; k < in->walkers; k++) {
    if (pthread_create(&p->threads[k], NULL, walker, in) != 0)
      break;
    p->nthreads++;
  }
  if (p->nthreads == 0) {
    pool_stop(p);
    in->pool = NULL;
    return 0;
  }
  return 1;
}

/* Stops and joins the walkers; the jobs stay with their entries. */
static void pool_stop(walk_pool *p) {
  if (!p)
    return;
  pthread_mutex_lock(&p->m);
  p->stop = 1;
  pthread_cond_broadcast(&p->work_cv);
  pthread_mutex_unlock(&p->m);
  for (int k = 0; k < p->nthreads; k++)
    pthread_join(p->threads[k], NULL);
  pthread_cond_destroy(&p->done_cv);
  pthread_cond_destroy(&p->work_cv);
  pthread_mutex_destroy(&p->m);
  free(p);
}

/* Queues jobs for the next subdirectories of the frame at stack index
 * depth - 1, up to WALK_AHEAD not yet entered. What cannot be queued is
 * read when entered. */
static void read_ahead(imgstat_inputs *in, size_t depth) {
  if (in->walkers <= 1 || in->pool_failed)
    return;
  frame *f = &in->stack[depth - 1];
  if (f->scan < f->pos)
    f->scan = f->pos;
  while (f->ahead < WALK_AHEAD && f->scan < f->count) {
    entry *e = &f->entries[f->scan];
    if (e->what != ENTRY_DIR) {
      f->scan++;
      continue;
    }
    if (!in->pool && !pool_start(in)) {
      in->pool_failed = 1;
      return;
    }
    walk_job *j = calloc(1, sizeof *j);
    if (!j)
      return;
    j->path = join(f->path, e->key, strlen(e->key) - 1);
    if (!j->path) {
      free(j);
      return;
    }
    j->follow_link = in->follow;
    j->depth = depth;
    walk_pool *p = in->pool;
    pthread_mutex_lock(&p->m);
    j->seq = p->seq++;
    j->state = JOB_QUEUED;
    j->next = p->queue;
    p->queue = j;
    pthread_cond_signal(&p->work_cv);
    pthread_mutex_unlock(&p->m);
    e->job = j;
    f->ahead++;
    f->scan++;
  }
}

/* Waits for the job's result; runs it here when no walker has taken it. */
static void job_wait(imgstat_inputs *in, walk_job *j) {
  walk_pool *p = in->pool;
  pthread_mutex_lock(&p->m);
  if (j->state == JOB_QUEUED) {
    walk_job **q = &p->queue;
    while (*q != j)
      q = &(*q)->next;
    job_take_run(in, p, q);
  }
  while (j->state != JOB_DONE)
    pthread_cond_wait(&p->done_cv, &p->m);
  pthread_mutex_unlock(&p->m);
}

/* Enters the directory at dir + '/' + name (dir NULL: name is the whole
 * path): pushes its frame, or queues an error item in its place. An
 * argument's directory is reached through links (follow_link); one met in a
 * walk only with the option follow. job: the directory read ahead (taken),
 * or NULL to read it here. */
static imgstat_status enter(imgstat_inputs *in, const char *dir,
                            const char *name, size_t name_len, int follow_link,
                            walk_job *job, imgstat_error *err) {
  char *path;
  int fd = -1, open_error = 0;
  struct stat st;
  imgstat_status s;
  if (job) {
    job_wait(in, job);
    path = job->path;
    job->path = NULL;
    open_error = job->open_error;
    st = job->st;
  } else {
    path = join(dir, name, name_len);
    if (!path)
      return nomem(err);
    fd = open_dir(path, follow_link, &st);
    if (fd < 0)
      open_error = errno;
  }
  if (open_error) {
    job_free(job);
    s = emit_error(in, NULL, path, strlen(path), open_error, err);
    free(path);
    return s;
  }
  for (size_t k = 0; dir && k < in->nexcluded; k++)
    if (in->excluded[k].dev == st.st_dev && in->excluded[k].ino == st.st_ino) {
      if (fd >= 0)
        close(fd); /* left out of walks (imgstat_inputs_exclude_dir) */
      job_free(job);
      free(path);
      return IMGSTAT_OK;
    }
  const frame *a = ancestor(in, st.st_dev, st.st_ino);
  if (a) {
    if (fd >= 0)
      close(fd);
    job_free(job);
    char msg[128 + 64];
    size_t alen = strlen(a->path);
    /* a message, not a path: a long one is cut */
    snprintf(msg, sizeof msg, "file system loop: the same directory as %s%s",
             alen > 128 ? "..." : "",
             alen > 128 ? a->path + alen - 128 : a->path);
    s = emit(in, IMGSTAT_INPUT_ERROR, NULL, path, strlen(path), 0, 0, 0, msg,
             err);
    free(path);
    return s;
  }
  if (in->depth == in->stack_cap) {
    size_t cap = in->stack_cap ? 2 * in->stack_cap : 8;
    frame *p = realloc(in->stack, cap * sizeof *p);
    if (!p) {
      if (fd >= 0)
        close(fd);
      job_free(job);
      free(path);
      return nomem(err);
    }
    in->stack = p;
    in->stack_cap = cap;
  }
  frame *f = &in->stack[in->depth];
  memset(f, 0, sizeof *f);
  if (in->depth == 0) {
    in->root_first = in->found;
    in->root_skipped = 0;
  }
  f->path = path;
  f->dev = st.st_dev;
  f->ino = st.st_ino;
  int read_error;
  uint64_t skipped;
  if (job) {
    f->entries = job->f.entries;
    f->count = job->f.count;
    job->f.entries = NULL;
    job->f.count = 0;
    read_error = job->read_error;
    skipped = job->skipped;
    s = job->status;
    job_free(job);
  } else {
    s = read_entries(in, fd, f, &read_error, &skipped);
  }
  if (s != IMGSTAT_OK) {
    frame_free(f);
    return nomem(err);
  }
  in->root_skipped += skipped;
  in->depth++;
  read_ahead(in, in->depth);
  /* A directory that could not be read to its end: the error in its place,
   * before whatever it gave. */
  if (read_error)
    return emit_error(in, NULL, path, strlen(path), read_error, err);
  return IMGSTAT_OK;
}

const char *imgstat_inputs_archives(void) { return ist_archive_description(); }

int imgstat_inputs_is_archive(const char *path) {
  struct stat st;
  return path && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
         !ist_extension_is_image(path) && ist_archive_sniff(path);
}

/* A path argument or list record: one input, or a directory to walk. */
static imgstat_status take_path(imgstat_inputs *in, const char *path,
                                size_t len, int is_argument,
                                imgstat_error *err) {
  struct stat st;
  /* whether it can be read only once: from its type, decided here once
   * (stat follows /dev/stdin and /dev/fd/N to what they name, and opens
   * nothing, so a FIFO is not waited for) */
  if (is_argument && strcmp(path, "-") == 0) {
    int once = fstat(STDIN_FILENO, &st) != 0 || ist_read_once_mode(st.st_mode);
    return emit(in, IMGSTAT_INPUT_STDIN, NULL, path, len, 0, 0, once, NULL,
                err);
  }
  if (strlen(path) != len) {
    return emit(in, IMGSTAT_INPUT_ERROR, NULL, path, strlen(path), 0, 0, 0,
                "the path in the list holds a NUL byte", err);
  }
  if (stat(path, &st) != 0)
    return emit_error(in, NULL, path, len, errno, err);
  if (S_ISDIR(st.st_mode))
    return enter(in, NULL, path, len, 1, NULL, err);
  /* an archive is read like a folder (an image's name is taken as one) */
  if (S_ISREG(st.st_mode) && !ist_extension_is_image(path) &&
      ist_archive_sniff(path))
    return archive_enter(in, path, len, err);
  return emit(in, IMGSTAT_INPUT_FILE, NULL, path, len, (uint64_t)st.st_size,
              S_ISREG(st.st_mode), ist_read_once_mode(st.st_mode), NULL, err);
}

/* ---- the machine ----------------------------------------------------------
 */

static void list_close(imgstat_inputs *in) {
  if (in->list && !in->list_is_stdin)
    fclose(in->list);
  in->list = NULL;
}

/* One step: queues at most a few items, or finds the end (in->done). */
static imgstat_status step(imgstat_inputs *in, imgstat_error *err) {
  if (in->depth > 0) {
    frame *f = &in->stack[in->depth - 1];
    if (f->pos == f->count) {
      imgstat_status s = IMGSTAT_OK;
      if (in->depth == 1 && in->found == in->root_first)
        s = no_images(in, f->path, err);
      frame_free(f);
      in->depth--;
      return s;
    }
    entry *e = &f->entries[f->pos++];
    size_t len = strlen(e->key);
    switch (e->what) {
    case ENTRY_DIR: {
      walk_job *job = e->job;
      e->job = NULL;
      if (job)
        f->ahead--;
      read_ahead(in, in->depth); /* the next one, before the stack moves */
      return enter(in, f->path, e->key, len - 1, in->follow, job, err);
    }
    case ENTRY_FILE:
      return emit(in, IMGSTAT_INPUT_FILE, f->path, e->key, len, e->size, 1, 0,
                  NULL, err);
    default:
      return emit(in, IMGSTAT_INPUT_ERROR, f->path, e->key, len, 0, 0, 0,
                  e->error ? strerror(e->error) : "not a regular file", err);
    }
  }
  if (in->archive)
    return archive_step(in, err);
  if (in->list) {
    errno = 0;
    ssize_t n = getdelim(&in->record, &in->record_cap, in->separator, in->list);
    if (n < 0) {
      int e = ferror(in->list) ? (errno ? errno : EIO) : 0;
      const char *name = in->list_name;
      list_close(in);
      if (e)
        return emit_error(in, NULL, name, strlen(name), e, err);
      return IMGSTAT_OK;
    }
    size_t len = (size_t)n;
    if (len > 0 && in->record[len - 1] == in->separator)
      len--;
    in->record[len] = '\0';
    if (len == 0)
      return IMGSTAT_OK;
    return take_path(in, in->record, len, 0, err);
  }
  if (in->next_source < in->nsources) {
    const source *src = &in->sources[in->next_source++];
    if (!src->is_list)
      return take_path(in, src->name, strlen(src->name), 1, err);
    in->list_name = src->name;
    in->separator = src->separator;
    in->list_is_stdin = strcmp(src->name, "-") == 0;
    if (in->list_is_stdin) {
      in->list = stdin;
    } else {
      in->list = fopen(src->name, "r");
      if (!in->list)
        return emit_error(in, NULL, src->name, strlen(src->name), errno, err);
      struct stat st;
      if (fstat(fileno(in->list), &st) == 0 && S_ISDIR(st.st_mode)) {
        list_close(in);
        return emit_error(in, NULL, src->name, strlen(src->name), EISDIR, err);
      }
    }
    return IMGSTAT_OK;
  }
  in->done = 1;
  return IMGSTAT_OK;
}

imgstat_status imgstat_inputs_prefetch(imgstat_inputs *in, size_t max_queued,
                                       imgstat_error *err) {
  if (!in)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no list");
  in->started = 1;
  while (!in->done && in->queued < max_queued &&
         (in->queued == 0 || in->queued_bytes < ARCHIVE_AHEAD)) {
    imgstat_status s = step(in, err);
    if (s != IMGSTAT_OK)
      return s;
  }
  return IMGSTAT_OK;
}

imgstat_status imgstat_inputs_next(imgstat_inputs *in, imgstat_input **item,
                                   imgstat_error *err) {
  if (!in || !item)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no list or no item");
  *item = NULL;
  imgstat_status s = imgstat_inputs_prefetch(in, 1, err);
  if (s != IMGSTAT_OK || !in->first)
    return s;
  node *n = in->first;
  in->first = n->next;
  if (!in->first)
    in->last = NULL;
  in->queued--;
  n->next = NULL;
  if (n->item.data)
    in->queued_bytes -= n->item.size;
  if (in->load_members && n->item.kind == IMGSTAT_INPUT_MEMBER &&
      !n->item.data) {
    s = load_member(in, &n, err);
    if (s != IMGSTAT_OK) {
      imgstat_input_free(&n->item);
      return s;
    }
  }
  *item = &n->item;
  return IMGSTAT_OK;
}

imgstat_status imgstat_inputs_skip(imgstat_inputs *in, uint64_t count,
                                   imgstat_error *err) {
  if (!in)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no list");
  int load = in->load_members;
  in->load_members = 0; /* members handed out unread, and dropped */
  imgstat_status s = IMGSTAT_OK;
  for (uint64_t k = 0; k < count && s == IMGSTAT_OK; k++) {
    imgstat_input *item = NULL;
    s = imgstat_inputs_next(in, &item, err);
    if (!item)
      break;
    imgstat_input_free(item);
  }
  in->load_members = load;
  return s;
}

int imgstat_inputs_total(const imgstat_inputs *in, uint64_t *total) {
  if (!in)
    return 0;
  if (total)
    *total = in->found;
  return in->done;
}

/* ---- the whole list -------------------------------------------------------
 */

/* A new item with src's fields and copies of its strings. */
static imgstat_input *item_copy(const imgstat_input *src) {
  size_t plen = strlen(src->path);
  size_t mlen = src->message ? strlen(src->message) : 0;
  node *n = malloc(sizeof(node) + plen + 1 + (src->message ? mlen + 1 : 0));
  if (!n)
    return NULL;
  char *p = (char *)(n + 1);
  n->next = NULL;
  n->item = *src;
  n->item.data = NULL; /* a member's bytes: read again when wanted */
  memcpy(p, src->path, plen + 1);
  n->item.path = p;
  if (src->message) {
    memcpy(p + plen + 1, src->message, mlen + 1);
    n->item.message = p + plen + 1;
  }
  return &n->item;
}

void imgstat_input_list_free(imgstat_input_list *list) {
  if (!list)
    return;
  for (size_t k = 0; k < list->count; k++)
    imgstat_input_free(list->items[k]);
  free(list->items);
  list->items = NULL;
  list->count = 0;
}

/* Appends item to list (taking it); frees it when out of memory. */
static imgstat_status list_push(imgstat_input_list *list, size_t *cap,
                                imgstat_input *item, imgstat_error *err) {
  if (list->count == *cap) {
    size_t ncap = *cap ? 2 * *cap : 64;
    imgstat_input **p = realloc(list->items, ncap * sizeof *p);
    if (!p) {
      imgstat_input_free(item);
      return nomem(err);
    }
    list->items = p;
    *cap = ncap;
  }
  list->items[list->count++] = item;
  return IMGSTAT_OK;
}

imgstat_status imgstat_inputs_collect_more(imgstat_inputs *in,
                                           imgstat_input_list *list,
                                           size_t *cap, size_t max, int *done,
                                           imgstat_error *err) {
  if (!list || !cap || !done)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no list to fill");
  *done = 0;
  if (in) {
    list->max_member = in->max_member;
    in->names_only = 1; /* the members' bytes are read by the list's users */
  }
  for (size_t k = 0; k < max; k++) {
    imgstat_input *item = NULL;
    imgstat_status s = imgstat_inputs_next(in, &item, err);
    if (s == IMGSTAT_OK && item && item->data) {
      free((void *)item->data);
      item->data = NULL;
    }
    if (s == IMGSTAT_OK && item)
      s = list_push(list, cap, item, err);
    if (s != IMGSTAT_OK)
      return s;
    if (!item) {
      *done = 1;
      return IMGSTAT_OK;
    }
  }
  return IMGSTAT_OK;
}

imgstat_status imgstat_inputs_collect(imgstat_inputs *in,
                                      imgstat_input_list *list,
                                      imgstat_error *err) {
  if (!list)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no list to fill");
  list->items = NULL;
  list->count = 0;
  list->max_member = in ? in->max_member : 0;
  size_t cap = 0;
  int done = 0;
  imgstat_status s =
      imgstat_inputs_collect_more(in, list, &cap, SIZE_MAX, &done, err);
  if (s != IMGSTAT_OK)
    imgstat_input_list_free(list);
  return s;
}

const imgstat_input *
imgstat_input_list_read_once(const imgstat_input_list *list) {
  for (size_t k = 0; list && k < list->count; k++)
    if (list->items[k]->kind != IMGSTAT_INPUT_ERROR &&
        list->items[k]->read_once)
      return list->items[k];
  return NULL;
}

void imgstat_input_list_sample(const imgstat_input_list *list, uint64_t n,
                               uint64_t seed, unsigned char *take,
                               uint64_t *of) {
  uint64_t m = 0;
  for (size_t k = 0; k < list->count; k++)
    m += list->items[k]->kind != IMGSTAT_INPUT_ERROR;
  if (of)
    *of = m;
  uint64_t state = seed, i = 0, taken = 0;
  for (size_t k = 0; k < list->count; k++) {
    if (list->items[k]->kind == IMGSTAT_INPUT_ERROR || n == 0 || n >= m) {
      take[k] = 1;
      continue;
    }
    state += UINT64_C(0x9E3779B97F4A7C15); /* splitmix64 */
    uint64_t z = state;
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    z ^= z >> 31;
    double u = (double)(z >> 11) * 0x1p-53;
    take[k] = (double)(m - i) * u < (double)(n - taken);
    taken += take[k];
    i++;
  }
}

imgstat_status imgstat_inputs_from_list(const imgstat_input_list *list,
                                        imgstat_inputs **out,
                                        imgstat_error *err) {
  imgstat_status s = imgstat_inputs_create(NULL, out, err);
  if (s != IMGSTAT_OK)
    return s;
  imgstat_inputs *in = *out;
  in->started = in->done = 1;
  in->load_members = 1;
  if (list->max_member)
    in->max_member = list->max_member;
  for (size_t k = 0; k < list->count; k++) {
    imgstat_input *item = item_copy(list->items[k]);
    if (!item) {
      imgstat_inputs_destroy(in);
      *out = NULL;
      return nomem(err);
    }
    enqueue(in, (node *)((char *)item - offsetof(node, item)));
  }
  in->found = list->count;
  return IMGSTAT_OK;
}

/* The packed form: per item its fixed fields (kind, status, size_known,
 * read_once as one byte each; index, size, root_len, the path's and the
 * message's lengths and member as uint64 in native order: one
 * build on every rank) and
 * then the path and the message without their NULs; a message length of
 * UINT64_MAX is no message. */
#define PACKED_FIXED (4 + 6 * 8)

static void put_u64(unsigned char **p, uint64_t v) {
  memcpy(*p, &v, 8);
  *p += 8;
}

static uint64_t get_u64(const unsigned char **p) {
  uint64_t v;
  memcpy(&v, *p, 8);
  *p += 8;
  return v;
}

imgstat_status imgstat_input_list_pack(const imgstat_input_list *list,
                                       unsigned char **bytes, size_t *size,
                                       imgstat_error *err) {
  *bytes = NULL;
  *size = 0;
  size_t total = 0;
  for (size_t k = 0; k < list->count; k++) {
    const imgstat_input *it = list->items[k];
    total += PACKED_FIXED + strlen(it->path) +
             (it->message ? strlen(it->message) : 0);
  }
  unsigned char *buf = malloc(total ? total : 1), *p = buf;
  if (!buf)
    return nomem(err);
  for (size_t k = 0; k < list->count; k++) {
    const imgstat_input *it = list->items[k];
    size_t plen = strlen(it->path);
    size_t mlen = it->message ? strlen(it->message) : 0;
    *p++ = (unsigned char)it->kind;
    *p++ = (unsigned char)it->status;
    *p++ = (unsigned char)(it->size_known != 0);
    *p++ = (unsigned char)(it->read_once != 0);
    put_u64(&p, it->index);
    put_u64(&p, it->size);
    put_u64(&p, (uint64_t)it->root_len);
    put_u64(&p, (uint64_t)plen);
    put_u64(&p, it->message ? (uint64_t)mlen : UINT64_MAX);
    put_u64(&p, it->member);
    memcpy(p, it->path, plen);
    p += plen;
    if (mlen)
      memcpy(p, it->message, mlen);
    p += mlen;
  }
  *bytes = buf;
  *size = total;
  return IMGSTAT_OK;
}

imgstat_status imgstat_input_list_unpack(const void *bytes, size_t size,
                                         imgstat_input_list *list,
                                         imgstat_error *err) {
  const unsigned char *p = bytes, *end = p + size;
  list->items = NULL;
  list->count = 0;
  list->max_member = 0;
  size_t cap = 0;
  imgstat_status s = IMGSTAT_OK;
  char *path = NULL, *msg = NULL;
  while (p < end && s == IMGSTAT_OK) {
    if ((size_t)(end - p) < PACKED_FIXED) {
      s = imgstat_error_set(err, IMGSTAT_ERR_ARG, "a packed input list is cut");
      break;
    }
    imgstat_input it;
    memset(&it, 0, sizeof it);
    it.kind = (imgstat_input_kind)*p++;
    it.status = (imgstat_status)*p++;
    it.size_known = *p++;
    it.read_once = *p++;
    it.index = get_u64(&p);
    it.size = get_u64(&p);
    uint64_t root_len = get_u64(&p), plen = get_u64(&p), mlen = get_u64(&p);
    it.member = get_u64(&p);
    int has_msg = mlen != UINT64_MAX;
    if (!has_msg)
      mlen = 0;
    if (it.kind > IMGSTAT_INPUT_MEMBER || plen > (uint64_t)(end - p) ||
        mlen > (uint64_t)(end - p) - plen || root_len > plen ||
        (it.kind == IMGSTAT_INPUT_MEMBER && root_len == 0)) {
      s = imgstat_error_set(err, IMGSTAT_ERR_ARG,
                            "a packed input list is damaged");
      break;
    }
    it.root_len = (size_t)root_len;
    path = malloc((size_t)plen + 1);
    msg = malloc((size_t)mlen + 1);
    if (!path || !msg) {
      s = nomem(err);
      break;
    }
    memcpy(path, p, (size_t)plen);
    path[plen] = '\0';
    p += plen;
    memcpy(msg, p, (size_t)mlen);
    msg[mlen] = '\0';
    p += mlen;
    it.path = path;
    it.message = has_msg ? msg : NULL;
    imgstat_input *copy = item_copy(&it);
    free(path);
    free(msg);
    path = msg = NULL;
    s = copy ? list_push(list, &cap, copy, err) : nomem(err);
  }
  free(path);
  free(msg);
  if (s != IMGSTAT_OK)
    imgstat_input_list_free(list);
  return s;
}
