/*
 * Inputs (src/engine/walk.c): the order of a walk against
 * `find -print0 | LC_ALL=C sort -z` run through popen and against orders
 * written by hand, the extension filter, empty folders, unreadable entries,
 * symbolic link loops with and without follow, names with spaces and
 * newlines, --files-from lists (newline and NUL separated, from standard
 * input), "-" as an image, and the total as the walk goes.
 *
 * Unreadable directories: chmod 000 does not stop root, and CI runs as
 * root, so as root that check runs in a child process that has given up
 * root (setuid to nobody). Entries that no user can read run everywhere: a
 * dangling symbolic link, a link to itself, and a FIFO with an image's name.
 */
#include "imgstat/batch.h"
#include "imgstat/inputs.h"
#include "imgstat/outputs.h"
#include "io.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char root[256]; /* the test's temporary folder */

#define ASSERT_MSG(cond, ...)                                                  \
  do {                                                                         \
    if (!(cond)) {                                                             \
      printf("\n    ");                                                        \
      printf(__VA_ARGS__);                                                     \
      printf("\n");                                                            \
    }                                                                          \
    CU_ASSERT(cond);                                                           \
  } while (0)

/* ---- files ------------------------------------------------------------------
 */

/* root + "/" + rel, in one of a few rotating buffers. */
static const char *at(const char *rel) {
  static char buf[8][1024];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "%s/%s", root, rel);
  return buf[k];
}

/* Makes the directories of rel (its last component too when dir). */
static void make_dirs(const char *rel, int dir) {
  char p[1024];
  snprintf(p, sizeof p, "%s", at(rel));
  size_t start = strlen(root) + 1;
  for (size_t i = start; p[i]; i++)
    if (p[i] == '/') {
      p[i] = '\0';
      mkdir(p, 0755);
      p[i] = '/';
    }
  if (dir)
    mkdir(p, 0755);
}

/* A file of n bytes at root/rel (its folders made). */
static void make_file(const char *rel, size_t n) {
  make_dirs(rel, 0);
  FILE *f = fopen(at(rel), "wb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  for (size_t i = 0; i < n; i++)
    fputc((int)(i & 0xFF), f);
  fclose(f);
}

static void make_link(const char *target, const char *rel) {
  make_dirs(rel, 0);
  CU_ASSERT(symlink(target, at(rel)) == 0);
}

static void write_text(const char *rel, const char *text, size_t n) {
  FILE *f = fopen(at(rel), "wb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fwrite(text, 1, n, f);
  fclose(f);
}

/* ---- collecting items
 * ------------------------------------------------------------ */

#define MAX_ITEMS 256

typedef struct got {
  size_t n;
  imgstat_input *item[MAX_ITEMS];
} got;

static imgstat_inputs *inputs_new(int follow) {
  imgstat_inputs_options o = {follow, 0, 0};
  imgstat_inputs *in = NULL;
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_inputs_create(&o, &in, &err) == IMGSTAT_OK);
  return in;
}

static void add_path(imgstat_inputs *in, const char *path) {
  imgstat_error err;
  CU_ASSERT(imgstat_inputs_add_path(in, path, &err) == IMGSTAT_OK);
}

static void add_list(imgstat_inputs *in, const char *list, char sep) {
  imgstat_error err;
  CU_ASSERT(imgstat_inputs_add_list(in, list, sep, &err) == IMGSTAT_OK);
}

/* Takes every item; destroys in. */
static void collect(imgstat_inputs *in, got *g) {
  memset(g, 0, sizeof *g);
  imgstat_error err;
  for (;;) {
    imgstat_input *it = NULL;
    CU_ASSERT_FATAL(imgstat_inputs_next(in, &it, &err) == IMGSTAT_OK);
    if (!it)
      break;
    CU_ASSERT_FATAL(g->n < MAX_ITEMS);
    CU_ASSERT(it->index == g->n);
    g->item[g->n++] = it;
  }
  uint64_t total = 0;
  CU_ASSERT(imgstat_inputs_total(in, &total) == 1);
  CU_ASSERT(total == g->n);
  imgstat_inputs_destroy(in);
}

static void got_free(got *g) {
  for (size_t i = 0; i < g->n; i++)
    imgstat_input_free(g->item[i]);
  g->n = 0;
}

/* An expected item: 'F' file, 'S' standard input, 'E' error with message
 * (NULL: any). Paths relative to root unless absolute or "-". */
typedef struct want {
  char kind;
  const char *path;
  const char *message;
} want;

/* Whether g is exactly w[0..n), printing the first difference to out. */
static int matches(const got *g, const want *w, size_t n, FILE *out) {
  int ok = 1;
  for (size_t i = 0; i < n || i < g->n; i++) {
    if (i >= g->n || i >= n) {
      fprintf(out, "\n    item %zu: %s %s\n", i, i < n ? "missing" : "extra",
              i < n ? w[i].path : g->item[i]->path);
      return 0;
    }
    const imgstat_input *it = g->item[i];
    char path[1024];
    if (w[i].path[0] == '/' || strcmp(w[i].path, "-") == 0)
      snprintf(path, sizeof path, "%s", w[i].path);
    else
      snprintf(path, sizeof path, "%s/%s", root, w[i].path);
    char kind = it->kind == IMGSTAT_INPUT_FILE    ? 'F'
                : it->kind == IMGSTAT_INPUT_STDIN ? 'S'
                                                  : 'E';
    if (kind != w[i].kind || strcmp(it->path, path) != 0 ||
        (kind == 'E') != (it->message != NULL) ||
        (kind == 'E') != (it->status != IMGSTAT_OK) ||
        (w[i].message &&
         (!it->message || strcmp(it->message, w[i].message) != 0))) {
      fprintf(out, "\n    item %zu: got %c '%s' (%s), want %c '%s' (%s)\n", i,
              kind, it->path, it->message ? it->message : "-", w[i].kind, path,
              w[i].message ? w[i].message : "-");
      ok = 0;
    }
  }
  return ok;
}

#define EXPECT(g, w)                                                           \
  CU_ASSERT(matches((g), (w), sizeof(w) / sizeof(w)[0], stdout))

/* ---- tests
 * ------------------------------------------------------------------------ */

static void test_extensions(void) {
  const char *yes[] = {"a.png",   "A.PNG",     "x.jpg",         "x.JPEG",
                       "x.jpe",   "x.jfif",    "x.bmp",         "x.dib",
                       "x.gif",   "x.psd",     "x.hdr",         "x.pgm",
                       "x.ppm",   "x.pnm",     "x.Tga",         "d.png/.h.png",
                       "s p.png", "a.b.c.gif", "dir.txt/x.jpg", "x.pbm",
                       "x.tiff",  "x.TIF",     "x.webp",        "x.fits",
                       "x.fit",   "x.fts",     "x.npy",         "x.pfm"};
  const char *no[] = {"a.txt",  ".png",      "d/.png",    "x.",      "x",
                      "x.npz",  "x.pam",     "x.png.txt", "x.tiffx", "x.web",
                      "x.pngx", "dir.png/x", "",          "x.jp g",  "x.png "};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
    ASSERT_MSG(ist_extension_is_image(yes[i]), "%s is an image name", yes[i]);
  for (size_t i = 0; i < sizeof no / sizeof *no; i++)
    ASSERT_MSG(!ist_extension_is_image(no[i]), "'%s' is not an image name",
               no[i]);
  CU_ASSERT(!ist_extension_is_image(NULL));
}

/* The names of the comparison tree: no symbolic links (find -type f leaves
 * them out), every byte order trap. */
static const char *tree_files[] = {
    "tree/a.png",         "tree/a/b.png",
    "tree/a/c/d.jpg",     "tree/a-b.png",
    "tree/a0.png",        "tree/B.PNG",
    "tree/b.png",         "tree/sp ace.png",
    "tree/new\nline.png", "tree/\xc3\xa9.png",
    "tree/\xff.gif",      "tree/.hidden.png",
    "tree/README.txt",    "tree/a/notes.md",
    "tree/x.png/y.bmp",   "tree/x.png/z.txt",
    "tree/m.pgm",         "tree/m.ppm",
    "tree/m.pnm",         "tree/m.pbm",
    "tree/m.hdr",         "tree/m.psd",
    "tree/m.dib",         "tree/m.jpe",
    "tree/m.jfif",        "tree/m.jpeg",
    "tree/a.png.txt",     "tree/deep/1/2/3/4/5/f.tga",
    "tree/a/c.png",       "tree/a/c/\n.png",
    "tree/a b/c.png",     "tree/a\tb.png",
    "tree/Z.gif"};

static void make_tree(void) {
  for (size_t i = 0; i < sizeof tree_files / sizeof *tree_files; i++)
    make_file(tree_files[i], 10 + i);
  make_dirs("tree/empty", 1);
  make_dirs("tree/e2/sub/subsub", 1);
  make_dirs("tree/only_text", 1);
  make_file("tree/only_text/read.me", 3);
}

/* The image files of root/tree as find lists them, sorted by bytes. */
static size_t find_sorted(char **out, size_t max) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "LC_ALL=C find '%s/tree' -type f \\( -iname '*.png' -o -iname "
           "'*.jpg' -o -iname '*.jpeg' -o -iname '*.jpe' -o -iname '*.jfif' "
           "-o -iname '*.bmp' -o -iname '*.dib' -o -iname '*.gif' -o -iname "
           "'*.psd' -o -iname '*.hdr' -o -iname '*.pgm' -o -iname '*.ppm' -o "
           "-iname '*.pnm' -o -iname '*.tga' -o -iname '*.pbm' \\) -print0 | "
           "LC_ALL=C sort -z",
           root);
  FILE *p = popen(cmd, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  size_t n = 0, cap = 0;
  char *rec = NULL;
  ssize_t len;
  while ((len = getdelim(&rec, &cap, '\0', p)) > 0 && n < max) {
    out[n++] = strdup(rec);
  }
  free(rec);
  CU_ASSERT(pclose(p) == 0);
  return n;
}

