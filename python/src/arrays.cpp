// Arrays' statistics: a host array (numpy, anything with DLPack) through
// the engine; a CUDA array (DLPack, __cuda_array_interface__, a torch
// tensor's own fields) on its device, with its GPU context, its histograms
// and their figures, and no pixel copied to the host.
#include "binding.h"

#include <chrono>
#include <map>

namespace binding {

namespace {

// A host array's statistics.
Outcome stats_host_array(const AnyArray &a, const Geometry &g,
                         imgstat_sample sample, const Request &req) {
  imgstat_image img;
  std::memset(&img, 0, sizeof img);
  imgstat_error err;
  std::memset(&err, 0, sizeof err);
  imgstat_status s = is_int16(a) ? int16_image(a, g, &img, &err)
                                 : host_image(a, g, sample, &img, &err);
  Outcome r;
  if (s != IMGSTAT_OK)
    r = {false, nullptr, failure_from("<array>", s, err)};
  else
    r = stats_image("<array>", &img, req);
  imgstat_image_free(&img);
  return r;
}

} // namespace

// ---- CUDA arrays -------------------------------------------------------

void check_cuda_array(const Geometry &g, const Request &req, const char *fn) {
  if (!imgstat_gpu_compiled())
    throw nb::value_error((std::string(fn) +
                           ": a CUDA array needs an imgstat built with CUDA "
                           "(this one is not)")
                              .c_str());
  if (req.backend == IMGSTAT_BACKEND_CPU)
    throw nb::value_error(
        (std::string(fn) + ": backend='cpu' with a CUDA array").c_str());
  // strides of dimensions of one element are never used
  bool negative = (g.height > 1 && g.s_row < 0) ||
                  (g.width > 1 && g.s_col < 0) ||
                  (g.channels > 1 && g.s_chan < 0);
  if (negative)
    throw nb::value_error((std::string(fn) +
                           ": a CUDA array with negative strides (a reversed "
                           "view) is not supported; pass a contiguous copy")
                              .c_str());
}

std::mutex &cuda_lock() {
  static std::mutex m;
  return m;
}

imgstat_status gpu_for(int device, imgstat_gpu **gpu, imgstat_error *err) {
  static std::map<int, imgstat_gpu *> gpus;
  auto it = gpus.find(device);
  if (it != gpus.end()) {
    *gpu = it->second;
    return IMGSTAT_OK;
  }
  imgstat_status s = imgstat_gpu_create(device, gpu, err);
  if (s != IMGSTAT_OK)
    return s;
  // -1 (the current device) and its ordinal share one context
  int ordinal = imgstat_gpu_device(*gpu);
  auto known = gpus.find(ordinal);
  if (known != gpus.end()) {
    imgstat_gpu_destroy(*gpu);
    *gpu = known->second;
  }
  gpus[device] = *gpu;
  gpus[ordinal] = *gpu;
  return IMGSTAT_OK;
}

// A CUDA array as a device image of gpu (imgstat_gpu_image_wrap_on):
// dense planes (HW, CHW) read where they are, dense HWC read as it is by
// the interleaved kernel, other views gathered into dense planes by the
// device. Either way no pixel goes to the host, and the figures are the
// same. The image's work is queued on `stream`, the one the producer's
// work is queued on (imgstat_gpu_wait_stream's values: 1 the legacy
// default stream; 0: none to follow, the slot's own), so it follows that
// work on the device with no wait here.
imgstat_status wrap_cuda(imgstat_gpu *gpu, const char *base, const Geometry &g,
                         imgstat_sample sample, uintptr_t stream,
                         imgstat_gpu_image **d, imgstat_error *err) {
  size_t item = item_size(sample);
  return imgstat_gpu_image_wrap_on(
      gpu, g.width, g.height, g.channels, sample, base,
      (size_t)(g.height > 1 ? g.s_row : 0) * item,
      (size_t)(g.width > 1 ? g.s_col : 0) * item,
      (size_t)(g.channels > 1 ? g.s_chan : 0) * item, stream, d, err);
}

namespace {

// Host clock stamps of stats_cuda's phases, for bench/gpu/py_overhead.py
// (_imgstat._cuda_stats_phases): where a call spends its time.
struct Phases {
  static constexpr int kMax = 8;
  const char *name[kMax];
  std::chrono::steady_clock::time_point at[kMax];
  int n = 0;
  void stamp(const char *what) {
    if (n < kMax) {
      name[n] = what;
      at[n++] = std::chrono::steady_clock::now();
    }
  }
};

// A CUDA array's statistics (and histograms): computed on its device,
// where it lives, with no copy of the pixels to the host (f32 histograms:
// see cuda_histograms). The record is the CPU's for the same pixels but
// for "backend". Only in builds with CUDA (check_cuda_array first).
Outcome stats_cuda(const char *base, int device, uintptr_t stream,
                   const Geometry &g, imgstat_sample sample, const Request &req,
                   Phases *ph = nullptr) {
  if (ph)
    ph->stamp("start");
  std::lock_guard<std::mutex> lock(cuda_lock());
  imgstat_error err;
  err.status = IMGSTAT_OK;
  err.message[0] = '\0';
  imgstat_gpu *gpu = nullptr;
  imgstat_gpu_image *dimg = nullptr;
  // the record is computed where it is kept (no copy of the result)
  auto k = std::make_shared<Kept>("<cuda array>", req);
  imgstat_job_result &res = k->res;
  imgstat_status s = gpu_for(device, &gpu, &err);
  if (ph)
    ph->stamp("context");
  if (s == IMGSTAT_OK)
    s = wrap_cuda(gpu, base, g, sample, stream, &dimg, &err);
  if (ph)
    ph->stamp("wrap (on the producer's stream)");
  if (s == IMGSTAT_OK) {
    // the engine's device item: the partials and, when asked, the
    // histograms and their figures
    imgstat_image shape;
    std::memset(&shape, 0, sizeof shape);
    shape.width = g.width;
    shape.height = g.height;
    shape.channels = g.channels;
    shape.sample = sample;
    imgstat_stats_request sr = req.stats();
    s = imgstat_device_stats(gpu, dimg, &shape, IMGSTAT_KERNEL_FAST,
                             req.histogram ? &sr : nullptr, &res, &err);
  }
  if (ph)
    ph->stamp("reduction (launches, copy, wait)");
  imgstat_gpu_image_release(gpu, dimg);
  if (ph)
    ph->stamp("release");
  if (s != IMGSTAT_OK)
    return {false, nullptr, failure_from("<cuda array>", s, err)};
  res.width = g.width;
  res.height = g.height;
  res.channels = g.channels;
  res.sample = sample;
  res.backend = IMGSTAT_BACKEND_GPU;
  return {true, std::move(k), Failure()};
}

// The phases of one stats_cuda call on a CUDA array (no histograms):
// [(phase, microseconds)], for bench/gpu/py_overhead.py.
nb::list cuda_stats_phases(AnyArray a, const std::string &layout) {
  Request req = make_request(0, false, std::nullopt, "auto");
  imgstat_sample sample = sample_of(a);
  Geometry g = geometry_of(a, layout);
  if (a.device_type() != nb::device::cuda::value)
    throw nb::value_error("a CUDA array");
  check_cuda_array(g, req, "_cuda_stats_phases");
  Phases ph;
  Outcome r;
  {
    nb::gil_scoped_release nogil;
    r = stats_cuda((const char *)a.data(), a.device_id(), 1, g, sample, req,
                   &ph);
  }
  nb::tuple t = result_tuple(r);
  ph.stamp("result (the record kept)");
  nb::list out;
  for (int k = 1; k < ph.n; k++)
    out.append(nb::make_tuple(
        ph.name[k],
        std::chrono::duration<double, std::micro>(ph.at[k] - ph.at[k - 1])
            .count()));
  return out;
}

nb::tuple stats_array(AnyArray a, const std::string &layout, int ddof,
                      bool histogram,
                      std::optional<std::vector<double>> percentiles,
                      const std::string &backend, uintptr_t stream,
                      std::optional<std::vector<double>> nodata,
                      bool no_file_nodata, nb::handle mask, nb::handle labels) {
  Request req = make_request(ddof, histogram, percentiles, backend);
  set_valid(req, nodata, no_file_nodata, mask, labels);
  // int16: a host array's copy of the value + 32768 (stats_host_array)
  imgstat_sample sample = is_int16(a) ? IMGSTAT_U16 : sample_of(a);
  Geometry g = geometry_of(a, layout);
  int dev = a.device_type();
  Outcome r;
  if (dev == nb::device::cuda::value && is_int16(a)) {
    throw nb::type_error("imgstat.stats: an int16 CUDA array is not "
                         "supported (a host array is)");
  } else if (dev == nb::device::cuda::value && req.valid()) {
    throw nb::value_error("imgstat.stats: nodata, mask and labels take "
                          "host arrays, paths and bytes (not CUDA arrays)");
  } else if (dev == nb::device::cuda::value) {
    check_cuda_array(g, req, "imgstat.stats");
    nb::gil_scoped_release nogil;
    r = stats_cuda((const char *)a.data(), a.device_id(), stream, g, sample,
                   req);
  } else if (dev == nb::device::cpu::value ||
             dev == nb::device::cuda_host::value) {
    nb::gil_scoped_release nogil;
    r = stats_host_array(a, g, sample, req);
  } else {
    throw nb::value_error("imgstat.stats: arrays on this kind of device are "
                          "not supported (CPU and CUDA are)");
  }
  return result_tuple(r);
}

// An object that offers only __cuda_array_interface__ (Numba): its pointer,
// shape and strides (in elements) as the Python side read them; device -1
// is the current one; `stream` the interface's (0: none).
nb::tuple stats_cuda_interface(uintptr_t ptr, int device, uintptr_t stream,
                               const std::vector<int64_t> &shape,
                               const std::vector<int64_t> &strides,
                               const std::string &dtype,
                               const std::string &layout, int ddof,
                               bool histogram,
                               std::optional<std::vector<double>> percentiles,
                               const std::string &backend) {
  Request req = make_request(ddof, histogram, percentiles, backend);
  imgstat_sample sample;
  if (!sample_from_name(dtype, &sample))
    throw nb::type_error("imgstat.stats: the array's dtype must be uint8, "
                         "uint16 or float32");
  if (shape.size() != strides.size())
    throw nb::value_error("imgstat.stats: an image array is HW, HWC or CHW");
  Geometry g = geometry_from(shape.size(), shape.data(), strides.data(),
                             shape.size() == 3 && layout_chw(layout));
  check_cuda_array(g, req, "imgstat.stats");
  Outcome r;
  {
    nb::gil_scoped_release nogil;
    r = stats_cuda((const char *)ptr, device, stream, g, sample, req);
  }
  return result_tuple(r);
}

// ---- a torch CUDA tensor: the fast path ------------------------------

// A new reference from the C API as an object, a Python error as the
// exception it is.
nb::object checked(PyObject *o) {
  if (!o)
    throw nb::python_error();
  return nb::steal(o);
}

int64_t int_of(PyObject *o) {
  long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred())
    throw nb::python_error();
  return (int64_t)v;
}

// The statistics of a torch tensor x read from its own fields (its DLPack
// export costs as much again as the rest of a small call): None unless it
// is a non-empty CUDA tensor of HW, HWC or CHW of one of `dtypes` (torch's
// uint8, uint16 and float32, in that order; None for one this torch lacks),
// which then takes the general path. The work is queued on torch's current
// stream on the tensor's device, which `raw_stream(device)` gives (0: the
// legacy default stream).
nb::object stats_torch(nb::handle x, nb::tuple dtypes, nb::handle raw_stream,
                       bool chw, int ddof, bool histogram,
                       std::optional<std::vector<double>> percentiles,
                       const std::string &backend) {
  static PyObject *const kIsCuda = PyUnicode_InternFromString("is_cuda"),
                         *const kDtype = PyUnicode_InternFromString("dtype"),
                         *const kShape = PyUnicode_InternFromString("shape"),
                         *const kStride = PyUnicode_InternFromString("stride"),
                         *const kDevice =
                             PyUnicode_InternFromString("get_device"),
                         *const kDataPtr =
                             PyUnicode_InternFromString("data_ptr");
  if (!kIsCuda || !kDtype || !kShape || !kStride || !kDevice || !kDataPtr)
    throw nb::python_error();
  if (checked(PyObject_GetAttr(x.ptr(), kIsCuda)).ptr() != Py_True ||
      nb::len(dtypes) != 3)
    return nb::none();
  nb::object dtype = checked(PyObject_GetAttr(x.ptr(), kDtype));
  const imgstat_sample samples[3] = {IMGSTAT_U8, IMGSTAT_U16, IMGSTAT_F32};
  int which = -1;
  for (int k = 0; k < 3 && which < 0; k++)
    if (dtype.is(dtypes[k]))
      which = k;
  if (which < 0)
    return nb::none();
  nb::object shape = checked(PyObject_GetAttr(x.ptr(), kShape));
  nb::object strides = checked(PyObject_CallMethodNoArgs(x.ptr(), kStride));
  if (!PyTuple_Check(shape.ptr()) || !PyTuple_Check(strides.ptr()))
    return nb::none();
  Py_ssize_t nd = PyTuple_GET_SIZE(shape.ptr());
  if (nd < 2 || nd > 3 || PyTuple_GET_SIZE(strides.ptr()) != nd)
    return nb::none();
  int64_t dims[3], steps[3];
  for (Py_ssize_t k = 0; k < nd; k++) {
    dims[k] = int_of(PyTuple_GET_ITEM(shape.ptr(), k));
    steps[k] = int_of(PyTuple_GET_ITEM(strides.ptr(), k));
    if (dims[k] == 0)
      return nb::none(); // empty: the general path says so
  }
  nb::object dev_obj = checked(PyObject_CallMethodNoArgs(x.ptr(), kDevice));
  const int64_t device = int_of(dev_obj.ptr());
  const uintptr_t ptr = (uintptr_t)int_of(
      checked(PyObject_CallMethodNoArgs(x.ptr(), kDataPtr)).ptr());
  uintptr_t stream = (uintptr_t)int_of(
      checked(PyObject_CallOneArg(raw_stream.ptr(), dev_obj.ptr())).ptr());
  if (stream == 0)
    stream = 1; // torch's 0: the legacy default stream
  Request req = make_request(ddof, histogram, percentiles, backend);
  Geometry g = geometry_from((size_t)nd, dims, steps, nd == 3 && chw);
  check_cuda_array(g, req, "imgstat.stats");
  Outcome r;
  {
    nb::gil_scoped_release nogil;
    r = stats_cuda((const char *)ptr, (int)device, stream, g, samples[which],
                   req);
  }
  return result_tuple(r);
}

} // namespace

