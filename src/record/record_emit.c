/* The dataset's constants in each framework's units and order (--emit):
 * every form from the pooled 0..1 mean and std of the result, converted
 * here and nowhere else, each number with round-trip digits. */
#include "imgstat/record.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

static const char *const emit_names[IMGSTAT_EMIT_COUNT] = {
    "torchvision", "timm",          "hf", "mmcv", "detectron2",
    "keras",       "albumentations"};

const char *imgstat_emit_name(imgstat_emit form) {
  return (unsigned)form < IMGSTAT_EMIT_COUNT ? emit_names[form] : "";
}

int imgstat_emit_from_name(const char *name, imgstat_emit *out) {
  for (int k = 0; k < IMGSTAT_EMIT_COUNT; k++)
    if (strcmp(name, emit_names[k]) == 0) {
      *out = (imgstat_emit)k;
      return 1;
    }
  return 0;
}

/* A growing line in a caller's buffer; full when it did not fit. */
typedef struct emit_line {
  char *buf;
  size_t size, len;
  int full;
} emit_line;

static void put(emit_line *l, const char *s) {
  size_t n = strlen(s);
  if (l->full || l->len + n >= l->size) {
    l->full = 1;
    return;
  }
  memcpy(l->buf + l->len, s, n + 1);
  l->len += n;
}

/* The values, separated by ", ", in open .. close; a one-value tuple ("(")
 * gets Python's trailing comma. bgr: the channels reversed. */
static void put_list(emit_line *l, const double *v, int n, const char *open,
                     const char *close, int bgr) {
  char num[40];
  put(l, open);
  for (int k = 0; k < n; k++) {
    imgstat_record_format_double(num, sizeof num, v[bgr ? n - 1 - k : k]);
    if (k)
      put(l, ", ");
    put(l, num);
  }
  if (n == 1 && strcmp(open, "(") == 0)
    put(l, ",");
  put(l, close);
}

/* A form the pool cannot give: the message begins with "emit FORM" (the
 * setting in the library's words), its cause IMGSTAT_CAUSE_EMIT. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static imgstat_status
refuse(imgstat_error *err, const char *fmt, ...) {
  if (!err)
    return IMGSTAT_ERR_ARG;
  char text[IMGSTAT_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  imgstat_number_vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  imgstat_error_set(err, IMGSTAT_ERR_ARG, "%s", text);
  imgstat_error_cause(err, IMGSTAT_CAUSE_EMIT, 0, 0, NULL);
  return IMGSTAT_ERR_ARG;
}

imgstat_status imgstat_dataset_emit(const imgstat_dataset_result *r,
                                    imgstat_emit form, char *buf, size_t size,
                                    imgstat_error *err) {
  const char *name = imgstat_emit_name(form);
  if (!*name)
    return refuse(err, "emit form %d: unknown", (int)form);
  if (!r->scale_unit)
    return refuse(err,
                  "emit %s: needs the 0..1 figures of scale=unit, not the "
                  "images' own units",
                  name);
  int n = r->channels;
  if (n < 1)
    return refuse(err, "emit %s: no image was pooled", name);
  if ((form == IMGSTAT_EMIT_MMCV || form == IMGSTAT_EMIT_DETECTRON2) && n != 3)
    return refuse(err,
                  "emit %s: needs an RGB pool (its BGR order), not %s "
                  "(as=rgb)",
                  name, imgstat_layout_name(n));
  double mean[IMGSTAT_MAX_CHANNELS], std[IMGSTAT_MAX_CHANNELS];
  double mean255[IMGSTAT_MAX_CHANNELS], std255[IMGSTAT_MAX_CHANNELS];
  double var255[IMGSTAT_MAX_CHANNELS];
  for (int c = 0; c < n; c++) {
    const imgstat_dataset_channel *d = &r->ch[c];
    if (!d->has_values || !d->has_std || !isfinite(d->mean) ||
        !isfinite(d->std))
      return refuse(err, "emit %s: channel %s has no mean and std", name,
                    imgstat_channel_name(n, c));
    mean[c] = d->mean;
    std[c] = d->std;
    /* the 0..255 units: the 0..1 double times 255; variance: std squared */
    mean255[c] = d->mean * 255.0;
    std255[c] = d->std * 255.0;
    var255[c] = std255[c] * std255[c];
  }
  emit_line l = {buf, size, 0, 0};
  if (size)
    buf[0] = '\0';
  switch (form) {
  case IMGSTAT_EMIT_TORCHVISION:
    put(&l, "Normalize(mean=");
    put_list(&l, mean, n, "[", "]", 0);
    put(&l, ", std=");
    put_list(&l, std, n, "[", "])", 0);
    break;
  case IMGSTAT_EMIT_TIMM:
    put(&l, "mean=");
    put_list(&l, mean, n, "(", ")", 0);
    put(&l, ", std=");
    put_list(&l, std, n, "(", ")", 0);
    break;
  case IMGSTAT_EMIT_HF: {
    char num[40];
    put(&l, "{\"image_mean\": ");
    put_list(&l, mean, n, "[", "]", 0);
    put(&l, ", \"image_std\": ");
    put_list(&l, std, n, "[", "]", 0);
    imgstat_record_format_double(num, sizeof num, 1.0 / 255.0);
    put(&l, ", \"rescale_factor\": ");
    put(&l, num);
    put(&l, ", \"do_rescale\": true, \"do_normalize\": true}");
    break;
  }
  case IMGSTAT_EMIT_MMCV:
    put(&l, "mean=");
    put_list(&l, mean255, n, "[", "]", 0);
    put(&l, ", std=");
    put_list(&l, std255, n, "[", "]", 0);
    put(&l, ", bgr_to_rgb=True");
    break;
  case IMGSTAT_EMIT_DETECTRON2:
    put(&l, "cfg.MODEL.PIXEL_MEAN = ");
    put_list(&l, mean255, n, "[", "]", 1);
    put(&l, "; cfg.MODEL.PIXEL_STD = ");
    put_list(&l, std255, n, "[", "]", 1);
    break;
  case IMGSTAT_EMIT_KERAS:
    put(&l, "Normalization(mean=");
    put_list(&l, mean255, n, "[", "]", 0);
    put(&l, ", variance=");
    put_list(&l, var255, n, "[", "]", 0);
    put(&l, ")  # RGB inputs in 0..255, channels last");
    break;
  case IMGSTAT_EMIT_ALBUMENTATIONS:
    put(&l, "Normalize(mean=");
    put_list(&l, mean, n, "(", ")", 0);
    put(&l, ", std=");
    put_list(&l, std, n, "(", ")", 0);
    put(&l, ", max_pixel_value=255.0)");
    break;
  default:
    break;
  }
  if (l.full)
    return refuse(err, "emit %s: the text needs more than %zu bytes", name,
                  size);
  return IMGSTAT_OK;
}
