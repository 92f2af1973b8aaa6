/*
 * Libraries loaded when a run first needs them (dlib.h).
 */
#include "dlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether IMGSTAT_DLOPEN_DISABLE names library (a word of its
 * comma-separated list). */
static int disabled(const char *library) {
  const char *list = getenv("IMGSTAT_DLOPEN_DISABLE");
  size_t n = strlen(library);
  while (list && *list) {
    size_t w = strcspn(list, ",");
    if (w == n && strncmp(list, library, n) == 0)
      return 1;
    list += w;
    if (*list == ',')
      list++;
  }
  return 0;
}

/* 1 when one of lib's files loads and has every symbol (kept loaded for the
 * rest of the process); else -1 and lib->error says why the first file (the
 * soname: the name a user installs) could not be. */
static int load(ist_dlib *lib) {
  const char *first = lib->files[0] ? lib->files[0] : lib->library;
  if (disabled(lib->library)) {
    snprintf(lib->error, sizeof lib->error,
             "%s needs %s, which could not be loaded: disabled by "
             "IMGSTAT_DLOPEN_DISABLE",
             lib->needs, first);
    return -1;
  }
  snprintf(lib->error, sizeof lib->error, "%s needs %s: no file to load",
           lib->needs, first);
  for (size_t f = 0; lib->files[f]; f++) {
    void *h = dlopen(lib->files[f],
                     RTLD_NOW | (lib->global ? RTLD_GLOBAL : RTLD_LOCAL));
    if (!h) {
      if (f == 0) {
        const char *why = dlerror();
        snprintf(lib->error, sizeof lib->error,
                 "%s needs %s, which could not be loaded: %s", lib->needs,
                 first, why ? why : "no reason given");
      }
      continue;
    }
    size_t i = 0;
    while (i < lib->count && (lib->slots[i] = dlsym(h, lib->symbols[i])))
      i++;
    if (i == lib->count)
      return 1;
    snprintf(lib->error, sizeof lib->error,
             "%s needs %s, which could not be loaded: %s has no %s", lib->needs,
             first, lib->files[f], lib->symbols[i]);
    dlclose(h);
  }
  return -1;
}

imgstat_status ist_dlib_need(ist_dlib *lib, imgstat_error *err) {
  pthread_mutex_lock(&lib->lock);
  if (lib->state == 0)
    lib->state = load(lib);
  int state = lib->state;
  pthread_mutex_unlock(&lib->lock);
  if (state == 1)
    return IMGSTAT_OK;
  return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED, "%s", lib->error);
}

const char *ist_dlib_why(ist_dlib *lib) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  return ist_dlib_need(lib, &err) == IMGSTAT_OK ? NULL : lib->error;
}

int ist_dlib_describe(ist_dlib *lib, char *text, size_t size, size_t *at) {
  const char *why = ist_dlib_why(lib);
  int n = snprintf(text + *at, size - *at, "%s%s (%s)%s%s", *at ? "; " : "",
                   lib->files[0] ? lib->files[0] : lib->library, lib->needs,
                   why ? ": NOT LOADABLE: " : "", why ? why : "");
  if (n < 0 || (size_t)n >= size - *at)
    return 0;
  *at += (size_t)n;
  return 1;
}