void register_arrays(nb::module_ &m) {
  m.def("stats_cuda_interface", &stats_cuda_interface, nb::arg("ptr"),
        nb::arg("device"), nb::arg("stream"), nb::arg("shape"),
        nb::arg("strides"), nb::arg("dtype"), nb::arg("layout"),
        nb::arg("ddof"), nb::arg("histogram"), nb::arg("percentiles").none(),
        nb::arg("backend"));
  m.def("stats_torch", &stats_torch, nb::arg("x"), nb::arg("dtypes"),
        nb::arg("raw_stream"), nb::arg("chw"), nb::arg("ddof"),
        nb::arg("histogram"), nb::arg("percentiles").none(),
        nb::arg("backend"));
  m.def("_cuda_stats_phases", &cuda_stats_phases, nb::arg("array"),
        nb::arg("layout"));
  m.def("stats_array", &stats_array, nb::arg("array"), nb::arg("layout"),
        nb::arg("ddof"), nb::arg("histogram"), nb::arg("percentiles").none(),
        nb::arg("backend"), nb::arg("stream") = 1,
        nb::arg("nodata").none() = nb::none(),
        nb::arg("no_file_nodata") = false, nb::arg("mask").none() = nb::none(),
        nb::arg("labels").none() = nb::none());
}

} // namespace binding