static void test_order_against_find(void) {
  make_tree();
  char *want_paths[MAX_ITEMS];
  size_t n = find_sorted(want_paths, MAX_ITEMS);
  ASSERT_MSG(n == 29, "find listed %zu image files, 29 expected", n);
  imgstat_inputs *in = inputs_new(0);
  add_path(in, at("tree"));
  got g;
  collect(in, &g);
  CU_ASSERT(g.n == n);
  for (size_t i = 0; i < n && i < g.n; i++) {
    ASSERT_MSG(strcmp(g.item[i]->path, want_paths[i]) == 0,
               "item %zu: walk '%s', find '%s'", i, g.item[i]->path,
               want_paths[i]);
    CU_ASSERT(g.item[i]->kind == IMGSTAT_INPUT_FILE);
    /* the size, against the file's own */
    struct stat st;
    CU_ASSERT(stat(want_paths[i], &st) == 0);
    CU_ASSERT(g.item[i]->size_known && g.item[i]->size == (uint64_t)st.st_size);
  }
  for (size_t i = 0; i < n; i++)
    free(want_paths[i]);
  got_free(&g);

  /* The traps by hand: '\t' < ' ' < '-' < '.' < '/' < '0', upper case
   * first, bytes over 0x7F last; a trailing '/' on the argument is not
   * doubled. */
  in = inputs_new(0);
  add_path(in, at("tree/"));
  collect(in, &g);
  const want w[] = {
      {'F', "tree/.hidden.png", 0},   {'F', "tree/B.PNG", 0},
      {'F', "tree/Z.gif", 0},         {'F', "tree/a\tb.png", 0},
      {'F', "tree/a b/c.png", 0},     {'F', "tree/a-b.png", 0},
      {'F', "tree/a.png", 0},         {'F', "tree/a/b.png", 0},
      {'F', "tree/a/c.png", 0},       {'F', "tree/a/c/\n.png", 0},
      {'F', "tree/a/c/d.jpg", 0},     {'F', "tree/a0.png", 0},
      {'F', "tree/b.png", 0},         {'F', "tree/deep/1/2/3/4/5/f.tga", 0},
      {'F', "tree/m.dib", 0},         {'F', "tree/m.hdr", 0},
      {'F', "tree/m.jfif", 0},        {'F', "tree/m.jpe", 0},
      {'F', "tree/m.jpeg", 0},        {'F', "tree/m.pbm", 0},
      {'F', "tree/m.pgm", 0},         {'F', "tree/m.pnm", 0},
      {'F', "tree/m.ppm", 0},         {'F', "tree/m.psd", 0},
      {'F', "tree/new\nline.png", 0}, {'F', "tree/sp ace.png", 0},
      {'F', "tree/x.png/y.bmp", 0},   {'F', "tree/\xc3\xa9.png", 0},
      {'F', "tree/\xff.gif", 0}};
  EXPECT(&g, w);
  got_free(&g);
}

/* A folder named as an input whose walk finds no image file is an error
 * item in its place, counting the other files it skipped at any
 * depth; empty folders below a folder that has images say nothing. */
static void test_empty_and_skipped(void) {
  make_dirs("empty/a/b/c", 1);
  make_dirs("empty/d", 1);
  make_file("empty/d/notes.txt", 5);
  make_file("empty/d/png", 5);  /* no extension */
  make_file("empty/d/.png", 5); /* no stem */
  make_file("empty/d/x.png.bak", 5);
  make_file("empty/a/b/c/one.txt", 5);
  make_dirs("half/none", 1);
  make_file("half/none/n.txt", 5);
  make_file("half/i.png", 5);
  imgstat_inputs *in = inputs_new(1);
  add_path(in, at("empty"));
  add_path(in, at("empty/a/b"));
  add_path(in, at("half"));
  add_path(in, at("empty/d/"));
  got g;
  collect(in, &g);
  const want w[] = {
      {'E', "empty", "no image files (5 other files skipped by extension)"},
      {'E', "empty/a/b", "no image files (1 other file skipped by extension)"},
      {'F', "half/i.png", NULL},
      {'E', "empty/d/", "no image files (4 other files skipped by extension)"}};
  EXPECT(&g, w);
  got_free(&g);
}

