/*
 * libFuzzer target over archives read in place (src/io/archive.c through the
 * inputs, src/engine/walk.c): each input is written to a temporary file and
 * given as a path argument, then read twice: lazily (each member's bytes
 * read as it is found) and as a collected list replayed by an iterator
 * (the members listed without their bytes, then read again from the archive
 * in order, the first one skipped unread as a rank's share is). Where
 * neither way meets an error, both must read the same members, with the
 * same names and bytes (in a damaged archive they may not: libarchive reads
 * a zip whose central directory is damaged as a stream, and where it finds
 * the next member depends on whether the damaged one's data was read or
 * skipped by its header's size). Every member read is named ARCHIVE/NAME
 * with a name that stays inside the archive, and holds at most
 * FUZZ_MAX_MEMORY bytes. Any memory error or undefined behaviour traps too
 * (the build adds ASan and UBSan).
 *
 * Build and run: as tests/fuzz/fuzz_load.c says (fuzz_all builds it where
 * libarchive is found; it is tests/fuzz/fuzz_ci.sh's fuzz_archive); without
 * -DIMGSTAT_FUZZ=ON it is linked with tests/fuzz/fuzz_replay.c into
 * replay_archive (ctest), which runs it over tests/data (the archives of
 * tests/data/seeds among them).
 */
#include "imgstat/inputs.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FUZZ_MAX_MEMORY
#define FUZZ_MAX_MEMORY (UINT64_C(1) << 20)
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The members read, in order: their paths and bytes, one after another. */
typedef struct seen {
  unsigned char *bytes;
  size_t len, cap, count;
  size_t errors; /* error items */
} seen;

static void put(seen *s, const void *p, size_t n) {
  if (s->len + n > s->cap) {
    size_t cap = (s->len + n) * 2;
    unsigned char *b = realloc(s->bytes, cap);
    if (!b)
      __builtin_trap();
    s->bytes = b;
    s->cap = cap;
  }
  memcpy(s->bytes + s->len, p, n);
  s->len += n;
}

/* A member's name must not lead out of its archive. */
static void check_member(const imgstat_input *it, const char *archive) {
  size_t alen = strlen(archive);
  const char *name = it->path + alen + 1;
  if (it->root_len != alen + 1 || strncmp(it->path, archive, alen) != 0 ||
      it->path[alen] != '/' || name[0] == '/' || !it->data ||
      it->size > FUZZ_MAX_MEMORY)
    __builtin_trap();
  for (const char *p = name; *p;) {
    size_t n = strcspn(p, "/");
    if (n == 2 && p[0] == '.' && p[1] == '.')
      __builtin_trap();
    p += n + (p[n] == '/');
  }
}

static void take(seen *s, imgstat_input *it, const char *archive) {
  if (it->kind == IMGSTAT_INPUT_MEMBER) {
    check_member(it, archive);
    put(s, it->path, strlen(it->path) + 1);
    uint64_t n = it->size;
    put(s, &n, sizeof n);
    put(s, it->data, it->size);
    s->count++;
  }
  s->errors += it->kind == IMGSTAT_INPUT_ERROR;
  imgstat_input_free(it);
}

static imgstat_inputs *open_inputs(const char *path) {
  imgstat_inputs_options o = {0, FUZZ_MAX_MEMORY, 0};
  imgstat_inputs *in = NULL;
  imgstat_error err;
  if (imgstat_inputs_create(&o, &in, &err) != IMGSTAT_OK ||
      imgstat_inputs_add_path(in, path, &err) != IMGSTAT_OK)
    __builtin_trap();
  return in;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *dir = getenv("TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/fuzz-archive-XXXXXX",
           dir && *dir ? dir : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0)
    return 0;
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(fd, data + done, size - done);
    if (n <= 0)
      break;
    done += (size_t)n;
  }
  close(fd);
  if (done != size || !imgstat_inputs_is_archive(path)) {
    unlink(path);
    return 0;
  }
  imgstat_error err;

  /* lazily */
  seen lazy = {0};
  imgstat_inputs *in = open_inputs(path);
  for (;;) {
    imgstat_input *it = NULL;
    if (imgstat_inputs_next(in, &it, &err) != IMGSTAT_OK)
      __builtin_trap();
    if (!it)
      break;
    take(&lazy, it, path);
  }
  imgstat_inputs_destroy(in);

  /* collected, replayed (the first item skipped unread, then taken from a
   * second iterator alone) */
  seen listed = {0};
  imgstat_input_list list;
  in = open_inputs(path);
  if (imgstat_inputs_collect(in, &list, &err) != IMGSTAT_OK)
    __builtin_trap();
  imgstat_inputs_destroy(in);
  for (size_t k = 0; k < list.count; k++)
    if (list.items[k]->data)
      __builtin_trap(); /* a collected list holds no bytes */
  imgstat_inputs *replay = NULL;
  if (imgstat_inputs_from_list(&list, &replay, &err) != IMGSTAT_OK ||
      imgstat_inputs_skip(replay, 1, &err) != IMGSTAT_OK)
    __builtin_trap();
  imgstat_inputs *first = NULL;
  if (imgstat_inputs_from_list(&list, &first, &err) != IMGSTAT_OK)
    __builtin_trap();
  imgstat_input *it = NULL;
  if (imgstat_inputs_next(first, &it, &err) != IMGSTAT_OK)
    __builtin_trap();
  if (it)
    take(&listed, it, path);
  imgstat_inputs_destroy(first);
  for (;;) {
    it = NULL;
    if (imgstat_inputs_next(replay, &it, &err) != IMGSTAT_OK)
      __builtin_trap();
    if (!it)
      break;
    take(&listed, it, path);
  }
  imgstat_inputs_destroy(replay);
  imgstat_input_list_free(&list);
  unlink(path);

  if (!lazy.errors && !listed.errors &&
      (lazy.count != listed.count || lazy.len != listed.len ||
       (lazy.len && memcmp(lazy.bytes, listed.bytes, lazy.len) != 0)))
    __builtin_trap(); /* the two ways read different members */
  free(lazy.bytes);
  free(listed.bytes);
  return 0;
}
