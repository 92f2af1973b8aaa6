// imgstat.normalize of an array: the options in the command line's words,
// a host array through the engine (numpy out), a CUDA array measured,
// planned and applied on its device (a device array out).
#include "binding.h"

#include <cstdlib>

namespace binding {

namespace {

// ---- normalization of a CUDA array ------------------------------------

// The shape of a normalized array in the input's layout (HW: one channel):
// its dimensions into shape, their number returned.
size_t out_shape(size_t ndim, bool hwc, size_t h, size_t w, size_t ch,
                 size_t shape[3]) {
  if (ndim == 2) {
    shape[0] = h;
    shape[1] = w;
    return 2;
  }
  shape[0] = hwc ? h : ch;
  shape[1] = hwc ? w : h;
  shape[2] = hwc ? ch : w;
  return 3;
}

// Device memory of a GPU context, owned by a capsule (the array returned).
struct DeviceBuffer {
  imgstat_gpu *gpu;
  void *p;
};

// The normalized image of a CUDA array, on its device: measured, planned
// and applied there (the plan is the host path's: the same rules, the same
// bytes), written into a new device allocation in the input's layout. No
// pixel goes through the host. Returns (True, array) with the array a
// DLPack-capable nanobind array on the same device, owning its memory, or
// (False, failure).
nb::object normalize_cuda(const AnyArray &a, const Geometry &g,
                          imgstat_sample sample, const imgstat_norm_options &o,
                          const Request &req, bool hwc_layout,
                          uintptr_t stream) {
  check_cuda_array(g, req, "imgstat.normalize");
  const bool hwc = hwc_layout && a.ndim() == 3;
  const char *base = (const char *)a.data();
  const int device = a.device_id();
  imgstat_error err;
  std::memset(&err, 0, sizeof err);
  imgstat_status s;
  imgstat_gpu *gpu = nullptr;
  void *out = nullptr;
  imgstat_norm_plan plan;
  std::memset(&plan, 0, sizeof plan);
  {
    nb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(cuda_lock());
    imgstat_gpu_image *d = nullptr;
    s = gpu_for(device, &gpu, &err);
    if (s == IMGSTAT_OK)
      s = wrap_cuda(gpu, base, g, sample, stream, &d, &err);
    if (s == IMGSTAT_OK)
      s = imgstat_gpu_image_norm_plan(gpu, d, &o, nullptr, &plan, &err);
    if (s == IMGSTAT_OK)
      s = imgstat_gpu_malloc(gpu,
                             (size_t)g.width * g.height *
                                 (size_t)plan.channels_out *
                                 (size_t)plan.out_sample,
                             &out, &err);
    if (s == IMGSTAT_OK)
      s = imgstat_gpu_image_norm_apply_device(gpu, d, &plan, out, hwc, &err);
    imgstat_gpu_image_release(gpu, d);
    if (s != IMGSTAT_OK) {
      imgstat_gpu_free(gpu, out);
      out = nullptr;
    }
  }
  if (s != IMGSTAT_OK)
    return nb::make_tuple(false,
                          failure_tuple(failure_from("<cuda array>", s, err)));
  DeviceBuffer *owned = new (std::nothrow) DeviceBuffer{gpu, out};
  if (!owned) {
    imgstat_gpu_free(gpu, out);
    throw std::bad_alloc();
  }
  nb::capsule owner(owned, [](void *p) noexcept {
    DeviceBuffer *b = (DeviceBuffer *)p;
    imgstat_gpu_free(b->gpu, b->p);
    delete b;
  });
  size_t shape[3];
  size_t nd = out_shape(a.ndim(), hwc, g.height, g.width,
                        (size_t)plan.channels_out, shape);
  nb::dlpack::dtype dt = dtype_of(plan.out_sample);
  nb::ndarray<> arr(out, nd, shape, owner, nullptr, dt, nb::device::cuda::value,
                    imgstat_gpu_device(gpu));
  // an ndarray without a framework goes to Python as a DLPack capsule; the
  // package wraps it with its device (imgstat.DeviceArray, or the input's
  // framework)
  return nb::make_tuple(true,
                        nb::make_tuple(nb::cast(arr, nb::rv_policy::reference),
                                       imgstat_gpu_device(gpu)));
}

} // namespace

// ---- normalization of an array
// ------------------------------------------------

imgstat_norm_options norm_options(const NormArgs &a, int channels) {
  imgstat_norm_options o;
  std::memset(&o, 0, sizeof o);
  if (a.mean || a.std_) {
    if (!a.mean || !a.std_)
      throw nb::value_error("mean and std go together");
    if (a.mean->size() != a.std_->size() ||
        a.mean->size() > IMGSTAT_MAX_CHANNELS ||
        (a.mean->size() != 1 && channels > 0 &&
         (int)a.mean->size() != channels))
      throw nb::value_error("mean and std: one value, or one per channel");
    if (a.mode != "minmax" && a.mode != "given")
      throw nb::value_error("mean and std replace the mode");
    o.mode = IMGSTAT_NORM_GIVEN;
    o.nstats = (int)a.mean->size();
    for (size_t k = 0; k < a.mean->size(); k++) {
      if (!((*a.std_)[k] > 0))
        throw nb::value_error("std must be positive");
      o.mean[k] = (*a.mean)[k];
      o.std[k] = (*a.std_)[k];
    }
  } else if (a.range) {
    std::pair<double, double> r = range_of(*a.range);
    o.mode = IMGSTAT_NORM_RANGE;
    o.range_low = r.first;
    o.range_high = r.second;
  } else if (a.mode == "minmax") {
    o.mode = IMGSTAT_NORM_MINMAX;
  } else if (a.mode == "clip") {
    o.mode = IMGSTAT_NORM_CLIP;
    std::vector<double> c = a.clip ? *a.clip : std::vector<double>{1.0, 99.0};
    if (c.size() != 2 || !(c[0] >= 0 && c[0] <= c[1] && c[1] <= 100))
      throw nb::value_error("clip must be (low, high) percentiles, "
                            "0 <= low <= high <= 100");
    o.clip_low = c[0];
    o.clip_high = c[1];
  } else if (a.mode == "zscore") {
    o.mode = IMGSTAT_NORM_ZSCORE;
  } else {
    throw nb::value_error(
        "mode must be 'minmax', 'a.clip' or 'zscore' (or give a.mean and std, "
        "or a.range)");
  }
  bool float_mode =
      o.mode == IMGSTAT_NORM_ZSCORE || o.mode == IMGSTAT_NORM_GIVEN;
  if (a.linked && o.mode != IMGSTAT_NORM_MINMAX && o.mode != IMGSTAT_NORM_CLIP)
    throw nb::value_error("linked applies to minmax and clip");
  o.linked = a.linked;
  if (!a.dtype.empty() && !sample_from_name(a.dtype, &o.out_sample))
    throw nb::value_error("dtype must be 'uint8', 'uint16' or 'float32'");
  if (float_mode && o.out_sample && o.out_sample != IMGSTAT_F32)
    throw nb::value_error("zscore and a.mean/std give float32");
  if (a.alpha == "copy")
    o.alpha = IMGSTAT_ALPHA_COPY;
  else if (a.alpha == "normalize")
    o.alpha = IMGSTAT_ALPHA_NORMALIZE;
  else if (a.alpha == "drop")
    o.alpha = IMGSTAT_ALPHA_DROP;
  else
    throw nb::value_error("alpha must be 'copy', 'normalize' or 'drop'");
  o.scale_unit = scale_unit(a.scale);
  return o;
}

namespace {

// The normalized image of a host array (numpy out, the input's layout): the
// engine's normalize with the command line's modes.
nb::object normalize_array(AnyArray a, const std::string &layout,
                           const std::string &mode,
                           std::optional<std::vector<double>> mean,
                           std::optional<std::vector<double>> std_,
                           std::optional<std::vector<double>> clip,
                           std::optional<std::vector<double>> range,
                           bool linked, const std::string &dtype,
                           const std::string &alpha, const std::string &scale,
                           const std::string &backend, uintptr_t stream) {
  imgstat_sample sample = sample_of(a);
  Geometry g = geometry_of(a, layout);
  const bool on_cuda = a.device_type() == nb::device::cuda::value;
  if (a.device_type() != nb::device::cpu::value &&
      a.device_type() != nb::device::cuda_host::value && !on_cuda)
    throw nb::value_error("imgstat.normalize: arrays on this kind of device "
                          "are not supported (CPU and CUDA are)");
  imgstat_norm_options o = norm_options(
      {mode, mean, std_, clip, range, linked, dtype, alpha, scale}, g.channels);
  Request req = make_request(0, false, std::nullopt, backend);
  if (on_cuda)
    return normalize_cuda(a, g, sample, o, req, layout == "hwc", stream);
  imgstat_job_result res;
  std::memset(&res, 0, sizeof res);
  imgstat_status s;
  Failure f;
  {
    nb::gil_scoped_release nogil;
    imgstat_image img;
    std::memset(&img, 0, sizeof img);
    imgstat_error err;
    std::memset(&err, 0, sizeof err);
    s = host_image(a, g, sample, &img, &err);
    if (s == IMGSTAT_OK)
      s = imgstat_engine_normalize(engine_for(req.backend), "<array>", &img, &o,
                                   &res);
    else
      f = failure_from("<array>", s, err);
    if (s != IMGSTAT_OK && f.path.empty())
      f = failure_of("<array>", &res);
    imgstat_image_free(&img);
  }
  if (s != IMGSTAT_OK) {
    imgstat_job_result_free(&res);
    return nb::make_tuple(false, failure_tuple(f));
  }
  // the output in the input's layout (HW with one channel)
  const imgstat_image *out = &res.output;
  size_t oitem = item_size(out->sample);
  size_t w = out->width, h = out->height, ch = (size_t)out->channels;
  size_t ostride = imgstat_image_stride(out);
  char *buf = (char *)std::malloc(w * h * ch * oitem);
  if (!buf) {
    imgstat_job_result_free(&res);
    throw std::bad_alloc();
  }
  bool hwc = layout == "hwc" && (a.ndim() == 3);
  {
    nb::gil_scoped_release nogil;
    for (size_t c = 0; c < ch; c++)
      for (size_t y = 0; y < h; y++) {
        const char *row = (const char *)out->planes[c] + y * ostride;
        if (!hwc) {
          std::memcpy(buf + ((c * h + y) * w) * oitem, row, w * oitem);
          continue;
        }
        for (size_t x = 0; x < w; x++)
          std::memcpy(buf + ((y * w + x) * ch + c) * oitem, row + x * oitem,
                      oitem);
      }
  }
  nb::dlpack::dtype dt = dtype_of(out->sample);
  imgstat_job_result_free(&res);
  nb::capsule owner(buf, [](void *p) noexcept { std::free(p); });
  size_t shape[3];
  size_t nd = out_shape(a.ndim(), hwc, h, w, ch, shape);
  nb::ndarray<nb::numpy> arr(buf, nd, shape, owner, nullptr, dt);
  return nb::make_tuple(true, arr.cast());
}

// imgstat.normalize of an object that offers only __cuda_array_interface__
// (Numba): its pointer, shape and strides (in elements) as the Python side
// read them, made a CUDA array of device `device` (-1: the current one);
// `stream` the interface's (0: none).
nb::object normalize_cuda_interface(
    uintptr_t ptr, int device, uintptr_t stream,
    const std::vector<int64_t> &shape, const std::vector<int64_t> &strides,
    const std::string &dtype, const std::string &layout,
    const std::string &mode, std::optional<std::vector<double>> mean,
    std::optional<std::vector<double>> std_,
    std::optional<std::vector<double>> clip,
    std::optional<std::vector<double>> range, bool linked,
    const std::string &out_dtype, const std::string &alpha,
    const std::string &scale, const std::string &backend) {
  imgstat_sample sample;
  if (!sample_from_name(dtype, &sample))
    throw nb::type_error("imgstat.normalize: the array's dtype must be "
                         "uint8, uint16 or float32");
  if (shape.size() != strides.size() || shape.size() < 2 || shape.size() > 3)
    throw nb::value_error("imgstat.normalize: an image array is HW, HWC or "
                          "CHW");
  size_t sh[3];
  for (size_t k = 0; k < shape.size(); k++) {
    if (shape[k] <= 0 || shape[k] > (int64_t)UINT32_MAX)
      throw nb::value_error("imgstat.normalize: bad array shape");
    sh[k] = (size_t)shape[k];
  }
  AnyArray a((const void *)ptr, shape.size(), sh, nb::handle(), strides.data(),
             dtype_of(sample), nb::device::cuda::value, device);
  return normalize_array(a, layout, mode, mean, std_, clip, range, linked,
                         out_dtype, alpha, scale, backend, stream);
}

} // namespace

void register_normalize(nb::module_ &m) {
  m.def("normalize_array", &normalize_array, nb::arg("array"),
        nb::arg("layout"), nb::arg("mode"), nb::arg("mean").none(),
        nb::arg("std").none(), nb::arg("clip").none(), nb::arg("range").none(),
        nb::arg("linked"), nb::arg("dtype"), nb::arg("alpha"), nb::arg("scale"),
        nb::arg("backend"), nb::arg("stream") = 1);
  m.def("normalize_cuda_interface", &normalize_cuda_interface, nb::arg("ptr"),
        nb::arg("device"), nb::arg("stream"), nb::arg("shape"),
        nb::arg("strides"), nb::arg("dtype"), nb::arg("layout"),
        nb::arg("mode"), nb::arg("mean").none(), nb::arg("std").none(),
        nb::arg("clip").none(), nb::arg("range").none(), nb::arg("linked"),
        nb::arg("out_dtype"), nb::arg("alpha"), nb::arg("scale"),
        nb::arg("backend"));
}

} // namespace binding