/* The expected walk of root/u; locked_readable: whether "locked" can be
 * opened. Returns 1 when it matched (differences printed). No CUnit
 * assertion: it may run in a child process. */
static int check_unreadable(int locked_readable) {
  imgstat_inputs *in = NULL;
  imgstat_error err;
  if (imgstat_inputs_create(NULL, &in, &err) != IMGSTAT_OK ||
      imgstat_inputs_add_path(in, at("u"), &err) != IMGSTAT_OK) {
    imgstat_inputs_destroy(in);
    return 0;
  }
  got g;
  memset(&g, 0, sizeof g);
  imgstat_input *it = NULL;
  int ok = 1;
  while (ok && g.n < MAX_ITEMS) {
    ok = imgstat_inputs_next(in, &it, &err) == IMGSTAT_OK;
    if (!it)
      break;
    g.item[g.n++] = it;
  }
  imgstat_inputs_destroy(in);
  const want readable[] = {{'E', "u/gone.png", strerror(ENOENT)},
                           {'F', "u/k.png", 0},
                           {'F', "u/locked/inside.png", 0},
                           {'F', "u/m.png", 0},
                           {'E', "u/pipe.png", "not a regular file"},
                           {'E', "u/self.png", strerror(ELOOP)},
                           {'E', "u/socketlike.jpg", "not a regular file"}};
  want locked[sizeof readable / sizeof *readable];
  memcpy(locked, readable, sizeof readable);
  locked[2] = (want){'E', "u/locked", strerror(EACCES)};
  ok = ok && matches(&g, locked_readable ? readable : locked, 7, stdout);
  got_free(&g);
  fflush(stdout);
  return ok;
}

static void test_unreadable(void) {
  make_file("u/k.png", 4);
  make_file("u/m.png", 4);
  make_file("u/locked/inside.png", 4);
  make_link("nowhere.png", "u/gone.png");
  make_link("nowhere.txt", "u/gone.txt"); /* not an image name: skipped */
  make_link("self.png", "u/self.png");
  CU_ASSERT(mkfifo(at("u/pipe.png"), 0644) == 0);
  CU_ASSERT(mkfifo(at("u/pipe.txt"), 0644) == 0); /* skipped */
  CU_ASSERT(mkfifo(at("u/socketlike.jpg"), 0644) == 0);

  /* readable: the error entries alone */
  CU_ASSERT(check_unreadable(1));

  CU_ASSERT(chmod(at("u/locked"), 0) == 0);
  if (geteuid() != 0) {
    CU_ASSERT(check_unreadable(0));
  } else {
    /* root reads everything: a child that is nobody walks it */
    CU_ASSERT(chmod(root, 0755) == 0);
    fflush(stdout);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
      /* nobody must reach the folder: a private TMPDIR (mode 0700) hides
       * it, and the check cannot be made */
      if (setgid(65534) != 0 || setuid(65534) != 0 || access(root, X_OK) != 0)
        _exit(77);
      _exit(check_unreadable(0) ? 0 : 1);
    }
    int st = 0;
    CU_ASSERT(waitpid(pid, &st, 0) == pid);
    CU_ASSERT(WIFEXITED(st));
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
      printf("\n    (root could not become nobody, or nobody cannot reach %s: "
             "chmod 000 unchecked)\n",
             root);
    else
      CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CU_ASSERT(chmod(root, 0700) == 0);
  }
  CU_ASSERT(chmod(at("u/locked"), 0755) == 0);
}

static void test_symlink_loops(void) {
  make_file("loop/a/fa.png", 3);
  make_file("loop/b/fb.png", 3);
  make_link("../b", "loop/a/link");
  make_link("../a", "loop/b/link");
  make_link(".", "loop/up");
  make_file("loop/real.png", 3);
  make_link("real.png", "loop/filelink.png"); /* a file link is a file */
  make_link("a", "loop/dirlink.png"); /* a link to a folder, image-named */

  imgstat_inputs *in = inputs_new(0);
  add_path(in, at("loop"));
  got g;
  collect(in, &g);
  const want nofollow[] = {{'F', "loop/a/fa.png", 0},
                           {'F', "loop/b/fb.png", 0},
                           {'F', "loop/filelink.png", 0},
                           {'F', "loop/real.png", 0}};
  EXPECT(&g, nofollow);
  got_free(&g);

  char m_a[600], m_b[600], m_d[600], m_loop[600];
  snprintf(m_a, sizeof m_a, "file system loop: the same directory as %s",
           at("loop/a"));
  snprintf(m_b, sizeof m_b, "file system loop: the same directory as %s",
           at("loop/b"));
  snprintf(m_d, sizeof m_d, "file system loop: the same directory as %s",
           at("loop/dirlink.png"));
  snprintf(m_loop, sizeof m_loop, "file system loop: the same directory as %s",
           at("loop"));
  in = inputs_new(1);
  add_path(in, at("loop"));
  collect(in, &g);
  const want follow[] = {{'F', "loop/a/fa.png", 0},
                         {'F', "loop/a/link/fb.png", 0},
                         {'E', "loop/a/link/link", m_a},
                         {'F', "loop/b/fb.png", 0},
                         {'F', "loop/b/link/fa.png", 0},
                         {'E', "loop/b/link/link", m_b},
                         {'F', "loop/dirlink.png/fa.png", 0},
                         {'F', "loop/dirlink.png/link/fb.png", 0},
                         {'E', "loop/dirlink.png/link/link", m_d},
                         {'F', "loop/filelink.png", 0},
                         {'F', "loop/real.png", 0},
                         {'E', "loop/up", m_loop}};
  EXPECT(&g, follow);
  got_free(&g);
}

static void test_names(void) {
  make_file("names/with space.png", 1);
  make_file("names/new\nline.png", 2);
  make_file("names/sp dir/x y.jpg", 3);
  make_file("names/tab\t.gif", 4);
  imgstat_inputs *in = inputs_new(0);
  add_path(in, at("names"));
  got g;
  collect(in, &g);
  const want w[] = {{'F', "names/new\nline.png", 0},
                    {'F', "names/sp dir/x y.jpg", 0},
                    {'F', "names/tab\t.gif", 0},
                    {'F', "names/with space.png", 0}};
  EXPECT(&g, w);
  for (size_t i = 0; i < g.n; i++)
    CU_ASSERT(g.item[i]->size_known && g.item[i]->size > 0);
  got_free(&g);
}

