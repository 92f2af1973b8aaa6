// Arrays as images: the dtype and the geometry (HW, HWC, CHW, any strides)
// of an array from any source, and a host array's planes, borrowed or
// copied.
#include "binding.h"

namespace binding {

imgstat_sample sample_of(const AnyArray &a) {
  nb::dlpack::dtype t = a.dtype();
  if (t == nb::dtype<uint8_t>())
    return IMGSTAT_U8;
  if (t == nb::dtype<uint16_t>())
    return IMGSTAT_U16;
  if (t == nb::dtype<float>())
    return IMGSTAT_F32;
  throw nb::type_error("imgstat.stats: the array's dtype must be uint8, "
                       "uint16 or float32");
}

nb::dlpack::dtype dtype_of(imgstat_sample s) {
  return s == IMGSTAT_U8    ? nb::dtype<uint8_t>()
         : s == IMGSTAT_U16 ? nb::dtype<uint16_t>()
                            : nb::dtype<float>();
}

static_assert(IMGSTAT_MAX_CHANNELS == 1024,
              "the message below names the limit");

Geometry geometry_from(size_t nd, const int64_t *shape, const int64_t *strides,
                       bool chw) {
  if (nd != 2 && nd != 3)
    throw nb::value_error("imgstat.stats: an image array is HW, HWC or CHW");
  for (size_t k = 0; k < nd; k++) {
    if (shape[k] < 0)
      throw nb::value_error("imgstat.stats: bad array shape");
    if (shape[k] > (int64_t)UINT32_MAX)
      throw nb::value_error("imgstat.stats: the array is too large");
  }
  Geometry g;
  const size_t row = nd == 3 && chw ? 1 : 0; // then the column
  g.height = (uint32_t)shape[row];
  g.width = (uint32_t)shape[row + 1];
  g.s_row = strides[row];
  g.s_col = strides[row + 1];
  if (nd == 3) {
    const size_t chan = chw ? 0 : 2;
    g.channels = (int)shape[chan];
    g.s_chan = strides[chan];
  }
  if (g.channels < 1 || g.channels > IMGSTAT_MAX_CHANNELS)
    throw nb::value_error("an image has 1 to 1024 channels (bands; is the "
                          "layout of the input right? layout='hwc' or "
                          "'chw')");
  if (g.height == 0 || g.width == 0)
    throw nb::value_error("the array is empty");
  return g;
}

bool layout_chw(const std::string &layout) {
  if (layout != "hwc" && layout != "chw")
    throw nb::value_error("layout must be 'hwc' or 'chw'");
  return layout == "chw";
}

Geometry geometry_of(const AnyArray &a, const std::string &layout) {
  size_t nd = a.ndim();
  int64_t shape[3] = {0, 0, 0}, strides[3] = {0, 0, 0};
  for (size_t k = 0; k < nd && k < 3; k++) {
    shape[k] = a.shape(k) > (size_t)INT64_MAX ? -1 : (int64_t)a.shape(k);
    strides[k] = a.stride(k);
  }
  return geometry_from(nd, shape, strides, nd == 3 && layout_chw(layout));
}

namespace {

// Planes borrowed from the array when each row is contiguous and rows are
// evenly spaced (HW, CHW, any row padding); else NULL.
bool borrow_planes(const char *base, const Geometry &g, size_t item,
                   void **planes, size_t *stride) {
  if (g.s_col != 1 || g.s_row < (int64_t)g.width ||
      (g.channels > 1 && g.s_chan <= 0))
    return false;
  for (int c = 0; c < g.channels; c++)
    planes[c] = (void *)(base + (size_t)g.s_chan * (size_t)c * item);
  *stride = (size_t)g.s_row * item;
  return true;
}

// Copies any strided host array (HWC interleaved, negative strides, a
// view) into the image's dense planes.
void copy_planes(const AnyArray &a, const Geometry &g, size_t item,
                 imgstat_image *img) {
  const char *base = (const char *)a.data();
  for (int c = 0; c < g.channels; c++) {
    char *dst = (char *)img->planes[c];
    for (uint32_t y = 0; y < g.height; y++) {
      const char *row =
          base + (g.s_row * (int64_t)y + g.s_chan * c) * (int64_t)item;
      char *out = dst + (size_t)y * g.width * item;
      if (g.s_col == 1) {
        std::memcpy(out, row, (size_t)g.width * item);
        continue;
      }
      int64_t step = g.s_col * (int64_t)item;
      switch (item) {
      case 1:
        for (uint32_t x = 0; x < g.width; x++)
          out[x] = row[step * x];
        break;
      case 2:
        for (uint32_t x = 0; x < g.width; x++)
          std::memcpy(out + 2 * x, row + step * x, 2);
        break;
      default:
        for (uint32_t x = 0; x < g.width; x++)
          std::memcpy(out + 4 * (size_t)x, row + step * x, 4);
        break;
      }
    }
  }
}

} // namespace

imgstat_status host_image(const AnyArray &a, const Geometry &g,
                          imgstat_sample sample, imgstat_image *img,
                          imgstat_error *err) {
  size_t item = item_size(sample);
  void *planes[IMGSTAT_MAX_CHANNELS] = {nullptr};
  size_t stride = 0;
  if (borrow_planes((const char *)a.data(), g, item, planes, &stride))
    return imgstat_image_wrap(img, g.width, g.height, g.channels, sample,
                              planes, stride, err);
  imgstat_status s =
      imgstat_image_alloc(img, g.width, g.height, g.channels, sample, 0, err);
  if (s == IMGSTAT_OK)
    copy_planes(a, g, item, img);
  return s;
}

bool is_int16(const AnyArray &a) { return a.dtype() == nb::dtype<int16_t>(); }

imgstat_status int16_image(const AnyArray &a, const Geometry &g,
                           imgstat_image *img, imgstat_error *err) {
  imgstat_status s = imgstat_image_alloc(img, g.width, g.height, g.channels,
                                         IMGSTAT_U16, 0, err);
  if (s != IMGSTAT_OK)
    return s;
  copy_planes(a, g, 2, img);
  size_t n = (size_t)g.width * g.height;
  for (int c = 0; c < g.channels; c++) {
    uint16_t *p = (uint16_t *)img->planes[c];
    for (size_t i = 0; i < n; i++)
      p[i] ^= 0x8000u; // the value + 32768
  }
  img->int16 = 1;
  return IMGSTAT_OK;
}

} // namespace binding