static void test_files_from(void) {
  make_file("f/one.png", 11);
  make_file("f/two.png", 12);
  make_file("f/dir/x.png", 13);
  make_file("f/dir/y.jpg", 14);
  make_file("f/dir/skip.txt", 15);
  make_file("f/notes.txt", 16);
  make_file("f/new\nline.png", 17);
  char text[4096];
  int n = snprintf(text, sizeof text, "%s\n\n%s\n%s\n%s", at("f/one.png"),
                   at("f/dir"), at("f/missing.png"), at("f/notes.txt"));
  write_text("list.txt", text, (size_t)n);
  n = snprintf(text, sizeof text, "%s%c%s%c%c", at("f/new\nline.png"), 0,
               at("f/one.png"), 0, 0);
  write_text("list0", text, (size_t)n);

  imgstat_inputs *in = inputs_new(0);
  add_path(in, at("f/two.png"));
  add_list(in, at("list.txt"), '\n');
  add_path(in, at("f/dir"));
  add_list(in, at("list0"), '\0');
  add_list(in, at("no-such-list"), '\n');
  add_list(in, at("f/dir"), '\n'); /* a folder is no list */
  got g;
  collect(in, &g);
  const want w[] = {{'F', "f/two.png", 0},
                    {'F', "f/one.png", 0},
                    {'F', "f/dir/x.png", 0},
                    {'F', "f/dir/y.jpg", 0},
                    {'E', "f/missing.png", strerror(ENOENT)},
                    {'F', "f/notes.txt", 0}, /* named: taken */
                    {'F', "f/dir/x.png", 0},
                    {'F', "f/dir/y.jpg", 0},
                    {'F', "f/new\nline.png", 0},
                    {'F', "f/one.png", 0},
                    {'E', "no-such-list", strerror(ENOENT)},
                    {'E', "f/dir", strerror(EISDIR)}};
  EXPECT(&g, w);
  if (g.n == 12) {
    CU_ASSERT(g.item[0]->size == 12 && g.item[1]->size == 11);
    CU_ASSERT(g.item[5]->size == 16 && g.item[8]->size == 17);
  }
  got_free(&g);

  /* A list on standard input; "-" in a list is a file named "-". */
  n = snprintf(text, sizeof text, "%s\n-\n%s\n", at("f/one.png"),
               at("f/dir/y.jpg"));
  write_text("stdin.txt", text, (size_t)n);
  CU_ASSERT_FATAL(freopen(at("stdin.txt"), "r", stdin) != NULL);
  in = inputs_new(0);
  add_list(in, "-", '\n');
  imgstat_error err;
  CU_ASSERT(imgstat_inputs_add_path(in, "-", &err) == IMGSTAT_ERR_ARG);
  CU_ASSERT(imgstat_inputs_add_list(in, "-", '\n', &err) == IMGSTAT_ERR_ARG);
  CU_ASSERT(imgstat_inputs_add_list(in, "x", ',', &err) == IMGSTAT_ERR_ARG);
  collect(in, &g);
  const want ws[] = {{'F', "f/one.png", 0},
                     {'E', "-", strerror(ENOENT)},
                     {'F', "f/dir/y.jpg", 0}};
  EXPECT(&g, ws);
  got_free(&g);
}

static void test_stdin_and_arguments(void) {
  make_file("args/a.png", 5);
  make_file("args/data.bin", 6);
  CU_ASSERT(mkfifo(at("args/fifo"), 0644) == 0);
  imgstat_inputs *in = inputs_new(0);
  add_path(in, "-");
  add_path(in, at("args/data.bin")); /* named: whatever its extension */
  add_path(in, at("args/nothing.png"));
  add_path(in, at("args/fifo")); /* named: a file, never opened here */
  add_path(in, "-");
  add_path(in, "/dev/null"); /* a character device */
  imgstat_error err;
  CU_ASSERT(imgstat_inputs_add_list(in, "-", '\n', &err) == IMGSTAT_ERR_ARG);
  got g;
  collect(in, &g);
  const want w[] = {{'S', "-", 0},
                    {'F', "args/data.bin", 0},
                    {'E', "args/nothing.png", strerror(ENOENT)},
                    {'F', "args/fifo", 0},
                    {'S', "-", 0},
                    {'F', "/dev/null", 0}};
  EXPECT(&g, w);
  if (g.n == 6) {
    CU_ASSERT(!g.item[0]->size_known);
    CU_ASSERT(g.item[1]->size_known && g.item[1]->size == 6);
    CU_ASSERT(!g.item[3]->size_known);
    CU_ASSERT(g.item[2]->status == IMGSTAT_ERR_IO);
    /* what can be read only once: anything but a regular file or a block
     * device, standard input by what it is now */
    struct stat st;
    int stdin_once = fstat(STDIN_FILENO, &st) != 0 ||
                     !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
    CU_ASSERT(g.item[0]->read_once == stdin_once);
    CU_ASSERT(!g.item[1]->read_once);
    CU_ASSERT(g.item[3]->read_once);
    CU_ASSERT(g.item[5]->read_once);
  }
  got_free(&g);
}

static void test_total(void) {
  for (int i = 0; i < 50; i++) {
    char name[64];
    snprintf(name, sizeof name, "many/%c/%02d.png", 'a' + i % 5, i);
    make_file(name, 1);
  }
  imgstat_inputs *in = inputs_new(0);
  add_path(in, at("many"));
  imgstat_error err;
  uint64_t total = 99;
  CU_ASSERT(imgstat_inputs_total(in, &total) == 0);
  CU_ASSERT(total == 0);
  CU_ASSERT(imgstat_inputs_prefetch(in, 10, &err) == IMGSTAT_OK);
  CU_ASSERT(imgstat_inputs_total(in, &total) == 0);
  CU_ASSERT(total == 10);
  /* sources are all given before the walk starts */
  CU_ASSERT(imgstat_inputs_add_path(in, "x", &err) == IMGSTAT_ERR_ARG);
  imgstat_input *it = NULL;
  CU_ASSERT(imgstat_inputs_next(in, &it, &err) == IMGSTAT_OK);
  CU_ASSERT_PTR_NOT_NULL_FATAL(it);
  CU_ASSERT(it->index == 0 && strcmp(it->path, at("many/a/00.png")) == 0);
  imgstat_input_free(it);
  CU_ASSERT(imgstat_inputs_prefetch(in, 1000, &err) == IMGSTAT_OK);
  CU_ASSERT(imgstat_inputs_total(in, &total) == 1);
  CU_ASSERT(total == 50);
  /* the rest, in order, from index 1 */
  for (uint64_t k = 1;; k++) {
    CU_ASSERT_FATAL(imgstat_inputs_next(in, &it, &err) == IMGSTAT_OK);
    if (!it) {
      CU_ASSERT(k == 50);
      break;
    }
    CU_ASSERT(it->index == k);
    char name[64];
    snprintf(name, sizeof name, "many/%c/%02d.png", (int)('a' + k / 10),
             (int)(k % 10 * 5 + k / 10));
    ASSERT_MSG(strcmp(it->path, at(name)) == 0, "item %d: %s, want %s", (int)k,
               it->path, at(name));
    imgstat_input_free(it);
  }
  imgstat_inputs_destroy(in);
}

static void test_arguments_refused(void) {
  imgstat_error err;
  CU_ASSERT(imgstat_inputs_create(NULL, NULL, &err) == IMGSTAT_ERR_ARG);
  imgstat_inputs *in = inputs_new(0);
  CU_ASSERT(imgstat_inputs_add_path(in, NULL, &err) == IMGSTAT_ERR_ARG);
  CU_ASSERT(imgstat_inputs_add_path(NULL, "x", &err) == IMGSTAT_ERR_ARG);
  CU_ASSERT(imgstat_inputs_next(in, NULL, &err) == IMGSTAT_ERR_ARG);
  got g;
  collect(in, &g); /* nothing added: nothing out */
  CU_ASSERT(g.n == 0);
  imgstat_inputs_destroy(NULL);
  imgstat_input_free(NULL);
}

static int suite_init(void) {
  return test_tmp_template(root, sizeof root, "imgstat_walk_") && mkdtemp(root)
             ? 0
             : 1;
}

static int suite_clean(void) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' && rm -rf '%s'", root, root);
  return system(cmd) == 0 ? 0 : 1;
}

/* ---- the whole list and the output guard ---------------------------------
 */

/* Whether two items are the same input (fields and strings). */
static int same_item(const imgstat_input *a, const imgstat_input *b) {
  return a->kind == b->kind && a->index == b->index &&
         strcmp(a->path, b->path) == 0 && a->size == b->size &&
         a->size_known == b->size_known && a->status == b->status &&
         a->root_len == b->root_len && a->read_once == b->read_once &&
         a->member == b->member && !a->message == !b->message &&
         (!a->message || strcmp(a->message, b->message) == 0);
}

/* A ustar header block for a regular file (type '0') or a symbolic link
 * ('2') of size bytes. */
static void tar_header(unsigned char *b, const char *name, char type,
                       size_t size) {
  memset(b, 0, 512);
  memcpy(b, name, strlen(name));
  memcpy(b + 100, "0000644", 7);
  memcpy(b + 108, "0000000", 7);
  memcpy(b + 116, "0000000", 7);
  snprintf((char *)b + 124, 12, "%011o", (unsigned)size);
  memcpy(b + 136, "00000000000", 11);
  b[156] = (unsigned char)type;
  memcpy(b + 257,
         "ustar\0"
         "00",
         8);
  memset(b + 148, ' ', 8);
  unsigned sum = 0;
  for (int k = 0; k < 512; k++)
    sum += b[k];
  snprintf((char *)b + 148, 8, "%06o", sum);
}

/* A tar written here (a member "./k/a.png", a .cls member, a name that
 * leads out, a symbolic link, a second image): the lazy walk reads the
 * members' bytes as it finds them; a collected list holds them without
 * bytes, packs and unpacks their root_len and member, and an iterator
 * over it reads each one's bytes from the archive in order. Without
 * libarchive: one error item naming the archive. */
static void test_archive_members(void) {
  static const struct {
    const char *name;
    char type;
    const char *data;
  } m[] = {{"./k/a.png", '0', "first member"},
           {"k/a.cls", '0', "7"},
           {"../up.png", '0', "escapes"},
           {"link.png", '2', ""},
           {"b.jpg", '0', "second"}};
  unsigned char buf[512 * 16];
  size_t n = 0;
  for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) {
    size_t len = strlen(m[k].data);
    tar_header(buf + n, m[k].name, m[k].type, len);
    n += 512;
    if (len) { /* one block of data (none for a link) */
      memset(buf + n, 0, 512);
      memcpy(buf + n, m[k].data, len);
      n += 512;
    }
  }
  memset(buf + n, 0, 1024);
  n += 1024;
  write_text("shard", (const char *)buf, n);
  const char *shard = at("shard");
  size_t alen = strlen(shard);
  CU_ASSERT(imgstat_inputs_is_archive(shard));
  int have = strncmp(imgstat_inputs_archives(), "tar", 3) == 0;
  imgstat_error err;

  imgstat_inputs *in = inputs_new(0);
  add_path(in, shard);
  imgstat_input *it = NULL;
  CU_ASSERT_FATAL(imgstat_inputs_next(in, &it, &err) == IMGSTAT_OK && it);
  if (!have) {
    CU_ASSERT(it->kind == IMGSTAT_INPUT_ERROR &&
              it->status == IMGSTAT_ERR_UNSUPPORTED &&
              strcmp(it->path, shard) == 0);
    imgstat_input_free(it);
    imgstat_inputs_destroy(in);
    return;
  }
  CU_ASSERT(it->kind == IMGSTAT_INPUT_MEMBER && it->root_len == alen + 1 &&
            it->member == 0 && strcmp(it->path + alen, "/k/a.png") == 0 &&
            it->size == 12 && it->data &&
            memcmp(it->data, "first member", 12) == 0);
  imgstat_input_free(it);
  CU_ASSERT_FATAL(imgstat_inputs_next(in, &it, &err) == IMGSTAT_OK && it);
  CU_ASSERT(it->kind == IMGSTAT_INPUT_ERROR &&
            strcmp(it->path + alen, "/../up.png") == 0 &&
            strstr(it->message, "leads out of the archive"));
  imgstat_input_free(it);
  CU_ASSERT_FATAL(imgstat_inputs_next(in, &it, &err) == IMGSTAT_OK && it);
  CU_ASSERT(it->kind == IMGSTAT_INPUT_ERROR &&
            strstr(it->message, "symbolic link"));
  imgstat_input_free(it);
  imgstat_inputs_destroy(in); /* b.jpg read ahead: freed here */

  in = inputs_new(0);
  add_path(in, shard);
  imgstat_input_list list;
  CU_ASSERT_FATAL(imgstat_inputs_collect(in, &list, &err) == IMGSTAT_OK);
  imgstat_inputs_destroy(in);
  CU_ASSERT_FATAL(list.count == 4);
  CU_ASSERT(list.items[0]->kind == IMGSTAT_INPUT_MEMBER &&
            !list.items[0]->data && list.items[0]->member == 0);
  CU_ASSERT(list.items[3]->kind == IMGSTAT_INPUT_MEMBER &&
            !list.items[3]->data && list.items[3]->member == 4 &&
            strcmp(list.items[3]->path + alen, "/b.jpg") == 0);
  unsigned char *bytes = NULL;
  size_t size = 0;
  imgstat_input_list back;
  CU_ASSERT_FATAL(imgstat_input_list_pack(&list, &bytes, &size, &err) ==
                  IMGSTAT_OK);
  CU_ASSERT_FATAL(imgstat_input_list_unpack(bytes, size, &back, &err) ==
                  IMGSTAT_OK);
  free(bytes);
  CU_ASSERT_FATAL(back.count == list.count);
  for (size_t k = 0; k < list.count; k++)
    ASSERT_MSG(same_item(list.items[k], back.items[k]), "item %zu unpacked", k);
  imgstat_input_list_free(&list);
  imgstat_inputs *again = NULL;
  CU_ASSERT_FATAL(imgstat_inputs_from_list(&back, &again, &err) == IMGSTAT_OK);
  const char *want[] = {"first member", NULL, NULL, "second"};
  for (size_t k = 0; k < 4; k++) {
    CU_ASSERT_FATAL(imgstat_inputs_next(again, &it, &err) == IMGSTAT_OK && it);
    if (want[k])
      ASSERT_MSG(it->kind == IMGSTAT_INPUT_MEMBER && it->data &&
                     it->size == strlen(want[k]) &&
                     memcmp(it->data, want[k], it->size) == 0,
                 "member %zu read from the list", k);
    imgstat_input_free(it);
  }
  imgstat_inputs_destroy(again);
  /* a rank's share: the members before it are not read */
  CU_ASSERT_FATAL(imgstat_inputs_from_list(&back, &again, &err) == IMGSTAT_OK);
  CU_ASSERT(imgstat_inputs_skip(again, 3, &err) == IMGSTAT_OK);
  CU_ASSERT_FATAL(imgstat_inputs_next(again, &it, &err) == IMGSTAT_OK && it);
  CU_ASSERT(it->kind == IMGSTAT_INPUT_MEMBER && it->member == 4 && it->data &&
            it->size == 6 && memcmp(it->data, "second", 6) == 0);
  imgstat_input_free(it);
  CU_ASSERT(imgstat_inputs_skip(again, 5, &err) == IMGSTAT_OK);
  CU_ASSERT(imgstat_inputs_next(again, &it, &err) == IMGSTAT_OK && !it);
  imgstat_inputs_destroy(again);
  imgstat_input_list_free(&back);
}

/* A list of files, errors and standard input, collected, packed and
 * unpacked (as rank 0 sends it to the others), replayed by an iterator:
 * the same items every time; every cut of the bytes is refused or gives
 * exactly the whole items before the cut. */
static void test_whole_list(void) {
  make_file("whole/a.png", 3);
  make_file("whole/sub/b.jpg", 4);
  make_file("whole/sub/skip.txt", 1);
  make_dirs("whole/nothing", 1);
  char list_text[1024];
  int n = snprintf(list_text, sizeof list_text, "%s\n%s\n",
                   at("whole/../whole/a.png"), at("no/such.png"));
  write_text("whole.list", list_text, (size_t)n);
  imgstat_inputs *in = inputs_new(0);
  add_path(in, at("whole"));
  add_path(in, "-");
  add_path(in, at("whole/nothing"));
  add_list(in, at("whole.list"), '\n');
  imgstat_error err;
  imgstat_input_list list;
  CU_ASSERT_FATAL(imgstat_inputs_collect(in, &list, &err) == IMGSTAT_OK);
  imgstat_inputs_destroy(in);
  CU_ASSERT_FATAL(list.count == 6);
  CU_ASSERT(list.items[2]->kind == IMGSTAT_INPUT_STDIN);
  CU_ASSERT(list.items[3]->kind == IMGSTAT_INPUT_ERROR);
  CU_ASSERT(list.items[1]->root_len == strlen(at("whole")) + 1);

  unsigned char *bytes = NULL;
  size_t size = 0;
  CU_ASSERT_FATAL(imgstat_input_list_pack(&list, &bytes, &size, &err) ==
                  IMGSTAT_OK);
  imgstat_input_list back;
  CU_ASSERT_FATAL(imgstat_input_list_unpack(bytes, size, &back, &err) ==
                  IMGSTAT_OK);
  CU_ASSERT_FATAL(back.count == list.count);
  for (size_t k = 0; k < list.count; k++)
    ASSERT_MSG(same_item(list.items[k], back.items[k]), "item %zu unpacked", k);
  imgstat_input_list_free(&back);
  /* every cut: refused, or the whole items before it */
  size_t whole = 0, ends[8], nends = 0;
  for (size_t k = 0; k < list.count; k++) {
    const imgstat_input *it = list.items[k];
    whole +=
        4 + 6 * 8 + strlen(it->path) + (it->message ? strlen(it->message) : 0);
    ends[nends++] = whole;
  }
  CU_ASSERT(whole == size);
  for (size_t cut = 0; cut < size; cut++) {
    imgstat_status s = imgstat_input_list_unpack(bytes, cut, &back, &err);
    size_t want = 0;
    while (want < nends && ends[want] <= cut)
      want++;
    int at_end = cut == 0 || (want > 0 && ends[want - 1] == cut);
    ASSERT_MSG(at_end ? s == IMGSTAT_OK && back.count == want
                      : s == IMGSTAT_ERR_ARG && back.count == 0,
               "cut at %zu of %zu", cut, size);
    imgstat_input_list_free(&back);
  }
  free(bytes);

  /* an iterator over the list: copies, the total known at once */
  imgstat_inputs *again = NULL;
  CU_ASSERT_FATAL(imgstat_inputs_from_list(&list, &again, &err) == IMGSTAT_OK);
  uint64_t total = 0;
  CU_ASSERT(imgstat_inputs_total(again, &total) == 1 && total == list.count);
  for (size_t k = 0; k <= list.count; k++) {
    imgstat_input *it = NULL;
    CU_ASSERT(imgstat_inputs_next(again, &it, &err) == IMGSTAT_OK);
    ASSERT_MSG(k == list.count
                   ? it == NULL
                   : it && it != list.items[k] && same_item(it, list.items[k]),
               "item %zu replayed", k);
    imgstat_input_free(it);
  }
  imgstat_inputs_destroy(again);

  /* the walk taken a part at a time (--mpi's deal while walking): the same
   * items, done only once the walk has ended */
  for (size_t piece = 1; piece <= 4; piece++) {
    imgstat_inputs *w = inputs_new(0);
    add_path(w, at("whole"));
    add_path(w, "-");
    add_path(w, at("whole/nothing"));
    add_list(w, at("whole.list"), '\n');
    imgstat_input_list part = {NULL, 0, 0};
    size_t cap = 0;
    int done = 0, calls = 0;
    while (!done && calls < 20) {
      size_t before = part.count;
      CU_ASSERT_FATAL(imgstat_inputs_collect_more(w, &part, &cap, piece, &done,
                                                  &err) == IMGSTAT_OK);
      ASSERT_MSG(part.count - before <= piece &&
                     (done || part.count - before == piece),
                 "pieces of %zu: %zu taken", piece, part.count - before);
      calls++;
    }
    imgstat_inputs_destroy(w);
    CU_ASSERT(done);
    CU_ASSERT_FATAL(part.count == list.count);
    for (size_t k = 0; k < list.count; k++)
      ASSERT_MSG(same_item(part.items[k], list.items[k]),
                 "pieces of %zu: item %zu", piece, k);
    imgstat_input_list_free(&part);
  }
  imgstat_input_list_free(&list);
}

/* --sample's selection over a whole list: error items always kept, exactly
 * min(n, m) of the others, the rule's choice (the indices docs/dataset.md's
 * rule gives, computed by hand in Python from its text), every file drawn
 * over many seeds. */
static void test_sample(void) {
  char name[64];
  for (int k = 0; k < 10; k++) {
    snprintf(name, sizeof name, "sample/f%d.png", k);
    make_file(name, 2);
  }
  char list_text[512];
  int len = snprintf(list_text, sizeof list_text, "%s\n", at("no/such.png"));
  write_text("sample.list", list_text, (size_t)len);
  imgstat_inputs *in = inputs_new(0);
  add_list(in, at("sample.list"), '\n'); /* an error item first */
  add_path(in, at("sample"));
  imgstat_error err;
  imgstat_input_list list;
  CU_ASSERT_FATAL(imgstat_inputs_collect(in, &list, &err) == IMGSTAT_OK);
  imgstat_inputs_destroy(in);
  CU_ASSERT_FATAL(list.count == 11);
  CU_ASSERT_FATAL(list.items[0]->kind == IMGSTAT_INPUT_ERROR);
  unsigned char take[11];
  uint64_t of = 0;
  static const struct {
    uint64_t n, seed;
    int files[10]; /* the files' places taken, -1 ends */
  } cases[] = {
      {3, 0, {2, 4, 6, -1}},
      {3, 1, {4, 7, 8, -1}},
      {7, 42, {1, 2, 3, 4, 6, 8, 9, -1}},
      {10, 9, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
      {0, 9, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
      {500, 9, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    imgstat_input_list_sample(&list, cases[c].n, cases[c].seed, take, &of);
    CU_ASSERT(of == 10);
    CU_ASSERT(take[0] == 1); /* the error item */
    unsigned char want[10] = {0};
    for (int k = 0; k < 10 && cases[c].files[k] >= 0; k++)
      want[cases[c].files[k]] = 1;
    ASSERT_MSG(memcmp(take + 1, want, 10) == 0, "n %llu seed %llu",
               (unsigned long long)cases[c].n,
               (unsigned long long)cases[c].seed);
  }
  /* exactly n, and over 200 seeds every file drawn */
  int drawn[10] = {0};
  for (uint64_t seed = 0; seed < 200; seed++) {
    imgstat_input_list_sample(&list, 4, seed, take, NULL);
    int n = 0;
    for (int k = 0; k < 10; k++) {
      n += take[k + 1];
      drawn[k] += take[k + 1];
    }
    ASSERT_MSG(n == 4, "seed %llu: %d taken", (unsigned long long)seed, n);
  }
  for (int k = 0; k < 10; k++)
    ASSERT_MSG(drawn[k] > 40 && drawn[k] < 120, "file %d drawn %d times", k,
               drawn[k]);
  imgstat_input_list_free(&list);
}

/* The guard against outputs that replace inputs: the same file by another
 * spelling, a symbolic link, a hard link, a name that does not exist yet;
 * files that are no input pass. */
static void test_output_guard(void) {
  make_file("guard/a.png", 3);
  make_file("guard/b.png", 3);
  make_file("guard/free.png", 3);
  CU_ASSERT(link(at("guard/b.png"), at("guard/hard.png")) == 0);
  make_link("a.png", "guard/soft.png");
  char list_text[1024];
  int n =
      snprintf(list_text, sizeof list_text, "%s\n%s\n%s\n", at("guard/./b.png"),
               at("guard/missing.png"), at("guard/soft.png"));
  write_text("guard.list", list_text, (size_t)n);
  imgstat_inputs *in = inputs_new(0);
  add_path(in, "-");
  add_list(in, at("guard.list"), '\n');
  add_path(in, at("guard/a.png"));
  imgstat_error err;
  imgstat_input_list list;
  CU_ASSERT_FATAL(imgstat_inputs_collect(in, &list, &err) == IMGSTAT_OK);
  imgstat_inputs_destroy(in);
  CU_ASSERT_FATAL(list.count == 5);
  imgstat_output_guard *g = NULL;
  CU_ASSERT_FATAL(imgstat_output_guard_create(&list, &g, &err) == IMGSTAT_OK);
  struct {
    const char *path;
    long want;
  } cases[] = {
      {at("guard/b.png"), 1},       /* another spelling of input 1 */
      {at("guard/hard.png"), 1},    /* a hard link to it */
      {at("guard/missing.png"), 2}, /* not there: by name */
      {at("guard/soft.png"), 3},    /* the link itself is input 3 */
      {at("guard/a.png"), 3},       /* soft.png's target: the first input */
      {at("guard//a.png"), 3},      /* by identity, any spelling */
      {at("guard/free.png"), -1},   /* a file that is no input */
      {at("guard/new.png"), -1},    /* a new name */
      {"-", -1},                    /* standard input is no file */
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    long got = imgstat_output_guard_find(g, cases[k].path);
    ASSERT_MSG(got == cases[k].want, "%s: input %ld, want %ld", cases[k].path,
               got, cases[k].want);
    imgstat_status s = imgstat_output_guard_check(g, cases[k].path, &err);
    CU_ASSERT((s == IMGSTAT_OK) == (cases[k].want < 0));
    if (s != IMGSTAT_OK)
      ASSERT_MSG(strstr(err.message, "refusing to overwrite an input") &&
                     strstr(err.message, list.items[cases[k].want]->path),
                 "message: %s", err.message);
  }
  imgstat_output_guard_destroy(g);
  imgstat_input_list_free(&list);
}

/* ---- folders read ahead ---------------------------------------------------
 * The walkers read folders ahead of the walk (WALK_AHEAD at a time per
 * folder, deepest first): the items, their order and their messages must
 * be those of the walk that reads each folder as it enters it. */

/* Every item of a walk of root/rel with that many walkers, one line each
 * ("kind status path: message"), in a malloc'd string; NULL on a failure. */
static char *walk_text(const char *rel, int follow, int walkers) {
  imgstat_inputs_options o = {follow, 0, walkers};
  imgstat_inputs *in = NULL;
  imgstat_error err;
  if (imgstat_inputs_create(&o, &in, &err) != IMGSTAT_OK)
    return NULL;
  if (imgstat_inputs_add_path(in, at(rel), &err) != IMGSTAT_OK) {
    imgstat_inputs_destroy(in);
    return NULL;
  }
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  int ok = f != NULL;
  for (uint64_t k = 0; ok; k++) {
    imgstat_input *it = NULL;
    ok = imgstat_inputs_next(in, &it, &err) == IMGSTAT_OK;
    if (!ok || !it)
      break;
    ok = it->index == k;
    fprintf(f, "%d %d %s: %s %llu\n", (int)it->kind, (int)it->status, it->path,
            it->message ? it->message : "-", (unsigned long long)it->size);
    imgstat_input_free(it);
  }
  imgstat_inputs_destroy(in);
  if (f)
    fclose(f);
  if (!ok) {
    free(text);
    return NULL;
  }
  return text;
}

/* A tree wider than the read-ahead window and deeper than one level: 24
 * folders, each with files and 3 subfolders of files (one of them a
 * folder of folders), links to folders (walked only with follow), a loop,
 * a dangling image link, an empty folder. */
static void make_wide_tree(void) {
  char rel[256];
  for (int d = 0; d < 24; d++) {
    for (int f = 0; f < 3; f++) {
      snprintf(rel, sizeof rel, "wide/d%02d/f%d.png", d, f);
      make_file(rel, (size_t)(d + f + 1));
    }
    for (int s = 0; s < 3; s++) {
      snprintf(rel, sizeof rel, "wide/d%02d/s%d/g.pgm", d, s);
      make_file(rel, 5);
      snprintf(rel, sizeof rel, "wide/d%02d/s%d/deep/%d/h.png", d, s, s);
      make_file(rel, 6);
    }
  }
  make_dirs("wide/d05/empty", 1);
  make_link("../d07", "wide/d03/to7");
  make_link("..", "wide/d10/up");
  make_link("missing.png", "wide/d11/gone.png");
  make_file("wide/z.png", 2);
}

/* Whether the walks with 2, 3, 8 and 64 walkers give the one-at-a-time
 * walk's text, with and without follow; printing the first difference. */
static int same_with_walkers(const char *rel) {
  int ok = 1;
  for (int follow = 0; follow < 2; follow++) {
    char *one = walk_text(rel, follow, 1);
    if (!one)
      return 0;
    const int counts[] = {2, 3, 8, 64};
    for (int k = 0; k < 4; k++) {
      char *many = walk_text(rel, follow, counts[k]);
      if (!many || strcmp(one, many) != 0) {
        size_t i = 0;
        while (many && one[i] && one[i] == many[i])
          i++;
        printf("\n    %d walkers (follow %d) differ at byte %zu: '%.80s' "
               "against '%.80s'\n",
               counts[k], follow, i, many ? many + i : "(failed)", one + i);
        ok = 0;
      }
      free(many);
    }
    free(one);
  }
  return ok;
}

static void test_walkers(void) {
  make_wide_tree();
  /* the order, against find | sort: 24 × (3 + 3 × 2) + 1 image files */
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "LC_ALL=C find '%s/wide' -type f -name '*.p?m' -o -type f -name "
           "'*.png' | LC_ALL=C sort",
           root);
  FILE *p = popen(cmd, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  char *found = NULL;
  size_t found_size = 0;
  FILE *m = open_memstream(&found, &found_size);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  int c;
  while ((c = fgetc(p)) != EOF)
    fputc(c, m);
  CU_ASSERT(pclose(p) == 0);
  fclose(m);
  char *walked = walk_text("wide", 0, 8);
  CU_ASSERT_PTR_NOT_NULL_FATAL(walked);
  /* the walk's paths alone, one a line; the dangling link is an error item
   * in its place, which find does not list */
  char *paths = NULL;
  size_t paths_size = 0, lines = 0;
  m = open_memstream(&paths, &paths_size);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  for (char *line = walked; *line;) {
    char *end = strchr(line, '\n');
    char *path = strchr(strchr(line, ' ') + 1, ' ') + 1;
    char *colon = strstr(path, ": ");
    if (line[0] == '0' + IMGSTAT_INPUT_FILE) {
      fwrite(path, 1, (size_t)(colon - path), m);
      fputc('\n', m);
      lines++;
    }
    line = end + 1;
  }
  fclose(m);
  ASSERT_MSG(lines == 24 * 9 + 1, "%zu files walked, %d expected", lines,
             24 * 9 + 1);
  ASSERT_MSG(strcmp(paths, found) == 0, "the walk's order is not find's");
  free(paths);
  free(found);
  CU_ASSERT(strstr(walked, "wide/d11/gone.png: ") != NULL);
  free(walked);

  CU_ASSERT(same_with_walkers("wide"));

  /* an unreadable folder among them: its error in its place, worded as
   * one at a time (as root, in a child that has become nobody) */
  CU_ASSERT(chmod(at("wide/d06/s1"), 0) == 0);
  CU_ASSERT(chmod(at("wide/d13"), 0) == 0);
  if (geteuid() != 0) {
    char *one = walk_text("wide", 0, 1);
    CU_ASSERT(one && strstr(one, "wide/d13: ") && strstr(one, "wide/d06/s1: "));
    free(one);
    CU_ASSERT(same_with_walkers("wide"));
  } else {
    CU_ASSERT(chmod(root, 0755) == 0);
    fflush(stdout);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
      if (setgid(65534) != 0 || setuid(65534) != 0 || access(root, X_OK) != 0)
        _exit(77);
      char *one = walk_text("wide", 0, 1);
      int ok = one && strstr(one, "wide/d13: ") && strstr(one, "wide/d06/s1: ");
      free(one);
      _exit(ok && same_with_walkers("wide") ? 0 : 1);
    }
    int st = 0;
    CU_ASSERT(waitpid(pid, &st, 0) == pid);
    CU_ASSERT(WIFEXITED(st));
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
      printf("\n    (root could not become nobody: unreadable folders "
             "unchecked)\n");
    else
      CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CU_ASSERT(chmod(root, 0700) == 0);
  }
  CU_ASSERT(chmod(at("wide/d06/s1"), 0755) == 0);
  CU_ASSERT(chmod(at("wide/d13"), 0755) == 0);
}

static const test_case tests[] = {
    {"walk", NULL},
    {"image extensions", test_extensions},
    {"order against find | LC_ALL=C sort", test_order_against_find},
    {"empty folders and non-image files", test_empty_and_skipped},
    {"unreadable entries", test_unreadable},
    {"symbolic link loops, with and without follow", test_symlink_loops},
    {"names with spaces and newlines", test_names},
    {"--files-from lists", test_files_from},
    {"standard input and named files", test_stdin_and_arguments},
    {"the total as the walk goes", test_total},
    {"arguments refused", test_arguments_refused},
    {"the whole list: collect, pack, unpack, replay", test_whole_list},
    {"--sample's selection: the rule, error items kept", test_sample},
    {"the output guard: links, spellings, missing names", test_output_guard},
    {"archives: members listed, packed, read in order", test_archive_members},
    {"folders read ahead: the same items in the same order", test_walkers},
    {NULL, NULL}};

int main(void) { return test_main_init(tests, suite_init, suite_clean); }
